"""The images a PyTorchJob runs on real nodes: `pytorch` (Debian's PyTorch and our program, under a
name of our own) and `alpine` (BusyBox as `alpine:3.10`, the training operator's init container
image, whose `nslookup` waits for the master as Alpine 3.10's does); each keyed by what it is made
of."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from devenv.images import framework, pytorch, recipes
from devenv.images.oci import full_name
from devenv.images.recipes import RECIPES
from devenv.images.rootfs import DebianRoot


def test_pytorch_is_debians_torch_with_our_program_under_our_own_name() -> None:
    recipe = RECIPES["pytorch"]
    assert recipe.name == pytorch.NAME == "armada-bridge.local/pytorch:1.13-bookworm"
    assert full_name(recipe.name) == recipe.name  # ours: no registry's default applies
    # Debian's CPU-only torch, not PyPI's (whose Linux wheels bring CUDA): nothing from pip.
    assert pytorch.ROOT.packages == ("python3-torch",) and pytorch.ROOT.pip == ()
    assert recipe.config.cmd == ["python3", pytorch.PROGRAM]
    source = pytorch.SOURCE.read_text()
    compile(source, str(pytorch.SOURCE), "exec")  # a syntax error shows here, not in a long e2e
    # What the training operator sets in each pod, read by the program (env:// reads the rest).
    for variable in ("RANK", "WORLD_SIZE", "MASTER_ADDR"):
        assert f'os.environ["{variable}"]' in source
    assert 'init_process_group("gloo"' in source and "DistributedDataParallel(" in source


def test_pytorch_lays_the_program_out_where_the_image_runs_it(tmp_path: Path) -> None:
    assert pytorch.ROOT.customize is not None
    pytorch.ROOT.customize(tmp_path / "work", tmp_path / "root")
    program = tmp_path / "root" / pytorch.PROGRAM.lstrip("/")
    assert program.read_text() == pytorch.SOURCE.read_text()
    assert program.stat().st_mode & 0o777 == 0o644
    # The programs' shared rendezvous.py beside it, which it imports.
    assert (program.parent / "rendezvous.py").read_text() == framework.SHARED.read_text()
    assert "from rendezvous import wait_for_names" in program.read_text()


@pytest.mark.parametrize("change", ["program", "packages", "module"])
def test_pytorch_digest_follows_what_it_is_made_of(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = RECIPES["pytorch"]
    before = recipe.digest()
    assert recipe.digest() == before
    if change == "program":
        source = tmp_path / "allreduce.py"
        source.write_text(pytorch.SOURCE.read_text() + "\n# changed\n")
        monkeypatch.setattr(pytorch, "SOURCE", source)
    elif change == "packages":
        monkeypatch.setattr(pytorch, "ROOT", DebianRoot(("python3-torch", "netbase")))
    else:
        module = tmp_path / "pytorch.py"
        module.write_text(Path(pytorch.__file__).read_text() + "\n# changed\n")
        monkeypatch.setattr(pytorch, "__file__", str(module))
    assert recipe.digest() != before


def test_alpine_is_named_as_the_training_operators_init_container_image(tmp_path: Path) -> None:
    recipe = RECIPES["alpine"]
    # training-operator v1.9.4's --pytorch-init-container-image default.
    assert full_name(recipe.name) == "docker.io/library/alpine:3.10"
    # Debian's dash is its shell (BusyBox's would run its own nslookup applet, not the script).
    assert recipes.ALPINE_ROOT.packages == ("busybox",)
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    recipes._alpine_nslookup(tmp_path, tmp_path)
    nslookup = tmp_path / "usr" / "bin" / "nslookup"
    assert (
        nslookup.read_bytes() == recipes.ALPINE_NSLOOKUP.read_bytes()
        and nslookup.stat().st_mode & 0o777 == 0o755
    )


def test_alpine_digest_follows_its_nslookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = RECIPES["alpine"].digest()
    script = tmp_path / "nslookup.sh"
    script.write_text(recipes.ALPINE_NSLOOKUP.read_text() + "\n# changed\n")
    monkeypatch.setattr(recipes, "ALPINE_NSLOOKUP", script)
    assert RECIPES["alpine"].digest() != before
    assert before != RECIPES["busybox"].digest()


# The alpine image's nslookup, run by sh with BusyBox replaced by a stub that resolves one name.

RESOLV_CONF = (
    "nameserver 10.96.0.10\nsearch ns1.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"
)


def _nslookup(tmp_path: Path, *args: str) -> tuple[int, list[str]]:
    """Exit code and the arguments of each `busybox nslookup` the script ran, in order."""
    asked = tmp_path / "asked"
    stub = tmp_path / "busybox"
    stub.write_text(
        f'#!/bin/sh\n[ "$1" = nslookup ] || exit 2\nshift\necho "$*" >> {asked}\n'
        '[ "$*" = master-0.ns1.svc.cluster.local ]\n'
    )
    stub.chmod(0o755)
    resolv = tmp_path / "resolv.conf"
    resolv.write_text(RESOLV_CONF)
    env = {"PATH": os.environ["PATH"], "BUSYBOX": str(stub), "RESOLV_CONF": str(resolv)}
    r = subprocess.run(["sh", str(recipes.ALPINE_NSLOOKUP), *args], env=env, check=False)
    return r.returncode, asked.read_text().splitlines() if asked.exists() else []


def test_nslookup_of_a_short_name_succeeds_once_it_resolves_in_a_search_domain(tmp_path: Path) -> None:
    assert _nslookup(tmp_path, "master-0") == (0, ["master-0.ns1.svc.cluster.local"])


def test_nslookup_of_a_name_found_nowhere_tries_each_search_domain_then_the_name_and_fails(
    tmp_path: Path,
) -> None:
    code, asked = _nslookup(tmp_path, "missing")
    assert code != 0
    assert asked == [
        "missing.ns1.svc.cluster.local",
        "missing.svc.cluster.local",
        "missing.cluster.local",
        "missing.",
    ]


def test_nslookup_passes_other_queries_to_busybox_as_they_are(tmp_path: Path) -> None:
    assert _nslookup(tmp_path, "master-0.ns1.svc.cluster.local") == (0, ["master-0.ns1.svc.cluster.local"])
    (tmp_path / "asked").unlink()
    assert _nslookup(tmp_path, "-type=a", "master-0") == (1, ["-type=a master-0"])
