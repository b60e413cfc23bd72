"""What `dev up` installs in the front cluster and runs beside it: CRDs, namespace, bridge processes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from devenv import versions
from devenv.binaries import Binaries
from devenv.bridge import extender_setup, vkubelet_setup
from devenv.clients import kubectl, wait_established
from devenv.names import FRONT

if TYPE_CHECKING:
    from devenv.base import BaseEnvironment

CRDS_DIR = versions.REPO_ROOT / "manifests" / "crds"
DEV_MANIFESTS_DIR = versions.REPO_ROOT / "manifests" / "dev"
PRIORITY_CLASSES = versions.REPO_ROOT / "manifests" / "extender" / "priorityclasses.yaml"
# Only the core's decisions run: the API server refuses the rest (docs/security.md).
ADMISSION_POLICY = versions.REPO_ROOT / "manifests" / "extender" / "admission-policy.yaml"
# What users of `armada-bridge queues|clusters|gangs|why` may read with rights in a namespace only.
VIEWER_RBAC = versions.REPO_ROOT / "manifests" / "extender" / "viewer-rbac.yaml"


def apply(bins: Binaries, kubeconfig: Path, path: Path) -> None:
    """Server-side apply of the bridge's own manifests (a file, or a directory's), taking their
    fields back from whoever changed them."""
    kubectl(bins, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(path))


def apply_dir(bins: Binaries, kubeconfig: Path, directory: Path) -> None:
    if any(directory.glob("*.yaml")):
        apply(bins, kubeconfig, directory)


def install_crds(bins: Binaries, kubeconfig: Path, timeout: float = 60) -> None:
    """Apply every CRD the bridge ships and wait until the API server serves them."""
    if not any(CRDS_DIR.glob("*.yaml")):
        return
    apply_dir(bins, kubeconfig, CRDS_DIR)
    wait_established(bins, kubeconfig, ["-f", str(CRDS_DIR)], timeout)


def install(env: BaseEnvironment, bins: Binaries) -> None:
    """Install the bridge into the front cluster of `env` and start its processes."""
    front = env.kubeconfig(FRONT)
    install_crds(bins, front)
    apply_dir(bins, front, DEV_MANIFESTS_DIR)
    apply(bins, front, ADMISSION_POLICY)
    apply(bins, front, VIEWER_RBAC)
    vkubelet_setup.setup(env, bins)
    apply(bins, front, PRIORITY_CLASSES)
    extender_setup.setup(env, bins)
