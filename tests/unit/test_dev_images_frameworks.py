"""The images the training operator's other job kinds run on real nodes (devenv/images/framework.py
and one module each: TensorFlow, XGBoost, PaddlePaddle, MXNet, JAX), and the kubectl-delivery image
of its MPIJob v1 launcher: each under its name, its framework pinned, its program reading what the
operator sets in the pods, laid out where the image runs it, and keyed by what it is made of."""

from __future__ import annotations

import dataclasses
import importlib.util
import socket
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from devenv.images import framework, jax, kubectl_delivery, mxnet, paddle, recipes, tensorflow, xgboost
from devenv.images.framework import FrameworkImage
from devenv.images.oci import full_name
from devenv.images.recipes import RECIPES

MODULES = {m.IMAGE.key: m for m in (tensorflow, xgboost, paddle, mxnet, jax)}
# What the training operator sets in each pod (v1.9.4; MXJob: v1.8.1), read by each program.
WIRING = {
    "tensorflow": ('os.environ["TF_CONFIG"]',),
    "xgboost": tuple(f'os.environ["{v}"]' for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")),
    # PADDLE_MASTER, PADDLE_NNODES and PADDLE_JOB_ID are read by paddle.distributed.launch.
    "paddle": ("dist.init_parallel_env()",),
    "mxnet": ('os.environ["DMLC_ROLE"]', 'os.environ["DMLC_PS_ROOT_URI"]', 'mx.kv.create("dist_sync")'),
    "jax": tuple(
        f'os.environ["{v}"]'
        for v in ("COORDINATOR_ADDRESS", "COORDINATOR_PORT", "NUM_PROCESSES", "PROCESS_ID")
    ),
}


@pytest.mark.parametrize("key", sorted(MODULES))
def test_each_framework_image_is_ours_pinned_and_runs_its_program(key: str) -> None:
    image: FrameworkImage = MODULES[key].IMAGE
    recipe = RECIPES[key]
    assert (recipe.name, recipe.config) == (image.name, image.config)
    assert recipe.name == f"armada-bridge.local/{key}:{image.version}-bookworm"
    assert full_name(recipe.name) == recipe.name  # ours: no registry's default applies
    # PyPI's CPU wheels, each pinned; Debian's Python and C++ runtime beneath.
    assert image.pip and all("==" in r for r in image.pip)
    assert image.pip[0].split("==")[1].startswith(image.version)
    assert {"python3", "libstdc++6"} <= set(image.root.packages)
    assert recipe.config.cmd == ["python3", image.path] and image.path.startswith(framework.PROGRAM_DIR)
    assert recipe.config.env["PYTHONUNBUFFERED"] == "1"
    source = image.source.read_text()
    compile(source, str(image.source), "exec")  # a syntax error shows here, not in a long e2e
    for wiring in WIRING[key]:
        assert wiring in source, (key, wiring)
    assert "from rendezvous import wait_for_names" in source or key == "paddle"


def test_the_framework_images_leave_out_cuda_and_pin_what_their_framework_needs() -> None:
    assert tensorflow.IMAGE.pip == ("tensorflow-cpu==2.21.0",)
    assert xgboost.IMAGE.pip == ("xgboost-cpu==3.2.0",)
    # mxnet 1.9.1 imports numpy.bool, which numpy 1.24 removed (Debian's is 1.24.2).
    assert mxnet.IMAGE.pip == ("mxnet==1.9.1", "numpy==1.23.5")
    assert jax.IMAGE.pip == ("jax==0.10.2", "jaxlib==0.10.2")
    assert paddle.IMAGE.pip == ("paddlepaddle==3.3.1",)


@pytest.mark.parametrize("key", sorted(MODULES))
def test_the_program_and_what_it_shares_are_laid_out_and_unused_parts_removed(
    key: str, tmp_path: Path
) -> None:
    image: FrameworkImage = MODULES[key].IMAGE
    root = tmp_path / "root"
    packages = root / "usr/local/lib/python3.11/dist-packages"
    for path in image.unused:
        (packages / path).mkdir(parents=True)
        (packages / path / "header.h").write_text("")
    (packages / "kept").mkdir(parents=True)
    assert image.root.customize is not None
    image.root.customize(tmp_path / "work", root)
    program = root / image.path.lstrip("/")
    assert program.read_text() == image.source.read_text() and program.stat().st_mode & 0o777 == 0o644
    shared = program.parent / "rendezvous.py"
    assert shared.read_text() == framework.SHARED.read_text()
    assert not any((packages / path).exists() for path in image.unused) and (packages / "kept").is_dir()


@pytest.mark.parametrize("change", ["program", "shared", "pip", "module"])
def test_a_framework_digest_follows_what_it_is_made_of_and_differs_from_the_others(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image, before = jax.IMAGE, RECIPES["jax"].digest()
    assert before not in {RECIPES[k].digest() for k in MODULES if k != "jax"}
    changed = tmp_path / "jax" / image.program
    changed.parent.mkdir()
    if change == "program":  # SOURCES/<key>/<program>
        changed.write_text(image.source.read_text() + "\n# changed\n")
        monkeypatch.setattr(framework, "SOURCES", tmp_path)
    elif change == "shared":
        changed.write_text(framework.SHARED.read_text() + "\n# changed\n")
        monkeypatch.setattr(framework, "SHARED", changed)
    elif change == "pip":
        image = dataclasses.replace(image, pip=("jax==0.10.1",))
    else:
        changed.write_text(Path(image.module).read_text() + "\n# changed\n")
        image = dataclasses.replace(image, module=str(changed))
    assert recipes._framework(image).digest() != before


# The programs' shared helper, imported from its source as the images run it.


def _rendezvous() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rendezvous", framework.SHARED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rendezvous_waits_until_each_name_resolves(monkeypatch: pytest.MonkeyPatch) -> None:
    rendezvous = _rendezvous()
    asked: list[str] = []
    pending = {"job-worker-0": 2}

    def getaddrinfo(host: str, port: object) -> list[object]:
        asked.append(host)
        if pending.get(host, 0) > 0:
            pending[host] -= 1
            raise socket.gaierror(-2, "Name or service not known")
        return []

    monkeypatch.setattr(rendezvous.socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(rendezvous.time, "sleep", lambda _: None)
    rendezvous.wait_for_names("job-worker-0.ns.svc:2222", "job-worker-0", "job-worker-1.ns.svc:2222")
    # Each host once it resolves, ports dropped, duplicates asked for once.
    assert asked == [
        "job-worker-0.ns.svc",
        "job-worker-0",
        "job-worker-0",
        "job-worker-0",
        "job-worker-1.ns.svc",
    ]


def test_rendezvous_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    rendezvous = _rendezvous()

    def never(host: str, port: object) -> list[object]:
        raise socket.gaierror(-2, "Name or service not known")

    monkeypatch.setattr(rendezvous.socket, "getaddrinfo", never)
    monkeypatch.setattr(rendezvous.time, "sleep", lambda _: None)
    with pytest.raises(socket.gaierror):
        rendezvous.wait_for_names("missing:1", timeout=0)


# kubectl-delivery


def test_kubectl_delivery_is_the_training_operators_default_laid_out_as_upstream() -> None:
    recipe = RECIPES["kubectl-delivery"]
    # training-operator v1.9.4's --mpi-kubectl-delivery-image default (pkg/config/config.go).
    assert recipe.name == kubectl_delivery.IMAGE == "ghcr.io/kubeflow/training-v1/kubectl-delivery:latest"
    # build/images/kubectl-delivery/Dockerfile: ENTRYPOINT ["/bin/sh", "-c"], CMD ["cp ..."].
    assert recipe.config.entrypoint == ["/bin/sh", "-c"]
    assert recipe.config.cmd == ["cp /bin/kubectl /opt/kube/kubectl"]
    assert recipe.from_builds  # kubectl is hack/build-binaries.sh's


def test_kubectl_delivery_has_busybox_and_the_pinned_kubectl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubectl = tmp_path / "kubectl"
    kubectl.write_bytes(b"\x7fELF kubectl")

    class Built:
        pass

    built = Built()
    built.kubectl = kubectl  # type: ignore[attr-defined]
    monkeypatch.setattr(kubectl_delivery.binaries, "ensure_kubectl", lambda: built)
    before = RECIPES["kubectl-delivery"].digest()
    rootfs = tmp_path / "rootfs.tar"
    kubectl_delivery.build(tmp_path, rootfs)
    with tarfile.open(rootfs) as t:
        members = {m.name: m for m in t.getmembers()}
        assert t.extractfile("usr/bin/kubectl").read() == kubectl.read_bytes()  # type: ignore[union-attr]
    assert members["usr/bin/kubectl"].mode == 0o755
    assert members["usr/bin/sh"].issym() and members["usr/bin/cp"].issym() and members["bin"].issym()
    kubectl.write_bytes(b"\x7fELF another kubectl")
    assert RECIPES["kubectl-delivery"].digest() != before
