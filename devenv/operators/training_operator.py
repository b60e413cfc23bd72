"""The Kubeflow training operator v1, run as several processes, each serving some job kinds (its
`--enable-scheme`s): v1.9.4 all but MPIJob; v1.8.1, the last release with MXJob (v1.9 removed it),
MXJob only; and v1.9.4 again for MPIJob v1, in place of the MPI operator (devenv.operators.install's
RIVALS)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from armada_bridge.objects import Obj
from devenv.components import Component
from devenv.operators.operator import Operator, Setup

NAMESPACE = "kubeflow"
SCHEMES = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
# Its certificate rotator (open-policy-agent/cert-controller) cannot be turned off: it wants this
# Secret, checks the CA for the name `training-operator-ca`, and the process reads the serving pair
# from controller-runtime's default directory.
WEBHOOK_SECRET = "training-operator-webhook-cert"


@dataclass(frozen=True)
class TrainingOperator(Operator):
    # The job kinds it serves (`--enable-scheme`); its CRDs and webhooks are theirs only.
    schemes: tuple[str, ...] = ()

    def prepare(self, s: Setup) -> None:
        s.namespace(NAMESPACE)
        s.secret(WEBHOOK_SECRET, NAMESPACE, keys=tuple(sorted(s.certs)))
        s.default_cert_dir()

    def webhook_configuration(self, doc: Obj) -> Obj | None:
        """Those of the kinds it serves, in a configuration named after it (upstream's name for
        `training-operator`, which its certificate rotator keeps); none for MPIJob v1."""
        kinds = {f"{s}s" for s in self.schemes}
        webhooks = [
            wh for wh in doc["webhooks"] if {r for rule in wh["rules"] for r in rule["resources"]} <= kinds
        ]
        if not webhooks:
            return None
        return {
            **doc,
            "metadata": {**doc["metadata"], "name": f"validator.{self.name}.kubeflow.org"},
            "webhooks": webhooks,
        }

    def processes(self, s: Setup) -> list[Component]:
        argv = [
            self.executable,
            f"--kubeconfig={s.front}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{s.ports['health']}",
            f"--webhook-server-port={s.ports['webhook']}",
            "--gang-scheduler-name=volcano",
            *[f"--enable-scheme={scheme}" for scheme in self.schemes],
        ]
        env = {**s.kube_env, "MY_POD_NAMESPACE": NAMESPACE}
        return [Component(name=self.component, argv=argv, env=env, ready_url=s.ready_url("health"))]


def _process(name: str, version: str, schemes: tuple[str, ...], build: str = "") -> TrainingOperator:
    crds = tuple(f"manifests/base/crds/kubeflow.org_{s}s.yaml" for s in schemes)
    ports = ("health", "webhook")
    return TrainingOperator(
        name, version, "training-operator", crds, "manifests/base/webhook", ports, build, schemes
    )


def operators(versions: Mapping[str, str]) -> list[Operator]:
    v1, mxjob = versions["training-operator"], versions["training-operator-mxjob"]
    return [
        _process("training-operator", v1, SCHEMES),
        _process("training-operator-mxjob", mxjob, ("mxjob",)),
        _process("training-operator-mpijob", v1, ("mpijob",), build="training-operator"),
    ]
