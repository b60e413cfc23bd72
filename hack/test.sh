#!/usr/bin/env bash
# The whole test suite: unit tests, then integration and end-to-end tests against the local
# environment (started once for the run and stopped after, unless one is already running).
# Extra arguments go to pytest, e.g. `hack/test.sh -m unit` or `hack/test.sh -k job`.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash hack/setup.sh
exec .venv/bin/pytest -ra --durations=20 "$@"
