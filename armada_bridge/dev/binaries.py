"""Locate (and, when missing, build) the pinned Kubernetes, etcd and KWOK binaries.

The build itself is hack/build-binaries.sh: it caches each artefact outside the repository, keyed by
version, so this module only runs it when something is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from armada_bridge import versions

BUILD_SCRIPT = versions.REPO_ROOT / "hack" / "build-binaries.sh"


def cache_root() -> Path:
    return Path(os.environ.get("ARMADA_BRIDGE_CACHE", Path.home() / ".cache" / "armada-bridge"))


@dataclass(frozen=True)
class Binaries:
    kube_apiserver: Path
    kube_controller_manager: Path
    kube_scheduler: Path
    kubectl: Path
    etcd: Path
    kwok: Path
    kwokctl: Path

    @property
    def kubernetes_dir(self) -> Path:
        return self.kube_apiserver.parent


def expected(v: versions.Versions | None = None) -> Binaries:
    v = v or versions.load()
    bin_dir = cache_root() / "bin"
    k8s = bin_dir / f"kubernetes-{v.kubernetes}"
    kwok = bin_dir / f"kwok-{v.kwok}"
    return Binaries(
        kube_apiserver=k8s / "kube-apiserver",
        kube_controller_manager=k8s / "kube-controller-manager",
        kube_scheduler=k8s / "kube-scheduler",
        kubectl=k8s / "kubectl",
        etcd=bin_dir / f"etcd-{v.etcd}" / "etcd",
        kwok=kwok / "kwok",
        kwokctl=kwok / "kwokctl",
    )


def missing(b: Binaries) -> list[Path]:
    paths = [Path(p) for p in vars(b).values()]
    return [p for p in paths if not (p.is_file() and (p.parent / ".complete").is_file())]


def ensure(v: versions.Versions | None = None) -> Binaries:
    """Return the cached binaries, building the missing ones first (progress goes to stderr)."""
    b = expected(v)
    if not missing(b):
        return b
    print(
        f"armada-bridge: building Kubernetes binaries into {cache_root()} (first run only)", file=sys.stderr
    )
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed (exit {result.returncode}); its output above names the step"
        )
    still = missing(b)
    if still:
        raise RuntimeError(f"{BUILD_SCRIPT} finished but these are missing: {', '.join(map(str, still))}")
    return b
