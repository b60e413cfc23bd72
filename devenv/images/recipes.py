"""The images the real nodes of the dev environment run, built without a registry from Debian's
packages and this repository's sources, each under the name the pods that use it already write.

- `pause`: the pod sandbox (hack/images/pause.c, built static): containerd's `sandbox_image`.
- `busybox`: the tests' shell image (Debian's `busybox`, its applets and the C library: busybox.py),
  as `busybox` (`docker.io/library/busybox:latest`).
- `alpine`: `alpine:3.10`, the image the training operator gives a PyTorchJob worker's init
  container (`--pytorch-init-container-image`'s default), which waits with `sh`, `seq` and
  `nslookup` for the master's Service: Debian's essential packages (dash as `sh`) and BusyBox, its
  `nslookup` answering as Alpine 3.10's does for that loop (hack/images/alpine-nslookup.sh).
- `python`: Debian's Python 3 with CA certificates (mmdebstrap), for programs the tests run inside
  containers.
- `argoexec`: Argo Workflows' executor (`quay.io/argoproj/argoexec:<ARGO_WORKFLOWS_VERSION>`), the
  static binary hack/build-operators.sh builds beside the workflow controller (argoexec.py).
- `mpi-pi`: the MPI operator's pi example (`mpioperator/mpi-pi:openmpi`): Debian's OpenMPI and
  OpenSSH, user mpiuser (uid 1000), hack/images/mpi-pi.c at /home/mpiuser/pi (mpi.py).
- `spark`: `docker.io/apache/spark:4.0.4`, Spark from PyPI's pyspark on Debian's Java 17, with our
  own entrypoint and pi programs where the Spark operator's samples look (spark.py).
- `ray`: `rayproject/ray:2.52.0`, Debian's Python 3 with `ray[default]`, as KubeRay's pods run it
  (ray.py).
- `dask`: `dask-kubernetes:dev`, the name of the Dask operator's own samples: Debian's Python 3 with
  `dask[distributed]` (dask.py).
- `pytorch`: `armada-bridge.local/pytorch:1.13-bookworm`, Debian's PyTorch (CPU, gloo) with our own
  distributed program, for PyTorchJobs on real nodes (pytorch.py).
- `tensorflow`, `xgboost`, `paddle`, `mxnet`, `jax`: `armada-bridge.local/<key>:<version>-bookworm`,
  Debian's Python 3 with the framework's CPU wheels from PyPI (tensorflow-cpu 2.21, xgboost-cpu 3.2,
  paddlepaddle 3.3, mxnet 1.9.1 with numpy 1.23.5, jax and jaxlib 0.10) and a distributed program of
  our own wired as the training operator wires each job kind (framework.py and one module each),
  for TFJob, XGBoostJob, PaddleJob, MXJob and JAXJob on real nodes.
- `kubectl-delivery`: `ghcr.io/kubeflow/training-v1/kubectl-delivery:latest`, the init container
  the training operator adds to an MPIJob v1 launcher: BusyBox and the pinned kubectl, which it
  copies into the launcher for the operator's kubexec.sh (kubectl_delivery.py).
- `bridge`: the bridge's own runtime image, what the Dockerfile describes, under the name the Helm
  chart runs (`ghcr.io/armadaproject/armada-bridge:<tag>`): Debian's Python 3.11 and openssl, this
  repository's wheel without the local environment, its dependencies from PyPI (runtime.py).
- `kube-scheduler`: `registry.k8s.io/kube-scheduler:<KUBERNETES_VERSION>`, the pinned release's
  static binary on a distroless-like root, the image of the chart's second scheduler
  (kube_scheduler.py).

Debian root filesystems with PyPI packages are built by rootfs.DebianRoot.
"""

from __future__ import annotations

import hashlib
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from devenv.images import (
    argoexec,
    busybox,
    dask,
    jax,
    kube_scheduler,
    kubectl_delivery,
    mpi,
    mxnet,
    paddle,
    pytorch,
    ray,
    runtime,
    spark,
    tensorflow,
    xgboost,
)
from devenv.images.framework import FrameworkImage
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import (
    DEBIAN_SUITE,
    DPKG_EXCLUDES,
    PATH,
    SOURCES,
    DebianRoot,
    add_file,
    install,
    require,
    run,
)


@dataclass(frozen=True)
class Recipe:
    key: str  # short name: `hack/build-images.sh KEY`, the cache file's stem
    name: str  # the image name pods write
    config: ImageConfig
    build: Callable[[Path, Path], None]  # (work directory, rootfs tar to write)
    inputs: Callable[[], tuple[str, ...]] = tuple  # what the content depends on, read when asked
    # Made from what hack/build-binaries.sh or hack/build-operators.sh builds (built first when
    # missing): the others can be built beside those builds.
    from_builds: bool = False
    # Imported into the real nodes only when asked (Environment.ensure_node_images): the training
    # frameworks' gigabytes, unpacked on every node, would fill a disk with two environments.
    on_demand: bool = False

    def digest(self) -> str:
        """Changes with everything the image is made from (the key of its cache entry)."""
        parts = [self.key, self.name, json.dumps(self.config.document(""), sort_keys=True), *self.inputs()]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def _pause(work: Path, rootfs: Path) -> None:
    binary = work / "pause"
    run([require("gcc", "gcc"), "-static", "-O2", "-o", str(binary), str(SOURCES / "pause.c")])
    with tarfile.open(rootfs, "w") as out:
        add_file(out, "pause", binary.read_bytes(), 0o755)


def _busybox(work: Path, rootfs: Path) -> None:
    with tarfile.open(rootfs, "w") as out:
        busybox.write(out, work)


# The training operator's PyTorch init container image (`--pytorch-init-container-image`'s default).
ALPINE = "alpine:3.10"
ALPINE_NSLOOKUP = SOURCES / "alpine-nslookup.sh"


def _alpine_nslookup(work: Path, root: Path) -> None:
    """`nslookup` as the init container's loop needs it (a BusyBox shell would run its own applet
    whatever PATH says: Debian's dash is the image's `sh`)."""
    install(root, "/usr/bin/nslookup", ALPINE_NSLOOKUP, 0o755)


ALPINE_ROOT = DebianRoot(("busybox",), customize=_alpine_nslookup)


PYTHON_PACKAGES = ("python3", "ca-certificates")


def _framework(image: FrameworkImage) -> Recipe:
    return Recipe(image.key, image.name, image.config, image.root.build, image.inputs, on_demand=True)


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
            busybox.inputs,
        ),
        Recipe(
            "alpine",
            ALPINE,
            ImageConfig(env={"PATH": PATH}, cmd=["/bin/sh"]),
            ALPINE_ROOT.build,
            lambda: (*ALPINE_ROOT.inputs(), ALPINE_NSLOOKUP.read_text()),
        ),
        Recipe(
            "python",
            "armada-bridge.local/python:3-bookworm",
            ImageConfig(env={"PATH": PATH, "LANG": "C.UTF-8"}, cmd=["python3"]),
            DebianRoot(PYTHON_PACKAGES).build,
            lambda: (DEBIAN_SUITE, *PYTHON_PACKAGES, *DPKG_EXCLUDES),
        ),
        Recipe("spark", spark.NAME, spark.CONFIG, spark.ROOT.build, spark.inputs),
        Recipe("ray", ray.NAME, ray.CONFIG, ray.ROOT.build, ray.inputs),
        Recipe("dask", dask.NAME, dask.CONFIG, dask.ROOT.build, dask.inputs),
        Recipe(
            "argoexec", argoexec.IMAGE, argoexec.CONFIG, argoexec.build, argoexec.inputs, from_builds=True
        ),
        Recipe("mpi-pi", mpi.IMAGE, mpi.CONFIG, mpi.build, mpi.inputs),
        Recipe("pytorch", pytorch.NAME, pytorch.CONFIG, pytorch.ROOT.build, pytorch.inputs),
        *(_framework(m.IMAGE) for m in (tensorflow, xgboost, paddle, mxnet, jax)),
        Recipe(
            "kubectl-delivery",
            kubectl_delivery.IMAGE,
            kubectl_delivery.CONFIG,
            kubectl_delivery.build,
            kubectl_delivery.inputs,
            from_builds=True,
        ),
        Recipe("bridge", runtime.NAME, runtime.CONFIG, runtime.build, runtime.inputs),
        Recipe(
            "kube-scheduler",
            kube_scheduler.IMAGE,
            kube_scheduler.CONFIG,
            kube_scheduler.build,
            kube_scheduler.inputs,
            from_builds=True,
        ),
    )
}


def started_with() -> tuple[str, ...]:
    """The images (recipe keys) remote real nodes start with: all but those imported on demand."""
    return tuple(key for key, recipe in RECIPES.items() if not recipe.on_demand)
