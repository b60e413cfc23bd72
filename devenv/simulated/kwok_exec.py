"""The kubelet port of a dev remote cluster's KWOK nodes: kwok-exec (hack/kwok-exec), one process
per remote cluster.

KWOK v0.8.0 serves `exec` itself, but reports a non-zero exit as an internal error and never ends
the process's stdin. kwok-exec serves exec with the kubelet's streaming library, running commands
as local processes in one directory, and passes every other kubelet path to KWOK's own server. The
cluster's KWOK nodes advertise its port as their kubelet port (KWOK's `--node-port`), so the remote
kube-apiserver calls it for every pod of the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from devenv.components import Component
from devenv.ports import LOOPBACK

if TYPE_CHECKING:
    from devenv.processes.control_plane import ControlPlane


def name(cluster: str) -> str:
    """The process's name for the supervisor, and its port's name among the environment's ports."""
    return f"kwok-exec-{cluster}"


def kwokctl_args(port: int) -> list[str]:
    """kwokctl --extra-args for the cluster: its KWOK nodes' kubelet port is kwok-exec's (KWOK
    still serves on kwokControllerPort, its `--server-address`)."""
    return [f"kwok-controller=node-port={port}"]


def component(cluster: ControlPlane, port: int, workdir: Path) -> Component:
    """kwok-exec for `cluster` on `port`: exec runs in `workdir`, the rest goes to the cluster's
    KWOK; it presents the certificate KWOK serves with (kube-apiserver does not verify kubelets'
    certificates unless --kubelet-certificate-authority is set, and kwokctl sets none)."""
    pki = cluster.workdir / "pki"
    return Component(
        name=name(cluster.name),
        argv=[
            str(cluster.binaries.kwok_exec),
            f"--listen={LOOPBACK}:{port}",
            f"--upstream=http://{LOOPBACK}:{cluster.port('kwokControllerPort')}",
            f"--workdir={workdir}",
            f"--tls-cert-file={pki / 'admin.crt'}",
            f"--tls-private-key-file={pki / 'admin.key'}",
        ],
        ready_url=f"https://{LOOPBACK}:{port}/healthz",  # KWOK's, through kwok-exec
    )
