"""The simulated nodes of the local clusters: KWOK-managed Node objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from armada_bridge import keys


@dataclass(frozen=True)
class NodeShape:
    cpu: str = "32"
    memory: str = "128Gi"
    pods: str = "110"
    gpus: int = 0


def node_manifest(name: str, shape: NodeShape, labels: dict[str, str] | None = None) -> dict[str, Any]:
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": shape.pods, "ephemeral-storage": "1Ti"}
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        keys.NODE_TYPE_LABEL: keys.DEV_NODE_TYPE_VALUE,
    }
    if shape.gpus:
        resources[keys.GPU_RESOURCE] = str(shape.gpus)
        node_labels["nvidia.com/gpu.present"] = "true"
    node_labels.update(labels or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": node_labels,
            "annotations": {keys.KWOK_NODE_ANNOTATION: keys.KWOK_NODE_ANNOTATION_VALUE},
        },
        "status": {
            "allocatable": resources,
            "capacity": resources,
            "nodeInfo": {
                "architecture": "amd64",
                "operatingSystem": "linux",
                "kubeletVersion": "kwok",
                "kubeProxyVersion": "kwok",
                "containerRuntimeVersion": "kwok",
            },
            "phase": "Running",
        },
    }


def remote_nodes(cluster: str, count: int) -> list[dict[str, Any]]:
    """`count` nodes of 32 CPU / 128Gi / 110 pods; the second half also has 4 GPUs each."""
    first_gpu = count - count // 2
    return [
        node_manifest(
            f"{cluster}-node-{i}",
            NodeShape(gpus=4 if i >= first_gpu else 0),
            {"topology.kubernetes.io/zone": f"{cluster}-zone-{'ab'[i % 2]}"},
        )
        for i in range(count)
    ]


def front_nodes() -> list[dict[str, Any]]:
    """One small real-looking node in the front cluster, for pods the bridge does not manage."""
    return [node_manifest("front-node-0", NodeShape(cpu="8", memory="32Gi"))]
