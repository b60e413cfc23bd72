"""Pods bound straight to virtual nodes, and what the vkubelet's tests read of them."""

from __future__ import annotations

from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.base import reports_ready


def bound_pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    """A pod bound straight to a virtual node (as kube-scheduler would after the extender's answer)."""
    labels = spec.pop("labels", {"app": "vk-test"})
    annotations = spec.pop("annotations", {})
    containers = spec.pop(
        "containers",
        [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "nodeName": node,
            "tolerations": [
                {"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
            ],
            "containers": containers,
            "terminationGracePeriodSeconds": 5,
            **spec,
        },
    }


def phases(core: k8s.CoreV1Api, namespace: str) -> dict[str, str]:
    return {p.metadata.name: p.status.phase for p in core.list_namespaced_pod(namespace).items}


def remote_pods(core: k8s.CoreV1Api, namespace: str) -> list[Any]:
    return list(core.list_namespaced_pod(namespace, label_selector=keys.FRONT_UID).items)


def exists(read: Any, *args: Any) -> bool:
    try:
        read(*args)
        return True
    except ApiException as e:
        if e.status == 404:
            return False
        raise


def node_ready(core: k8s.CoreV1Api, name: str) -> bool:
    try:
        return reports_ready(core.read_node(name))
    except ApiException:
        return False
