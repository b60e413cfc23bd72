"""The Ray image, under the name KubeRay's samples (v1.6.2) and manifests/samples/raycluster.yaml
give every Ray container: `rayproject/ray:2.52.0` (`docker.io/rayproject/ray:2.52.0`).

Debian's Python 3 and C++ runtime (Ray's native parts) with `ray[default]` from PyPI (the dashboard,
job submission and the autoscaler KubeRay runs beside the head), and what KubeRay's generated
containers run besides Ray: `/bin/bash -c` (or `-lc`) with `ulimit -n 65536; ray start ...`, the init
container's `ray health-check` loop, and the readiness/liveness probes `wget ... | grep success`.
As upstream: user `ray` (uid 1000, group `users`, gid 100), HOME and working directory /home/ray;
`python` is python3. Ray is installed under /usr/local, on the PATH a login shell sets too.
"""

from __future__ import annotations

from pathlib import Path

from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH, DebianRoot, add_user

RAY_VERSION = "2.52.0"  # the rayVersion of KubeRay's sample
NAME = f"rayproject/ray:{RAY_VERSION}"
UID = 1000
GID = 100  # Debian's `users`, the upstream image's group
HOME = "/home/ray"
PACKAGES = ("python3", "python-is-python3", "libstdc++6", "ca-certificates", "netbase", "procps", "wget")

CONFIG = ImageConfig(
    env={"PATH": PATH, "LANG": "C.UTF-8", "HOME": HOME},
    cmd=["/bin/bash"],
    user=str(UID),
    workdir=HOME,
)


def _lay_out(work: Path, root: Path) -> None:
    add_user(root, "ray", UID, GID, HOME)


ROOT = DebianRoot(PACKAGES, pip=(f"ray[default]=={RAY_VERSION}",), customize=_lay_out)


def inputs() -> tuple[str, ...]:
    return (*ROOT.inputs(), Path(__file__).read_text())
