# shellcheck shell=bash
# Sourced by hack/build-binaries.sh and hack/build-operators.sh, which set `here` (hack/), `tool` (their
# name, for messages) and `fetch` (1: only download, compile nothing): the pinned versions, the cache,
# the settings of every Go build, and what both use to build: say, run, have.

# shellcheck source=versions.env
source "$here/versions.env"

cache=${ARMADA_BRIDGE_CACHE:-$HOME/.cache/armada-bridge}
bin="$cache/bin"
build="$cache/build" logs="$cache/build/logs" mode=""
if [ "$fetch" = 1 ]; then
  # Wrapper modules of its own (the compiling run may be in the same ones), logs apart.
  build="$cache/build/fetch" logs="$cache/build/logs/fetch" mode=" fetch"
fi
mkdir -p "$bin" "$logs"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
export GOFLAGS=${GOFLAGS:--buildvcs=false}
# Every Go build: no paths of this machine in the binary, and no DWARF compiled (-ldflags -s -w
# strips it at the link anyway: 13 % less compile time in three alternating cold builds, 2026-12-03).
build_flags=(-trimpath -gcflags=all=-dwarf=false)

step=""
started=$(date +%s)
trap 'rc=$?; if [ $rc -ne 0 ]; then echo "$tool: FAILED at step: ${step:-setup} (exit $rc); see the output above" >&2; fi' EXIT
say() { printf '[%s%s %4ss] %s\n' "$tool" "$mode" "$(( $(date +%s) - started ))" "$*" >&2; }
# run NAME CMD...: run quietly into $logs/NAME.log; on failure show its tail and where it is.
run() {
  local name=$1; shift
  if ! "$@" >"$logs/$name.log" 2>&1; then
    tail -n 40 "$logs/$name.log" >&2
    echo "$tool: '$*' failed; full log: $logs/$name.log" >&2
    return 1
  fi
}
# Each artefact lives in its own versioned folder; a stamp written last marks a complete build.
have() { [ -f "$1/.complete" ]; }
