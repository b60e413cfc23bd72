"""The local environment of `armada-bridge dev up`, checked against the real control planes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.core.quantities import parse_quantity
from devenv import versions
from devenv.pods import busybox, busybox_pod
from devenv.processes.environment import FRONT, Environment
from tests.framework.kube import wait_for

REMOTES = ["remote-1", "remote-2"]


def _pod(name: str, scheduler: str = "default-scheduler") -> dict[str, object]:
    return busybox_pod(name, schedulerName=scheduler)


@pytest.mark.parametrize("cluster", REMOTES)
def test_remote_has_four_ready_kwok_nodes(cluster: str, cluster_api: Callable[[str], k8s.ApiClient]) -> None:
    every = k8s.CoreV1Api(cluster_api(cluster)).list_node().items
    nodes = [n for n in every if (n.metadata.annotations or {}).get(keys.KWOK_NODE_ANNOTATION)]
    assert len(nodes) == 4
    for n in nodes:
        ready = [c.status for c in n.status.conditions if c.type == "Ready"]
        assert ready == ["True"], n.metadata.name
        assert n.status.allocatable["cpu"] == "32"
        assert n.status.allocatable["memory"] == "128Gi"
        assert n.status.allocatable["pods"] == "110"
    gpus = sorted(n.status.allocatable.get("nvidia.com/gpu", "0") for n in nodes)
    assert gpus == ["0", "0", "4", "4"]


@pytest.mark.parametrize("cluster", REMOTES)
def test_remote_has_a_ready_real_node_beside(
    cluster: str, cluster_api: Callable[[str], k8s.ApiClient]
) -> None:
    """One real node per remote cluster by default: its own kubelet's, Ready, tainted so ordinary
    work stays on KWOK's nodes, not labelled as KWOK's, with what the host gives it."""
    (node,) = [
        n
        for n in k8s.CoreV1Api(cluster_api(cluster)).list_node().items
        if not (n.metadata.annotations or {}).get(keys.KWOK_NODE_ANNOTATION)
    ]
    assert node.metadata.name == f"{cluster}-real-0"
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
    assert node.status.node_info.kubelet_version == versions.load().kubernetes
    assert node.status.node_info.container_runtime_version.startswith("containerd://")
    assert (node.metadata.labels or {}).get(keys.NODE_TYPE_LABEL) != keys.DEV_NODE_TYPE_VALUE
    assert [(t.key, t.effect) for t in node.spec.taints] == [
        (keys.DEV_REAL_NODE_TAINT_KEY, keys.DEV_REAL_NODE_TAINT_EFFECT)
    ]
    # Two real nodes share the host: each offers its half of the CPUs.
    assert parse_quantity(node.status.allocatable["cpu"]) == (os.cpu_count() or 1) * 1000 // 2


@pytest.mark.parametrize("cluster", REMOTES)
def test_pod_runs_and_job_completes(
    cluster: str, namespace: str, cluster_api: Callable[[str], k8s.ApiClient]
) -> None:
    core = k8s.CoreV1Api(cluster_api(cluster))
    batch = k8s.BatchV1Api(cluster_api(cluster))
    core.create_namespaced_pod(namespace, _pod("sleeper"))
    pod = wait_for(
        "pod Running",
        lambda: (p := core.read_namespaced_pod("sleeper", namespace)).status.phase == "Running" and p,
    )
    assert pod.spec.node_name.startswith(f"{cluster}-node-")
    batch.create_namespaced_job(
        namespace,
        {
            "metadata": {"name": "done"},
            "spec": {
                "completions": 2,
                "parallelism": 2,
                "template": {"spec": {"restartPolicy": "Never", "containers": [busybox()]}},
            },
        },
    )
    wait_for(
        "Job complete",
        lambda: (batch.read_namespaced_job_status("done", namespace).status.succeeded or 0) >= 2,
    )


def test_remote_clusters_are_isolated(namespace: str, cluster_api: Callable[[str], k8s.ApiClient]) -> None:
    one = k8s.CoreV1Api(cluster_api("remote-1"))
    two = k8s.CoreV1Api(cluster_api("remote-2"))
    one.create_namespaced_config_map(namespace, {"metadata": {"name": "only-in-one"}})
    assert [
        c.metadata.name
        for c in one.list_namespaced_config_map(namespace).items
        if c.metadata.name == "only-in-one"
    ]
    assert not [
        c for c in two.list_namespaced_config_map(namespace).items if c.metadata.name == "only-in-one"
    ]
    assert {n.metadata.name for n in one.list_node().items}.isdisjoint(
        n.metadata.name for n in two.list_node().items
    )


@pytest.mark.parametrize("scheduler", ["default-scheduler", "volcano", "scheduler-plugins-scheduler"])
def test_front_scheduler_serves_operator_profiles(
    scheduler: str, namespace: str, cluster_api: Callable[[str], k8s.ApiClient]
) -> None:
    """The front kube-scheduler runs our configuration: every profile operators name schedules pods."""
    core = k8s.CoreV1Api(cluster_api(FRONT))
    core.create_namespaced_pod(namespace, _pod("p", scheduler))
    pod = wait_for(
        f"pod with schedulerName {scheduler} Running",
        lambda: (p := core.read_namespaced_pod("p", namespace)).status.phase == "Running" and p,
    )
    assert pod.spec.node_name == "front-node-0"


def test_cli_kubeconfig_and_status(dev_env: Environment) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "cli.main", "dev", "kubeconfig", "remote-1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == str(dev_env.kubeconfig("remote-1"))
    bad = subprocess.run(
        [sys.executable, "-m", "cli.main", "dev", "kubeconfig", "nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "no cluster named 'nope'" in bad.stderr
    status = subprocess.run(
        [sys.executable, "-m", "cli.main", "dev", "status"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in [FRONT, *REMOTES]:
        assert any(line.split()[:2] == [name, "yes"] for line in status.splitlines()), status
