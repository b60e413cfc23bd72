"""The operators' images of the dev environment (devenv/images): each under the name the
samples write, a content key that follows what the image is made from, PyPI packages installed
offline, and the Spark entrypoint's container contract."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from devenv import versions
from devenv.images import dask, ray, spark
from devenv.images.oci import full_name
from devenv.images.recipes import RECIPES
from devenv.images.rootfs import DebianRoot, pip_install_argv

SAMPLES = versions.REPO_ROOT / "manifests" / "samples"


def _images(obj: Any) -> set[str]:
    """Every `image:` anywhere in a manifest."""
    if isinstance(obj, dict):
        found = {obj["image"]} if isinstance(obj.get("image"), str) else set()
        return found.union(*(_images(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_images(v) for v in obj))
    return set()


@pytest.mark.parametrize(
    ("key", "sample"),
    [("spark", "sparkapplication.yaml"), ("ray", "raycluster.yaml"), ("dask", "daskjob.yaml")],
)
def test_each_operator_image_is_built_under_the_name_its_sample_writes(key: str, sample: str) -> None:
    (doc,) = yaml.safe_load_all((SAMPLES / sample).read_text())
    assert {full_name(i) for i in _images(doc)} == {full_name(RECIPES[key].name)}


def test_the_images_versions_are_those_of_the_samples_and_pins() -> None:
    app = yaml.safe_load((SAMPLES / "sparkapplication.yaml").read_text())
    assert app["spec"]["sparkVersion"] == versions.load().pyspark == spark.PYSPARK
    assert spark.ROOT.pip == (f"pyspark=={spark.PYSPARK}",)
    cluster = yaml.safe_load((SAMPLES / "raycluster.yaml").read_text())
    assert cluster["spec"]["rayVersion"] == ray.RAY_VERSION
    assert ray.ROOT.pip == (f"ray[default]=={ray.RAY_VERSION}",)
    assert dask.ROOT.pip == (f"dask[distributed]=={dask.DASK_VERSION}",)


def test_the_operator_images_run_as_upstream_does() -> None:
    assert (RECIPES["spark"].config.user, RECIPES["spark"].config.workdir) == ("185", "/opt/spark/work-dir")
    assert RECIPES["spark"].config.entrypoint == ["/opt/entrypoint.sh"]
    assert RECIPES["spark"].config.env["SPARK_HOME"] == "/opt/spark"
    assert (RECIPES["ray"].config.user, RECIPES["ray"].config.env["HOME"]) == ("1000", "/home/ray")
    # KubeRay's probes and the samples' job runner (`python -c ...`) need these.
    assert {"wget", "python-is-python3"} <= set(ray.PACKAGES)
    assert "python-is-python3" in dask.PACKAGES


def test_an_image_digest_follows_its_sources_and_versions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = RECIPES["spark"]
    before = recipe.digest()
    assert recipe.digest() == before  # stable
    sources = tmp_path / "spark"
    shutil.copytree(spark.SOURCE, sources)
    monkeypatch.setattr(spark, "SOURCE", sources)
    assert recipe.digest() == before
    (sources / "entrypoint.sh").write_text((sources / "entrypoint.sh").read_text() + "\n# changed\n")
    assert recipe.digest() != before
    monkeypatch.setattr(spark, "SOURCE", spark.SOURCE)
    other = DebianRoot(spark.PACKAGES, pip=("pyspark==4.0.3",), customize=spark.ROOT.customize)
    assert other.inputs() != spark.ROOT.inputs()
    assert DebianRoot(("python3", "wget")).inputs() != DebianRoot(("python3",)).inputs()
    assert len({r.digest() for r in RECIPES.values()}) == len(RECIPES)


def test_pip_installs_offline_from_the_staged_wheels_and_leaves_no_cache() -> None:
    argv = pip_install_argv(["ray[default]==2.52.0"])
    assert argv[:2] == ["env", "-i"]  # no PIP_* setting of the host's gets in
    assert {"--no-index", "--no-cache-dir", "--find-links=/tmp/pip-install/wheels"} <= set(argv)
    assert argv[-1] == "ray[default]==2.52.0"


# The Spark entrypoint, run by bash with tini replaced by a stub that prints what it would run.


@pytest.fixture
def entrypoint(tmp_path: Path) -> Path:
    stub = tmp_path / "tini"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n')
    stub.chmod(0o755)
    script = tmp_path / "entrypoint.sh"
    script.write_text((spark.SOURCE / "entrypoint.sh").read_text().replace("/usr/bin/tini", str(stub)))
    return script


def _run(script: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "SPARK_HOME": "/opt/spark", "JAVA_HOME": "/jvm"}
    return subprocess.run(
        ["bash", str(script), *args], env={**base, **env}, capture_output=True, text=True, check=False
    )


def test_the_spark_driver_runs_spark_submit_in_client_mode_on_the_pod_address(entrypoint: Path) -> None:
    args = ["driver", "--properties-file", "/opt/spark/conf/spark.properties", "--class", "X", "app.jar", "3"]
    r = _run(entrypoint, args, SPARK_DRIVER_BIND_ADDRESS="10.0.0.7")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "-s",
        "--",
        "/opt/spark/bin/spark-submit",
        "--conf",
        "spark.driver.bindAddress=10.0.0.7",
        "--deploy-mode",
        "client",
        *args[1:],
    ]


def test_the_spark_executor_runs_the_backend_from_the_pod_environment(entrypoint: Path) -> None:
    env = {
        "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@driver-svc:7078",
        "SPARK_EXECUTOR_ID": "2",
        "SPARK_EXECUTOR_CORES": "1",
        "SPARK_EXECUTOR_MEMORY": "512m",
        "SPARK_APPLICATION_ID": "spark-abc",
        "SPARK_EXECUTOR_POD_IP": "10.0.0.8",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "pi-exec-2",
        "SPARK_CONF_DIR": "/opt/spark/conf",
        "SPARK_CLASSPATH": "/extra/*",
        # The JVM options in index order, not name order; a value may hold spaces.
        "SPARK_JAVA_OPT_10": "-Dlast=1",
        "SPARK_JAVA_OPT_2": "-Dspark.driver.port=7078",
        "SPARK_JAVA_OPT_0": "-Dname=a b",
    }
    r = _run(entrypoint, ["executor"], **env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "-s",
        "--",
        "/jvm/bin/java",
        "-Dname=a b",
        "-Dspark.driver.port=7078",
        "-Dlast=1",
        "-Xms512m",
        "-Xmx512m",
        "-cp",
        "/opt/spark/conf:/extra/*:/opt/spark/jars/*",
        "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
        "--driver-url",
        env["SPARK_DRIVER_URL"],
        "--executor-id",
        "2",
        "--cores",
        "1",
        "--app-id",
        "spark-abc",
        "--hostname",
        "10.0.0.8",
        "--resourceProfileId",
        "0",
        "--podName",
        "pi-exec-2",
    ]


def test_the_spark_entrypoint_names_what_is_missing_and_passes_other_commands_through(
    entrypoint: Path,
) -> None:
    r = _run(entrypoint, ["executor"], SPARK_EXECUTOR_ID="1")
    assert r.returncode == 2
    assert "executor needs SPARK_DRIVER_URL SPARK_EXECUTOR_CORES" in r.stderr
    assert _run(entrypoint, []).returncode == 2
    assert "usage:" in _run(entrypoint, []).stderr
    r = _run(entrypoint, ["echo", "hi"])
    assert (r.returncode, r.stdout.splitlines()) == (0, ["-s", "--", "echo", "hi"])
