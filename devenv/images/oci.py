"""A root filesystem tarball as a one-layer OCI image archive: the OCI image layout in a tar
(`oci-layout`, `index.json`, `blobs/`), which `ctr images import` and `podman load` read, with the
docker-archive `manifest.json` beside it naming the same blobs, as `docker save` (25 and later)
writes them: Docker's classic image store loads only that (its `docker load` opens manifest.json
and nothing else); its containerd image store, like containerd, reads the OCI layout. Each format
carries the image's full name where its loader looks for it."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
# The annotation containerd's importer reads an image's full name from.
CONTAINERD_NAME = "io.containerd.image.name"
# The OCI layout's own name of an image: podman's oci-archive loader takes it as the image's whole
# name (containers/common libimage), so it is the full name too, not only the tag (containerd
# reads it only when CONTAINERD_NAME is missing).
REF_NAME = "org.opencontainers.image.ref.name"
# The docker-archive manifest (`docker load`), beside the OCI layout's index.json.
DOCKER_MANIFEST = "manifest.json"


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an image's configuration (what the Dockerfile's ENV, ENTRYPOINT, CMD,
    USER and WORKDIR say)."""

    env: dict[str, str] = field(default_factory=dict)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    user: str = ""
    workdir: str = "/"

    def document(self, diff_id: str) -> dict[str, Any]:
        config: dict[str, Any] = {
            "Env": [f"{k}={v}" for k, v in self.env.items()],
            "WorkingDir": self.workdir,
        }
        if self.entrypoint:
            config["Entrypoint"] = self.entrypoint
        if self.cmd:
            config["Cmd"] = self.cmd
        if self.user:
            config["User"] = self.user
        return {
            "architecture": "amd64",
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }


def full_name(name: str) -> str:
    """The name as containerd and kubelet normalise it: `busybox` is `docker.io/library/busybox:latest`."""
    first, _, rest = name.partition("/")
    if not rest or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if rest else f"docker.io/library/{name}"
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last or "@" in last else f"{name}:latest"


def _sha256_file(path: Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return f"sha256:{h.hexdigest()}", size


def _add_bytes(out: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    out.addfile(info, io.BytesIO(data))


def write_archive(rootfs_tar: Path, name: str, config: ImageConfig, target: Path) -> str:
    """Write `target`: the image `name` (normalised by :func:`full_name`) whose one layer is
    `rootfs_tar`; return the manifest's digest."""
    layer_digest, layer_size = _sha256_file(rootfs_tar)
    config_blob = json.dumps(config.document(layer_digest), sort_keys=True).encode()
    config_digest = f"sha256:{hashlib.sha256(config_blob).hexdigest()}"
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": len(config_blob)},
        "layers": [{"mediaType": LAYER_TYPE, "digest": layer_digest, "size": layer_size}],
    }
    manifest_blob = json.dumps(manifest, sort_keys=True).encode()
    manifest_digest = f"sha256:{hashlib.sha256(manifest_blob).hexdigest()}"
    ref = full_name(name)
    index = {
        "schemaVersion": 2,
        "manifests": [
            {
                "mediaType": MANIFEST_TYPE,
                "digest": manifest_digest,
                "size": len(manifest_blob),
                "annotations": {CONTAINERD_NAME: ref, REF_NAME: ref},
            }
        ],
    }
    docker = [
        {
            "Config": f"blobs/sha256/{config_digest[7:]}",
            "RepoTags": [ref],
            "Layers": [f"blobs/sha256/{layer_digest[7:]}"],
        }
    ]
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(target, "w") as out:
        _add_bytes(out, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        _add_bytes(out, "index.json", json.dumps(index, sort_keys=True).encode())
        _add_bytes(out, DOCKER_MANIFEST, json.dumps(docker).encode())
        _add_bytes(out, f"blobs/sha256/{config_digest[7:]}", config_blob)
        _add_bytes(out, f"blobs/sha256/{manifest_digest[7:]}", manifest_blob)
        out.add(rootfs_tar, arcname=f"blobs/sha256/{layer_digest[7:]}")
    return manifest_digest


def image_name(archive: Path) -> str:
    """The full image name an archive written by :func:`write_archive` carries (its index comes
    before the blobs: only the archive's start is read)."""
    with tarfile.open(archive, "r|") as t:
        for member in t:
            if member.name == "index.json":
                f = t.extractfile(member)
                index = json.loads(f.read()) if f else {}
                return str(index["manifests"][0]["annotations"][CONTAINERD_NAME])
    raise ValueError(f"{archive}: no index.json")
