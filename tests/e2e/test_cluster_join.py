"""`armada-bridge clusters join|leave` (issue 48): a third cluster, made for the test (its own
kube-apiserver, etcd, controller-manager and scheduler, one KWOK node), joins the running bridge
with nothing but an admin's kubeconfig of it, runs a pod sent to it, and leaves with nothing of the
bridge's left behind in either cluster."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from cli import cluster_join
from devenv import binaries
from devenv.clients import api_client
from devenv.names import FRONT
from devenv.processes.control_plane import ControlPlane
from devenv.processes.environment import Environment
from devenv.simulated.nodes import remote_nodes
from tests.framework.bridge import Api, pod, wait_running
from tests.framework.kube import wait_for

# Alone in the environment: the clusters it joins are the shared front's too while they last.
pytestmark = pytest.mark.exclusive


@pytest.fixture
def joinee(tmp_path: Path) -> Iterator[ControlPlane]:
    """A cluster of its own, outside the environment's (the bridge does not know it)."""
    cluster = ControlPlane(name="joinee", kwok_workdir=tmp_path / "kwok", binaries=binaries.expected())
    cluster.create()
    try:
        with api_client(cluster.kubeconfig) as api:
            (node,) = remote_nodes("joinee", 1)
            k8s.CoreV1Api(api).create_node(node)
        yield cluster
    finally:
        cluster.delete()


def _cli(env: Environment, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "cli.main",
        "clusters",
        *args,
        "--kubeconfig",
        str(env.kubeconfig(FRONT)),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


def _bridge_objects(remote: k8s.ApiClient) -> list[str]:
    """What of the bridge's is in the remote cluster: its identity, its token, namespaces it made."""
    core, rbac = k8s.CoreV1Api(remote), k8s.RbacAuthorizationV1Api(remote)
    found = []
    for obj in cluster_join.remote_objects():
        name = obj["metadata"]["name"]
        listed = {
            "ServiceAccount": lambda: [
                s.metadata.name for s in core.list_service_account_for_all_namespaces().items
            ],
            "ClusterRole": lambda: [r.metadata.name for r in rbac.list_cluster_role().items],
            "ClusterRoleBinding": lambda: [b.metadata.name for b in rbac.list_cluster_role_binding().items],
        }[obj["kind"]]()
        found += [f"{obj['kind']}/{name}"] if name in listed else []
    managed = f"{keys.MANAGED_BY_LABEL}={keys.MANAGED_BY_VALUE}"
    found += [
        f"Secret/{s.metadata.name}" for s in core.list_secret_for_all_namespaces(label_selector=managed).items
    ]
    found += [f"Namespace/{n.metadata.name}" for n in core.list_namespace(label_selector=managed).items]
    found += [
        f"Pod/{p.metadata.name}"
        for p in core.list_pod_for_all_namespaces(label_selector=keys.FRONT_UID).items
    ]
    return found


def test_a_cluster_joins_runs_a_pod_and_leaves_nothing_behind(
    dev_env: Environment, namespace: str, cluster_api: Api, joinee: ControlPlane
) -> None:
    name = f"joined-{uuid.uuid4().hex[:5]}"
    front = cluster_api(FRONT)
    joined = _cli(dev_env, "join", name, "--remote-kubeconfig", str(joinee.kubeconfig))
    assert joined.returncode == 0, joined.stdout + joined.stderr
    assert f"virtual node {name} Ready" in joined.stdout, joined.stdout
    again = _cli(dev_env, "join", name, "--remote-kubeconfig", str(joinee.kubeconfig))
    assert again.returncode == 0, again.stdout + again.stderr  # nothing to change: the same outcome
    with api_client(joinee.kubeconfig) as remote:
        assert "ServiceAccount/armada-bridge-remote" in _bridge_objects(remote)
        # A pod sent to the new cluster runs there.
        body = pod("to-the-new-one", queue=namespace, cpu="1")
        body["spec"]["nodeSelector"] = {keys.CLUSTER_LABEL: name}
        k8s.CoreV1Api(front).create_namespaced_pod(namespace, body)
        (running,) = wait_running(cluster_api, namespace, 1, timeout=120)
        assert (running.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) == name
        assert [p.metadata.name for p in k8s.CoreV1Api(remote).list_namespaced_pod(namespace).items] == [
            "to-the-new-one"
        ]

        left = _cli(dev_env, "leave", name, "--remote-kubeconfig", str(joinee.kubeconfig))
        assert left.returncode == 0, left.stdout + left.stderr
        # The vkubelet's cleanup deleted what it made there, not its own credential: `leave` did.
        assert f"deleted Secret kube-system/{cluster_join.TOKEN_SECRET}" in left.stdout, left.stdout
        wait_for(f"nothing of the bridge's left in {name}", lambda: _bridge_objects(remote) == [], timeout=60)
    custom = k8s.CustomObjectsApi(front)
    assert name not in [
        rc["metadata"]["name"]
        for rc in custom.list_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters")["items"]
    ]
    assert name not in [n.metadata.name for n in k8s.CoreV1Api(front).list_node().items]
    secrets = k8s.CoreV1Api(front).list_namespaced_secret(keys.SYSTEM_NAMESPACE).items
    assert f"{name}-kubeconfig" not in [s.metadata.name for s in secrets]
    # The front pod that ran there ended with its cluster.
    (ended,) = k8s.CoreV1Api(front).list_namespaced_pod(namespace).items or [None]
    assert ended is None or ended.status.phase == "Failed", ended


def test_a_join_that_cannot_work_says_why_and_exits_non_zero(
    dev_env: Environment, joinee: ControlPlane, tmp_path: Path
) -> None:
    name = f"unreachable-{uuid.uuid4().hex[:5]}"
    # The vkubelet is told a server address where nothing listens: the join waits, then says so.
    r = _cli(
        dev_env,
        "join",
        name,
        "--remote-kubeconfig",
        str(joinee.kubeconfig),
        "--server",
        "https://127.0.0.1:1",
        "--timeout",
        "30",
    )
    try:
        assert r.returncode == 1, r.stdout + r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert f"virtual node {name} not Ready" in line and "127.0.0.1:1" in line, line
    finally:
        left = _cli(dev_env, "leave", name, "--remote-kubeconfig", str(joinee.kubeconfig), "--timeout", "120")
        assert left.returncode == 0, left.stdout + left.stderr
