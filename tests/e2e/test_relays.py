"""Relays (RemoteCluster network `Relay`, the default): a front pod shows no address of its remote
cluster; one a front Service selects shows the address of a relay pod in the front, and the front
reaches the remote pod there: by the Service's DNS name from a pod on the front's real node, and
through the front API server's service and pod proxies (as KubeRay follows a RayJob)."""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import time
import uuid
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from bench.chaos import faults
from devenv import binaries, pods
from devenv.bridge import vkubelet_setup
from devenv.images.recipes import RECIPES
from devenv.processes.environment import Environment
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import ENDED, Api, pod_in_phase
from tests.framework.kube import wait_for

SERVER_PORT = pods.WEB_PORT


def _server(marker: str) -> dict[str, Any]:
    return pods.web_pod("web", marker, labels={"app": "web"})


def _relay_of(front: k8s.CoreV1Api, uid: str) -> Any:
    relays = front.list_namespaced_pod(keys.SYSTEM_NAMESPACE, label_selector=f"{keys.RELAY_FOR}={uid}").items
    return relays[0] if relays else None


def _addressed(front: k8s.CoreV1Api, namespace: str, name: str) -> Any:
    """The front pod once Ready (its server listens: the remote pod's readiness, mirrored) with an
    address."""

    def probe() -> Any:
        p = front.read_namespaced_pod(name, namespace)
        ready = any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
        return p if p.status.phase == "Running" and ready and p.status.pod_ip else None

    return wait_for(f"pod {name} Ready with an address", probe, timeout=120)


def _served(dev_env: Environment, cluster_api: Api, namespace: str) -> tuple[k8s.CoreV1Api, str, Any]:
    """A web server on a remote real node behind the front Service `web` (port 80 to its `http`):
    the front's API, the page's text, the front pod once it has an address."""
    if dev_env.real_nodes() is None:
        pytest.fail("the environment has no real nodes: `armada-bridge dev up --real-nodes 1`")
    front = k8s.CoreV1Api(cluster_api("front"))
    marker = uuid.uuid4().hex
    front.create_namespaced_pod(namespace, _server(marker))
    front.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": "http"}]},
        },
    )
    return front, marker, _addressed(front, namespace, "web")


def test_a_pod_a_front_service_selects_is_reached_at_its_relays_address(
    dev_env: Environment, cluster_api: Api, namespace_in_its_queue: str
) -> None:
    namespace = namespace_in_its_queue
    front, marker, web = _served(dev_env, cluster_api, namespace)
    cluster = web.metadata.annotations[keys.ASSIGNED_CLUSTER]
    remote = k8s.CoreV1Api(cluster_api(cluster)).read_namespaced_pod("web", namespace)
    relay = _relay_of(front, web.metadata.uid)
    assert relay is not None, "no relay pod for the front pod"
    # The front pod's address is its relay's, on the front's real node, never the remote pod's.
    assert web.status.pod_ip == relay.status.pod_ip != remote.status.pod_ip
    assert web.status.host_ip == relay.status.host_ip and relay.spec.node_name == "front-real-0"
    assert [c.ports[0].container_port for c in relay.spec.containers] == [SERVER_PORT]

    # Through the front API server's proxies, which dial the pod's (the relay's) address.
    proxied = front.api_client.call_api(
        f"/api/v1/namespaces/{namespace}/services/web:80/proxy/index.html",
        "GET",
        response_type="str",
        auth_settings=["BearerToken"],
        _preload_content=True,
    )[0]
    assert proxied.strip() == marker
    proxied = front.connect_get_namespaced_pod_proxy_with_path("web", namespace, "index.html")
    assert proxied.strip() == marker

    # From a pod on the front's real node, by the Service's DNS name.
    url = f"http://web.{namespace}.svc.cluster.local/index.html"
    # kube-proxy programs the Service's endpoints a moment after the API lists them: until then its
    # rules refuse the connection, so the client tries again on a refusal, for up to 30 s.
    fetch = (
        "import time, urllib.request\n"
        "for attempt in range(30):\n"
        "    try:\n"
        f"        print(urllib.request.urlopen({url!r}, timeout=20).read().decode()); break\n"
        "    except OSError as e:\n"
        "        if 'refused' not in str(e) or attempt == 29: raise\n"
        "        time.sleep(1)\n"
    )
    client = {
        "name": "main",
        "image": RECIPES["bridge"].name,
        "command": ["python", "-c", fetch],
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    }
    # Not managed: in the bridge's namespace the front's own scheduler places it, on the real node.
    client_name = f"client-{marker[:8]}"
    front.create_namespaced_pod(
        keys.SYSTEM_NAMESPACE,
        {
            "metadata": {"name": client_name},
            "spec": on_a_real_node({"restartPolicy": "Never", "containers": [client]}),
        },
    )
    try:
        done = pod_in_phase(front, keys.SYSTEM_NAMESPACE, client_name, ENDED, timeout=90)
        log = front.read_namespaced_pod_log(client_name, keys.SYSTEM_NAMESPACE)
        assert done.status.phase == "Succeeded" and log.strip() == marker, (done.status.phase, log)
    finally:
        front.delete_namespaced_pod(client_name, keys.SYSTEM_NAMESPACE, grace_period_seconds=0)

    # The pod deleted: its relay goes with it.
    front.delete_namespaced_pod("web", namespace, grace_period_seconds=0)
    wait_for("the relay gone", lambda: _relay_of(front, web.metadata.uid) is None or None, timeout=60)


def test_a_pod_no_front_service_selects_shows_no_address_of_its_remote_cluster(
    dev_env: Environment, cluster_api: Api, namespace_in_its_queue: str
) -> None:
    namespace = namespace_in_its_queue
    if dev_env.real_nodes() is None:
        pytest.fail("the environment has no real nodes: `armada-bridge dev up --real-nodes 1`")
    front = k8s.CoreV1Api(cluster_api("front"))
    front.create_namespaced_pod(namespace, _server("alone"))

    web = pod_in_phase(front, namespace, "web", ("Running",))
    assert web.status.pod_ip is None and web.status.host_ip is None, web.status
    assert _relay_of(front, web.metadata.uid) is None
    # Selected later: it gets its relay's address then.
    front.create_namespaced_service(
        namespace,
        {"metadata": {"name": "web"}, "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
    )
    web = _addressed(front, namespace, "web")
    assert ipaddress.ip_address(web.status.pod_ip) == ipaddress.ip_address(
        _relay_of(front, web.metadata.uid).status.pod_ip
    )


def _get(address: str, path: str = "/index.html", timeout: float = 10) -> str | None:
    """What the web server answers at `address` (the relay's, from this host), None on failure."""
    try:
        with socket.create_connection((address, SERVER_PORT), timeout=timeout) as s:
            s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        return answer.decode(errors="replace") or None
    except OSError:
        return None


@pytest.mark.exclusive  # it kills a remote kube-apiserver and the vkubelet
def test_relayed_connections_end_with_what_carries_them_and_new_ones_follow(
    dev_env: Environment, cluster_api: Api, namespace_in_its_queue: str
) -> None:
    """The remote API server killed under an open relayed connection: that connection ends, a new
    one works once it is back; the vkubelet killed: the same relay carries new connections once it
    runs again. (The host reaches the front's pods, relays among them, as its control plane does.)"""
    front, marker, web = _served(dev_env, cluster_api, namespace_in_its_queue)
    relay = _relay_of(front, web.metadata.uid)
    address = web.status.pod_ip
    assert marker in (wait_for("the page through the relay", lambda: _get(address), timeout=30) or "")

    # An open connection (a request not finished yet), then the remote API server killed.
    cluster = web.metadata.annotations[keys.ASSIGNED_CLUSTER]
    control_plane = dev_env.cluster(cluster)
    pid = control_plane.component_pids()["kube-apiserver"]
    assert pid is not None
    command = faults.process_command(pid)
    open_connection = socket.create_connection((address, SERVER_PORT), timeout=30)
    open_connection.sendall(b"GET /index.html HTTP/1.0\r\n")
    time.sleep(1)
    os.kill(pid, signal.SIGKILL)
    try:
        open_connection.settimeout(30)
        assert open_connection.recv(65536) == b"", "the connection outlived the API server carrying it"
    except ConnectionResetError:
        pass
    finally:
        open_connection.close()
        new = faults.restart_process(command, control_plane.workdir / "logs" / "kube-apiserver.log")
        (control_plane.workdir / "pids" / "kube-apiserver.pid").write_text(str(new))
    control_plane.wait_healthy(60)
    started = time.monotonic()
    assert marker in (wait_for("a new connection through the relay", lambda: _get(address), timeout=60) or "")
    print(
        f"a new relayed connection answered {time.monotonic() - started:.1f}s after the API server was back"
    )

    # The vkubelet killed: its relay endpoint goes, and comes back with it; the relay stays.
    vkubelet = dev_env.supervisor.pid(vkubelet_setup.COMPONENT)
    assert vkubelet is not None
    os.kill(vkubelet, signal.SIGKILL)
    wait_for("vkubelet gone", lambda: dev_env.supervisor.pid(vkubelet_setup.COMPONENT) is None, timeout=10)
    assert marker not in (_get(address, timeout=5) or ""), "a relayed connection without the vkubelet"
    vkubelet_setup.setup(dev_env, binaries.expected())
    assert marker in (wait_for("the relay carrying again", lambda: _get(address), timeout=60) or "")
    assert _relay_of(front, web.metadata.uid).metadata.uid == relay.metadata.uid
