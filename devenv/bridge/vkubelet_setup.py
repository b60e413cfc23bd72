"""The vkubelet in the dev environment: remote clusters registered as RemoteClusters, the process,
and the KWOK configuration that lets `kubectl logs` reach something in the remote clusters."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv import versions
from devenv.binaries import Binaries
from devenv.clients import api_client
from devenv.components import Component
from devenv.images import runtime
from devenv.names import FRONT
from devenv.ports import free_ports
from devenv.realnode.node import RealNode
from devenv.realnode.placement import on_a_real_node

if TYPE_CHECKING:
    from devenv.base import BaseEnvironment

COMPONENT = "vkubelet"
# What every simulated container of the remote clusters "printed" (CRI log format, as KWOK reads it).
REMOTE_LOG_LINES = (
    "hello from the remote cluster",
    "armada-bridge vkubelet log line 2",
    "armada-bridge vkubelet log line 3",
)


def remote_attach_log(state_dir: Path) -> Path:
    """What `kubectl attach` on a simulated remote container shows: lines appended to this file
    (CRI log format) while attached."""
    return state_dir / "vkubelet" / "remote-attach.log"


def remote_exec_dir(state_dir: Path) -> Path:
    """Where `kubectl exec` on a simulated remote container runs its command (a local directory,
    kwok-exec's working directory: devenv.simulated.kwok_exec)."""
    return state_dir / "vkubelet" / "remote-exec"


def remote_kwok_config(state_dir: Path) -> list[dict[str, Any]]:
    """Extra kwokctl documents for remote clusters, served by KWOK's server, to which the nodes'
    kubelet port (kwok-exec, which serves `pods/exec` itself) passes the other pod subresources the
    remote kube-apiserver proxies:
    - ClusterLogs: every container "printed" REMOTE_LOG_LINES (`pods/log`);
    - ClusterAttach: `pods/attach` follows remote_attach_log from its end;
    - ClusterPortForward: every port of every pod echoes what it receives (`cat`).
    kwok-exec runs `pods/exec` commands locally, in remote_exec_dir (so `kubectl cp` with a
    relative path lands there)."""
    log_file = state_dir / "vkubelet" / "remote-container.log"
    if not log_file.is_file():
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.write_text(
            "".join(
                f"2026-01-01T00:00:0{i}.000000000Z stdout F {line}\n"
                for i, line in enumerate(REMOTE_LOG_LINES)
            )
        )
    remote_exec_dir(state_dir).mkdir(parents=True, exist_ok=True)
    attach_log = remote_attach_log(state_dir)
    attach_log.touch()
    return [
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterLogs",
            "metadata": {"name": "armada-bridge-remote-logs"},
            "spec": {
                "logs": [{"logsFile": str(log_file), "previousLogsFile": str(log_file), "follow": True}]
            },
        },
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterAttach",
            "metadata": {"name": "armada-bridge-remote-attach"},
            "spec": {"attaches": [{"logsFile": str(attach_log)}]},
        },
        {
            "apiVersion": "kwok.x-k8s.io/v1alpha1",
            "kind": "ClusterPortForward",
            "metadata": {"name": "armada-bridge-remote-port-forward"},
            "spec": {"forwards": [{"command": ["cat"]}]},
        },
    ]


def front_apiserver_args(front_workdir: Path) -> list[str]:
    """kwokctl --extra-args for the front kube-apiserver: present a client certificate to kubelets
    (kwokctl sets none), so the vkubelet's kubelet API can authenticate it."""
    pki = front_workdir / "pki"
    return [
        f"kube-apiserver=kubelet-client-certificate={pki / 'admin.crt'}",
        f"kube-apiserver=kubelet-client-key={pki / 'admin.key'}",
    ]


def inline_kubeconfig(path: Path) -> dict[str, Any]:
    """The kubeconfig at `path` with certificate files replaced by their data (fit for a Secret)."""
    cfg = yaml.safe_load(path.read_text())
    pairs = (
        ("clusters", "cluster", "certificate-authority"),
        ("users", "user", "client-certificate"),
        ("users", "user", "client-key"),
    )
    for section, inner, field in pairs:
        for entry in cfg.get(section) or []:
            body = entry.get(inner) or {}
            file = body.pop(field, None)
            if file:
                p = Path(file) if Path(file).is_absolute() else path.parent / file
                body[f"{field}-data"] = base64.b64encode(p.read_bytes()).decode()
    return dict(cfg)


def _upsert_secret(core: k8s.CoreV1Api, name: str, kubeconfig: dict[str, Any]) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": keys.SYSTEM_NAMESPACE,
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
        },
        "type": "Opaque",
        "data": {keys.KUBECONFIG_SECRET_KEY: base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()},
    }
    try:
        current = core.read_namespaced_secret(name, keys.SYSTEM_NAMESPACE)
        if (current.data or {}) != body["data"]:
            core.replace_namespaced_secret(name, keys.SYSTEM_NAMESPACE, body)
    except ApiException as e:
        if e.status != 404:
            raise
        core.create_namespaced_secret(keys.SYSTEM_NAMESPACE, body)


def _upsert_remote_cluster(custom: k8s.CustomObjectsApi, name: str, secret: str, front_server: str) -> None:
    # Remote pods reach the front apiserver at `front_server` (Environment.front_api_server).
    front = urlsplit(front_server)
    body = {
        "apiVersion": keys.API_VERSION,
        "kind": "RemoteCluster",
        "metadata": {"name": name},
        "spec": {
            "kubeconfigSecret": {"name": secret},
            "frontAPI": {"host": front.hostname or "", "port": front.port or 443},
        },
    }
    try:
        custom.create_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", body)
    except ApiException as e:
        if e.status != 409:
            raise


def kubelet_port(env: BaseEnvironment) -> int:
    """The environment's port for the kubelet API (never 10250: a second environment may run)."""
    try:
        return env.port("kubelet")
    except (KeyError, AttributeError):
        pass
    port_file = env.state_dir / "vkubelet" / "port"
    if port_file.is_file():
        return int(port_file.read_text())
    port = free_ports(1, holder=env.state_dir)[0]
    port_file.parent.mkdir(parents=True, exist_ok=True)
    port_file.write_text(str(port))
    return port


def relay_args(env: BaseEnvironment) -> list[str]:
    """Relay pods on the front's real node, running the bridge's image (its nodes have it), dialling
    the vkubelet where the front's pods reach the host; none when the front has no real node."""
    host = env.host_for_front_pods()
    if not host:
        return []
    port = env.port("relay")
    front_node = RealNode(FRONT, 0, 0).name
    placement = on_a_real_node({"nodeSelector": {"kubernetes.io/hostname": front_node}})
    return [
        "--relay-listen",
        f"{host}:{port}",
        "--relay-endpoint",
        f"{host}:{port}",
        "--relay-image",
        runtime.NAME,
        "--relay-placement",
        json.dumps(placement),
    ]


def component(env: BaseEnvironment) -> Component:
    port = kubelet_port(env)
    return Component(
        name=COMPONENT,
        argv=[
            sys.executable,
            "-m",
            "vkubelet",
            "--kubeconfig",
            str(env.kubeconfig(FRONT)),
            "--listen",
            f"{env.bridge_host}:{port}",
            "--node-address",
            env.bridge_host,
            "--cert-dir",
            str(env.state_dir / "vkubelet" / "certs"),
            *relay_args(env),
            *(f"--front-cidr={cidr}" for cidr in env.front_ranges()),
        ],
        env={"PYTHONPATH": str(versions.REPO_ROOT)},
        ready_url=f"https://{env.bridge_host}:{port}/readyz",
    )


def setup(env: BaseEnvironment, bins: Binaries) -> None:
    """Register every remote cluster of `env` (Secret + RemoteCluster) and run the vkubelet."""

    with api_client(env.kubeconfig(FRONT)) as api:
        core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
        for name, kubeconfig in env.remote_kubeconfigs().items():
            secret = f"{name}-kubeconfig"
            _upsert_secret(core, secret, inline_kubeconfig(kubeconfig))
            _upsert_remote_cluster(custom, name, secret, env.front_api_server())
    c = component(env)
    env.supervisor.ensure(c)
    env.supervisor.wait_ready(c)
