"""What the image recipes build root filesystems with: a host tool run with its output kept for the
error; files written straight into a tarball; Debian's packages laid out by mmdebstrap, with its
hooks (`debian`), or with PyPI packages installed into its Python and a last step of the recipe's
own (`DebianRoot`), written as the tarball that is an image's one layer.

PyPI packages are fetched (and, where PyPI has only sources, built) by the host's pip, with its cache
and network settings, then installed offline into the root by that same pip run inside it: the image
gets no pip, no compiler and no download cache of its own.
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from devenv import versions

SOURCES = versions.REPO_ROOT / "hack" / "images"
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEBIAN_SUITE = "bookworm"
# Left out of Debian root filesystems: documentation, manuals and translations.
DPKG_EXCLUDES = ("/usr/share/doc/*", "/usr/share/man/*", "/usr/share/locale/*", "/usr/share/info/*")
# mmdebstrap's hooks that merge /usr with directory symlinks, as debootstrap does, and install
# usr-is-merged: without them bookworm's essential init-system-helpers brings the usrmerge package,
# and with it all of Perl (50 MiB; perl-base stays).
MERGED_USR_HOOKS = "/usr/share/mmdebstrap/hooks/merged-usr"
# Where pip puts packages in a Debian root (Debian's python3 installs under /usr/local), as a glob.
SITE_PACKAGES = "usr/local/lib/python3*/dist-packages"
# Inside the root while pip installs: the wheels and the pip that installs them (removed after).
_STAGE = "/tmp/pip-install"


def run(argv: Sequence[str], cwd: Path | None = None) -> None:
    r = subprocess.run(list(argv), cwd=cwd, capture_output=True, text=True, check=False)
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


def install(root: Path, path: str, source: Path, mode: int = 0o644) -> None:
    """`source`'s content at `path` (absolute in the image) in the root directory `root`, with `mode`."""
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(mode)


def site_packages(root: Path) -> Path:
    """The root's own site-packages directory (where `pip` put the recipe's packages)."""
    found = sorted(root.glob(SITE_PACKAGES))
    if len(found) != 1:
        raise RuntimeError(f"expected one {SITE_PACKAGES} in {root}, found {[str(p) for p in found]}")
    return found[0]


def add_user(
    root: Path,
    name: str,
    uid: int,
    gid: int,
    home: str,
    group: str | None = None,
    shell: str = "/bin/bash",
    make_home: bool = True,
) -> None:
    """The account `name` (uid, primary group gid, `shell`, `home`, made and owned by it when
    `make_home`) in the root; `group`, when given, is a new group of that name with id gid."""
    etc = root / "etc"
    if group is not None:
        with open(etc / "group", "a") as f:
            f.write(f"{group}:x:{gid}:\n")
    with open(etc / "passwd", "a") as f:
        f.write(f"{name}:x:{uid}:{gid}:{name}:{home}:{shell}\n")
    if make_home:
        path = root / home.lstrip("/")
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, uid, gid)


def pip_install_argv(requirements: Sequence[str]) -> list[str]:
    """The command run inside the root: the staged pip installs the staged wheels, nothing else."""
    return [
        "env",
        "-i",  # none of the host's PIP_* settings
        f"PATH={PATH}",
        "HOME=/root",
        "LANG=C.UTF-8",
        f"PYTHONPATH={_STAGE}/tool",
        "python3",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-index",
        f"--find-links={_STAGE}/wheels",
        "--no-cache-dir",
        "--break-system-packages",  # Debian's python3 is "externally managed"; this root is ours
        "--root-user-action=ignore",
        "--disable-pip-version-check",
        "--no-warn-script-location",
        *requirements,
    ]


def staged(requirement: str) -> str:
    """`requirement` as the root's pip sees it: a wheel file of the host's (a project of ours, built
    beforehand) is its staged copy, which the host's `pip wheel` put beside the others."""
    return f"{_STAGE}/wheels/{Path(requirement).name}" if requirement.endswith(".whl") else requirement


def _stage_pip(requirements: Sequence[str], stage: Path) -> None:
    """`stage/wheels`: every wheel `requirements` need; `stage/tool/pip`: the host's pip, to run inside."""
    spec = importlib.util.find_spec("pip")
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{sys.executable} has no pip: the images' PyPI packages are fetched with it")
    wheels = stage / "wheels"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", f"--wheel-dir={wheels}", *requirements])
    shutil.copytree(
        Path(spec.origin).parent, stage / "tool" / "pip", ignore=shutil.ignore_patterns("__pycache__")
    )


def _mounts_below(root: Path) -> list[str]:
    prefix = f"{root}/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])  # e.g. \040
        if point.startswith(prefix):
            points.append(point)
    return sorted(points, reverse=True)  # the deepest first


def mmdebstrap(
    packages: Sequence[str],
    target: str,
    hooks: Sequence[str] = (),
    skip: Sequence[str] = (),
    directory: bool = False,
    hook_dirs: Sequence[str] = (),
    variant: str = "essential",
    suite: str = DEBIAN_SUITE,
) -> list[str]:
    """The command that lays out Debian `DEBIAN_SUITE`'s essential packages and `packages` (without
    documentation) at `target` (a tarball, a directory when `directory`, or /dev/null for a root
    that only its hooks use), then runs `hooks` (mmdebstrap's customize hooks: `$1` is the root;
    `upload`, `download`, ...); `skip`: steps of mmdebstrap's to leave out (its --skip, e.g.
    `cleanup/run`); `hook_dirs`: directories of mmdebstrap's hook scripts (e.g. MERGED_USR_HOOKS);
    `variant` "extract": `packages` alone, unpacked (no essential package, no maintainer script);
    `suite`: another Debian release's."""
    return [
        require("mmdebstrap", "mmdebstrap"),
        "--mode=root",
        f"--variant={variant}",
        "--quiet",
        *(["--format=directory"] if directory else []),
        *(f"--hook-dir={d}" for d in hook_dirs),
        f"--include={','.join(packages)}",
        *(f"--dpkgopt=path-exclude={p}" for p in DPKG_EXCLUDES),
        # Packages that make their manuals alternatives (OpenJDK's java.1) fail to configure when
        # the excluded manuals' directory is missing.
        '--essential-hook=mkdir -p "$1/usr/share/man/man1"',
        *(f"--customize-hook={h}" for h in hooks),
        *(f"--skip={s}" for s in skip),
        '--customize-hook=rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*',
        suite,
        target,
    ]


def debian(
    packages: Sequence[str], hooks: Sequence[str] = (), skip: Sequence[str] = ()
) -> Callable[[Path, Path], None]:
    """A recipe's build: Debian's `packages` as the root filesystem, `hooks` run in the work directory."""

    def build(work: Path, rootfs: Path) -> None:
        run(mmdebstrap(packages, str(rootfs), hooks, skip), cwd=work)

    return build


Customize = Callable[[Path, Path], None]
"""A recipe's last step: (work directory, the root filesystem's directory); runs on the host, as root."""


@dataclass(frozen=True)
class DebianRoot:
    """A Debian root filesystem: `packages` (mmdebstrap's essential variant plus these, without
    recommends), then the PyPI `pip` requirements (or wheel files of the host's, with what they
    require) installed into its python3, then `customize`; `hook_dirs`: mmdebstrap's hook
    directories to lay it out with."""

    packages: tuple[str, ...]
    pip: tuple[str, ...] = ()
    customize: Customize | None = None
    hook_dirs: tuple[str, ...] = ()

    def inputs(self) -> tuple[str, ...]:
        """What the root is made from (the recipe adds what its `customize` reads)."""
        return (
            DEBIAN_SUITE,
            *self.packages,
            *DPKG_EXCLUDES,
            *(f"pip:{r}" for r in self.pip),
            *(f"hook-dir:{d}" for d in self.hook_dirs),
        )

    def build(self, work: Path, rootfs: Path) -> None:
        """Write the root filesystem as the tarball `rootfs`, working in `work`."""
        hooks = []
        if self.pip:
            stage = work / "pip-install"
            _stage_pip(self.pip, stage)
            hooks += [
                f'cp -a {shlex.quote(str(stage))} "$1{_STAGE}"',
                f'chroot "$1" {shlex.join(pip_install_argv([staged(r) for r in self.pip]))}',
                f'rm -rf "$1{_STAGE}"',
            ]
        root = work / "root"
        argv = mmdebstrap(self.packages, str(root), hooks, directory=True, hook_dirs=self.hook_dirs)
        try:
            run(argv, cwd=work)
            if self.customize is not None:
                self.customize(work, root)
            # Numeric owners: the root's own accounts, not the host's names for their ids.
            archive = [f"--file={rootfs}", "--numeric-owner", "--sort=name", f"--directory={root}", "."]
            run(["tar", "--create", *archive])
        finally:
            # mmdebstrap unmounts what it mounted for its hooks; should a mount be left, the work
            # directory's removal must not descend into it.
            for point in _mounts_below(root):
                subprocess.run(["umount", "--lazy", point], check=False)
