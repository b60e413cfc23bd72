"""The Spark image, under the name the Spark operator's samples (v2.5.2) and
manifests/samples/sparkapplication.yaml give their driver and executors: `docker.io/apache/spark:4.0.4`.

Debian's Java 17 runtime and Python 3, and Spark from PyPI's `pyspark` (hack/versions.env
PYSPARK_VERSION: Spark's jars, scripts and Python package in one), laid out as the upstream image is:
SPARK_HOME=/opt/spark (`bin`, `sbin`, `jars`, `python` link into the pyspark package, which python3
imports as installed), user `spark` (uid 185), working directory /opt/spark/work-dir, entrypoint
/opt/entrypoint.sh. The entrypoint, the decommissioning hook /opt/decom.sh and the pi programs at the
samples' paths are this repository's own (hack/images/spark/): examples/src/main/python/pi.py, and
examples/jars/spark-examples.jar with org.apache.spark.examples.SparkPi, compiled by the host's javac
against the wheel's jars.
"""

from __future__ import annotations

import os
from pathlib import Path

from devenv import versions
from devenv.images.oci import ImageConfig
from devenv.images.rootfs import (
    PATH,
    SOURCES,
    DebianRoot,
    add_user,
    install,
    package_version,
    require,
    run,
    site_packages,
)

PYSPARK = versions.load().pyspark
NAME = f"docker.io/apache/spark:{PYSPARK}"
SPARK_HOME = "/opt/spark"
WORK_DIR = f"{SPARK_HOME}/work-dir"
UID = 185  # the upstream image's `spark`, as the operator's samples run it
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
JDK = "openjdk-17-jdk-headless"  # the host's, to compile SparkPi
PACKAGES = ("openjdk-17-jre-headless", "python3", "ca-certificates", "procps", "tini")
SOURCE = SOURCES / "spark"
# hack/images/spark/NAME -> (path in the image, mode)
PROGRAMS = {
    "entrypoint.sh": ("opt/entrypoint.sh", 0o755),
    "decom.sh": ("opt/decom.sh", 0o755),
    "pi.py": ("opt/spark/examples/src/main/python/pi.py", 0o644),
}
JAVA_PI = "SparkPi.java"
EXAMPLES_JAR = "opt/spark/examples/jars/spark-examples.jar"
# The parts of the pyspark package that make a Spark distribution, linked from SPARK_HOME.
DISTRIBUTION = ("bin", "sbin", "jars", "python")


CONFIG = ImageConfig(
    env={
        "PATH": PATH,
        "JAVA_HOME": JAVA_HOME,
        "SPARK_HOME": SPARK_HOME,
        "LANG": "C.UTF-8",
    },
    entrypoint=["/opt/entrypoint.sh"],
    user=str(UID),
    workdir=WORK_DIR,
)


def _examples_jar(work: Path, jars: Path, target: Path) -> None:
    classes = work / "classes"
    javac = require("javac", JDK)
    run([javac, "--release", "17", "-cp", f"{jars}/*", "-d", str(classes), str(SOURCE / JAVA_PI)])
    target.parent.mkdir(parents=True, exist_ok=True)
    run([require("jar", JDK), "--create", f"--file={target}", "-C", str(classes), "."])


def _lay_out(work: Path, root: Path) -> None:
    pyspark = site_packages(root) / "pyspark"
    home = root / SPARK_HOME.lstrip("/")
    home.mkdir(parents=True)
    for part in DISTRIBUTION:
        (home / part).symlink_to(Path("/") / (pyspark / part).relative_to(root))
    for source, (target, mode) in PROGRAMS.items():
        install(root, target, SOURCE / source, mode)
    _examples_jar(work, pyspark / "jars", root / EXAMPLES_JAR)
    add_user(root, "spark", UID, UID, "/home/spark", group="spark")
    work_dir = root / WORK_DIR.lstrip("/")
    work_dir.mkdir()
    os.chown(work_dir, UID, UID)
    work_dir.chmod(0o775)


ROOT = DebianRoot(PACKAGES, pip=(f"pyspark=={PYSPARK}",), customize=_lay_out)


def inputs() -> tuple[str, ...]:
    """The sources, the host's JDK that compiles SparkPi and this module (the layout) besides the root's."""
    sources = [(SOURCE / s).read_text() for s in (*PROGRAMS, JAVA_PI)]
    return (*ROOT.inputs(), *sources, f"{JDK} {package_version(JDK)}", Path(__file__).read_text())
