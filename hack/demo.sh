#!/usr/bin/env bash
# Brings up the local multi-cluster environment (front + remote-1, remote-2) and runs the demo.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash hack/setup.sh
.venv/bin/armada-bridge dev up "$@"
.venv/bin/armada-bridge demo
