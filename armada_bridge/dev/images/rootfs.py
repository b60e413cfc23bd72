"""Root filesystems for the dev environment's images, and the host commands that make them: Debian's
packages laid out by mmdebstrap, or files written straight into a tarball."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from collections.abc import Callable, Sequence
from pathlib import Path

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEBIAN_SUITE = "bookworm"
# Left out of Debian root filesystems: documentation, manuals and translations.
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*")


def run(argv: list[str], cwd: Path | None = None) -> None:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-20:])
        raise RuntimeError(f"`{' '.join(argv[:3])} ...` failed (exit {r.returncode}):\n{tail}")


def require(command: str, package: str) -> str:
    path = shutil.which(command)
    if path is None:
        raise RuntimeError(f"{command} not found: install Debian's {package} (hack/setup.sh does)")
    return path


def package_version(package: str) -> str:
    r = subprocess.run(
        ["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True, check=False
    )
    return r.stdout.strip() if r.returncode == 0 else "missing"


def add_dir(out: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    out.addfile(info)


def add_file(out: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    out.addfile(info, io.BytesIO(data))


def mmdebstrap(
    packages: Sequence[str], target: str, hooks: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[str]:
    """The command that lays out Debian `DEBIAN_SUITE`'s essential packages and `packages` (without
    documentation) at `target` (a tarball, or /dev/null for a root that only its hooks use), then
    runs `hooks` (mmdebstrap's customize hooks: `$1` is the root; `upload`, `download`, ...);
    `skip`: steps of mmdebstrap's to leave out (its --skip, e.g. `cleanup/run`)."""
    return [
        require("mmdebstrap", "mmdebstrap"),
        "--mode=root",
        "--variant=essential",
        "--quiet",
        f"--include={','.join(packages)}",
        *(f"--dpkgopt=path-exclude={p}" for p in DPKG_EXCLUDES),
        *(f"--customize-hook={h}" for h in hooks),
        *(f"--skip={s}" for s in skip),
        "--customize-hook=rm -rf $1/var/cache/apt/* $1/var/lib/apt/lists/*",
        DEBIAN_SUITE,
        target,
    ]


def debian(
    packages: Sequence[str], hooks: Sequence[str] = (), skip: Sequence[str] = ()
) -> Callable[[Path, Path], None]:
    """A recipe's build: Debian's `packages` as the root filesystem, `hooks` run in the work directory."""

    def build(work: Path, rootfs: Path) -> None:
        run(mmdebstrap(packages, str(rootfs), hooks, skip), cwd=work)

    return build
