"""The PyTorch image, `armada-bridge.local/pytorch:1.13-bookworm`, a name of our own: the training
operator's PyTorchJob sample names an image whose program downloads MNIST, which no pod here can
reach, so tests give the sample this image and its program instead.

Debian bookworm's `python3-torch` (PyTorch 1.13, CPU only, with torch.distributed and gloo), not
PyPI's: PyPI's Linux wheels of torch pull in gigabytes of CUDA libraries. No recommends (Debian's
recommend a compiler and libtorch-dev), no documentation. The program at PROGRAM
(hack/images/pytorch/allreduce.py) is this repository's own: it meets the other ranks through what
the training operator sets in each pod (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK), all-reduces
their rank numbers and trains a little with DistributedDataParallel, printing both; beside it the
programs' shared rendezvous.py (framework.py), with which it waits for MASTER_ADDR to resolve.
"""

from __future__ import annotations

from pathlib import Path

from devenv.images.framework import PROGRAM_DIR, SHARED
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH, SOURCES, DebianRoot, install

TORCH_VERSION = "1.13"  # bookworm's python3-torch 1.13.1
NAME = f"armada-bridge.local/pytorch:{TORCH_VERSION}-bookworm"
PACKAGES = ("python3-torch",)
SOURCE = SOURCES / "pytorch" / "allreduce.py"
PROGRAM = f"{PROGRAM_DIR}/allreduce.py"

CONFIG = ImageConfig(env={"PATH": PATH, "LANG": "C.UTF-8"}, cmd=["python3", PROGRAM])


def _lay_out(work: Path, root: Path) -> None:
    install(root, PROGRAM, SOURCE)
    install(root, f"{PROGRAM_DIR}/{SHARED.name}", SHARED)  # what it shares with the others


ROOT = DebianRoot(PACKAGES, customize=_lay_out)


def inputs() -> tuple[str, ...]:
    """The root's packages, the program, what it shares and this module (the layout)."""
    return (*ROOT.inputs(), SOURCE.read_text(), SHARED.read_text(), Path(__file__).read_text())
