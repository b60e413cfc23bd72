"""The front API at port 443 of the pod network's gateway.

Remote pods reach the front API at the address and port the vkubelet puts in their environment
(KUBERNETES_SERVICE_HOST/PORT: here the gateway and the front kube-apiserver's own port). Some
in-cluster clients call `https://kubernetes.default.svc` instead, port 443 (Spark's driver); the
vkubelet points those names at the same address (vkubelet.tokens), and this relay (Debian's socat)
takes port 443 there to the front kube-apiserver, as a production front API answers on 443.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from devenv.components import Component

HTTPS_PORT = 443
NAME = "front-api-443"


def component(gateway: str, api_port: int, state_dir: Path) -> Component:
    """The relay; its messages go to a file in `state_dir`, which its command line so names (the
    environment finds its processes by that)."""
    socat = shutil.which("socat")
    if socat is None:
        raise RuntimeError("socat not found: apt-get install socat (hack/setup.sh does), or --real-nodes 0")
    return Component(
        name=NAME,
        argv=[
            socat,
            "-lf",
            str(state_dir / f"{NAME}.log"),
            f"TCP-LISTEN:{HTTPS_PORT},bind={gateway},fork,reuseaddr",
            f"TCP:127.0.0.1:{api_port}",
        ],
        ready_url=f"https://{gateway}:{HTTPS_PORT}/readyz",
        follows_code=False,
    )
