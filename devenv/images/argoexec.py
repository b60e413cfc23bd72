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

import subprocess
import sys
from pathlib import Path

from devenv import versions
from devenv.images import static
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH
from devenv.operators.catalog import catalog
from devenv.operators.install import BUILD_SCRIPT

BINARY = "argoexec"
# What distroless/static's image config says, and the entrypoint upstream's Dockerfile adds.
CONFIG = ImageConfig(env={"PATH": PATH, "SSL_CERT_FILE": static.CA_BUNDLE}, entrypoint=[BINARY])
# Directories besides those of the files: /tmp and /var/run/argo are the pod's emptyDirs at run time.
DIRS = {**static.DIRS, "var/run/argo": 0o755}


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
        static.CA_BUNDLE.lstrip("/"): (Path(static.CA_BUNDLE), 0o644),
    }


def built_argo_dir() -> Path:
    """The argo operator's cache directory with argoexec in it, built first when it is not."""
    d = catalog()["argo"].dir
    if not (d / f".complete-{BINARY}").is_file():
        print(f"[images] building {BINARY}: hack/build-operators.sh argo (first run only)", file=sys.stderr)
        result = subprocess.run(["bash", str(BUILD_SCRIPT), "argo"], stdout=subprocess.DEVNULL, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"{BUILD_SCRIPT} argo failed (exit {result.returncode}); see its output above")
    layout = files(d)
    if missing := static.missing_host_files(layout):
        raise RuntimeError(
            f"argoexec image: missing {', '.join(missing)} (Debian's media-types and ca-certificates)"
        )
    return d


def inputs() -> tuple[str, ...]:
    return static.content_inputs(files(built_argo_dir()))


def build(work: Path, rootfs: Path) -> None:
    static.write_rootfs(files(built_argo_dir()), rootfs, DIRS)


IMAGE = image(versions.load().operators["argo"])
