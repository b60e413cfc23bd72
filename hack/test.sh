#!/usr/bin/env bash
# The whole test suite: unit tests, then integration and end-to-end tests against the local
# environment (started once for the run and stopped after, unless one is already running), in
# several processes side by side (docs/testing.md: what runs side by side, and why).
# Extra arguments go to pytest, e.g. `hack/test.sh -m unit`, `hack/test.sh -k job` or `-n0` (one
# process).
#
# The released operators are compiled beside the tests, at the lowest CPU priority, while the tests
# that need none run (tests/conftest.py runs those first: most of the suite waits on clusters and
# leaves the cores idle); a test that needs an operator not built yet builds it or waits for it (a
# lock per operator). Argo comes first, before the tests: the environment's argoexec image is made
# from it. On a fresh machine that takes most of the operators' twenty minutes of compiling off the
# run's length; with the cache it finds them built at once.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash hack/setup.sh --without-operators
bash hack/build-operators.sh argo >/dev/null
logs="${ARMADA_BRIDGE_CACHE:-$HOME/.cache/armada-bridge}/build/logs"
mkdir -p "$logs"
# Its own process group (setsid), so that stopping it stops its compiles too.
nice -n 19 setsid bash hack/build-operators.sh >/dev/null 2>"$logs/operators-beside-tests.log" &
operators=$!
stop_operators() {
  if kill -0 "$operators" 2>/dev/null; then
    echo "[test] stopping the operators' build (these tests did not need the rest; it resumes next time)" >&2
    kill -- -"$operators" 2>/dev/null || true
  fi
  wait "$operators" 2>/dev/null
}
trap 'kill -- -"$operators" 2>/dev/null || true' EXIT
rc=0
# Several test processes (pytest-xdist): most tests wait on clusters, each in its own namespace;
# those marked `exclusive` run in one process, each alone (tests/framework/room.py).
.venv/bin/pytest -ra --durations=20 -n "${ARMADA_BRIDGE_TEST_PROCESSES:-3}" --dist loadgroup "$@" || rc=$?
if stop_operators; then :; else
  status=$?
  # 143: stopped above. Anything else: a failed build, which the tests that needed it reported too.
  if [ "$status" -ne 143 ]; then
    echo "[test] the operators' build failed (exit $status): $logs/operators-beside-tests.log" >&2
    tail -n 20 "$logs/operators-beside-tests.log" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
fi
trap - EXIT
exit "$rc"
