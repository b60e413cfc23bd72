"""A root filesystem of BusyBox (Debian's `busybox`) and its applets, as linked names of
/usr/bin/busybox, with the C library it links and the few files every image has: the `busybox`
image's whole root, and the base of kubectl-delivery's (kubectl_delivery.py).

Debian trixie's dynamic `busybox` 1.37, not bookworm's 1.35 (static or not): 1.35's `wget` dies
(SIGSEGV) whenever a connection with a timeout (`-T`) fails, and a static glibc program cannot load
the C library's name service modules, so names would not resolve; users debugging a pod reach for
both. The two packages are unpacked alone (mmdebstrap's `extract` variant: no other package, no
maintainer script), /bin, /sbin and /lib merged into /usr as trixie lays them out; the C library's
character set converters and the packages' documentation are left out.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

from devenv.images.rootfs import add_dir, add_file, mmdebstrap, run

SUITE = "trixie"
PACKAGES = ("busybox", "libc6")
BASE_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
    "etc/hostname": b"localhost\n",
}
DIRECTORIES = ("usr", "usr/bin", "usr/sbin", "usr/lib", "etc", "root", "proc", "sys", "dev")
MERGED = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
LEFT_OUT = ("usr/share", "usr/lib/x86_64-linux-gnu/gconv", "var", "etc/ld.so.conf.d")


def inputs() -> tuple[str, ...]:
    return (SUITE, *PACKAGES, *LEFT_OUT)


def write(out: tarfile.TarFile, work: Path) -> None:
    """BusyBox, the C library, the applets and the base files into the root tarball `out`
    (`work`: a directory to unpack the packages in)."""
    root = work / "busybox-root"
    run(mmdebstrap(PACKAGES, str(root), directory=True, variant="extract", suite=SUITE), cwd=work)
    for path in LEFT_OUT:
        shutil.rmtree(root / path, ignore_errors=True)
    for merged, target in MERGED.items():
        if not (root / merged).exists():
            (root / merged).symlink_to(target)
    applets = subprocess.run(
        ["chroot", str(root), "/usr/bin/busybox", "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    for d in DIRECTORIES:
        add_dir(out, d)
    add_dir(out, "tmp", 0o1777)
    for name, data in BASE_FILES.items():
        add_file(out, name, data)
    taken = set()
    for found in sorted(root.rglob("*")):
        name = str(found.relative_to(root))
        if name in BASE_FILES or name in DIRECTORIES or name == "tmp":
            continue
        out.add(str(found), arcname=name, recursive=False)
        taken.add(name)
    for applet in applets:
        first, _, rest = applet.partition("/")
        path = f"{MERGED.get(first, first)}/{rest}"  # through no link of the root's
        if path in taken:
            continue
        entry = tarfile.TarInfo(path)
        entry.type, entry.linkname = tarfile.SYMTYPE, "/usr/bin/busybox"
        out.addfile(entry)
        taken.add(path)
