"""Images of one machine-learning framework and one distributed program of ours, for the training
operator's job kinds on real nodes (tensorflow.py, xgboost.py, paddle.py, mxnet.py, jax.py; pytorch.py
came first and keeps its own layout): Debian's Python 3 (mmdebstrap, no recommends, no
documentation) with the framework's CPU wheels from PyPI, the program at
/opt/armada-bridge/<its file name> (hack/images/<key>/), run as `python3 PROGRAM`, under a name of
our own (`armada-bridge.local/<key>:<version>-bookworm`): the operator's samples name images whose
programs download data sets, which no pod here can reach, so the tests give their pods this image
and its program instead, with the wiring the operator sets in each pod left as it is.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH, SOURCES, DebianRoot, install, site_packages

PROGRAM_DIR = "/opt/armada-bridge"
# Beside each program: what they share (waiting for the job's names to resolve).
SHARED = SOURCES / "framework" / "rendezvous.py"
# libstdc++6: the C++ runtime the wheels' native parts link (manylinux leaves it to the system);
# netbase: /etc/services and /etc/protocols, which sockets read.
BASE_PACKAGES = ("python3", "libstdc++6", "netbase")


@dataclass(frozen=True)
class FrameworkImage:
    key: str  # the recipe's key and hack/images/<key>/, where the program is
    version: str  # the framework's, in the image's tag
    pip: tuple[str, ...]  # PyPI requirements (pinned)
    program: str  # the program's file name under hack/images/<key>/
    module: str  # the recipe module's file, part of what the image is made of
    packages: tuple[str, ...] = BASE_PACKAGES
    # Paths under the root's site-packages that nothing runs (headers, tests): removed.
    unused: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"armada-bridge.local/{self.key}:{self.version}-bookworm"

    @property
    def source(self) -> Path:
        return SOURCES / self.key / self.program

    @property
    def path(self) -> str:
        """Where the program is in the image."""
        return f"{PROGRAM_DIR}/{self.program}"

    @property
    def config(self) -> ImageConfig:
        return ImageConfig(
            env={"PATH": PATH, "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1", **self.env},
            cmd=["python3", self.path],
        )

    @property
    def root(self) -> DebianRoot:
        return DebianRoot(self.packages, pip=self.pip, customize=self._lay_out)

    def _lay_out(self, work: Path, root: Path) -> None:
        install(root, self.path, self.source)
        install(root, f"{PROGRAM_DIR}/{SHARED.name}", SHARED)
        if self.unused:
            packages = site_packages(root)
            for path in self.unused:
                target = packages / path
                if target.is_dir():
                    shutil.rmtree(target)
                else:
                    target.unlink(missing_ok=True)

    def inputs(self) -> tuple[str, ...]:
        """The root's packages, the program and the recipe's module (its layout)."""
        return (
            *self.root.inputs(),
            *(f"unused:{p}" for p in self.unused),
            self.source.read_text(),
            SHARED.read_text(),
            Path(self.module).read_text(),
            Path(__file__).read_text(),
        )
