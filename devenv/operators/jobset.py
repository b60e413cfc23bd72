"""The JobSet controller (JobSet; Trainer v2 runs a TrainJob as one)."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class JobSet(Operator):
    def processes(self, s: Setup) -> list[Component]:
        cert_dir = s.state_file("jobset-certs")
        cert_dir.mkdir(exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (cert_dir / name).write_bytes(s.certs[name].read_bytes())
        config = s.controller_config(
            "jobset-config.yaml",
            "config.jobset.x-k8s.io/v1alpha1",
            internalCertManagement={"enable": False},
            webhook={"port": s.ports["webhook"], "host": "127.0.0.1", "certDir": str(cert_dir)},
        )
        argv = [self.executable, f"--kubeconfig={s.front}", f"--config={config}"]
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=s.ready_url("health"))]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("config/components/crd/bases/*.yaml",)
    webhooks = "config/components/webhook"
    return [JobSet("jobset", versions["jobset"], "jobset-controller", crds, webhooks, ("health", "webhook"))]
