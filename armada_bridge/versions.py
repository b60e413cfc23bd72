"""The pinned versions of the real Kubernetes parts, read from hack/versions.env (their one home)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
VERSIONS_FILE = REPO_ROOT / "hack" / "versions.env"


@dataclass(frozen=True)
class Versions:
    kubernetes: str
    etcd: str
    kwok: str


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
        )
    except KeyError as missing:
        raise RuntimeError(f"{path}: missing {missing.args[0]}") from None
