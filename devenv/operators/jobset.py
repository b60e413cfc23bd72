"""The JobSet controller (JobSet; Trainer v2 runs a TrainJob as one)."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class JobSet(Operator):
    def processes(self, s: Setup) -> list[Component]:
        cert_dir = s.state_file("jobset-certs")
        cert_dir.mkdir(exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (cert_dir / name).write_bytes(s.certs[name].read_bytes())
        config = s.state_file("jobset-config.yaml")
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "webhook": {"port": s.ports["webhook"], "host": "127.0.0.1", "certDir": str(cert_dir)},
                    "metrics": {"bindAddress": "0"},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{s.ports['health']}"},
                }
            )
        )
        argv = [self.executable, f"--kubeconfig={s.front}", f"--config={config}"]
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=s.ready_url("health"))]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("config/components/crd/bases/*.yaml",)
    webhooks = "config/components/webhook"
    return [JobSet("jobset", versions["jobset"], "jobset-controller", crds, webhooks, ("health", "webhook"))]
