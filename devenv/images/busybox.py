"""A root filesystem of BusyBox (Debian's `busybox-static`) and its applets, as linked names of
/bin/busybox, with the few files every image has: the `busybox` image's whole root, and the base of
kubectl-delivery's (kubectl_delivery.py)."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

from devenv.images.rootfs import add_dir, add_file, require

BASE_FILES = {
    "etc/passwd": b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": b"root:x:0:\nnogroup:x:65534:\n",
    "etc/hostname": b"localhost\n",
}
PACKAGE = "busybox-static"


def write(out: tarfile.TarFile) -> None:
    """BusyBox, its applets and the base files into the root tarball `out`."""
    busybox = require("busybox", PACKAGE)
    applets = subprocess.run(
        [busybox, "--list-full"], capture_output=True, text=True, check=True
    ).stdout.split()
    for d in ("bin", "sbin", "usr", "usr/bin", "usr/sbin", "etc", "root", "proc", "sys", "dev"):
        add_dir(out, d)
    add_dir(out, "tmp", 0o1777)
    for name, data in BASE_FILES.items():
        add_file(out, name, data)
    add_file(out, "bin/busybox", Path(busybox).read_bytes(), 0o755)
    for applet in applets:
        if applet == "bin/busybox":
            continue
        link = tarfile.TarInfo(applet)
        link.type, link.linkname = tarfile.SYMTYPE, "/bin/busybox"
        out.addfile(link)
