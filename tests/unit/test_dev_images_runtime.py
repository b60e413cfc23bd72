"""The bridge's runtime image (devenv/images/runtime.py, `hack/build-images.sh bridge`)
says what the Dockerfile says: the Dockerfile is read here, instruction by instruction, and each of
its statements compared with the recipe's (base Python, the packages it installs, the account,
USER, ENTRYPOINT, CMD, what the wheel is built from and what it leaves out), so that neither drifts.
The image carries the Helm chart's default name, whose tag is the project's version."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from devenv import versions
from devenv.images import runtime
from devenv.images.recipes import RECIPES

CHART = versions.REPO_ROOT / "manifests" / "helm" / "armada-bridge"


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case: FROM, RUN, COPY, ...
    arguments: str


def instructions(text: str) -> list[Instruction]:
    """A Dockerfile's instructions, continuation lines joined and comments left out."""
    found: list[Instruction] = []
    pending = ""
    for line in text.splitlines():
        if line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            keyword, _, arguments = whole.partition(" ")
            found.append(Instruction(keyword.upper(), arguments.strip()))
    return found


def stages(text: str) -> list[list[Instruction]]:
    """The Dockerfile's stages, each from its FROM on."""
    out: list[list[Instruction]] = []
    for i in instructions(text):
        if i.keyword == "FROM":
            out.append([])
        out[-1].append(i)
    return out


def commands(stage: list[Instruction]) -> list[list[str]]:
    """Every shell command the stage's RUN instructions run (split at `&&` and `;`)."""
    out = []
    for i in stage:
        if i.keyword == "RUN":
            for part in re.split(r"&&|;", i.arguments):
                if words := shlex.split(part):
                    out.append(words)
    return out


def only(stage: list[Instruction], keyword: str) -> str:
    (found,) = [i.arguments for i in stage if i.keyword == keyword]
    return found


@pytest.fixture(scope="module")
def dockerfile() -> tuple[list[Instruction], list[Instruction]]:
    """(the build stage, the runtime stage)"""
    build, final = stages(runtime.DOCKERFILE.read_text())
    return build, final


def test_the_dockerfiles_base_python_is_the_images(dockerfile: tuple[list[Instruction], ...]) -> None:
    for stage in dockerfile:
        base = only(stage, "FROM").split()[0]
        match = re.fullmatch(r"python:(\d+\.\d+)-slim", base)
        assert match, base
        assert match[1] == runtime.PYTHON_VERSION == "3.11"  # Debian bookworm's python3
    assert "python3" in runtime.PACKAGES
    assert "python-is-python3" in runtime.PACKAGES  # `python`, as the ENTRYPOINT runs it


def test_the_image_installs_the_dockerfiles_packages(dockerfile: tuple[list[Instruction], ...]) -> None:
    _, final = dockerfile
    installs = [c for c in commands(final) if c[:2] == ["apt-get", "install"]]
    (install,) = installs
    assert tuple(w for w in install[2:] if not w.startswith("-")) == runtime.APT_PACKAGES
    assert "--no-install-recommends" in install  # as every DebianRoot: no recommends
    # The rest is what the python:3.11-slim base brings.
    assert set(runtime.PACKAGES) == {*runtime.BASE_PACKAGES, *runtime.APT_PACKAGES}


def test_the_image_runs_as_the_dockerfiles_user_entrypoint_and_command(
    dockerfile: tuple[list[Instruction], ...],
) -> None:
    _, final = dockerfile
    (useradd,) = [c for c in commands(final) if c[0] == "useradd"]
    assert useradd[-1] == runtime.USER
    assert useradd[useradd.index("--uid") + 1] == str(runtime.UID)
    assert useradd[useradd.index("--shell") + 1] == "/usr/sbin/nologin"
    assert "--no-create-home" in useradd
    config = RECIPES["bridge"].config
    assert only(final, "USER") == config.user == str(runtime.UID) == "65532"
    assert json.loads(only(final, "ENTRYPOINT")) == config.entrypoint == ["python", "-m"]
    assert json.loads(only(final, "CMD")) == config.cmd == ["extender"]


def test_the_wheel_is_built_from_what_the_dockerfile_copies_and_nothing_is_removed(
    dockerfile: tuple[list[Instruction], ...],
) -> None:
    build, _ = dockerfile
    copied = {src for i in build if i.keyword == "COPY" for src in i.arguments.split()[:-1]}
    assert copied == set(runtime.PROJECT)
    removed = [arg for c in commands(build) if c[:1] == ["rm"] for arg in c[1:]]
    assert not [a for a in removed for p in runtime.PROJECT if a == p or a.startswith(f"{p}/")], removed
    files = runtime.project_files()
    assert {"extender/__main__.py", "vkubelet/__main__.py", "cli/main.py", "pyproject.toml"} <= set(files)
    assert not [f for f in files if f.startswith(("devenv/", "tests/", "bench/"))]
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]


def test_what_nothing_runs_is_left_out_as_the_dockerfile_leaves_it_out(
    dockerfile: tuple[list[Instruction], ...],
) -> None:
    build, _ = dockerfile
    (remove,) = [c for c in commands(build) if c[:3] == ["rm", "-r", "-f"]]
    assert tuple(remove[3:]) == runtime.UNUSED
    assert ["cd", f"/install/lib/python{runtime.PYTHON_VERSION}/site-packages"] in commands(build)


def test_the_image_is_the_charts_default_tagged_with_the_projects_version() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())["image"]
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    project = tomllib.loads((versions.REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert RECIPES["bridge"].name == f"{values['repository']}:{values['tag']}"
    assert values["tag"] == chart["appVersion"] == project["version"]
    assert values["repository"] == "ghcr.io/armadaproject/armada-bridge"


def test_the_images_key_follows_the_wheels_sources_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write(*rels: str) -> None:
        for rel in rels:
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(rel)

    write("pyproject.toml", "README.md", "extender/a.py", "vkubelet/b.py", "armada_bridge/c.py", "cli/e.py")
    monkeypatch.setattr(versions, "REPO_ROOT", tmp_path)
    before = runtime.inputs()
    assert runtime.project_files() == [
        "README.md",
        "armada_bridge/c.py",
        "cli/e.py",
        "extender/a.py",
        "pyproject.toml",
        "vkubelet/b.py",
    ]
    # The local environment (with the demo), caches, the tests: not in the wheel, not in the key.
    write("devenv/d.py", "devenv/demo.py", "extender/__pycache__/a.pyc", "tests/t.py")
    assert runtime.inputs() == before
    (tmp_path / "extender" / "a.py").write_text("changed")
    assert runtime.inputs() != before


def test_every_manifest_runs_the_image_the_chart_runs() -> None:
    """The kustomizations' Deployments (manifests/*/) name the image by the same tag as the chart:
    the one built and loaded, never pulled (a `latest` tag is always pulled)."""
    repository = RECIPES["bridge"].name.rpartition(":")[0]
    named = []
    for path in sorted((versions.REPO_ROOT / "manifests").rglob("*.yaml")):
        for line in path.read_text().splitlines():
            if (image := line.strip().removeprefix("- ").removeprefix("image:").strip()).startswith(
                f"{repository}:"
            ):
                named.append((path.relative_to(versions.REPO_ROOT).as_posix(), image))
    assert {p for p, _ in named} >= {
        "manifests/extender/deployment.yaml",
        "manifests/vkubelet/deployment.yaml",
        "manifests/armada-api/deployment.yaml",
    }
    assert {i for _, i in named} == {RECIPES["bridge"].name}, named
