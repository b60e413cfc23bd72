"""The vkubelet against the shared dev environment: virtual nodes, pods, mirrors, status, deletion."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.core.quantities import parse_quantity
from devenv import binaries
from devenv.bridge import vkubelet_setup
from devenv.processes.environment import Environment
from tests.framework.kube import create_bound, wait_for
from tests.framework.vkubelet_pods import (
    bound_pod,
    exists,
    kubelet_status,
    node_ready,
    phases,
    remote_pods,
    run_bound,
    wait_failed,
)

Api = Callable[[str], k8s.ApiClient]


def _lease_holder(leases: k8s.CoordinationV1Api, node: str) -> str | None:
    try:
        lease = leases.read_namespaced_lease(node, "kube-node-lease")
    except ApiException as e:
        if e.status == 404:
            return None
        raise
    return str(lease.spec.holder_identity)


def test_virtual_node_per_remote_cluster(front: k8s.CoreV1Api, cluster_api: Api) -> None:
    leases = k8s.CoordinationV1Api(cluster_api("front"))
    for name in ("remote-1", "remote-2"):
        wait_for(f"{name} Ready", lambda n=name: node_ready(front, n), timeout=30)
        node = front.read_node(name)
        assert node.metadata.labels[keys.NODE_TYPE_LABEL] == keys.NODE_TYPE_VIRTUAL
        assert node.metadata.labels[keys.CLUSTER_LABEL] == name
        taint = k8s.V1Taint(
            key=keys.VIRTUAL_NODE_TAINT_KEY,
            value=keys.VIRTUAL_NODE_TAINT_VALUE,
            effect=keys.VIRTUAL_NODE_TAINT_EFFECT,
        )
        assert taint in node.spec.taints
        # Its cluster's nodes together (by default 4 KWOK nodes of 32 CPU, half with 4 GPUs, and
        # its real node; `dev up --nodes N` has more).
        remote_nodes = k8s.CoreV1Api(cluster_api(name)).list_node().items
        cpu = sum(parse_quantity(n.status.capacity["cpu"]) for n in remote_nodes)
        gpus = sum(int(n.status.capacity.get(keys.GPU_RESOURCE, "0")) for n in remote_nodes)
        assert parse_quantity(node.status.capacity["cpu"]) == cpu >= 128_000
        assert node.status.capacity[keys.GPU_RESOURCE] == str(gpus) and gpus >= 8
        assert node.status.addresses[0].type == "InternalIP"
        assert node.status.daemon_endpoints.kubelet_endpoint.port > 0
        # Its Lease, renewed by a loop of its own (as the kubelet's): it may follow Ready by a
        # heartbeat's interval.
        wait_for(f"{name}'s Lease", lambda n=name: _lease_holder(leases, n) is not None, timeout=30)
        assert _lease_holder(leases, name) == name
        rc = k8s.CustomObjectsApi(cluster_api("front")).get_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", name
        )
        ready = next(c for c in rc["status"]["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"
        assert rc["status"]["nodeCount"] == len(remote_nodes)


def test_pod_runs_remotely_with_constraints_restored(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    constraints = '{"nodeSelector": {"topology.kubernetes.io/zone": "remote-1-zone-b"}}'
    pod = bound_pod(
        "pinned",
        "remote-1",
        annotations={keys.SCHEDULING_CONSTRAINTS: constraints, keys.ASSIGNED_REMOTE_NODE: "remote-1-node-1"},
    )
    run_bound(front, namespace, pod)
    remote = remote1.read_namespaced_pod("pinned", namespace)
    fp = front.read_namespaced_pod("pinned", namespace)
    assert remote.metadata.labels[keys.FRONT_UID] == fp.metadata.uid
    assert remote.metadata.labels[keys.MANAGED_BY_LABEL] == keys.MANAGED_BY_VALUE
    assert remote.spec.node_name == "remote-1-node-1"
    assert remote.spec.node_selector == {"topology.kubernetes.io/zone": "remote-1-zone-b"}
    assert not any(t.key == keys.VIRTUAL_NODE_TAINT_KEY for t in remote.spec.tolerations or [])
    # Status flows back, but for the remote pod's addresses: the cluster's network is Relay (the
    # default) and no front Service selects the pod, so it shows none (tests/e2e/test_relays.py).
    assert remote.status.pod_ip and fp.status.pod_ip is None and fp.status.host_ip is None
    assert fp.status.container_statuses[0].ready is True
    assert fp.status.qos_class == remote.status.qos_class
    # The remote pod's Events show on the front pod (one made here, as a remote kubelet would),
    # but for the remote scheduler's Scheduled, made before it: the pod was pinned to the node the
    # decision named, which the front pod's decision (and the front scheduler's Scheduled) names.
    remote1.create_namespaced_event(
        namespace,
        {
            "metadata": {"generateName": "pinned."},
            "involvedObject": {
                "kind": "Pod",
                "name": "pinned",
                "namespace": namespace,
                "uid": remote.metadata.uid,
            },
            "reason": "Pulled",
            "message": "image already present on the remote node",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "remote-1-node-1"},
        },
    )

    def front_events() -> list[k8s.CoreV1Event]:
        return front.list_namespaced_event(namespace, field_selector="involvedObject.name=pinned").items

    wait_for(
        "the remote Event on the front pod",
        lambda: any(
            e.reason == "Pulled" and "(remote cluster remote-1)" in e.message for e in front_events()
        ),
        timeout=15,
    )
    assert any(e.reason == "Scheduled" for e in remote1.list_namespaced_event(namespace).items)
    # Two Event writers per cluster: the earlier Scheduled, were it reflected, is written by now.
    time.sleep(2)
    assert not [
        e.message for e in front_events() if e.reason == "Scheduled" and "remote cluster" in e.message
    ]
    assert remote1.read_namespace(namespace).metadata.name == namespace


@pytest.mark.exclusive  # it makes remote-1 Routable for a while
def test_a_routable_clusters_pods_show_their_remote_addresses(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, cluster_api: Api, namespace: str
) -> None:
    """A RemoteCluster declared Routable: its pods show the remote pod's addresses; declared Relay
    again, they show none."""
    custom = k8s.CustomObjectsApi(cluster_api("front"))

    def network(mode: str) -> None:
        custom.patch_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", "remote-1", {"spec": {"network": mode}}
        )

    network("Routable")
    try:
        create_bound(front, namespace, bound_pod("routed", "remote-1"))

        def addressed() -> Any:
            pods = [p for p in remote_pods(remote1, namespace) if p.metadata.name == "routed"]
            return pods[0] if pods and pods[0].status.pod_ip else None

        remote = wait_for("remote pod with an address", addressed, timeout=60)
        shown = wait_for(
            "the front pod showing it",
            lambda: front.read_namespaced_pod("routed", namespace).status.pod_ip,
            timeout=60,
        )
        assert shown == remote.status.pod_ip
        assert front.read_namespaced_pod("routed", namespace).status.host_ip == remote.status.host_ip
        network("Relay")
        wait_for(
            "the address withdrawn",
            lambda: front.read_namespaced_pod("routed", namespace).status.pod_ip is None or None,
            timeout=60,
        )
    finally:
        network("Relay")


def test_many_pods_across_two_virtual_nodes(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, remote2: k8s.CoreV1Api, namespace: str
) -> None:
    n = 200
    for i in range(n):
        create_bound(front, namespace, bound_pod(f"p-{i}", "remote-1" if i % 2 else "remote-2"))

    def all_running() -> bool:
        ph = phases(front, namespace)
        return len(ph) == n and all(p == "Running" for p in ph.values())

    wait_for(f"{n} front pods Running", all_running, timeout=180, interval=1)
    front_uids = {p.metadata.uid for p in front.list_namespaced_pod(namespace).items}
    remote = remote_pods(remote1, namespace) + remote_pods(remote2, namespace)
    assert sorted(p.metadata.labels[keys.FRONT_UID] for p in remote) == sorted(front_uids)


def test_dependencies_mirrored_synced_and_removed(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    front.create_namespaced_config_map(namespace, {"metadata": {"name": "settings"}, "data": {"mode": "one"}})
    front.create_namespaced_secret(
        namespace, {"metadata": {"name": "token"}, "data": {"t": base64.b64encode(b"s3cret").decode()}}
    )
    front.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "workers"},
            "spec": {"clusterIP": "None", "selector": {"app": "set"}, "ports": [{"port": 80}]},
        },
    )
    front.create_namespaced_service(
        namespace,
        {"metadata": {"name": "unrelated"}, "spec": {"selector": {"app": "other"}, "ports": [{"port": 80}]}},
    )
    front.create_namespaced_service_account(namespace, {"metadata": {"name": "runner"}})
    for i in range(3):
        pod = bound_pod(
            f"set-{i}",
            "remote-1",
            labels={"app": "set"},
            hostname=f"set-{i}",
            subdomain="workers",
            serviceAccountName="runner",
            containers=[
                {
                    "name": "main",
                    "image": "busybox",
                    "envFrom": [{"configMapRef": {"name": "settings"}}],
                    "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "token", "key": "t"}}}],
                }
            ],
        )
        create_bound(front, namespace, pod)
    wait_for("3 pods Running", lambda: list(phases(front, namespace).values()) == ["Running"] * 3, timeout=60)
    cm = remote1.read_namespaced_config_map("settings", namespace)
    assert cm.data == {"mode": "one"}
    assert cm.metadata.labels[keys.MANAGED_BY_LABEL] == keys.MANAGED_BY_VALUE
    assert remote1.read_namespaced_secret("token", namespace).data == {
        "t": base64.b64encode(b"s3cret").decode()
    }
    svc = remote1.read_namespaced_service("workers", namespace)
    assert svc.spec.cluster_ip == "None" and svc.spec.selector == {"app": "set"}
    assert not exists(remote1.read_namespaced_service, "unrelated", namespace)
    sa = remote1.read_namespaced_service_account("runner", namespace)
    assert sa.metadata.labels[keys.MANAGED_BY_LABEL] == keys.MANAGED_BY_VALUE
    assert all(p.spec.service_account_name == "runner" for p in remote_pods(remote1, namespace))

    # A Service created later that selects the running pods is mirrored too.
    front.create_namespaced_service(
        namespace,
        {"metadata": {"name": "late"}, "spec": {"selector": {"app": "set"}, "ports": [{"port": 8080}]}},
    )
    wait_for(
        "late Service mirrored",
        lambda: exists(remote1.read_namespaced_service, "late", namespace),
        timeout=30,
    )

    front.patch_namespaced_config_map("settings", namespace, {"data": {"mode": "two"}})
    wait_for(
        "ConfigMap edit mirrored",
        lambda: remote1.read_namespaced_config_map("settings", namespace).data == {"mode": "two"},
        timeout=30,
    )

    for i in range(3):
        front.delete_namespaced_pod(f"set-{i}", namespace)
    wait_for("front pods gone", lambda: not phases(front, namespace), timeout=60)

    def mirrors_gone() -> bool:
        return not any(
            (
                exists(remote1.read_namespaced_config_map, "settings", namespace),
                exists(remote1.read_namespaced_secret, "token", namespace),
                exists(remote1.read_namespaced_service, "workers", namespace),
                exists(remote1.read_namespaced_service, "late", namespace),
                exists(remote1.read_namespaced_service_account, "runner", namespace),
            )
        )

    wait_for("mirrors removed", mirrors_gone, timeout=60)
    assert not remote_pods(remote1, namespace)


def test_unmanaged_remote_objects_are_left_alone(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    remote1.create_namespaced_config_map(
        namespace, {"metadata": {"name": "theirs"}, "data": {"owner": "remote"}}
    )
    front.create_namespaced_config_map(
        namespace, {"metadata": {"name": "theirs"}, "data": {"owner": "front"}}
    )
    pod = bound_pod(
        "reader",
        "remote-1",
        containers=[{"name": "main", "image": "busybox", "envFrom": [{"configMapRef": {"name": "theirs"}}]}],
    )
    run_bound(front, namespace, pod)
    front.delete_namespaced_pod("reader", namespace)
    wait_for("pod gone", lambda: not phases(front, namespace), timeout=30)
    assert remote1.read_namespaced_config_map("theirs", namespace).data == {"owner": "remote"}


def test_remote_pod_deleted_by_hand_fails_front_pod(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    run_bound(front, namespace, bound_pod("victim", "remote-1"))
    remote1.delete_namespaced_pod("victim", namespace)
    pod = wait_failed(front, namespace, "victim", timeout=10)
    assert pod.status.reason == "RemotePodDeleted"
    assert "remote-1" in pod.status.message
    wait_for(  # the Event follows the status write
        "a RemotePodDeleted Event",
        lambda: any(
            e.reason == "RemotePodDeleted"
            for e in front.list_namespaced_event(namespace, field_selector="involvedObject.name=victim").items
        ),
        timeout=10,
    )
    # Never recreated.
    time.sleep(3)
    assert not exists(remote1.read_namespaced_pod, "victim", namespace)
    assert front.read_namespaced_pod("victim", namespace).status.phase == "Failed"


def test_front_deletion_deletes_remote_pod_first(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    run_bound(front, namespace, bound_pod("gone", "remote-1"))
    front.delete_namespaced_pod("gone", namespace, grace_period_seconds=20)
    wait_for(
        "front pod deleted", lambda: not exists(front.read_namespaced_pod, "gone", namespace), timeout=30
    )
    assert not exists(remote1.read_namespaced_pod, "gone", namespace)


def test_host_access_refused_by_default(front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str) -> None:
    create_bound(front, namespace, bound_pod("hosty", "remote-1", hostNetwork=True))
    pod = wait_failed(front, namespace, "hosty", timeout=15)
    assert pod.status.reason == "HostAccessRefused"
    assert "hostNetwork" in pod.status.message
    assert not exists(remote1.read_namespaced_pod, "hosty", namespace)


def _kubelet_get(env: Environment, path: str, headers: dict[str, str] | None = None) -> int:
    return kubelet_status(env, path, headers or {})


def test_kubelet_api_refuses_anonymous_and_unauthorized(
    vkubelet: Environment, front: k8s.CoreV1Api, namespace: str
) -> None:
    assert _kubelet_get(vkubelet, f"/containerLogs/{namespace}/x/main") == 401
    assert _kubelet_get(vkubelet, "/metrics") == 401
    assert _kubelet_get(vkubelet, "/containerLogs/a/b/c", {"Authorization": "Bearer not-a-token"}) == 401
    front.create_namespaced_service_account(namespace, {"metadata": {"name": "nobody"}})
    token = front.create_namespaced_service_account_token(
        "nobody", namespace, {"spec": {"audiences": [], "expirationSeconds": 600}}
    ).status.token
    assert _kubelet_get(
        vkubelet, f"/containerLogs/{namespace}/x/main", {"Authorization": f"Bearer {token}"}
    ) in (
        403,
        404,
    )
    run_bound(front, namespace, bound_pod("logged", "remote-1"))
    assert (
        _kubelet_get(
            vkubelet, f"/containerLogs/{namespace}/logged/main", {"Authorization": f"Bearer {token}"}
        )
        == 403
    )


def _rc(name: str, secret: str) -> dict[str, Any]:
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "RemoteCluster",
        "metadata": {"name": name},
        "spec": {"kubeconfigSecret": {"name": secret}, "nodeLabels": {"example.com/extra": "yes"}},
    }


@pytest.mark.exclusive  # it adds a virtual node on remote-2's room
def test_remote_clusters_added_and_removed_at_run_time(front: k8s.CoreV1Api, cluster_api: Api) -> None:
    custom = k8s.CustomObjectsApi(cluster_api("front"))
    broken = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    import yaml

    secret = {
        "metadata": {"name": "vk-test-broken-kubeconfig"},
        "data": {keys.KUBECONFIG_SECRET_KEY: base64.b64encode(yaml.safe_dump(broken).encode()).decode()},
    }
    with contextlib.suppress(ApiException):
        front.create_namespaced_secret(keys.SYSTEM_NAMESPACE, secret)
    try:
        custom.create_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", _rc("vk-test-extra", "remote-2-kubeconfig")
        )
        custom.create_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", _rc("vk-test-broken", "vk-test-broken-kubeconfig")
        )
        wait_for("extra node Ready", lambda: node_ready(front, "vk-test-extra"), timeout=30)
        assert front.read_node("vk-test-extra").metadata.labels["example.com/extra"] == "yes"
        agent_started = front.read_node("vk-test-extra").metadata.creation_timestamp

        # Spec changes apply to the running node: cordon, labels; and back.
        def set_spec(**spec: Any) -> None:
            custom.patch_cluster_custom_object(
                keys.GROUP, "v1alpha1", "remoteclusters", "vk-test-extra", {"spec": spec}
            )

        set_spec(cordoned=True, nodeLabels={"example.com/extra": "changed"})
        wait_for(
            "node cordoned and relabelled",
            lambda: (
                (n := front.read_node("vk-test-extra")).spec.unschedulable
                and n.metadata.labels["example.com/extra"] == "changed"
            ),
            timeout=20,
        )
        set_spec(cordoned=False)
        wait_for(
            "node uncordoned", lambda: not front.read_node("vk-test-extra").spec.unschedulable, timeout=20
        )
        assert front.read_node("vk-test-extra").metadata.creation_timestamp == agent_started

        def broken_reported() -> bool:
            rc = custom.get_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "vk-test-broken")
            conds = (rc.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Ready" and c["status"] == "False" for c in conds) and exists(
                front.read_node, "vk-test-broken"
            )

        wait_for("broken cluster reported NotReady", broken_reported, timeout=30)
        assert not node_ready(front, "vk-test-broken")
        assert node_ready(front, "remote-1") and node_ready(front, "remote-2")
    finally:
        for name in ("vk-test-extra", "vk-test-broken"):
            with contextlib.suppress(ApiException):
                custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", name)
        with contextlib.suppress(ApiException):
            front.delete_namespaced_secret("vk-test-broken-kubeconfig", keys.SYSTEM_NAMESPACE)
    wait_for("extra node removed", lambda: not exists(front.read_node, "vk-test-extra"), timeout=30)
    wait_for("broken node removed", lambda: not exists(front.read_node, "vk-test-broken"), timeout=30)
    assert node_ready(front, "remote-1") and node_ready(front, "remote-2")


def _kill_vkubelet(env: Environment) -> None:
    pid = env.supervisor.pid(vkubelet_setup.COMPONENT)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for("vkubelet gone", lambda: env.supervisor.pid(vkubelet_setup.COMPONENT) is None, timeout=10)


@pytest.mark.exclusive  # it kills the vkubelet
def test_sigkill_during_churn_loses_and_duplicates_nothing(
    vkubelet: Environment,
    front: k8s.CoreV1Api,
    remote1: k8s.CoreV1Api,
    remote2: k8s.CoreV1Api,
    namespace: str,
) -> None:
    n = 200
    deleted: set[str] = set()
    for i in range(n):
        create_bound(front, namespace, bound_pod(f"c-{i}", "remote-1" if i % 2 else "remote-2"))
        if i == 80:
            _kill_vkubelet(vkubelet)
        if i >= 40 and i % 3 == 0:
            victim = f"c-{i - 40}"
            # Half graceful (waits for the vkubelet), half forced (gone at once, remote orphaned).
            grace = 0 if i % 2 else 5
            front.delete_namespaced_pod(victim, namespace, grace_period_seconds=grace)
            deleted.add(victim)
    vkubelet_setup.setup(vkubelet, binaries.expected())

    def converged() -> Any:
        live = {p.metadata.name: p for p in front.list_namespaced_pod(namespace).items}
        if set(live) & deleted or len(live) != n - len(deleted):
            return None
        if any(p.status.phase != "Running" for p in live.values()):
            return None
        remote = remote_pods(remote1, namespace) + remote_pods(remote2, namespace)
        by_uid = {}
        for r in remote:
            by_uid.setdefault(r.metadata.labels[keys.FRONT_UID], []).append(r)
        if set(by_uid) != {p.metadata.uid for p in live.values()}:
            return None
        return by_uid

    by_uid = wait_for("front and remote converge after the restart", converged, timeout=180, interval=1)
    assert all(len(v) == 1 for v in by_uid.values())


def test_completed_pod_is_never_started_again(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    run_bound(front, namespace, bound_pod("done", "remote-1"))
    # The remote container exits 0 (KWOK runs no containers: say so through the status).
    remote = remote1.read_namespaced_pod("done", namespace)
    finished = {
        "name": "main",
        "image": "busybox",
        "ready": False,
        "restartCount": 0,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
    }
    remote1.patch_namespaced_pod_status(
        "done",
        namespace,
        {"status": {"phase": "Succeeded", "containerStatuses": [finished]}},
    )
    pod = wait_for(
        "front pod Succeeded",
        lambda: (p := front.read_namespaced_pod("done", namespace)).status.phase == "Succeeded" and p,
        timeout=15,
    )
    assert pod.status.container_statuses[0].state.terminated.reason == "Completed"
    # The remote pod goes away: the front pod stays Succeeded and nothing is created again.
    remote1.delete_namespaced_pod("done", namespace, grace_period_seconds=0)
    wait_for(
        "remote pod gone", lambda: not exists(remote1.read_namespaced_pod, "done", namespace), timeout=15
    )
    time.sleep(3)
    assert front.read_namespaced_pod("done", namespace).status.phase == "Succeeded"
    assert not exists(remote1.read_namespaced_pod, "done", namespace)
    assert remote.metadata.uid  # the remote pod existed


def test_front_label_changes_reach_the_remote_pod(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    run_bound(front, namespace, bound_pod("relabel", "remote-1"))
    front.patch_namespaced_pod("relabel", namespace, {"metadata": {"labels": {"role": "leader"}}})
    wait_for(
        "remote pod relabelled",
        lambda: remote1.read_namespaced_pod("relabel", namespace).metadata.labels.get("role") == "leader",
        timeout=15,
    )


def test_front_pod_declared_failed_stops_its_remote_pod(
    front: k8s.CoreV1Api, remote1: k8s.CoreV1Api, namespace: str
) -> None:
    """The extender preempts by marking the front pod Failed/Preempted: the remote pod goes."""
    run_bound(front, namespace, bound_pod("preempted", "remote-1"))
    front.patch_namespaced_pod_status(
        "preempted", namespace, {"status": {"phase": "Failed", "reason": "Preempted", "message": "by a test"}}
    )
    wait_for(
        "remote pod deleted",
        lambda: not exists(remote1.read_namespaced_pod, "preempted", namespace),
        timeout=15,
    )
    pod = front.read_namespaced_pod("preempted", namespace)
    assert (pod.status.phase, pod.status.reason) == ("Failed", "Preempted")
