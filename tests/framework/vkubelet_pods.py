"""Pods bound straight to virtual nodes, and what the vkubelet's tests read of them."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.base import BaseEnvironment, reports_ready
from devenv.bridge import vkubelet_setup
from devenv.pods import busybox_pod
from tests.framework.kube import create_bound, wait_for


def bound_pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    """A pod bound straight to a virtual node (as kube-scheduler would after the extender's answer)."""
    return busybox_pod(
        name,
        cpu="10m",
        memory="16Mi",
        labels=spec.pop("labels", {"app": "vk-test"}),
        annotations=spec.pop("annotations", {}),
        **{
            "nodeName": node,
            "tolerations": [
                {"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
            ],
            "terminationGracePeriodSeconds": 5,
            **spec,
        },
    )


def run_bound(core: k8s.CoreV1Api, namespace: str, body: dict[str, Any], timeout: float = 30) -> None:
    """Create `body`, a pod bound to its virtual node (:func:`tests.framework.kube.create_bound`), and wait
    until the front pod runs."""
    create_bound(core, namespace, body)
    name = body["metadata"]["name"]
    wait_for(f"pod {name} Running", lambda: phases(core, namespace).get(name) == "Running", timeout=timeout)


def wait_failed(core: k8s.CoreV1Api, namespace: str, name: str, timeout: float) -> Any:
    """The front pod `name` once it is Failed."""

    def failed() -> Any:
        pod = core.read_namespaced_pod(name, namespace)
        return pod if pod.status.phase == "Failed" else None

    return wait_for(f"front pod {name} Failed", failed, timeout=timeout)


def kubelet_status(env: BaseEnvironment, path: str, headers: dict[str, str], method: str = "GET") -> int:
    """The HTTP status the vkubelet's kubelet API answers a `method` request of `path` with
    (loopback: its certificate is not checked)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(
        f"https://127.0.0.1:{vkubelet_setup.kubelet_port(env)}{path}", method=method, headers=headers
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


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
