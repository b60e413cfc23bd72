"""The MPI operator (MPIJob kubeflow.org/v2beta1), with Volcano gangs."""

from __future__ import annotations

from collections.abc import Mapping

from devenv.components import Component
from devenv.operators.operator import Operator, Setup

# It cannot turn leader election off: its Lease lives in this namespace. Its monitoring server binds
# :8080 whatever the flags say, so only one may run on a machine.
LOCK_NAMESPACE = "mpi-operator"


class MpiOperator(Operator):
    def prepare(self, s: Setup) -> None:
        s.namespace(LOCK_NAMESPACE)

    def processes(self, s: Setup) -> list[Component]:
        argv = [
            self.executable,
            f"--kubeConfig={s.front}",
            f"--lock-namespace={LOCK_NAMESPACE}",
            "--monitoring-port=0",
            "--gang-scheduling=volcano",
        ]
        # Its health server is fixed on :8080 and shared by whatever else listens there.
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=None)]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("manifests/base/kubeflow.org_*.yaml",)
    return [MpiOperator("mpi-operator", versions["mpi-operator"], "mpi-operator", crds, None, ())]
