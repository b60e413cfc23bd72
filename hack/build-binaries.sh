#!/usr/bin/env bash
# Builds the pinned Kubernetes control plane, kubectl, the node binaries (kubelet and kube-proxy, for
# the dev environment's real nodes), CoreDNS (their clusters' DNS), etcd, kwok, kwokctl and helm (the chart's tests) from their Go modules into a cache outside the repository, keyed by version, and hack/kwok-exec (the dev remote
# clusters' exec server), keyed by the version of the kubelet streaming library it uses and a hash
# of its source. A second run finds them and does nothing.
#
#   hack/build-binaries.sh            build what is missing, print the bin directory
#   hack/build-binaries.sh fetch      only download the Go modules the missing builds need, compile
#                                     nothing: setup runs it ahead, beside the first compiles
#   ARMADA_BRIDGE_CACHE=/path ...     cache root (default ~/.cache/armada-bridge)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=build-binaries fetch=0
if [ "${1:-}" = fetch ]; then fetch=1; fi
# shellcheck source=build-common.sh
source "$here/build-common.sh"

command -v go >/dev/null || { step="find go"; echo "build-binaries: go is not on PATH; install Go >= 1.26" >&2; exit 1; }

# The wrapper module every Kubernetes binary is built in: k8s.io/kubernetes at the pinned release,
# its staging modules at the matching v0 versions. Written when missing; prints its directory.
kubernetes_module() {
  local v=$KUBERNETES_VERSION mod
  local minor=${v#v1.}; local staging="v0.${minor}"
  mod="$build/kubernetes-$KUBERNETES_VERSION"
  if [ ! -f "$mod/go.mod" ]; then
    rm -rf "$mod"; mkdir -p "$mod"
    step="download k8s.io/kubernetes@$v"; say "$step"
    local dir
    dir=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$v" 2>"$logs/kubernetes-download.log" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -n "$dir" ] || { cat "$logs/kubernetes-download.log" >&2; echo "could not download k8s.io/kubernetes@$v" >&2; exit 1; }
    step="write wrapper module for kubernetes $v (staging modules at $staging)"; say "$step"
    {
      echo "module armada-bridge.local/kubernetes-build"
      echo
      sed -n 's/^go \(.*\)$/go \1/p' "$dir/go.mod" | head -1
      echo
      echo "require k8s.io/kubernetes $v"
      echo
      echo "replace ("
      sed -n 's#^\s*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$dir/go.mod"
      echo ")"
    } > "$mod/go.mod"
  fi
  echo "$mod"
}

# compile_kubernetes OUT NAME CMD...: resolve and compile k8s.io/kubernetes/cmd/CMD... into OUT, with
# the version stamped as the release's own build does.
compile_kubernetes() {
  local out=$1 name=$2; shift 2
  local v=$KUBERNETES_VERSION minor=${KUBERNETES_VERSION#v1.} mod pkgs=() ld="-s -w"
  mod=$(kubernetes_module)
  for c in "$@"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=${minor%%.*} -X $p.gitTreeState=clean"
    ld+=" -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  # Each set of commands needs its own go.sum entries (kubelet: k8s.io/cri-streaming, ...).
  step="resolve $name $v dependencies"; say "$step (downloads a few hundred modules the first time)"
  (cd "$mod" && run "$name-get" go get "${pkgs[@]/%/@$v}")
  [ "$fetch" = 0 ] || return 0
  mkdir -p "$out"
  # One build for the set: the packages they share compiled once, their links side by side.
  step="compile $* $v"; say "$step (minutes on 2 cores)"
  (cd "$mod" && CGO_ENABLED=0 run "$name" go build "${build_flags[@]}" -ldflags "$ld" -o "$out/" "${pkgs[@]}")
}

build_kubernetes() {
  local out="$bin/kubernetes-$KUBERNETES_VERSION"
  if have "$out"; then say "kubernetes $KUBERNETES_VERSION: cached in $out"; return; fi
  compile_kubernetes "$out" kubernetes kube-apiserver kube-controller-manager kube-scheduler kubectl
  [ "$fetch" = 0 ] || return 0
  "$out/kube-apiserver" --version >&2
  touch "$out/.complete"
}

# kubelet and kube-proxy: the real nodes of the dev environment (devenv/realnode).
build_node() {
  local out="$bin/kubernetes-node-$KUBERNETES_VERSION"
  if have "$out"; then say "kubelet, kube-proxy $KUBERNETES_VERSION: cached in $out"; return; fi
  compile_kubernetes "$out" kubelet kubelet kube-proxy
  [ "$fetch" = 0 ] || return 0
  "$out/kubelet" --version >&2
  touch "$out/.complete"
}

build_etcd() {
  local v=$ETCD_VERSION out="$bin/etcd-$ETCD_VERSION"
  if have "$out"; then say "etcd $v: cached in $out"; return; fi
  local mod="$build/etcd-$v"
  rm -rf "$mod"; mkdir -p "$mod" "$out"
  step="write wrapper module for etcd $v"; say "$step"
  cat > "$mod/go.mod" <<MOD
module armada-bridge.local/etcd-build

go 1.26.0

require go.etcd.io/etcd/server/v3 $v

replace (
	go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $v
	go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $v
	go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $v
	go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $v
)
MOD
  step="resolve etcd $v dependencies"; say "$step"
  (cd "$mod" && run etcd-get go get "go.etcd.io/etcd/server/v3@$v")
  step="compile etcd $v"; say "$step"
  (cd "$mod" && CGO_ENABLED=0 run etcd go build "${build_flags[@]}" -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3)
  "$out/etcd" --version | sed -n 1p >&2  # sed reads it all: head would close the pipe early (SIGPIPE, exit 141)
  touch "$out/.complete"
}

build_kwok() {
  local v=$KWOK_VERSION out="$bin/kwok-$KWOK_VERSION"
  if have "$out"; then say "kwok $v: cached in $out"; return; fi
  mkdir -p "$out"
  for c in kwok kwokctl; do
    step="compile $c $v"; say "$step"
    GOBIN="$out" CGO_ENABLED=0 run "$c" go install "${build_flags[@]}" \
      -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}" \
      "sigs.k8s.io/kwok/cmd/$c@$v"
  done
  touch "$out/.complete"
}

# source_key DIR: a hash of the files of hack/DIR, read in name order (keep in step with
# devenv.binaries.source_key).
source_key() {
  local src="$here/$1" files
  files=$(cd "$src" && LC_ALL=C ls)
  (cd "$src" && cat $files | sha256sum | cut -c1-12)
}

# The kubelet streaming library of the pinned release: the staging module k8s.io/cri-streaming.
kwok_exec_out() {
  echo "$bin/kwok-exec-v0.${KUBERNETES_VERSION#v1.}-$(source_key kwok-exec)"
}

# compile_local NAME MODULE VERSION PIN OUT [NOTE]: hack/NAME, a Go program of this repository built
# on MODULE, which its go.mod must require at VERSION (as the pin PIN in versions.env says), compiled
# statically into OUT/NAME.
compile_local() {
  local name=$1 module=$2 v=$3 pin=$4 out=$5 note=${6:-} src="$here/$1"
  step="check hack/$name uses $module $v"
  grep -q "^\(require \|\s*\)$module $v\$" "$src/go.mod" \
    || { echo "$tool: hack/$name/go.mod must require $module $v ($pin): cd hack/$name && go get $module@$v && go mod tidy" >&2; exit 1; }
  mkdir -p "$out"
  step="compile $name ($module $v)"; say "$step$note"
  (cd "$src" && CGO_ENABLED=0 run "$name" go build -mod=readonly "${build_flags[@]}" -ldflags "-s -w" -o "$out/$name" .)
}

# The dev remote clusters' exec server, on the kubelet streaming library of the pinned release: the
# staging module k8s.io/cri-streaming.
build_kwok_exec() {
  local out
  out=$(kwok_exec_out)
  if have "$out"; then say "kwok-exec: cached in $out"; return; fi
  compile_local kwok-exec k8s.io/cri-streaming "v0.${KUBERNETES_VERSION#v1.}" "KUBERNETES_VERSION=$KUBERNETES_VERSION" "$out"
  touch "$out/.complete"
}

# CoreDNS: each dev remote cluster with real nodes runs one, serving cluster.local from its Services;
# built from the pinned module with only the plugins the dev Corefile uses (hack/coredns), keyed by
# version and that source.
build_coredns() {
  local v=$COREDNS_VERSION out
  out="$bin/coredns-$COREDNS_VERSION-$(source_key coredns)"
  if have "$out"; then say "coredns $v: cached in $out"; return; fi
  compile_local coredns github.com/coredns/coredns "$v" COREDNS_VERSION "$out" " (a few minutes on 2 cores)"
  "$out/coredns" -version | sed -n 1p >&2
  touch "$out/.complete"
}

build_helm() {
  local v=$HELM_VERSION out="$bin/helm-$HELM_VERSION"
  if have "$out"; then say "helm $v: cached in $out"; return; fi
  local mod="$build/helm-$v"
  rm -rf "$mod"; mkdir -p "$mod"
  step="write wrapper module for helm $v"; say "$step"
  printf 'module armada-bridge.local/helm-build\n\ngo 1.26.0\n' > "$mod/go.mod"
  step="resolve helm $v dependencies"; say "$step"
  (cd "$mod" && run helm-get go get "helm.sh/helm/v3/cmd/helm@$v")
  [ "$fetch" = 0 ] || return 0
  mkdir -p "$out"
  # As helm's Makefile does: its version, and the Kubernetes version of the client-go it was built
  # with as the default .Capabilities.KubeVersion of `helm template` and `helm lint`.
  local kv ld="-s -w -X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  kv=$(cd "$mod" && go list -m -f '{{.Version}}' k8s.io/client-go)
  kv=${kv#v0.}; kv=${kv%%.*}
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ld+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$kv"
  done
  step="compile helm $v"; say "$step (a few minutes on 2 cores)"
  (cd "$mod" && CGO_ENABLED=0 run helm go build "${build_flags[@]}" -ldflags "$ld" -o "$out/helm" helm.sh/helm/v3/cmd/helm)
  "$out/helm" version --short >&2
  touch "$out/.complete"
}

# fetch_module NAME OUT DIR: the modules of hack/DIR's go.mod downloaded, unless OUT is built.
fetch_module() {
  have "$2" && return
  step="download $1's modules"; say "$step"
  (cd "$here/$3" && run "$1-download" go mod download)
}

if [ "$fetch" = 1 ]; then
  # In the order the compiling run needs them; etcd and kwok come first there and fetch their own.
  build_kubernetes; build_node
  fetch_module coredns "$bin/coredns-$COREDNS_VERSION-$(source_key coredns)" coredns
  fetch_module kwok-exec "$(kwok_exec_out)" kwok-exec
  build_helm
  rm -rf "$build"
  step=""; say "done: what the binaries' builds download"
  exit 0
fi

only=${1:-all}
case "$only" in
  all) build_etcd; build_kwok; build_kubernetes; build_node; build_coredns; build_kwok_exec; build_helm ;;
  node) build_node ;;
  coredns) build_coredns ;;
  kubernetes) build_kubernetes ;;
  etcd) build_etcd ;;
  kwok) build_kwok ;;
  kwok-exec) build_kwok_exec ;;
  helm) build_helm ;;
  *) echo "usage: $0 [all|kubernetes|node|coredns|etcd|kwok|kwok-exec|helm]" >&2; exit 2 ;;
esac
step=""
say "done: binaries under $bin"
echo "$bin"
