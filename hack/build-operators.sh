#!/usr/bin/env bash
# Builds the released operators pinned in hack/versions.env from their published Go modules (the
# Dask operator: its PyPI package in a virtualenv of its own) into the cache, keyed by version,
# beside the Kubernetes binaries. Each gets <cache>/bin/<name>-<version>/ holding the binary (argo:
# also `argoexec`, the binary of the executor image devenv/images/argoexec.py packages) and
# `module/`, the parts of its module the dev environment reads (CRDs, webhook configs, samples).
# A second run finds them and does nothing.
#
#   hack/build-operators.sh [all|NAME...]   NAME: training-operator kuberay mpi-operator jobset argo dask trainer spark-operator
#                                           training-operator-mxjob armadactl (Armada's client, for armada_api's tests)
#                                           cert-manager (for the install tests)
#   hack/build-operators.sh --fetch [...]   only what needs the network (each Go module's dependencies, the
#                                           PyPI virtualenvs), nothing compiled: setup runs it ahead, beside
#                                           the Kubernetes binaries' compiles, so these find their downloads done
#   ARMADA_BRIDGE_CACHE=/path ...           cache root (default ~/.cache/armada-bridge)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tool=build-operators fetch=0
if [ "${1:-}" = --fetch ]; then fetch=1; shift; fi
# shellcheck source=build-common.sh
source "$here/build-common.sh"

# go_wrapper NAME MODULE VERSION: makes the wrapper module $build/NAME-VERSION afresh. It requires
# MODULE@VERSION (`go install M@V` fails where the proxy refuses the version list) and takes over the
# module's own non-local `replace` directives, which Go ignores in a dependency, so the build uses
# exactly the dependency versions upstream releases with. Sets $mod (the wrapper), $dir (the module's
# own files) and $commit (the release's git commit, where the proxy knows it). With $links
# ("PATH=TARGET ..."), the upstream repository's symlinks that module zips leave out: the wrapper then
# builds a copy of the module with them put back.
go_wrapper() {
  local name=$1 module=$2 v=$3
  mod="$build/$name-$v"
  command -v go >/dev/null || { step="find go"; echo "build-operators: go is not on PATH" >&2; exit 1; }
  rm -rf "$mod"; mkdir -p "$mod"
  step="download $module@$v"; say "$step"
  local info
  info=$(cd "$mod" && go mod download -json "$module@$v" 2>"$logs/$name-download.log") || { cat "$logs/$name-download.log" >&2; exit 1; }
  dir=$(sed -n 's/.*"Dir": "\(.*\)".*/\1/p' <<<"$info")
  commit=$(sed -n 's/.*"Hash": "\([0-9a-f]*\)".*/\1/p' <<<"$info")
  [ -n "$dir" ] || { cat "$logs/$name-download.log" >&2; exit 1; }
  step="write wrapper module for $name $v"; say "$step"
  printf 'module armada-bridge.local/%s-build\n\ngo 1.26.0\n\nrequire %s %s\n' "$name" "$module" "$v" >"$mod/go.mod"
  local r
  while read -r r; do
    [ -n "$r" ] && (cd "$mod" && go mod edit -replace "$r")
  done < <(go mod edit -json "$dir/go.mod" | python3 -c '
import json, sys
for r in json.load(sys.stdin).get("Replace") or []:
    new = r["New"]
    if new["Path"].startswith("."):
        continue  # a path inside the upstream repository
    old = r["Old"]["Path"] + ("@" + r["Old"]["Version"] if r["Old"].get("Version") else "")
    print(old + "=" + new["Path"] + ("@" + new["Version"] if new.get("Version") else ""))
')
  if [ -n "${links:-}" ]; then
    step="put back the symlinks $module@$v's zip leaves out"; say "$step"
    cp -r "$dir" "$mod/src"
    chmod -R u+w "$mod/src"
    local link
    for link in $links; do
      [ -f "$mod/src/$(dirname "${link%%=*}")/${link#*=}" ] || { echo "build-operators: $module@$v has no ${link#*=} beside ${link%%=*}" >&2; exit 1; }
      [ -e "$mod/src/${link%%=*}" ] || ln -s "${link#*=}" "$mod/src/${link%%=*}"
    done
    (cd "$mod" && go mod edit -replace "$module=./src")
    dir="$mod/src"
  fi
}

# go_resolve LOG VERSION PACKAGE: PACKAGE's dependencies resolved in the wrapper module $mod and
# downloaded into the module cache.
go_resolve() {
  local log=$1 v=$2 pkg=$3
  step="resolve $pkg@$v dependencies"; say "$step"
  (cd "$mod" && run "$log-get" go get "$pkg@$v")
}

# go_compile LOG VERSION PACKAGE OUT: a static binary of PACKAGE at VERSION, built in the wrapper
# module $mod where go_resolve has resolved it ($extra_ld: more -ldflags; $commit_ld: the variable that gets the release's commit).
go_compile() {
  local log=$1 v=$2 pkg=$3 target=$4
  local ld="-s -w ${extra_ld:-}"
  if [ -n "${commit_ld:-}" ] && [ -n "$commit" ]; then ld+=" -X $commit_ld=$commit"; fi
  step="compile $pkg $v"; say "$step (a few minutes on 2 cores)"
  (cd "$mod" && CGO_ENABLED=0 run "$log" go build "${build_flags[@]}" -ldflags "$ld" -o "$target" "$pkg")
}

# copy_module OUT PATH...: the parts of the module ($dir) the dev environment reads, into OUT/module.
copy_module() {
  local out=$1 d; shift
  step="copy $(basename "$out")'s files from its module"; say "$step"
  mkdir -p "$out/module"
  for d in "$@"; do
    [ -e "$dir/$d" ] || { echo "build-operators: $dir has no $d" >&2; exit 1; }
    mkdir -p "$out/module/$(dirname "$d")"
    cp -r "$dir/$d" "$out/module/$d"
  done
  chmod -R u+w "$out/module"
}

# build_go NAME MODULE VERSION BINARY PACKAGE [MODULE-PATHS...]: the operator's binary and the parts of
# its module named, into $bin/NAME-VERSION (complete when it holds `.complete`).
build_go() {
  local name=$1 module=$2 v=$3 binary=$4 pkg=$5; shift 5
  local out="$bin/$name-$v" mod dir commit
  if have "$out"; then say "$name $v: cached in $out"; return; fi
  go_wrapper "$name" "$module" "$v"
  go_resolve "$name" "$v" "$pkg"
  [ "$fetch" = 0 ] || return 0
  rm -rf "$out"; mkdir -p "$out"
  go_compile "$name" "$v" "$pkg" "$out/$binary"
  copy_module "$out" "$@"
  touch "$out/.complete"
  step=""
}

# build_go_also NAME MODULE VERSION BINARY PACKAGE [MODULE-PATHS...]: one more binary of the module that
# build_go built as NAME (and more of its files), beside it in $bin/NAME-VERSION, complete when that
# directory holds `.complete-BINARY` (so a cache from before this binary existed gains it).
build_go_also() {
  local name=$1 module=$2 v=$3 binary=$4 pkg=$5; shift 5
  local out="$bin/$name-$v" mod dir commit
  if [ -f "$out/.complete-$binary" ]; then say "$binary $v: cached in $out"; return; fi
  go_wrapper "$name" "$module" "$v"
  go_resolve "$name-$binary" "$v" "$pkg"
  [ "$fetch" = 0 ] || return 0
  rm -f "$out/$binary"; mkdir -p "$out"
  go_compile "$name-$binary" "$v" "$pkg" "$out/$binary"
  [ $# -eq 0 ] || copy_module "$out" "$@"
  touch "$out/.complete-$binary"
  step=""
}

# pip_venv NAME OUT REQUIREMENT [NOTE]: a virtualenv of its own in OUT/venv with REQUIREMENT installed.
pip_venv() {
  local name=$1 out=$2 req=$3 note=${4:-}
  rm -rf "$out"
  step="create the $name virtualenv ($req)"; say "$step"
  run "$name-venv" python3 -m venv "$out/venv"
  step="pip install $req${note:+ ($note)}"; say "$step"
  run "$name-pip" "$out/venv/bin/pip" install -q "$req"
}

build_dask() {
  local v=$DASK_KUBERNETES_VERSION out="$bin/dask-$DASK_KUBERNETES_VERSION"
  if have "$out"; then say "dask $v: cached in $out"; return; fi
  pip_venv dask "$out" "dask-kubernetes==$v"
  touch "$out/.complete"
  step=""
}

# The Spark operator's controller execs $SPARK_HOME/bin/spark-submit: Spark from PyPI's `pyspark`
# (in a virtualenv of its own, keyed by version; SPARK_HOME is its pyspark package directory) and a
# Java runtime (Debian's OpenJDK 17 is installed where `java` is missing and apt-get can).
build_spark_home() {
  local v=$PYSPARK_VERSION out="$bin/pyspark-$PYSPARK_VERSION"
  if ! command -v java >/dev/null; then
    step="install Java for spark-submit (apt-get install openjdk-17-jre-headless)"; say "$step"
    command -v apt-get >/dev/null || { echo "build-operators: no java and no apt-get: install a Java 17 runtime" >&2; exit 1; }
    local sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    run java-apt-update $sudo apt-get update -q
    run java-apt $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jre-headless
  fi
  if have "$out"; then say "pyspark $v: cached in $out"; return; fi
  pip_venv pyspark "$out" "pyspark==$v" "about 450 MB"
  step="check spark-submit of pyspark $v"; say "$step"
  local home
  home=$("$out/venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
  ln -sfn "$home" "$out/spark-home"
  run pyspark-version env SPARK_HOME="$out/spark-home" "$out/spark-home/bin/spark-submit" --version
  touch "$out/.complete"
  step=""
}

# locked NAME COMMAND...: COMMAND holding NAME's lock, so that two runs (setup's fetching one, hack/test.sh's
# in the background, a test's that needs the operator now) never build the same operator at once: the
# second waits, then finds it complete.
locked() {
  local fd
  exec {fd}>"$bin/.$1.lock"
  flock "$fd"
  "${@:2}"
  exec {fd}>&-
}

build_one() {
  case "$1" in
    training-operator)
      build_go training-operator github.com/kubeflow/training-operator "$TRAINING_OPERATOR_VERSION" \
        training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 \
        manifests/base examples ;;
    kuberay)
      build_go kuberay github.com/ray-project/kuberay/ray-operator "$KUBERAY_VERSION" \
        kuberay-operator github.com/ray-project/kuberay/ray-operator \
        config ;;
    mpi-operator)
      build_go mpi-operator github.com/kubeflow/mpi-operator "$MPI_OPERATOR_VERSION" \
        mpi-operator github.com/kubeflow/mpi-operator/cmd/mpi-operator \
        manifests/base examples ;;
    jobset)
      build_go jobset sigs.k8s.io/jobset "$JOBSET_VERSION" \
        jobset-controller sigs.k8s.io/jobset \
        config ;;
    trainer)
      build_go trainer github.com/kubeflow/trainer/v2 "$TRAINER_VERSION" \
        trainer-controller-manager github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager \
        manifests/base examples/yaml ;;
    argo)
      # Stamped as upstream's Makefile stamps a release (version, tag, commit, clean tree): the
      # version names the argoexec image the controller puts in workflow pods
      # (quay.io/argoproj/argoexec:V), and `version` prints V. argoexec is that image's binary
      # (devenv/images/argoexec.py packages it), with the files upstream's image adds.
      # Its Linux build needs a symlink of the repository that the module zip leaves out.
      local argo=github.com/argoproj/argo-workflows/v3 v=$ARGO_WORKFLOWS_VERSION
      local links="workflow/executor/osspecific/signal_linux.go=signal_darwin.go"
      local extra_ld="-X $argo.version=$v -X $argo.gitTag=$v -X $argo.gitTreeState=clean" commit_ld="$argo.gitCommit"
      build_go argo "$argo" "$v" workflow-controller "$argo/cmd/workflow-controller" \
        manifests/base/crds examples
      build_go_also argo "$argo" "$v" argoexec "$argo/cmd/argoexec" \
        hack/ssh_known_hosts hack/nsswitch.conf ;;
    training-operator-mxjob)
      # The last training-operator release that serves MXJob (v1.9 removed it), run beside v1.9.4.
      build_go training-operator-mxjob github.com/kubeflow/training-operator "$TRAINING_OPERATOR_MXJOB_VERSION" \
        training-operator github.com/kubeflow/training-operator/cmd/training-operator.v1 \
        manifests/base examples/mxnet ;;
    armadactl)
      # Not an operator: Armada's own command-line client, which tests armada_api (with its
      # example job files).
      build_go armadactl github.com/armadaproject/armada "$ARMADA_VERSION" \
        armadactl github.com/armadaproject/armada/cmd/armadactl \
        example ;;
    cert-manager)
      # Not a batch operator: the certificates of the chart's cert-manager mode and of `kubectl
      # apply -k manifests` (tests/e2e/test_install.py). Its controller and CA injector; its own
      # webhook only validates cert-manager's objects and is left out.
      local cm=github.com/cert-manager/cert-manager v=$CERT_MANAGER_VERSION
      build_go cert-manager "$cm" "$v" controller "$cm/cmd/controller" deploy/crds
      build_go_also cert-manager "$cm" "$v" cainjector "$cm/cmd/cainjector" ;;
    dask) build_dask ;;
    spark-operator)
      build_go spark-operator github.com/kubeflow/spark-operator/v2 "$SPARK_OPERATOR_VERSION" \
        spark-operator github.com/kubeflow/spark-operator/v2/cmd/operator \
        config examples
      build_spark_home ;;
    *) echo "usage: $0 [all|jobset|training-operator|trainer|mpi-operator|kuberay|argo|dask|spark-operator|training-operator-mxjob|armadactl|cert-manager ...]" >&2; exit 2 ;;
  esac
}

# In the order the test suite needs them while hack/test.sh builds them beside it: argo first (the dev
# environment's argoexec image is made from it), then what the tests without the operator fixture use
# (armadactl, the install test's), then the rest.
ALL=(argo armadactl training-operator kuberay cert-manager mpi-operator jobset dask trainer spark-operator training-operator-mxjob)
if [ $# -eq 0 ] || [ "$1" = all ]; then set -- "${ALL[@]}"; fi
for name in "$@"; do locked "$name" build_one "$name"; done
if [ "$fetch" = 1 ]; then rm -rf "$build"; say "done: what the operators' builds download"; exit 0; fi
say "done: operators under $bin"
echo "$bin"
