"""Images of static binaries on a distroless/static-like root, laid out as the upstream images
that use gcr.io/distroless/static are: its accounts (root, nobody, nonroot), CA certificates (here
the host's Debian `ca-certificates`), the binaries and the few files and directories an image adds.
Used by argoexec.py and kube_scheduler.py."""

from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Mapping
from pathlib import Path

from devenv.images.rootfs import add_dir, add_file

CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
# distroless/static's accounts.
ACCOUNTS = {
    "etc/passwd": b"root:x:0:0:root:/root:/sbin/nologin\n"
    b"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
    b"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
    "etc/group": b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n",
}
# distroless/static's directories that hold no file: root's home and /tmp.
DIRS = {"root": 0o700, "tmp": 0o1777}
# A layout: path in the image -> (source file, mode).
Layout = Mapping[str, tuple[Path, int]]


def missing_host_files(layout: Layout) -> list[str]:
    return [str(src) for src, _ in layout.values() if not src.is_file()]


def content_inputs(layout: Layout) -> tuple[str, ...]:
    """Each file's path, mode and content hash: what the image is made of."""
    out = []
    for path, (src, mode) in sorted(layout.items()):
        h = hashlib.sha256()
        with open(src, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        out.append(f"{path} {mode:o} {h.hexdigest()}")
    return tuple(out)


def write_rootfs(layout: Layout, rootfs: Path, dirs: Mapping[str, int] = DIRS) -> None:
    """The root as a tarball: the directories (`dirs` with their modes, the others 0755), the
    accounts, the layout's files."""
    with tarfile.open(rootfs, "w") as out:
        parents = {str(p) for path in [*layout, *dirs] for p in Path(path).parents if str(p) != "."}
        for d in sorted(parents | set(dirs)):
            add_dir(out, d, dirs.get(d, 0o755))
        for name, data in ACCOUNTS.items():
            add_file(out, name, data)
        for path, (src, mode) in sorted(layout.items()):
            add_file(out, path, src.read_bytes(), mode)
