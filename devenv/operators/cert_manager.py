"""cert-manager (Certificate, Issuer; the chart's certificates): its controller and CA injector."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class CertManager(Operator):
    @property
    def components(self) -> tuple[str, ...]:
        return (self.component, f"{self.component}-cainjector")

    def processes(self, s: Setup) -> list[Component]:
        """Its controller (issuers, certificates; its metrics server is what answers when it is up)
        and its CA injector (caBundles of annotated webhook configurations), leader election off."""
        metrics = f"127.0.0.1:{s.ports['metrics']}"
        controller = Component(
            name=self.components[0],
            argv=[
                self.executable,
                f"--kubeconfig={s.front}",
                "--leader-elect=false",
                f"--metrics-listen-address={metrics}",
            ],
            env=s.kube_env,
            ready_url=f"http://{metrics}/metrics",
        )
        cainjector = Component(
            name=self.components[1],
            argv=[str(self.dir / "cainjector"), f"--kubeconfig={s.front}", "--leader-elect=false"],
            env=s.kube_env,
        )
        return [controller, cainjector]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("deploy/crds/crd-*.yaml",)
    return [CertManager("cert-manager", versions["cert-manager"], "controller", crds, None, ("metrics",))]
