"""The vkubelet on a separate small environment: `kubectl logs` through the front kube-apiserver,
a remote cluster that goes away and comes back, and a RemoteCluster deleted while its remote pods
cannot be. Never touches the shared environment."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv import binaries
from devenv.clients import api_client
from devenv.processes.environment import Environment
from tests.framework.kube import create_bound, kubectl, kubectl_argv, wait_for
from tests.framework.vkubelet_pods import (
    bound_pod,
    exists,
    node_ready,
    phases,
    remote_pods,
    run_bound,
)
from vkubelet.manager import CLEANUP_TIMEOUT

NS = "vk-private"
# Its tests share one environment of their own. Only the outage test runs new pods on remote-1 (the
# others use remote-2, which each puts back as it found it).
pytestmark = pytest.mark.own_environment


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    e = Environment(tmp_path_factory.mktemp("vk-env"))
    try:
        e.up(workers=2, nodes=1, real_nodes=0)  # its tests run nothing: KWOK nodes only
        yield e
    finally:
        e.down()


@pytest.fixture(scope="module")
def clients(env: Environment) -> Iterator[dict[str, k8s.CoreV1Api]]:
    apis = {name: api_client(env.kubeconfig(name)) for name in ("front", "remote-1", "remote-2")}
    cores = {name: k8s.CoreV1Api(a) for name, a in apis.items()}
    for core in cores.values():
        core.create_namespace({"metadata": {"name": NS}})
    yield cores
    for a in apis.values():
        a.close()


def test_kubectl_logs_on_a_front_pod(env: Environment, clients: dict[str, k8s.CoreV1Api]) -> None:
    front = clients["front"]
    # remote-2: the outage test stops and starts remote-1, whose KWOK then runs no new pods.
    run_bound(front, NS, bound_pod("talker", "remote-2"))

    logs = kubectl(env, "logs", "-n", NS, "talker")
    assert logs.returncode == 0, logs.stderr
    assert "hello from the remote cluster" in logs.stdout

    # Follow streams until the client goes (the container keeps running): read the first line.
    follow = subprocess.Popen(
        kubectl_argv(env, "logs", "-f", "-n", NS, "talker", "-c", "main"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert follow.stdout is not None
        first = follow.stdout.readline()
        assert "hello from the remote cluster" in first
    finally:
        follow.kill()
        follow.wait(10)

    tail = kubectl(env, "logs", "--tail=1", "--timestamps", "-n", NS, "talker")
    assert tail.returncode == 0, tail.stderr
    lines = tail.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("2026-01-01T00:00:02") and "line 3" in lines[0]

    limited = kubectl(env, "logs", "--limit-bytes=5", "-n", NS, "talker")
    assert limited.returncode == 0, limited.stderr
    assert limited.stdout == "hello"

    previous = kubectl(env, "logs", "--previous", "-n", NS, "talker")
    assert previous.returncode == 0, previous.stderr
    assert "hello from the remote cluster" in previous.stdout

    missing = kubectl(env, "logs", "-n", NS, "talker", "-c", "nope")
    assert missing.returncode != 0


def test_remote_outage_turns_node_not_ready_and_back(
    env: Environment, clients: dict[str, k8s.CoreV1Api]
) -> None:
    front, remote1 = clients["front"], clients["remote-1"]
    create_bound(front, NS, bound_pod("survivor", "remote-1"))
    create_bound(front, NS, bound_pod("bystander", "remote-2"))
    wait_for(
        "pods Running",
        lambda: (
            phases(front, NS).get("survivor") == "Running" and phases(front, NS).get("bystander") == "Running"
        ),
        timeout=30,
    )
    for name in ("remote-1", "remote-2"):
        wait_for(f"{name} Ready", lambda n=name: node_ready(front, n), timeout=30)
    uid = front.read_namespaced_pod("survivor", NS).metadata.uid
    cluster = env.cluster("remote-1")
    stopped = cluster._kwokctl("stop", "cluster")
    assert stopped.returncode == 0, stopped.stderr
    t0 = time.monotonic()
    try:
        wait_for("remote-1 NotReady", lambda: not node_ready(front, "remote-1"), timeout=40, interval=0.5)
        took = time.monotonic() - t0
        assert took <= 40
        assert node_ready(front, "remote-2")
        reason = next(c for c in front.read_node("remote-1").status.conditions if c.type == "Ready").reason
        assert reason == "RemoteUnreachable"
    finally:
        started = cluster._kwokctl("start", "cluster")
        assert started.returncode == 0, started.stderr
    wait_for("remote-1 Ready again", lambda: node_ready(front, "remote-1"), timeout=90, interval=0.5)
    remote = wait_for("remote pods listed", lambda: remote_pods(remote1, NS) or None, timeout=30)
    on_remote1 = [
        p.metadata.uid for p in front.list_namespaced_pod(NS).items if p.spec.node_name == "remote-1"
    ]
    assert uid in on_remote1
    # Exactly one remote pod per front pod: nothing duplicated by the outage.
    assert sorted(p.metadata.labels[keys.FRONT_UID] for p in remote) == sorted(on_remote1)
    assert front.read_namespaced_pod("survivor", NS).status.phase == "Running"
    assert phases(front, NS).get("bystander") == "Running"


def test_dev_up_registers_remote_clusters(env: Environment) -> None:
    got = kubectl(env, "get", "remoteclusters", "-o", "name")
    assert got.returncode == 0, got.stderr
    assert sorted(got.stdout.split()) == [
        "remotecluster.bridge.armadaproject.io/remote-1",
        "remotecluster.bridge.armadaproject.io/remote-2",
    ]
    assert env.supervisor.pid("vkubelet") is not None
    assert Path(env.kubeconfig("front")).is_file()


def test_runs_with_the_shipped_front_rbac(env: Environment, clients: dict[str, k8s.CoreV1Api]) -> None:
    """The vkubelet as the ServiceAccount of manifests/vkubelet/front-rbac.yaml, not as admin."""
    import yaml

    from devenv import versions
    from devenv.bridge import vkubelet_setup
    from devenv.components import Component

    front = clients["front"]
    applied = kubectl(
        env, "apply", "-f", str(versions.REPO_ROOT / "manifests" / "vkubelet" / "front-rbac.yaml")
    )
    assert applied.returncode == 0, applied.stderr
    token = front.create_namespaced_service_account_token(
        "armada-bridge-vkubelet", keys.SYSTEM_NAMESPACE, {"spec": {"expirationSeconds": 3600}}
    ).status.token
    admin = vkubelet_setup.inline_kubeconfig(env.kubeconfig("front"))
    cluster = admin["clusters"][0]
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": "vkubelet", "user": {"token": token}}],
        "contexts": [{"name": "vkubelet", "context": {"cluster": cluster["name"], "user": "vkubelet"}}],
        "current-context": "vkubelet",
    }
    path = env.state_dir / "vkubelet" / "sa-kubeconfig.yaml"
    path.write_text(yaml.safe_dump(kubeconfig))
    shipped = vkubelet_setup.component(env)
    argv = list(shipped.argv)
    argv[argv.index("--kubeconfig") + 1] = str(path)
    as_sa = Component(shipped.name, argv, shipped.env, shipped.ready_url)
    try:
        env.supervisor.ensure(as_sa)
        env.supervisor.wait_ready(as_sa)
        run_bound(front, NS, bound_pod("least-privilege", "remote-2"), timeout=60)
        logs = kubectl(env, "logs", "-n", NS, "least-privilege")
        assert logs.returncode == 0, logs.stderr
        assert "hello from the remote cluster" in logs.stdout
        front.delete_namespaced_pod("least-privilege", NS)
        wait_for("pod deleted", lambda: "least-privilege" not in phases(front, NS), timeout=30)
        assert "least-privilege" not in {p.metadata.name for p in remote_pods(clients["remote-2"], NS)}
        log = env.supervisor.log_file(shipped.name).read_text()
        # An API error reads "403 Forbidden: ..." (not a port or a log time's milliseconds).
        forbidden = re.findall(r"\b403 \w*:.*", log.split("kubelet API on")[-1])
        assert not forbidden, f"forbidden calls with the shipped RBAC: {forbidden[:3]}"
    finally:
        vkubelet_setup.setup(env, binaries.expected())


def test_standby_replica_takes_over(env: Environment, clients: dict[str, k8s.CoreV1Api]) -> None:
    """Two vkubelets with --leader-elect: one leads; when it stops, the other serves the nodes.
    (Pods go to remote-2, which no test of this module stops: KWOK restarted by `kwokctl stop/start`,
    as the outage test does remote-1's, runs no new pods, which is KWOK's business, not the
    vkubelet's.)"""
    import os
    import signal
    import sys

    from devenv.bridge import vkubelet_setup
    from devenv.ports import free_ports

    front = clients["front"]
    env.supervisor.stop(vkubelet_setup.COMPONENT)
    base = vkubelet_setup.component(env).argv
    procs = []
    ports = free_ports(2)
    try:
        for i, port in enumerate(ports):
            argv = [*base, "--leader-elect", "--identity", f"replica-{i}"]
            argv[argv.index("--listen") + 1] = f"127.0.0.1:{port}"
            argv[argv.index("--cert-dir") + 1] = str(env.state_dir / "vkubelet" / f"certs-{i}")
            if "--relay-listen" in argv:  # each replica its own relay endpoint (one host)
                relay = argv.index("--relay-listen") + 1
                argv[relay] = f"{argv[relay].rsplit(':', 1)[0]}:{free_ports(1)[0]}"
            log = open(env.state_dir / "vkubelet" / f"replica-{i}.log", "ab")  # noqa: SIM115
            procs.append(subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ}))
            if i == 0:
                wait_for("replica-0 leads", lambda: _node_port(front, "remote-2") == ports[0], timeout=30)
        run_bound(front, NS, bound_pod("before-failover", "remote-2"))
        procs[0].send_signal(signal.SIGTERM)  # a clean stop releases the Lease at once
        procs[0].wait(20)
        wait_for("replica-1 leads", lambda: _node_port(front, "remote-2") == ports[1], timeout=30)
        run_bound(front, NS, bound_pod("after-failover", "remote-2"))
        for name in ("remote-1", "remote-2"):
            ready = next(c for c in front.read_node(name).status.conditions if c.type == "Ready")
            assert ready.status == "True", (
                name,
                ready,
                (env.state_dir / "vkubelet" / "replica-1.log").read_text()[-3000:],
            )
        assert sys.executable in base
    except AssertionError as e:
        logs = [
            (env.state_dir / "vkubelet" / f"replica-{i}.log").read_text()[-2500:] for i in range(len(procs))
        ]
        raise AssertionError(f"{e}\n" + "\n----\n".join(logs)) from e
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        vkubelet_setup.setup(env, binaries.expected())


def _node_port(front: k8s.CoreV1Api, name: str) -> int:
    return int(front.read_node(name).status.daemon_endpoints.kubelet_endpoint.port)


# ---------------------------------------------------------------- a RemoteCluster deleted
GUARD = "vk-test-guard-deletion"  # a ValidatingAdmissionPolicy of remote-2: pod `guarded` stays
HOLD = "example.com/vk-test-hold"  # a finalizer of remote-2 on pod `held`


def _remote_cluster(custom: k8s.CustomObjectsApi, name: str) -> dict[str, Any] | None:
    try:
        rc: dict[str, Any] = custom.get_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", name)
        return rc
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _condition(rc: dict[str, Any] | None, kind: str) -> dict[str, Any]:
    conditions = ((rc or {}).get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == kind), {})


def _cleanup_blocked(custom: k8s.CustomObjectsApi, name: str, *wanted: str) -> dict[str, Any] | None:
    """The RemoteCluster's CleanupBlocked condition once its message names every `wanted`."""
    rc = _remote_cluster(custom, name)
    assert rc is not None, f"RemoteCluster {name} went: its cleanup was given up"
    c = _condition(rc, "CleanupBlocked")
    return c if c.get("status") == "True" and all(w in c.get("message", "") for w in wanted) else None


def _deletion_refused(core: k8s.CoreV1Api, name: str) -> bool:
    try:
        core.delete_namespaced_pod(name, NS, dry_run="All")
    except ApiException as e:
        return e.status in (403, 422)
    return False


def _blocked_past_a_round(
    custom: k8s.CustomObjectsApi, front: k8s.CoreV1Api, deleted: float
) -> dict[str, Any]:
    """Past a whole cleanup round after the deletion: the RemoteCluster is still there with its
    finalizer, Ready False (CleanupBlocked), and an Event says why."""
    time.sleep(max(0.0, deleted + CLEANUP_TIMEOUT + 10 - time.monotonic()))
    rc = _remote_cluster(custom, "remote-2")
    assert rc is not None
    assert keys.REMOTECLUSTER_FINALIZER in rc["metadata"]["finalizers"]
    assert _condition(rc, "Ready").get("reason") == "CleanupBlocked", rc["status"]
    events = front.list_namespaced_event(
        "default", field_selector="involvedObject.kind=RemoteCluster,involvedObject.name=remote-2"
    ).items
    assert any(
        e.reason == "CleanupBlocked"
        and e.type == "Warning"
        and e.involved_object.uid == rc["metadata"]["uid"]
        for e in events
    ), [(e.reason, e.message) for e in events]
    return rc


def _removed(custom: k8s.CustomObjectsApi, front: k8s.CoreV1Api, pods: tuple[str, ...]) -> None:
    """remote-2's RemoteCluster is gone, so is its node, and its front pods failed with a reason."""
    wait_for("RemoteCluster remote-2 gone", lambda: _remote_cluster(custom, "remote-2") is None, timeout=120)
    wait_for("node remote-2 gone", lambda: not exists(front.read_node, "remote-2"), timeout=30)
    for name in pods:
        pod = front.read_namespaced_pod(name, NS)
        assert (pod.status.phase, pod.status.reason) == ("Failed", "RemoteClusterRemoved"), pod.status


def _restore_remote_2(env: Environment, front: k8s.CoreV1Api) -> None:
    from devenv.bridge import vkubelet_setup

    vkubelet_setup.setup(env, binaries.expected())  # its Secret and RemoteCluster again
    wait_for("remote-2 Ready again", lambda: node_ready(front, "remote-2"), timeout=60)


def test_deleted_remote_cluster_keeps_its_finalizer_until_its_pods_are_gone(
    env: Environment, clients: dict[str, k8s.CoreV1Api]
) -> None:
    """remote-2's RemoteCluster deleted while its pods there cannot be: pod `held` carries a
    finalizer of the remote cluster, a ValidatingAdmissionPolicy there refuses to delete pod
    `guarded`. Past a cleanup round the RemoteCluster stays, its finalizer on, its status and an
    Event saying why; unblocked, the cleanup completes: no remote pod left, the front pods failed,
    the node gone."""
    front, remote2 = clients["front"], clients["remote-2"]
    custom = k8s.CustomObjectsApi(front.api_client)
    admission = k8s.AdmissionregistrationV1Api(remote2.api_client)
    pods = ("held", "guarded")
    for name in pods:
        create_bound(front, NS, bound_pod(name, "remote-2"))
    wait_for("pods Running", lambda: all(phases(front, NS).get(n) == "Running" for n in pods), timeout=60)
    try:
        remote2.patch_namespaced_pod("held", NS, {"metadata": {"finalizers": [HOLD]}})
        admission.create_validating_admission_policy(
            {
                "metadata": {"name": GUARD},
                "spec": {
                    "failurePolicy": "Fail",
                    "matchConstraints": {
                        "resourceRules": [
                            {
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "operations": ["DELETE"],
                                "resources": ["pods"],
                            }
                        ]
                    },
                    "validations": [
                        {
                            "expression": "oldObject.metadata.name != 'guarded'",
                            "message": "pod guarded is kept by the test's policy",
                        }
                    ],
                },
            }
        )
        admission.create_validating_admission_policy_binding(
            {
                "metadata": {"name": GUARD},
                "spec": {
                    "policyName": GUARD,
                    "validationActions": ["Deny"],
                    "matchResources": {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NS}}
                    },
                },
            }
        )
        wait_for("the policy in force", lambda: _deletion_refused(remote2, "guarded"), timeout=30)

        deleted = time.monotonic()
        custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "remote-2")
        blocked = wait_for(
            "the cleanup said blocked",
            lambda: _cleanup_blocked(
                custom, "remote-2", f"{NS}/held", HOLD, f"{NS}/guarded", "kept by the test"
            ),
            timeout=60,
        )
        assert blocked["reason"] == "RemoteObjectsRemain", blocked
        _blocked_past_a_round(custom, front, deleted)
        assert {"held", "guarded"} <= {p.metadata.name for p in remote_pods(remote2, NS)}
    finally:  # unblocked: the finalizer of remote-2 gone, its policy gone
        with contextlib.suppress(ApiException):
            admission.delete_validating_admission_policy_binding(GUARD)
        with contextlib.suppress(ApiException):
            admission.delete_validating_admission_policy(GUARD)
        with contextlib.suppress(ApiException):
            remote2.patch_namespaced_pod("held", NS, {"metadata": {"finalizers": None}})
    try:
        _removed(custom, front, pods)
        assert remote2.list_pod_for_all_namespaces(label_selector=keys.FRONT_UID).items == []
    finally:
        _restore_remote_2(env, front)


def test_remote_cluster_that_does_not_answer_keeps_its_finalizer_until_removed_by_hand(
    env: Environment, clients: dict[str, k8s.CoreV1Api]
) -> None:
    """remote-2 answered once and runs a pod; its kubeconfig Secret is deleted, then its
    RemoteCluster: the bridge cannot know what runs there, so the finalizer stays (status and Event
    say so) until an admin removes it by hand; then the front pod fails and the node goes, and the
    remote pod, given up on, is still there (deleted once the cluster is registered again)."""
    front, remote2 = clients["front"], clients["remote-2"]
    custom = k8s.CustomObjectsApi(front.api_client)
    run_bound(front, NS, bound_pod("stranded", "remote-2"), timeout=60)
    try:
        front.delete_namespaced_secret("remote-2-kubeconfig", keys.SYSTEM_NAMESPACE)
        deleted = time.monotonic()
        custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "remote-2")
        blocked = wait_for(
            "the cleanup said blocked",
            lambda: _cleanup_blocked(custom, "remote-2", "remote-2-kubeconfig", "by hand"),
            timeout=60,
        )
        assert blocked["reason"] == "KubeconfigError", blocked
        _blocked_past_a_round(custom, front, deleted)
        assert "stranded" in {p.metadata.name for p in remote_pods(remote2, NS)}

        custom.patch_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", "remote-2", {"metadata": {"finalizers": None}}
        )
        _removed(custom, front, ("stranded",))
        assert "stranded" in {p.metadata.name for p in remote_pods(remote2, NS)}
    finally:
        _restore_remote_2(env, front)
    wait_for("the given-up remote pod deleted", lambda: not remote_pods(remote2, NS), timeout=60)
