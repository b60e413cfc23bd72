"""The released operators the dev environment runs: one module each, listed here."""

from __future__ import annotations

from devenv import versions
from devenv.operators import (
    argo,
    cert_manager,
    dask,
    jobset,
    kuberay,
    mpi_operator,
    spark_operator,
    trainer,
    training_operator,
)
from devenv.operators.operator import Operator

MODULES = (
    training_operator,
    kuberay,
    mpi_operator,
    jobset,
    trainer,
    argo,
    dask,
    cert_manager,
    spark_operator,
)
# What `--operators all` runs (hack/build-operators.sh builds the same set by default).
ALL = (
    "training-operator",
    "kuberay",
    "mpi-operator",
    "jobset",
    "argo",
    "dask",
    "trainer",
    "spark-operator",
    "training-operator-mxjob",
)


def catalog(v: versions.Versions | None = None) -> dict[str, Operator]:
    pinned = (v or versions.load()).operators
    return {o.name: o for m in MODULES for o in m.operators(pinned)}


def parse(spec: str) -> list[str]:
    """`all` or a comma-separated list of operator names (checked)."""
    names = list(ALL) if spec.strip() == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    known = catalog()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(known)} or all")
    return names
