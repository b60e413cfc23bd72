#!/usr/bin/env bash
# The whole test suite: unit tests, then integration and end-to-end tests against the local
# environment (started once for the run and stopped after, unless one is already running), in
# several processes side by side (docs/testing.md: what runs side by side, and why).
# Without arguments, the `exclusive` tests (they kill or reconfigure what all use, or fill the
# remotes) run one after another on an environment of their own, beside the others on the shared
# one. Arguments go to pytest and run on the shared environment alone, e.g. `hack/test.sh -m unit`,
# `hack/test.sh -k job` or `-n0` (one process).
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
alone_run=""
alone=""  # the state directory of the exclusive tests' environment, when the whole suite runs
cleanup() {
  kill -- -"$operators" 2>/dev/null || true
  if [ -n "$alone" ]; then
    [ -z "$alone_run" ] || kill -- -"$alone_run" 2>/dev/null || true
    [ -n "${ARMADA_BRIDGE_KEEP_ENV:-}" ] || ARMADA_BRIDGE_STATE="$alone" .venv/bin/armada-bridge dev down >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
rc=0
pytest=(.venv/bin/pytest -ra --durations=20 --dist loadgroup)
if [ $# -gt 0 ]; then
  # Part of the suite, on one environment: several test processes (pytest-xdist), most tests
  # waiting on clusters, each in its own namespace; those marked `exclusive` in one process, each
  # holding the environment alone (tests/framework/room.py).
  "${pytest[@]}" -n "${ARMADA_BRIDGE_TEST_PROCESSES:-3}" "$@" || rc=$?
else
  # The whole suite as two runs side by side: the `exclusive` tests, one after another, on an
  # environment of their own (with the tests that make environments of their own beside them), and
  # every other test on the shared environment, in several processes.
  alone="$(.venv/bin/python -c 'from devenv.base import default_state_dir; print(default_state_dir())')-alone"
  alone_log="$logs/tests-alone.log"
  echo "[test] the exclusive tests run beside the others on their own environment ($alone); their output: $alone_log"
  ARMADA_BRIDGE_STATE="$alone" setsid "${pytest[@]}" -n 2 -m "exclusive or own_environment" \
    >"$alone_log" 2>&1 &
  alone_run=$!
  "${pytest[@]}" -n "${ARMADA_BRIDGE_TEST_PROCESSES:-3}" -m "not exclusive and not own_environment" || rc=$?
  alone_rc=0
  wait "$alone_run" || alone_rc=$?
  echo "[test] the exclusive tests and those on environments of their own (exit $alone_rc):"
  cat "$alone_log"
  [ "$rc" -ne 0 ] || rc=$alone_rc
fi
if stop_operators; then :; else
  status=$?
  # 143: stopped above. Anything else: a failed build, which the tests that needed it reported too.
  if [ "$status" -ne 143 ]; then
    echo "[test] the operators' build failed (exit $status): $logs/operators-beside-tests.log" >&2
    tail -n 20 "$logs/operators-beside-tests.log" >&2
    [ "$rc" -ne 0 ] || rc=1
  fi
fi
cleanup
trap - EXIT
exit "$rc"
