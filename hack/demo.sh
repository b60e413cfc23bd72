#!/usr/bin/env bash
# Brings up the local multi-cluster environment (front + remote-1, remote-2) with the released
# Kubeflow training-operator and KubeRay running unchanged against the front, runs the bridge's
# demo, then applies a PyTorchJob and a RayCluster with kubectl and shows where their gangs run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash hack/setup.sh
ab=.venv/bin/armada-bridge
$ab dev up --operators training-operator,kuberay "$@"
$ab demo
bin=$(bash hack/build-binaries.sh 2>/dev/null)
source hack/versions.env
kubectl() { "$bin/kubernetes-$KUBERNETES_VERSION/kubectl" --kubeconfig "$($ab dev kubeconfig front)" "$@"; }
ns=armada-bridge-operators-demo
step() { printf '\n== %s\n' "$*"; }

step "a namespace of queue default (as an admin opens a queue to a team), and in it a PyTorchJob (4 pods) and a RayCluster (3 pods), applied unchanged"
kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
kubectl label namespace "$ns" armadaproject.io/queue=default --overwrite >/dev/null
kubectl -n "$ns" delete pytorchjob,raycluster --all --wait=true >/dev/null
kubectl -n "$ns" apply -f manifests/samples/pytorchjob.yaml -f manifests/samples/raycluster.yaml
step "the operators create their gangs (Volcano PodGroups); the bridge admits each whole to one remote cluster"
kubectl -n "$ns" wait pytorchjob/pytorch-simple --for=condition=Running --timeout=180s
kubectl -n "$ns" wait raycluster/raycluster-kuberay --for=jsonpath='{.status.state}'=ready --timeout=180s
kubectl -n "$ns" get podgroups.scheduling.volcano.sh
$ab gangs -n "$ns"
step "front pods, bound to the virtual node of the remote cluster that runs them"
kubectl -n "$ns" get pods -o wide
step "the objects' own status, as their operators report it"
kubectl -n "$ns" get pytorchjob,raycluster
for c in remote-1 remote-2; do
  step "pods in $c"
  "$bin/kubernetes-$KUBERNETES_VERSION/kubectl" --kubeconfig "$($ab dev kubeconfig "$c")" -n "$ns" get pods 2>/dev/null || true
done
step "done: the PyTorchJob ends Succeeded after its simulated 60s; clean up everything the demo made with:"
echo "  .venv/bin/armada-bridge demo --clean     (or: .venv/bin/armada-bridge dev down)"
