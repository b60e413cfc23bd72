#!/usr/bin/env bash
# Installs what the project needs on a fresh machine: a virtualenv with the package and its dev
# dependencies (.venv), the pinned Kubernetes/etcd/KWOK binaries and helm, kwok-exec (hack/kwok-exec:
# the dev remote clusters' exec server) and the released operators (each built once into the cache; the
# Spark operator also needs Java, installed with apt-get where `java` is missing, and Spark from
# PyPI `pyspark`, about 450 MB); from Debian's packages with apt-get where missing: promtool (it
# checks the alerts of manifests/observability), Chromium (the dashboard's browser test), and what
# the dev environment's real nodes run on (containerd, runc, the CNI plugins, iproute2, iptables,
# socat) and build their images from (gcc for the static pause program, busybox-static,
# mmdebstrap); then those images (hack/build-images.sh: those from packages beside the Go builds).
# Safe to run again: it only does what is missing.
#
#   hack/setup.sh                      all of it
#   hack/setup.sh --without-operators  all but the operators' compiles and the images made from them
#                                      (hack/test.sh builds those beside the tests that do not need them)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
operators=1
case "${1:-}" in
  --without-operators) operators=0 ;;
  "") ;;
  *) echo "usage: $0 [--without-operators]" >&2; exit 2 ;;
esac

say() { printf '[setup] %s\n' "$*" >&2; }
py=${PYTHON:-python3}
"$py" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || { echo "setup: Python >= 3.11 is required (found $("$py" --version 2>&1))" >&2; exit 1; }
stamp=.venv/.installed-$(sha1sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  say "creating .venv and installing armada-bridge with its dev dependencies"
  [ -x .venv/bin/python ] || "$py" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  rm -f .venv/.installed-*; touch "$stamp"
else
  say ".venv up to date"
fi
sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
# Debian's package PKG where COMMAND is missing.
apt_install() {
  local cmd=$1 pkg=$2 why=$3
  command -v "$cmd" >/dev/null && return
  say "installing $pkg for $why (apt-get install $pkg)"
  command -v apt-get >/dev/null || { echo "setup: no $cmd and no apt-get: install $pkg" >&2; exit 1; }
  $sudo apt-get update -q >/dev/null
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$pkg" >/dev/null
}
apt_install promtool prometheus "the alert checks (tests/unit/test_observability.py)"
# Only promtool is wanted: on a systemd host the package also starts a Prometheus server (:9090).
if [ -d /run/systemd/system ] && systemctl is-enabled prometheus >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
command -v chromium-browser >/dev/null || apt_install chromium chromium "the dashboard's browser test (tests/e2e/test_dashboard.py)"
real_nodes="the dev environment's real nodes (devenv/realnode)"
apt_install containerd containerd "$real_nodes"
apt_install runc runc "$real_nodes"
apt_install ip iproute2 "$real_nodes"
[ -x /usr/lib/cni/bridge ] || apt_install /usr/lib/cni/bridge containernetworking-plugins "$real_nodes"
apt_install iptables-restore iptables "$real_nodes"  # kubelet's and kube-proxy's rules, in the clusters' namespaces
apt_install socat socat "$real_nodes"  # the front API at port 443 on the pod network
images="the real nodes' images (hack/build-images.sh)"
apt_install gcc gcc "$images"
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || apt_install /usr/lib/x86_64-linux-gnu/libc.a libc6-dev "$images"
[ -x /bin/busybox ] || apt_install /bin/busybox busybox-static "$images"
apt_install mmdebstrap mmdebstrap "$images"
# The images made from Debian's packages and PyPI (mostly downloads and unpacking) beside the Go
# builds (mostly compiling: one after the other, as each already keeps both cores busy; side by
# side they took longer, 2026-12-03); beside them too, what the Go builds download and the
# operators' PyPI virtualenvs, so that each compile finds its modules there and the cores never
# wait on the network; then the images made from the builds' binaries (argoexec, kube-scheduler).
bash hack/build-images.sh --without-builds >/dev/null &
images=$!
# A failed download is only reported: the compiling run then downloads it again, and says why not.
{ bash hack/build-binaries.sh fetch && bash hack/build-operators.sh --fetch; } >/dev/null \
  || say "downloading ahead failed (above); the builds download what they need themselves" &
fetching=$!
trap 'kill "$images" "$fetching" 2>/dev/null || true' EXIT
bash hack/build-binaries.sh >/dev/null
[ "$operators" = 0 ] || bash hack/build-operators.sh >/dev/null
wait "$images"
wait "$fetching"
trap - EXIT
[ "$operators" = 0 ] || bash hack/build-images.sh >/dev/null
