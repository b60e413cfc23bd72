"""Reading simulator input files (the scheduling configuration is the extender's: extender/config.py)."""

from __future__ import annotations

from pathlib import Path

from extender.config import read_yaml, validate
from extender.simulator.spec import ClusterSpec, WorkloadSpec


def load_clusters(path: str | Path) -> ClusterSpec:
    return validate(ClusterSpec, read_yaml(path, "ClusterSpec"), path, "ClusterSpec")


def load_workload(path: str | Path) -> WorkloadSpec:
    return validate(WorkloadSpec, read_yaml(path, "WorkloadSpec"), path, "WorkloadSpec")
