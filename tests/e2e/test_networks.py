"""The dev environment's isolated networks (the default, `dev up --network isolated`), as clusters
usually are: every cluster's pods on a network of their own with the same range, and across
clusters only the API servers. A remote pod reaches no front pod's address but the front API; the
front (a pod on its real node, and the host where its control plane runs) reaches no remote pod's
address; a front pod bound to a virtual node shows no remote pod's address, only its relay's."""

from __future__ import annotations

import contextlib
import json
import socket
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.images.recipes import RECIPES
from devenv.network import podnet
from devenv.processes.environment import Environment
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import ENDED, Api, pod_in_phase
from tests.framework.kube import wait_for

PORT = 8000
# Tries each (name, host, port) of argv[1] (JSON) and prints a JSON line of what answered.
PROBE = """
import json, os, socket, sys
out = {}
for name, host, port in json.loads(sys.argv[1]):
    host = os.environ.get(host, host)
    port = int(os.environ.get(str(port), port))
    try:
        socket.create_connection((host, port), timeout=4).close()
        out[name] = "answered"
    except OSError as e:
        out[name] = type(e).__name__
print(json.dumps(out))
"""
RESOURCES = {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}}


def _container(command: list[str], front: bool) -> dict[str, Any]:
    # The front's real node has the bridge's image (with Python), the remotes' the python image.
    image = RECIPES["bridge" if front else "python"].name
    return {"name": "main", "image": image, "command": ["python3", *command], "resources": RESOURCES}


def _server(name: str, labels: dict[str, str] | None = None, *, front: bool = False) -> dict[str, Any]:
    serve = _container(["-m", "http.server", str(PORT)], front)
    serve["ports"] = [{"containerPort": PORT}]
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": on_a_real_node({"containers": [serve]}),
    }


def _probe(name: str, targets: list[tuple[str, str, Any]], *, front: bool = False) -> dict[str, Any]:
    probe = _container(["-c", PROBE, json.dumps(targets)], front)
    return {
        "metadata": {"name": name},
        "spec": on_a_real_node({"restartPolicy": "Never", "containers": [probe]}),
    }


def _answers(core: k8s.CoreV1Api, namespace: str, name: str) -> dict[str, str]:
    done = pod_in_phase(core, namespace, name, ENDED)
    # Raw: the client would parse a log that is JSON, and hand back its repr.
    log = core.read_namespaced_pod_log(name, namespace, _preload_content=False).data.decode()
    assert done.status.phase == "Succeeded", log
    return dict(json.loads(log.strip().splitlines()[-1]))


def test_across_clusters_only_the_api_servers_answer(
    dev_env: Environment, cluster_api: Api, namespace_in_its_queue: str
) -> None:
    network = dev_env.pod_network()
    if network is None or network.mode != podnet.ISOLATED:
        pytest.fail("the environment's networks are not isolated: `armada-bridge dev up --network isolated`")
    namespace = namespace_in_its_queue
    front = k8s.CoreV1Api(cluster_api("front"))
    system = keys.SYSTEM_NAMESPACE  # unmanaged there: the front's own pods, on its real node
    front.create_namespaced_pod(system, _server("net-front-server", front=True))
    try:
        front_server = pod_in_phase(front, system, "net-front-server", ("Running",))
        assert front_server.spec.node_name == "front-real-0"
        # Managed pods in a remote cluster: a server no Service selects, one a Service selects.
        front.create_namespaced_pod(namespace, _server("hidden"))
        front.create_namespaced_pod(namespace, _server("exposed", {"app": "exposed"}))
        front.create_namespaced_service(
            namespace,
            {
                "metadata": {"name": "exposed"},
                "spec": {"selector": {"app": "exposed"}, "ports": [{"port": PORT}]},
            },
        )
        hidden = pod_in_phase(front, namespace, "hidden", ("Running",))
        cluster = hidden.metadata.annotations[keys.ASSIGNED_CLUSTER]
        remote = k8s.CoreV1Api(cluster_api(cluster))
        remote_ip = remote.read_namespaced_pod("hidden", namespace).status.pod_ip
        assert remote_ip, "the remote pod has no address"

        # From a remote pod: no front pod answers; the front API does (the vkubelet's environment).
        front.create_namespaced_pod(
            namespace,
            _probe(
                "from-remote",
                [
                    ("front pod", front_server.status.pod_ip, PORT),
                    ("front API", "KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"),
                ],
            ),
        )
        answers = _answers(front, namespace, "from-remote")
        assert answers["front API"] == "answered" and answers["front pod"] != "answered", answers

        # From a front pod, and from the host: no remote pod answers at its own address.
        front.create_namespaced_pod(
            system, _probe("net-from-front", [("remote pod", remote_ip, PORT)], front=True)
        )
        assert _answers(front, system, "net-from-front")["remote pod"] != "answered"
        with pytest.raises(OSError):
            socket.create_connection((remote_ip, PORT), timeout=4).close()

        # No front pod bound to a virtual node shows a remote pod's address: none, or its relay's.
        exposed = wait_for(
            "the exposed pod addressed",
            lambda: (p := front.read_namespaced_pod("exposed", namespace)).status.pod_ip and p,
            timeout=120,
        )
        relays = front.list_namespaced_pod(system, label_selector=keys.RELAY_FOR).items
        relay_ips = {r.status.pod_ip for r in relays if r.status.pod_ip}
        remote_ips = {p.status.pod_ip for p in remote.list_namespaced_pod(namespace).items if p.status.pod_ip}
        assert exposed.status.pod_ip in relay_ips
        for p in front.list_namespaced_pod(namespace).items:
            if p.spec.node_name and p.spec.node_name.startswith("remote-"):
                assert p.status.pod_ip in (None, *relay_ips), (p.metadata.name, p.status.pod_ip)
                assert p.status.pod_ip not in remote_ips
    finally:
        for name in ("net-front-server", "net-from-front"):
            with contextlib.suppress(ApiException):
                front.delete_namespaced_pod(name, system, grace_period_seconds=0)
