"""The images the real nodes of the dev environment run, built without a registry from Debian's
packages and this repository's sources, each under the name the pods that use it already write.

- `pause`: the pod sandbox (hack/images/pause.c, built static): containerd's `sandbox_image`.
- `busybox`: the tests' shell image (Debian's `busybox-static` and its applets), as `busybox`
  (`docker.io/library/busybox:latest`).
- `python`: Debian's Python 3 with CA certificates (mmdebstrap), for programs the tests run inside
  containers.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from armada_bridge import versions
from armada_bridge.dev.images.oci import ImageConfig

SOURCES = versions.REPO_ROOT / "hack" / "images"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEBIAN_SUITE = "bookworm"
# Left out of Debian root filesystems: documentation, manuals and translations.
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*")


@dataclass(frozen=True)
class Recipe:
    key: str  # short name: `hack/build-images.sh KEY`, the cache file's stem
    name: str  # the image name pods write
    config: ImageConfig
    build: Callable[[Path, Path], None]  # (work directory, rootfs tar to write)
    inputs: Callable[[], tuple[str, ...]] = tuple  # what the content depends on, read when asked

    def digest(self) -> str:
        """Changes with everything the image is made from (the key of its cache entry)."""
        parts = [self.key, self.name, json.dumps(self.config.document(""), sort_keys=True), *self.inputs()]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _run(argv: list[str], cwd: Path | None = None) -> None:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"`{' '.join(argv[:3])} ...` failed (exit {r.returncode}):\n{tail}")


def _dir(out: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    out.addfile(info)


def _file(out: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    out.addfile(info, io.BytesIO(data))


def _package_version(package: str) -> str:
    r = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
    )
    return r.stdout.strip() if r.returncode == 0 else "missing"


def _require(command: str, package: str) -> str:
    path = shutil.which(command)
    if path is None:
        raise RuntimeError(f"{command} not found: install Debian's {package} (hack/setup.sh does)")
    return path


def _pause(work: Path, rootfs: Path) -> None:
    binary = work / "pause"
    _run([_require("gcc", "gcc"), "-static", "-O2", "-o", str(binary), str(SOURCES / "pause.c")])
    with tarfile.open(rootfs, "w") as out:
        _file(out, "pause", binary.read_bytes(), 0o755)


BASE_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
    "etc/hostname": b"localhost\n",
}


def _busybox(work: Path, rootfs: Path) -> None:
    busybox = _require("busybox", "busybox-static")
    applets = subprocess.run(
        [busybox, "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    with tarfile.open(rootfs, "w") as out:
        for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys", "dev"):
            _dir(out, d)
        _dir(out, "tmp", 0o1777)
        for name, data in BASE_FILES.items():
            _file(out, name, data)
        _file(out, "bin/busybox", Path(busybox).read_bytes(), 0o755)
        for applet in applets:
            if applet == "bin/busybox":
                continue
            link = tarfile.TarInfo(applet)
            link.type, link.linkname = tarfile.SYMTYPE, "/bin/busybox"
            out.addfile(link)


def _debian(packages: tuple[str, ...]) -> Callable[[Path, Path], None]:
    def build(work: Path, rootfs: Path) -> None:
        argv = [
            _require("mmdebstrap", "mmdebstrap"),
            "--mode=root",
            "--variant=essential",
            "--quiet",
            f"--include={','.join(packages)}",
            *(f"--dpkgopt=path-exclude={p}" for p in DPKG_EXCLUDES),
            "--customize-hook=rm -rf $1/var/cache/apt/* $1/var/lib/apt/lists/*",
            DEBIAN_SUITE,
            str(rootfs),
        ]
        _run(argv, cwd=work)

    return build


PYTHON_PACKAGES = ("python3", "ca-certificates")

RECIPES = {
    r.key: r
    for r in (
        Recipe(
            "pause",
            "registry.k8s.io/pause:3.10",
            ImageConfig(entrypoint=["/pause"]),
            _pause,
            lambda: (SOURCES.joinpath("pause.c").read_text(),),
        ),
        Recipe(
            "busybox",
            "busybox",
            ImageConfig(env={"PATH": PATH}, cmd=["sh"]),
            _busybox,
            lambda: (_package_version("busybox-static"),),
        ),
        Recipe(
            "python",
            "armada-bridge.local/python:3-bookworm",
            ImageConfig(env={"PATH": PATH, "LANG": "C.UTF-8"}, cmd=["python3"]),
            _debian(PYTHON_PACKAGES),
            lambda: (DEBIAN_SUITE, *PYTHON_PACKAGES, *DPKG_EXCLUDES),
        ),
    )
}
