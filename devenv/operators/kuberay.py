"""KubeRay's operator (RayCluster, RayJob, RayService), with Volcano gangs."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class KubeRay(Operator):
    def processes(self, s: Setup) -> list[Component]:
        argv = [
            self.executable,
            f"--kubeconfig={s.front}",
            "--enable-leader-election=false",
            "--metrics-addr=0",
            f"--health-probe-bind-address=127.0.0.1:{s.ports['health']}",
            "--batch-scheduler=volcano",
            "--log-stdout-encoder=console",
            # It follows Ray through the head's dashboard Service, whose pods run remotely:
            # through the front API server's service proxy (the front reaches pod addresses).
            "--use-kubernetes-proxy",
        ]
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=s.ready_url("health"))]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("config/crd/bases/*.yaml",)
    return [KubeRay("kuberay", versions["kuberay"], "kuberay-operator", crds, None, ("health",))]
