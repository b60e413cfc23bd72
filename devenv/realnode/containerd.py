"""One containerd per real node (Debian's containerd + runc), with a configuration, socket, root and
state of its own under the node's directory: nothing shared with the host or another node."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from devenv.components import Component
from devenv.network.podnet import CNI_BIN_DIR

SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"  # the `pause` recipe (devenv.images.recipes)
NAMESPACE = "k8s.io"  # containerd's namespace for CRI (kubelet's) images and containers


class ContainerdError(RuntimeError):
    pass


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ContainerdError(f"{name} not found: install Debian's containerd and runc (hack/setup.sh does)")
    return path


def config(node_dir: Path, stream_port: int) -> str:
    """containerd's configuration (version 2) for the node whose files live in `node_dir`.

    `restrict_oom_score_adj`: this kind of machine lacks CAP_SYS_RESOURCE, so nothing may lower an
    OOM score below the runtime's own; without it every sandbox fails to start."""
    d = node_dir
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""version = 2
root = "{d / "containerd-root"}"
state = "{d / "containerd-state"}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket(d)}"

[ttrpc]
  address = "{socket(d)}.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "containerd-opt"}"

[{cri}]
  sandbox_image = "{SANDBOX_IMAGE}"
  stream_server_address = "127.0.0.1"
  stream_server_port = "{stream_port}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  BinaryName = "{binary("runc")}"
  Root = "{d / "runc"}"
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{d / "cni"}"
  max_conf_num = 1
"""


def socket(node_dir: Path) -> Path:
    return node_dir / "containerd.sock"


def component(name: str, node_dir: Path, stream_port: int, netns: Path) -> Component:
    """The node's containerd, in its cluster's network namespace `netns` (its CNI plugins, and the
    streaming server kubelet calls, there)."""
    cfg = node_dir / "containerd.toml"
    text = config(node_dir, stream_port)
    if not cfg.is_file() or cfg.read_text() != text:
        cfg.write_text(text)
    return Component(
        name=f"containerd-{name}",
        argv=[binary("containerd"), "--config", str(cfg)],
        follows_code=False,
        inputs=text,
        netns=netns,
    )


def ctr(node_dir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """containerd's own client against the node's containerd, in kubelet's namespace."""
    return subprocess.run(
        [binary("ctr"), "--address", str(socket(node_dir)), "--namespace", NAMESPACE, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def import_images(node_dir: Path, archives: Mapping[Path, str]) -> list[Path]:
    """Import the OCI archives (each with the full name of its image) the node does not have: a
    stamp in `node_dir` lists those imported (an archive's name carries its content's digest), and
    an image gone from the runtime since, say removed by kubelet, is imported again. Return the
    ones imported."""
    stamp = node_dir / "images-imported"
    have = set(stamp.read_text().split("\n")) if stamp.is_file() else set()
    listed = ctr(node_dir, "images", "ls", "-q")
    present = set(listed.stdout.split()) if listed.returncode == 0 else set()
    done = []
    for archive in archives:
        if str(archive) in have and archives[archive] in present:
            continue
        r = ctr(node_dir, "images", "import", str(archive))
        if r.returncode != 0:
            raise ContainerdError(
                f"importing {archive.name} into {node_dir.name}: {(r.stderr or r.stdout).strip()}"
            )
        have.add(str(archive))
        done.append(archive)
        stamp.write_text("\n".join(sorted(have)))
    return done
