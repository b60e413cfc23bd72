"""The bridge's own runtime image, the one the Dockerfile describes, built without Docker: one image
for the extender and the vkubelet (`python -m extender ...`, `python -m vkubelet ...`), under the
name the Helm chart runs by default (its values.yaml's `image.repository:image.tag`), so that an
archive loaded into a node (`ctr images import`) or an engine (`docker load`, `podman load`) is
what the chart's pods start.

The Dockerfile's contents, from Debian's packages instead of the python:3.11-slim base: bookworm's
Python 3.11 as `python` (python-is-python3) with CA certificates, as the base has them; the
Dockerfile's own `apt-get install` (openssl: the vkubelet makes a self-signed serving certificate
when none is mounted; socat: relay pods run it); this repository's wheel built without the local environment and the demo
(as the Dockerfile's build stage removes them), with its runtime dependencies from PyPI; the
account `bridge` (uid 65532, no home, nologin) the image runs as; `ENTRYPOINT ["python", "-m"]`,
`CMD ["extender"]`. Unlike the base image it has no pip, setuptools or wheel. armada-client
requires grpcio-tools (and it setuptools) to be installed, though nothing in the image runs them
(the bridge uses the package's generated stubs; grpcio only imports grpc_tools when it is there):
both are removed after the install, in the Dockerfile as here (`UNUSED`).
tests/unit/test_dev_images_runtime.py reads the Dockerfile and keeps the two equal.

The image is keyed by the content of what goes into the wheel: changes to the local environment,
the tests or the docs do not rebuild it.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path

import yaml

from devenv import versions
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import (
    MERGED_USR_HOOKS,
    PATH,
    DebianRoot,
    add_user,
    run,
    site_packages,
)

DOCKERFILE = versions.REPO_ROOT / "Dockerfile"
CHART_VALUES = versions.REPO_ROOT / "manifests" / "helm" / "armada-bridge" / "values.yaml"
PYTHON_VERSION = "3.11"  # the Dockerfile's python:3.11-slim; Debian bookworm's python3
# What the python:<version>-slim base brings that the bridge uses: Python, as `python`, CA
# certificates (the remote clusters' API servers), and the C++ runtime (grpcio's extension, for
# Armada's API, needs libstdc++.so.6; the base has it as apt's dependency).
BASE_PACKAGES = ("python3", "python-is-python3", "ca-certificates", "libstdc++6")
APT_PACKAGES = ("openssl", "socat")  # the Dockerfile's `apt-get install`
PACKAGES = (*BASE_PACKAGES, *APT_PACKAGES)
# Removed, as the python:<version>-slim base removes its own: the tests of Python and of the
# packages installed from PyPI.
TEST_DIRS = ("test", "tests", "idle_test")
# What the wheel is built from (the Dockerfile's COPY into its build stage): the runtime library, the
# components and the CLI (the chart's uninstall hook runs it); not the local environment (devenv/).
PROJECT = ("pyproject.toml", "README.md", "armada_bridge", "extender", "vkubelet", "armada_api", "cli")
# Installed as requirements, never run (above): left out, relative to site-packages.
UNUSED = (
    "grpc_tools",
    "grpcio_tools-*.dist-info",
    "setuptools",
    "setuptools-*.dist-info",
    "pkg_resources",
    "_distutils_hack",
    "distutils-precedence.pth",
)
USER = "bridge"
UID = 65532
ENTRYPOINT = ["python", "-m"]
CMD = ["extender"]

CONFIG = ImageConfig(env={"PATH": PATH, "LANG": "C.UTF-8"}, entrypoint=ENTRYPOINT, cmd=CMD, user=str(UID))


def chart_image() -> str:
    """The image the Helm chart runs by default."""
    image = yaml.safe_load(CHART_VALUES.read_text())["image"]
    return f"{image['repository']}:{image['tag']}"


NAME = chart_image()


def project_files() -> list[str]:
    """The repository's files the wheel is built from (paths relative to the repository), sorted."""
    found = []
    for entry in PROJECT:
        path = versions.REPO_ROOT / entry
        for f in [path] if path.is_file() else path.rglob("*"):
            rel = f.relative_to(versions.REPO_ROOT).as_posix()
            if f.is_dir() or "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            found.append(rel)
    return sorted(found)


def _wheel(work: Path) -> Path:
    """The project's wheel, built by the host's pip from a copy of `project_files()`."""
    source = work / "project"
    for rel in project_files():
        target = source / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(versions.REPO_ROOT / rel, target)
    dist = work / "dist"
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", f"--wheel-dir={dist}", str(source)])
    (wheel,) = dist.glob("*.whl")
    return wheel


def _lay_out(work: Path, root: Path) -> None:
    packages = site_packages(root)
    if packages.parent.name != f"python{PYTHON_VERSION}":
        raise RuntimeError(
            f"Debian's python3 is {packages.parent.name}, the Dockerfile's python{PYTHON_VERSION}"
        )
    for lib in (root / "usr" / "lib" / packages.parent.name, packages):
        tests = [d for d in lib.rglob("*") if d.name in TEST_DIRS and d.is_dir()]
        for d in tests:
            shutil.rmtree(d, ignore_errors=True)  # one inside another is gone with it
    for pattern in UNUSED:
        for found in packages.glob(pattern):
            if found.is_dir():
                shutil.rmtree(found)
            else:
                found.unlink()
    add_user(root, USER, UID, UID, f"/home/{USER}", group=USER, shell="/usr/sbin/nologin", make_home=False)


def _root(wheel: Path | None = None) -> DebianRoot:
    """The image's Debian root, with the project's `wheel` installed; merged /usr without Perl."""
    pip = (str(wheel),) if wheel else ()
    return DebianRoot(PACKAGES, pip=pip, customize=_lay_out, hook_dirs=(MERGED_USR_HOOKS,))


def build(work: Path, rootfs: Path) -> None:
    """Write the image's root filesystem as the tarball `rootfs`, working in `work`."""
    _root(_wheel(work)).build(work, rootfs)


def inputs() -> tuple[str, ...]:
    """The Debian root's inputs, the project's files (their content) and this module (the layout)."""
    h = hashlib.sha256()
    for rel in project_files():
        h.update(rel.encode() + b"\0" + (versions.REPO_ROOT / rel).read_bytes() + b"\0")
    return (*_root().inputs(), f"project:{h.hexdigest()}", Path(__file__).read_text())
