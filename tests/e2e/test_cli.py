"""`armada-bridge queues | clusters | gangs | why` against the running bridge."""

from __future__ import annotations

import subprocess
import sys

from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.dev.binary.environment import Environment
from armada_bridge.dev.names import FRONT
from tests.e2e.bridge import Api, pod, wait_running
from tests.support import wait_for


def _cli(env: Environment, *args: str) -> str:
    cmd = [sys.executable, "-m", "armada_bridge.cli", *args, "--kubeconfig", str(env.kubeconfig(FRONT))]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def test_views_tell_where_gangs_went_and_why_pods_wait(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    core = k8s.CoreV1Api(cluster_api("front"))
    ok = {keys.GANG_ID: "ok", keys.GANG_CARDINALITY: "2"}
    short = {keys.GANG_ID: "short", keys.GANG_CARDINALITY: "3"}
    for i in range(2):
        core.create_namespaced_pod(
            namespace, pod(f"ok-{i}", queue=namespace, annotations=ok, labels={"g": "ok"})
        )
        core.create_namespaced_pod(namespace, pod(f"short-{i}", queue=namespace, annotations=short))
    running = wait_running(cluster_api, namespace, 2, "g=ok")
    cluster = running[0].metadata.annotations[keys.ASSIGNED_CLUSTER]
    gangs = _cli(dev_env, "gangs", "-n", namespace)
    assert any(
        line.split()[1:] == ["armada/ok", namespace, "2/2", cluster, "Running"] for line in gangs.splitlines()
    ), gangs
    assert any(
        line.split()[1:] == ["armada/short", namespace, "2/3", "-", "Waiting"] for line in gangs.splitlines()
    ), gangs

    def why_short() -> str | None:
        text = _cli(dev_env, "why", "short-0", "-n", namespace)
        return text if "gang 2/3 present" in text else None

    why = wait_for("why names the missing member", why_short, timeout=20)
    assert f"queue: {namespace} (from the pod's label {keys.QUEUE_LABEL})" in why and "armada/short" in why
    assert f"admitted to remote cluster {cluster}" in _cli(dev_env, "why", "ok-0", "-n", namespace)
    assert namespace in _cli(dev_env, "queues")
    clusters = _cli(dev_env, "clusters")
    assert {line.split()[0] for line in clusters.splitlines()[1:]} >= {"remote-1", "remote-2"}
    unmanaged = pod("plain", queue=None)
    core.create_namespaced_pod(namespace, unmanaged)
    assert "not managed by armada-bridge" in _cli(dev_env, "why", "plain", "-n", namespace)


def test_demo_runs_and_cleans_up_after_itself(dev_env: Environment, cluster_api: Api) -> None:
    from armada_bridge.demo import NAMESPACE, OPERATORS_NAMESPACE

    cmd = [sys.executable, "-m", "armada_bridge.cli", "demo"]
    shown = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "armada-bridge demo --clean" in shown, shown
    subprocess.run([*cmd, "--clean"], capture_output=True, text=True, check=True)
    demo = {NAMESPACE, OPERATORS_NAMESPACE}
    names = {n.metadata.name for n in k8s.CoreV1Api(cluster_api("front")).list_namespace().items}
    assert not names & demo, names
    for c in ("remote-1", "remote-2"):  # the vkubelet collects the remote namespaces it created
        wait_for(
            f"demo namespaces gone from {c}",
            lambda c=c: (
                not {n.metadata.name for n in k8s.CoreV1Api(cluster_api(c)).list_namespace().items} & demo
            ),
            timeout=90,
        )
