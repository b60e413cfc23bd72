"""The mpi-pi image recipe: named as the MPI operator's pi sample names it, fitting its launcher and
worker pods, and keyed by what it is made of."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from devenv import versions
from devenv.images import mpi
from devenv.images.recipes import RECIPES

SAMPLES = versions.REPO_ROOT / "manifests" / "samples"


def _mpijob() -> dict[str, Any]:
    job: dict[str, Any] = yaml.safe_load((SAMPLES / "mpijob.yaml").read_text())
    return job


def test_mpi_pi_is_the_image_the_mpijob_sample_runs_and_fits_its_pods() -> None:
    job = _mpijob()
    replicas = job["spec"]["mpiReplicaSpecs"]
    launcher = replicas["Launcher"]["template"]["spec"]["containers"][0]
    worker = replicas["Worker"]["template"]["spec"]["containers"][0]
    assert launcher["image"] == worker["image"] == RECIPES["mpi-pi"].name == mpi.IMAGE
    assert launcher["securityContext"]["runAsUser"] == worker["securityContext"]["runAsUser"] == mpi.UID
    assert [*launcher["command"], *launcher["args"]][-1] == mpi.PROGRAM
    sshd = [*worker["command"], *worker["args"]]
    assert sshd[0] == "/usr/sbin/sshd" and sshd[sshd.index("-f") + 1] in mpi.SSH_FILES
    # sshd's host key is the job's private key, which the operator mounts at sshAuthMountPath.
    config = dict(line.split(" ", 1) for line in mpi.SSH_FILES[f"{mpi.HOME}/.sshd_config"].splitlines())
    assert config["HostKey"] == f"{job['spec']['sshAuthMountPath']}/id_rsa"
    assert config["Port"] == str(mpi.SSH_PORT) and config["StrictModes"] == "no"


def test_mpi_pi_hooks_make_the_user_and_stage_every_file_apart() -> None:
    hooks = mpi.image_hooks("pi", mpi.SSH_FILES)
    assert any(f"--uid {mpi.UID}" in h and h.endswith(f" {mpi.USER}") for h in hooks)
    assert f"upload pi {mpi.PROGRAM}" in hooks
    assert len({mpi.staged(p) for p in mpi.SSH_FILES}) == len(mpi.SSH_FILES)
    assert any("mpicc" in h for h in mpi.compile_hooks("pi.c", "pi"))
    assert not set(mpi.BUILD_PACKAGES) & set(mpi.PACKAGES)  # no compiler in the image
    assert not set(mpi.UNWANTED) & set(mpi.PACKAGES)
    # sshd's privilege separation directory survives: mmdebstrap's emptying of /run is replaced by
    # a hook that keeps /run/lock, before /run/sshd is made.
    assert "cleanup/run" in mpi.RUN_SKIP
    emptied = next(i for i, h in enumerate(hooks) if h.startswith('find "$1/run"'))
    assert "! -name lock" in hooks[emptied] and "/run/sshd" in hooks[emptied + 1]


@pytest.mark.parametrize("change", ["source", "packages", "ssh", "uid"])
def test_mpi_pi_digest_follows_what_it_is_made_of(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = RECIPES["mpi-pi"]
    before = recipe.digest()
    if change == "source":
        source = tmp_path / "mpi-pi.c"
        source.write_text(mpi.SOURCE.read_text() + "\n/* changed */\n")
        monkeypatch.setattr(mpi, "SOURCE", source)
    elif change == "packages":
        monkeypatch.setattr(mpi, "PACKAGES", (*mpi.PACKAGES, "hostname"))
    elif change == "ssh":
        monkeypatch.setattr(mpi, "SSH_FILES", {**mpi.SSH_FILES, f"{mpi.HOME}/.sshd_config": "Port 22\n"})
    else:
        monkeypatch.setattr(mpi, "UID", 1001)
    assert recipe.digest() != before
