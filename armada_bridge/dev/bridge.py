"""What `dev up` installs in the front cluster and runs beside it: CRDs, namespace, bridge processes."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

from armada_bridge import versions
from armada_bridge.dev import extender_setup, vkubelet_setup
from armada_bridge.dev.binaries import Binaries
from armada_bridge.dev.names import FRONT

if TYPE_CHECKING:
    from armada_bridge.dev.environment import Environment

CRDS_DIR = versions.REPO_ROOT / "manifests" / "crds"
DEV_MANIFESTS_DIR = versions.REPO_ROOT / "manifests" / "dev"
PRIORITY_CLASSES = versions.REPO_ROOT / "manifests" / "extender" / "priorityclasses.yaml"


def kubectl(
    bins: Binaries, kubeconfig: Path, *args: str, timeout: float = 60, stdin: str | None = None
) -> str:
    r = subprocess.run(
        [str(bins.kubectl), "--kubeconfig", str(kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def apply_dir(bins: Binaries, kubeconfig: Path, directory: Path) -> None:
    if any(directory.glob("*.yaml")):
        kubectl(bins, kubeconfig, "apply", "--server-side", "--force-conflicts", "-f", str(directory))


def install_crds(bins: Binaries, kubeconfig: Path, timeout: float = 60) -> None:
    """Apply every CRD the bridge ships and wait until the API server serves them."""
    if not any(CRDS_DIR.glob("*.yaml")):
        return
    apply_dir(bins, kubeconfig, CRDS_DIR)
    wait_established(bins, kubeconfig, ["-f", str(CRDS_DIR)], timeout)


def wait_established(bins: Binaries, kubeconfig: Path, files: list[str], timeout: float = 60) -> None:
    """Wait until the CRDs in `files` (kubectl -f arguments) are served. `kubectl wait` fails at
    once on a CRD whose status has no conditions yet, so it is asked again until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kubectl(bins, kubeconfig, "wait", "--for=condition=Established", "--timeout=20s", *files)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def install(env: Environment, bins: Binaries) -> None:
    """Install the bridge into the front cluster of `env` and start its processes."""
    front = env.kubeconfig(FRONT)
    install_crds(bins, front)
    apply_dir(bins, front, DEV_MANIFESTS_DIR)
    vkubelet_setup.setup(env, bins)
    kubectl(bins, front, "apply", "--server-side", "--force-conflicts", "-f", str(PRIORITY_CLASSES))
    extender_setup.setup(env, bins)
