"""Argo Workflows' executor image, `quay.io/argoproj/argoexec:<version>`: the name the pinned workflow
controller writes into every workflow pod (its `init` and `wait` containers run `argoexec init|wait`).

Laid out as upstream's Dockerfile (target `argoexec`, on distroless/static) lays it out: the static
binary at /bin/argoexec, the entrypoint `argoexec`, user root (only the `-nonroot` variant sets USER
8737), ssh known hosts and nsswitch.conf from the module's hack/, MIME types and CA certificates
(here the host's Debian `media-types` and `ca-certificates`). `argoexec init` copies the binary into
the pod's emptyDir at /var/run/argo, from where the main container runs its command under `argoexec
emissary`, in whatever image that container has: hence static (CGO_ENABLED=0) and readable by every
user. hack/build-operators.sh builds the binary beside the workflow controller, keyed by version.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
from collections.abc import Mapping
from pathlib import Path

from armada_bridge import versions
from armada_bridge.dev.images.oci import ImageConfig
from armada_bridge.dev.images.rootfs import PATH, add_dir, add_file
from armada_bridge.dev.operators.operators import BUILD_SCRIPT, catalog

BINARY = "argoexec"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# What distroless/static's image config says, and the entrypoint upstream's Dockerfile adds.
CONFIG = ImageConfig(env={"PATH": PATH, "SSL_CERT_FILE": CA_BUNDLE}, entrypoint=[BINARY])
# distroless/static's accounts.
ACCOUNTS = {
    "etc/passwd": b"root:x:0:0:root:/root:/sbin/nologin\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
    b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    "etc/group": b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
}
# Directories besides those of the files: /tmp and /var/run/argo are the pod's emptyDirs at run time.
DIRS = {"root": 0o700, "tmp": 0o1777, "var/run/argo": 0o755}


def image(version: str) -> str:
    return f"quay.io/argoproj/argoexec:{version}"


def files(argo_dir: Path) -> dict[str, tuple[Path, int]]:
    """The image's files (path in the image -> source, mode), from the argo operator's cache
    directory and the host."""
    return {
        f"bin/{BINARY}": (argo_dir / BINARY, 0o755),
        "etc/ssh/ssh_known_hosts": (argo_dir / "module" / "hack" / "ssh_known_hosts", 0o644),
        "etc/nsswitch.conf": (argo_dir / "module" / "hack" / "nsswitch.conf", 0o644),
        "etc/mime.types": (Path("/etc/mime.types"), 0o644),
        CA_BUNDLE.lstrip("/"): (Path(CA_BUNDLE), 0o644),
    }


def missing_host_files(layout: Mapping[str, tuple[Path, int]]) -> list[str]:
    return [str(src) for src, _ in layout.values() if not src.is_file()]


def content_inputs(layout: Mapping[str, tuple[Path, int]]) -> tuple[str, ...]:
    """Each file's path, mode and content hash: what the image is made of."""
    out = []
    for path, (src, mode) in sorted(layout.items()):
        h = hashlib.sha256()
        with open(src, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        out.append(f"{path} {mode:o} {h.hexdigest()}")
    return tuple(out)


def write_rootfs(layout: Mapping[str, tuple[Path, int]], rootfs: Path) -> None:
    with tarfile.open(rootfs, "w") as out:
        dirs = {str(p) for path in layout for p in Path(path).parents if str(p) != "."}
        dirs |= {str(p) for d in DIRS for p in Path(d).parents if str(p) != "."}
        for d in sorted(dirs | set(DIRS)):
            add_dir(out, d, DIRS.get(d, 0o755))
        for name, data in ACCOUNTS.items():
            add_file(out, name, data)
        for path, (src, mode) in sorted(layout.items()):
            add_file(out, path, src.read_bytes(), mode)


def built_argo_dir() -> Path:
    """The argo operator's cache directory with argoexec in it, built first when it is not."""
    d = catalog()["argo"].dir
    if not (d / f".complete-{BINARY}").is_file():
        print(f"[images] building {BINARY}: hack/build-operators.sh argo (first run only)", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "argo"], stdout=subprocess.DEVNULL, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{BUILD_SCRIPT} argo failed (exit {result.returncode}); see its output above")
    layout = files(d)
    if missing := missing_host_files(layout):
        raise RuntimeError(
            f"argoexec image: missing {', '.join(missing)} (Debian's media-types and ca-certificates)"
        )
    return d


def inputs() -> tuple[str, ...]:
    return content_inputs(files(built_argo_dir()))


def build(work: Path, rootfs: Path) -> None:
    write_rootfs(files(built_argo_dir()), rootfs)


IMAGE = image(versions.load().operators["argo"])
