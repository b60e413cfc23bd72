"""The Dask operator (DaskCluster, DaskJob, DaskWorkerGroup, DaskAutoscaler): a Python package (kopf)
in a virtualenv of its own."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from devenv.components import Component
from devenv.operators.operator import Operator, Setup


class Dask(Operator):
    @property
    def module(self) -> Path:
        """The installed package (its CRDs, samples)."""
        return next(self.dir.glob("venv/lib/python3*/site-packages/dask_kubernetes"), self.dir)

    def processes(self, s: Setup) -> list[Component]:
        liveness = s.ready_url("health", "/healthz")
        argv = [
            self.executable,  # the virtualenv's python, so the command line is what was run
            *("-m", "kopf", "run", "-m", "dask_kubernetes.operator.controller"),
            "--standalone",
            "--all-namespaces",
            f"--liveness={liveness}",
        ]
        return [Component(name=self.component, argv=argv, env=s.kube_env, ready_url=liveness)]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    crds = ("operator/deployment/helm/dask-kubernetes-operator/crds/*.yaml",)
    return [Dask("dask", versions["dask"], "venv/bin/python", crds, None, ("health",))]
