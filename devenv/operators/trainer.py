"""Kubeflow Trainer v2 (TrainJob, run as a JobSet: devenv.operators.install installs the JobSet
controller before it)."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class Trainer(Operator):
    def prepare(self, s: Setup) -> None:
        s.default_cert_dir()

    def processes(self, s: Setup) -> list[Component]:
        config = s.controller_config(
            "trainer-config.yaml",
            "config.trainer.kubeflow.org/v1alpha1",
            certManagement={"enable": False},
            webhook={"port": s.ports["webhook"], "host": "127.0.0.1"},
            statusServer={"port": s.ports["status"]},
        )
        argv = [self.executable, f"--kubeconfig={s.front}", f"--config={config}"]
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=s.ready_url("health"))]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("manifests/base/crds/*.yaml",)
    ports = ("health", "webhook", "status")
    return [
        Trainer(
            "trainer",
            versions["trainer"],
            "trainer-controller-manager",
            crds,
            "manifests/base/webhook",
            ports,
        )
    ]
