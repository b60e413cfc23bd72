"""The Dask image, under the name the Dask operator's own DaskCluster and DaskJob samples give every
container (dask-kubernetes 2026.3.0, dask_kubernetes/operator/controller/tests/resources/*.yaml, the
ones tests/e2e/test_dask.py and manifests/samples/daskjob.yaml apply): `dask-kubernetes:dev`
(`docker.io/library/dask-kubernetes:dev`; the samples say `imagePullPolicy: IfNotPresent`).

Debian's Python 3 with `dask[distributed]` from PyPI at the release of that operator: the samples'
containers run `dask-scheduler`, `dask-worker --name $(DASK_WORKER_NAME) ...` and the job runner's
`python -c "... Client(...)"`, and distributed 2026.6.0 dropped the `dask-scheduler` and
`dask-worker` commands (only `dask scheduler` and `dask worker` are left). Like upstream's
ghcr.io/dask/dask, the containers' arguments run under tini and as root.
"""

from __future__ import annotations

from pathlib import Path

from devenv.images.oci import ImageConfig
from devenv.images.rootfs import PATH, DebianRoot

# dask-kubernetes (hack/versions.env DASK_KUBERNETES_VERSION=2026.3.0) released with Dask 2026.3.0,
# the last release whose distributed still has the `dask-scheduler`/`dask-worker` its samples run.
DASK_VERSION = "2026.3.0"
NAME = "dask-kubernetes:dev"
PACKAGES = ("python3", "python-is-python3", "ca-certificates", "netbase", "procps", "tini")

CONFIG = ImageConfig(
    env={"PATH": PATH, "LANG": "C.UTF-8"},
    entrypoint=["/usr/bin/tini", "-g", "--"],
    cmd=["python3"],
)

ROOT = DebianRoot(PACKAGES, pip=(f"dask[distributed]=={DASK_VERSION}",))


def inputs() -> tuple[str, ...]:
    return (*ROOT.inputs(), Path(__file__).read_text())
