"""The pinned versions of the real Kubernetes parts and of the released operators, read from
hack/versions.env (their one home)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    kwok: str
    # operator name (as `dev up --operators` and hack/build-operators.sh spell it) -> version
    operators: dict[str, str] = field(default_factory=dict)
    # Spark (PyPI `pyspark`) whose spark-submit the Spark operator's controller runs.
    pyspark: str = ""
    # Helm, for the chart's tests (manifests/helm/armada-bridge).
    helm: str = ""
    # kind, for `armada-bridge dev up --provider kind` only.
    kind: str = ""
    # CoreDNS: the cluster DNS of the dev remote clusters that have real nodes.
    coredns: str = ""
    # Armada, whose API armada_api serves: its armadactl, for armada_api's tests.
    armada: str = ""


# The variable of hack/versions.env that pins each operator.
OPERATOR_VERSION_KEYS = {
    "training-operator": "TRAINING_OPERATOR_VERSION",
    "training-operator-mxjob": "TRAINING_OPERATOR_MXJOB_VERSION",
    "kuberay": "KUBERAY_VERSION",
    "mpi-operator": "MPI_OPERATOR_VERSION",
    "jobset": "JOBSET_VERSION",
    "trainer": "TRAINER_VERSION",
    "spark-operator": "SPARK_OPERATOR_VERSION",
    "argo": "ARGO_WORKFLOWS_VERSION",
    "dask": "DASK_KUBERNETES_VERSION",
    "cert-manager": "CERT_MANAGER_VERSION",
}


def load(path: Path = VERSIONS_FILE) -> Versions:
    values: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        values[key.strip()] = value.strip()
    try:
        return Versions(
            kubernetes=values["KUBERNETES_VERSION"],
            etcd=values["ETCD_VERSION"],
            kwok=values["KWOK_VERSION"],
            operators={name: values[key] for name, key in OPERATOR_VERSION_KEYS.items()},
            pyspark=values["PYSPARK_VERSION"],
            helm=values["HELM_VERSION"],
            kind=values["KIND_VERSION"],
            coredns=values["COREDNS_VERSION"],
            armada=values["ARMADA_VERSION"],
        )
    except KeyError as missing:
        raise RuntimeError(f"{path}: missing {missing.args[0]}") from None
