"""The local environment of `armada-bridge dev up`, checked against the real control planes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client as k8s

from armada_bridge import keys, versions
from armada_bridge.core.quantities import parse_quantity
from armada_bridge.dev.binary.environment import FRONT, Environment
from armada_bridge.dev.kwok import kwok_exec
from tests.support import wait_for

REMOTES = ["remote-1", "remote-2"]


def _pod(name: str, scheduler: str = "default-scheduler") -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "spec": {"schedulerName": scheduler, "containers": [{"name": "main", "image": "busybox"}]},
    }


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
                "template": {
                    "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
                },
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
        [sys.executable, "-m", "armada_bridge.cli", "dev", "kubeconfig", "remote-1"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out == str(dev_env.kubeconfig("remote-1"))
    bad = subprocess.run(
        [sys.executable, "-m", "armada_bridge.cli", "dev", "kubeconfig", "nope"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 1 and "no cluster named 'nope'" in bad.stderr
    status = subprocess.run(
        [sys.executable, "-m", "armada_bridge.cli", "dev", "status"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in [FRONT, *REMOTES]:
        assert any(line.split()[:2] == [name, "yes"] for line in status.splitlines()), status


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _ports(env: Environment) -> set[int]:
    """TCP ports our processes listen on, from /proc/net/tcp and the processes' socket inodes."""
    inodes: set[str] = set()
    for pid in env.pids():
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = str(fd.readlink()) if fd.is_symlink() else ""
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def test_up_repairs_and_down_leaves_nothing(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A separate small environment: kill a component, `up` repairs it; `down` leaves no process or port."""
    env = Environment(tmp_path_factory.mktemp("env"))
    try:
        env.up(workers=1, nodes=1)
        assert [s.healthy for s in env.status()] == [True, True]
        victim = env.cluster("remote-1").component_pids()["kube-apiserver"]
        assert victim
        subprocess.run(["kill", "-9", str(victim)], check=True)
        wait_for("remote-1 unhealthy", lambda: not env.status()[1].healthy, timeout=10)
        env.up(workers=1, nodes=1)
        assert [s.healthy for s in env.status()] == [True, True]
        # remote-1's kubelet port (kwok-exec) is part of the cluster: gone, the cluster is unhealthy
        # and `up` starts it again.
        exec_server = env.supervisor.pid(kwok_exec.name("remote-1"))
        assert exec_server
        subprocess.run(["kill", "-9", str(exec_server)], check=True)
        wait_for("remote-1 unhealthy", lambda: not env.status()[1].healthy, timeout=10)
        env.up(workers=1, nodes=1)
        assert [s.healthy for s in env.status()] == [True, True]
        assert env.supervisor.pid(kwok_exec.name("remote-1")) not in (None, exec_server)
        # So is its real node's kubelet.
        kubelet = env.supervisor.pid("kubelet-remote-1-real-0")
        assert kubelet
        subprocess.run(["kill", "-9", str(kubelet)], check=True)
        wait_for("remote-1 unhealthy", lambda: not env.status()[1].healthy, timeout=10)
        env.up(workers=1, nodes=1)
        assert [s.healthy for s in env.status()] == [True, True]
        assert env.supervisor.pid("kubelet-remote-1-real-0") not in (None, kubelet)
        ports = _ports(env)
        assert env.port(kwok_exec.name("remote-1")) in ports
        assert len(ports) >= 8, ports  # etcd, apiserver, ... of two clusters
        assert env.pids()
    finally:
        env.down()
    assert env.pids() == []
    left = [p for p in ports if _listening(p)]
    assert not left, subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    assert not env.state_dir.exists()
