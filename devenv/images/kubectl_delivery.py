"""The image of the init container that training-operator v1.9.4 adds to an MPIJob (kubeflow.org/v1)
launcher, `ghcr.io/kubeflow/training-v1/kubectl-delivery:latest` (its `--mpi-kubectl-delivery-image`
default; the container says `imagePullPolicy: IfNotPresent`, so the imported image is used).

Laid out as upstream's build/images/kubectl-delivery/Dockerfile lays it out, on BusyBox in place of
Alpine (busybox.py): kubectl at /bin/kubectl, entrypoint `/bin/sh -c`, command
`cp /bin/kubectl /opt/kube/kubectl`. The init container copies it into the launcher's emptyDir at
/opt/kube, from where the operator's /etc/mpi/kubexec.sh runs `kubectl exec <worker> -- /bin/sh -c
...` for each process `mpirun` starts: whatever the launcher's image, hence static. kubectl is the
pinned release's (hack/build-binaries.sh; upstream's is v1.30.7, downloaded).
"""

from __future__ import annotations

import tarfile
from pathlib import Path

from devenv import binaries
from devenv.images import busybox
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH, add_file
from devenv.images.static import content_inputs

IMAGE = "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
KUBECTL = "usr/bin/kubectl"  # upstream's /bin/kubectl: /bin is usr/bin (busybox.py)
TARGET = "/opt/kube"  # the operator's kubectlMountPath (its TARGET_DIR)
CONFIG = ImageConfig(
    env={"PATH": PATH}, entrypoint=["/bin/sh", "-c"], cmd=[f"cp /bin/kubectl {TARGET}/kubectl"]
)


def _kubectl() -> Path:
    return binaries.ensure_kubectl().kubectl


def inputs() -> tuple[str, ...]:
    return (
        *busybox.inputs(),
        *content_inputs({KUBECTL: (_kubectl(), 0o755)}),
        Path(__file__).read_text(),
    )


def build(work: Path, rootfs: Path) -> None:
    with tarfile.open(rootfs, "w") as out:
        busybox.write(out, work)
        add_file(out, KUBECTL, _kubectl().read_bytes(), 0o755)
