"""Locate (and, when missing, build) the pinned Kubernetes, etcd and KWOK binaries, kwok-exec
(hack/kwok-exec: the exec server of the dev remote clusters) and helm (the chart's tests only).

The build itself is hack/build-binaries.sh: it caches each artefact outside the repository, keyed by
version (kwok-exec also by a hash of its source), so this module only runs it when something is
missing.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from devenv import versions

BUILD_SCRIPT = versions.REPO_ROOT / "hack" / "build-binaries.sh"
KWOK_EXEC_SOURCE = versions.REPO_ROOT / "hack" / "kwok-exec"
COREDNS_SOURCE = versions.REPO_ROOT / "hack" / "coredns"  # its plugins: the dev Corefile's


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
    kwok_exec: Path

    @property
    def kubernetes_dir(self) -> Path:
        return self.kube_apiserver.parent


def source_key(source: Path) -> str:
    """A hash of the files of a build's source folder under hack/, read in name order (as
    hack/build-binaries.sh's source_key does): the cache key of what is built from it."""
    digest = hashlib.sha256()
    for path in sorted(source.iterdir(), key=lambda p: p.name.encode()):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def kwok_exec_dir(bin_dir: Path, kubernetes: str) -> Path:
    """Where hack/build-binaries.sh puts kwok-exec: keyed by the kubelet streaming library's version
    (k8s.io/cri-streaming v0.X.Y for Kubernetes v1.X.Y) and its source."""
    return bin_dir / f"kwok-exec-v0.{kubernetes.removeprefix('v1.')}-{source_key(KWOK_EXEC_SOURCE)}"


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
        kwok_exec=kwok_exec_dir(bin_dir, v.kubernetes) / "kwok-exec",
    )


def helm(v: versions.Versions | None = None) -> Path:
    """The pinned helm, built first when missing (`hack/build-binaries.sh helm`). Not part of
    `Binaries`: the environment does not need it, only the chart's tests do."""
    v = v or versions.load()
    path = cache_root() / "bin" / f"helm-{v.helm}" / "helm"
    if not (path.is_file() and (path.parent / ".complete").is_file()):
        print(f"armada-bridge: building helm {v.helm} into {cache_root()}", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "helm"], stdout=subprocess.DEVNULL, check=False)
        if result.returncode != 0 or not path.is_file():
            raise RuntimeError(f"{BUILD_SCRIPT} helm failed (exit {result.returncode}); see its output above")
    return path


OPERATORS_SCRIPT = BUILD_SCRIPT.parent / "build-operators.sh"


def armadactl_path(v: versions.Versions | None = None) -> Path:
    v = v or versions.load()
    return cache_root() / "bin" / f"armadactl-{v.armada}" / "armadactl"


def armadactl(v: versions.Versions | None = None) -> Path:
    """Armada's armadactl at the pinned release, built first when missing
    (`hack/build-operators.sh armadactl`, beside its example job files in `module/example`). Only
    armada_api's tests need it."""
    path = armadactl_path(v)
    if not (path.is_file() and (path.parent / ".complete").is_file()):
        print(f"armada-bridge: building armadactl into {cache_root()}", file=sys.stderr)
        result = subprocess.run(
            ["bash", str(OPERATORS_SCRIPT), "armadactl"], stdout=subprocess.DEVNULL, check=False
        )
        if result.returncode != 0 or not path.is_file():
            raise RuntimeError(f"{OPERATORS_SCRIPT} armadactl failed (exit {result.returncode})")
    return path


@dataclass(frozen=True)
class NodeBinaries:
    """What the real nodes of the dev environment and their clusters' DNS run."""

    kubelet: Path
    kube_proxy: Path
    coredns: Path


def expected_node(v: versions.Versions | None = None) -> NodeBinaries:
    v = v or versions.load()
    d = cache_root() / "bin" / f"kubernetes-node-{v.kubernetes}"
    coredns = cache_root() / "bin" / f"coredns-{v.coredns}-{source_key(COREDNS_SOURCE)}" / "coredns"
    return NodeBinaries(kubelet=d / "kubelet", kube_proxy=d / "kube-proxy", coredns=coredns)


def ensure_node(v: versions.Versions | None = None) -> NodeBinaries:
    """kubelet and kube-proxy of the pinned release and the pinned CoreDNS (the dev environment's
    real nodes and their clusters' DNS), built first when missing (`hack/build-binaries.sh node`,
    `... coredns`)."""
    b = expected_node(v)
    for what, path in (("node", b.kubelet), ("coredns", b.coredns)):
        if missing_path(path):
            print(f"armada-bridge: building {what} binaries into {cache_root()}", file=sys.stderr)
            result = subprocess.run(["bash", str(BUILD_SCRIPT), what], stdout=subprocess.DEVNULL, check=False)
            if result.returncode != 0 or missing_path(path):
                raise RuntimeError(
                    f"{BUILD_SCRIPT} {what} failed (exit {result.returncode}); see its output above"
                )
    return b


def missing_path(p: Path) -> bool:
    return not (p.is_file() and (p.parent / ".complete").is_file())


def missing(b: Binaries | NodeBinaries) -> list[Path]:
    return [p for p in map(Path, vars(b).values()) if missing_path(p)]


def ensure(v: versions.Versions | None = None) -> Binaries:
    """Return the cached binaries, building the missing ones first (progress goes to stderr)."""
    b = expected(v)
    if not missing(b):
        return b
    print(f"armada-bridge: building the missing binaries into {cache_root()}", file=sys.stderr)
    result = subprocess.run(["bash", str(BUILD_SCRIPT)], stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed (exit {result.returncode}); its output above names the step"
        )
    still = missing(b)
    if still:
        raise RuntimeError(f"{BUILD_SCRIPT} finished but these are missing: {', '.join(map(str, still))}")
    return b


def ensure_kubectl(v: versions.Versions | None = None) -> Binaries:
    """The pinned kubectl (all that `--provider kind` uses of `Binaries`), building the pinned
    Kubernetes binaries first when it is missing (`hack/build-binaries.sh kubernetes`)."""
    b = expected(v)
    if b.kubectl.is_file() and (b.kubectl.parent / ".complete").is_file():
        return b
    print(f"armada-bridge: building the pinned kubectl into {cache_root()}", file=sys.stderr)
    result = subprocess.run(["bash", str(BUILD_SCRIPT), "kubernetes"], stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0 or not b.kubectl.is_file():
        raise RuntimeError(
            f"{BUILD_SCRIPT} kubernetes failed (exit {result.returncode}); see its output above"
        )
    return b
