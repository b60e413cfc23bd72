"""`--provider kind`: the same topology (front + remote-1..N) on kind clusters, where a Docker
engine works. This module holds what the provider needs checked (Docker, the kind CLI) and the
kind cluster configurations, made by pure functions; devenv.kind.kind_environment runs them.

The bridge (extender + webhook, vkubelet) runs as processes on the host, as with the binary
provider. The front cluster's kube-scheduler (inside its node container) calls the extender, and
its kube-apiserver calls the webhook and the vkubelet's kubelet API, at the host's address on the
environment's Docker network (the network's gateway). Remote clusters run pods for real, on kind
worker nodes.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

KIND_API_VERSION = "kind.x-k8s.io/v1alpha4"
NODE_IMAGE = "kindest/node"
KIND_MODULE = "sigs.k8s.io/kind"
# Where the front node container sees the bridge's files for its kube-scheduler (a read-only
# mount of the environment's directory FrontFiles.mount_dir).
BRIDGE_DIR_IN_NODE = "/etc/kubernetes/armada-bridge"
# kubeadm uses a CA it finds in its certificate directory instead of making one: the front
# cluster's CA is ours, made before the cluster, so the scheduler's client certificate can be too.
PKI_DIR_IN_NODE = "/etc/kubernetes/pki"
# kubeadm's kubeconfig of kube-scheduler, in every control-plane node.
SCHEDULER_KUBECONFIG_IN_NODE = "/etc/kubernetes/scheduler.conf"
# The files of FrontFiles.mount_dir, as the front kube-scheduler's configuration names them.
SCHEDULER_CONFIG_FILE = "kube-scheduler-config.yaml"
EXTENDER_CA_FILE = "extender-ca.crt"
SCHEDULER_CERT_FILE = "scheduler-client.crt"
SCHEDULER_KEY_FILE = "scheduler-client.key"
# kube-apiserver's port inside a node container; kind's internal kubeconfig names it.
API_PORT_IN_NODE = 6443
# Zone labels of remote workers, alternating as on the binary provider's KWOK nodes.
ZONE_LABEL = "topology.kubernetes.io/zone"


def node_image(kubernetes_version: str) -> str:
    """The kind node image of a Kubernetes version (kind publishes `kindest/node:<version>`; that a
    tag exists for the pinned version cannot be checked offline)."""
    return f"{NODE_IMAGE}:{kubernetes_version}"


def environment_id(state_dir: Path) -> str:
    """A short id of the environment, from its state directory: kind cluster names and the Docker
    network are machine-wide, so two environments (two state directories) must not share them."""
    return hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:8]


def cluster_name(env_id: str, name: str) -> str:
    """The kind cluster of the environment's cluster `name` (front, remote-1, ...). Its node
    containers are `<this>-control-plane`, `<this>-worker`, `<this>-worker2`, ..."""
    return f"ab-{env_id}-{name}"


def network_name(env_id: str) -> str:
    """The environment's Docker network (kind's KIND_EXPERIMENTAL_DOCKER_NETWORK): made by us before
    any cluster, so the host's address on it (its gateway) is known when the front is configured."""
    return f"armada-bridge-{env_id}"


def internal_server(kind_name: str) -> str:
    """The front kube-apiserver as containers on the environment's network reach it (what
    `kind get kubeconfig --internal` says): remote pods use it for the front API."""
    return f"https://{kind_name}-control-plane:{API_PORT_IN_NODE}"


@dataclass(frozen=True)
class FrontFiles:
    """Host files the front cluster is created with."""

    mount_dir: Path  # mounted read-only at BRIDGE_DIR_IN_NODE: scheduler config, extender CA, client cert
    ca_cert: Path  # the front cluster's CA (kubeadm's ca.crt) ...
    ca_key: Path  # ... and its key (kubeadm's ca.key)


def scheduler_tls_in_node() -> dict[str, str]:
    """The front kube-scheduler's extender tlsConfig, as paths inside its node."""
    return {
        "caFile": f"{BRIDGE_DIR_IN_NODE}/{EXTENDER_CA_FILE}",
        "certFile": f"{BRIDGE_DIR_IN_NODE}/{SCHEDULER_CERT_FILE}",
        "keyFile": f"{BRIDGE_DIR_IN_NODE}/{SCHEDULER_KEY_FILE}",
    }


def front_scheduler_config(scheduler_config: Mapping[str, Any]) -> dict[str, Any]:
    """The front kube-scheduler's configuration for a kind node: `scheduler_config` (the repo's,
    pointed at the extender: extender_setup.scheduler_configuration) plus kubeadm's kubeconfig of
    the scheduler, which kube-scheduler reads from the file once `--config` is given."""
    cfg = dict(scheduler_config)
    cfg["clientConnection"] = {
        **dict(cfg.get("clientConnection") or {}),
        "kubeconfig": SCHEDULER_KUBECONFIG_IN_NODE,
    }
    return cfg


def _scheduler_patch() -> str:
    """kubeadm's ClusterConfiguration patch: kube-scheduler runs our configuration, from the mount.
    No apiVersion: kind applies it to the ClusterConfiguration it generates, whichever kubeadm API
    version that is, and converts `extraArgs` to v1beta4's list form where needed."""
    patch = {
        "kind": "ClusterConfiguration",
        "scheduler": {
            "extraArgs": {"config": f"{BRIDGE_DIR_IN_NODE}/{SCHEDULER_CONFIG_FILE}"},
            "extraVolumes": [
                {
                    "name": "armada-bridge",
                    "hostPath": BRIDGE_DIR_IN_NODE,
                    "mountPath": BRIDGE_DIR_IN_NODE,
                    "readOnly": True,
                    "pathType": "Directory",
                }
            ],
        },
    }
    return yaml.safe_dump(patch, sort_keys=False)


def _networking(api_port: int) -> dict[str, Any]:
    """kube-apiserver published on the host's loopback at `api_port` (chosen by us, unique in the
    environment), where the host's processes and kubeconfigs reach it."""
    return {"apiServerAddress": "127.0.0.1", "apiServerPort": api_port}


def front_cluster_config(
    kind_name: str,
    image: str,
    api_port: int,
    files: FrontFiles,
    feature_gates: Mapping[str, bool],
    runtime_config: Mapping[str, str],
) -> dict[str, Any]:
    """The front kind cluster: one control-plane node (kind leaves a lone node schedulable, so it
    also runs the pods the bridge does not manage), whose kube-scheduler runs the bridge's
    configuration (extender at the host's address, TLS files from the mount) and whose CA is ours."""
    mounts = [
        {"hostPath": str(files.mount_dir), "containerPath": BRIDGE_DIR_IN_NODE, "readOnly": True},
        {"hostPath": str(files.ca_cert), "containerPath": f"{PKI_DIR_IN_NODE}/ca.crt", "readOnly": True},
        {"hostPath": str(files.ca_key), "containerPath": f"{PKI_DIR_IN_NODE}/ca.key", "readOnly": True},
    ]
    return {
        "kind": "Cluster",
        "apiVersion": KIND_API_VERSION,
        "name": kind_name,
        "featureGates": dict(feature_gates),
        "runtimeConfig": dict(runtime_config),
        "networking": _networking(api_port),
        "nodes": [
            {
                "role": "control-plane",
                "image": image,
                "extraMounts": mounts,
                "kubeadmConfigPatches": [_scheduler_patch()],
            }
        ],
    }


def remote_cluster_config(kind_name: str, image: str, api_port: int, workers: int) -> dict[str, Any]:
    """A remote kind cluster: a control-plane node (tainted: it runs no remote pods) and `workers`
    worker nodes, the cluster's capacity (real kubelets and containers), in two zones."""
    if workers < 1:
        raise ValueError("a remote kind cluster needs at least one worker node")
    nodes: list[dict[str, Any]] = [{"role": "control-plane", "image": image}]
    nodes += [
        {"role": "worker", "image": image, "labels": {ZONE_LABEL: f"{kind_name}-zone-{'ab'[i % 2]}"}}
        for i in range(workers)
    ]
    return {
        "kind": "Cluster",
        "apiVersion": KIND_API_VERSION,
        "name": kind_name,
        "networking": _networking(api_port),
        "nodes": nodes,
    }


def to_yaml(config: Mapping[str, Any]) -> str:
    """The text for `kind create cluster --config`."""
    return yaml.safe_dump(dict(config), sort_keys=False)


# ---------------------------------------------------------------- what the provider needs

USE_INSTEAD = "use the default provider instead (`armada-bridge dev up`: real Kubernetes binaries, no Docker)"


def require_docker(run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run) -> None:
    """Fail at once, naming what is missing, unless `docker info` answers."""
    try:
        r = run(["docker", "info"], capture_output=True, text=True, timeout=20, check=False)
    except FileNotFoundError:
        raise RuntimeError(
            f"--provider kind needs a Docker engine, and there is no `docker` on PATH; {USE_INSTEAD}"
        ) from None
    except subprocess.TimeoutExpired:
        raise RuntimeError(
            f"--provider kind needs a Docker engine; `docker info` did not answer in 20s; {USE_INSTEAD}"
        ) from None
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(
            f"--provider kind needs a working Docker engine; `docker info` failed: {detail[0]}; {USE_INSTEAD}"
        )


def install_hint(kind_version: str) -> str:
    return (
        f"`go install {KIND_MODULE}@{kind_version}` (the version pinned in hack/versions.env), "
        "then put $(go env GOPATH)/bin on PATH"
    )


def require_kind(kind_version: str, which: Callable[[str], str | None] = shutil.which) -> str:
    """The kind CLI's path; fail, saying how to get it, when there is none on PATH."""
    path = which("kind")
    if path is None:
        raise RuntimeError(
            f"--provider kind needs the kind CLI, not found on PATH: {install_hint(kind_version)}"
        )
    return path
