"""Argo Workflows' workflow controller (Workflow)."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup

# It reads its ConfigMap from its own namespace; it serves /healthz (and pprof) on :6060, fixed, so
# only one may run on a machine.
NAMESPACE = "argo"
HEALTH = "http://127.0.0.1:6060/healthz"
# Its configuration (it exits without one): metrics servers off, so no port of theirs is taken.
CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "workflow-controller-configmap", "namespace": NAMESPACE},
    "data": {"metricsConfig": "enabled: false\n", "telemetryConfig": "enabled: false\n"},
}


class Argo(Operator):
    def prepare(self, s: Setup) -> None:
        s.namespace(NAMESPACE)
        s.apply(CONFIG)

    def processes(self, s: Setup) -> list[Component]:
        argv = [self.executable, f"--kubeconfig={s.front}", f"--namespace={NAMESPACE}", "--loglevel=info"]
        env = {**s.kube_env, "LEADER_ELECTION_DISABLE": "true"}
        return [Component(name=self.component, argv=argv, env=env, ready_url=HEALTH)]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("manifests/base/crds/minimal/*.yaml",)
    return [Argo("argo", versions["argo"], "workflow-controller", crds, None, ())]
