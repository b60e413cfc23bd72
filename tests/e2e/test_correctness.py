"""Correctness end to end: pod slots, pods a remote cluster refuses, remote namespaces, Queue status.

Each test sizes itself to what is free, so it holds whatever else runs on the environment.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from tests.framework.bridge import (
    REMOTES,
    Api,
    cluster_of,
    events_for,
    free_in_remotes,
    front_pods,
    pod,
    remote_pods,
    wait_running,
)
from tests.framework.kube import wait_for

GROUP, VERSION = keys.GROUP, "v1alpha1"


@pytest.mark.exclusive  # it takes most of the remotes' pod slots
def test_hundreds_of_small_pods_all_run_across_clusters(namespace: str, cluster_api: Api) -> None:
    """Pod slots: more 50m pods than one node (110 pods) or one cluster holds all reach Running."""
    free = {c: free_in_remotes(cluster_api, "pods", (c,)) for c in REMOTES}
    count = min(600, int(sum(free.values()) * 0.9))
    assert count > max(free.values()), f"free pod slots {free}: too few to need both clusters"
    core = k8s.CoreV1Api(cluster_api("front"))
    with ThreadPoolExecutor(8) as pool:
        list(
            pool.map(
                lambda i: core.create_namespaced_pod(
                    namespace,
                    pod(f"small-{i}", queue=namespace, cpu="50m", memory="64Mi", labels={"set": "small"}),
                ),
                range(count),
            )
        )
    running = wait_running(cluster_api, namespace, count, "set=small", timeout=420)
    by_cluster = Counter(cluster_of(p) for p in running)
    assert set(by_cluster) == set(REMOTES), by_cluster
    for c in REMOTES:
        phases = Counter(p.status.phase for p in remote_pods(cluster_api, c, namespace))
        assert phases == Counter({"Running": by_cluster[c]}), (c, phases)


@pytest.mark.exclusive  # it changes both RemoteClusters' unschedulableSeconds
def test_a_pod_its_remote_cluster_refuses_is_placed_again(namespace: str, cluster_api: Api) -> None:
    """A remote scheduler refuses what the core does not model (here pod anti-affinity): after the
    RemoteCluster's bound the pod is given back and placed on a node of its cluster that takes it."""
    custom = k8s.CustomObjectsApi(cluster_api("front"))
    blocker_label = {"blocker": namespace}
    for c in REMOTES:
        remote = k8s.CoreV1Api(cluster_api(c))
        for i in range(3):  # every node but the last of each cluster holds a blocker, big enough
            # that best fit (fullest node first) tries the blocked nodes first
            blocker = pod(f"blocker-{i}", queue=None, cpu="12", labels=blocker_label)
            blocker["spec"]["nodeName"] = f"{c}-node-{i}"
            remote.create_namespaced_pod(namespace, blocker)
        custom.patch_cluster_custom_object(
            GROUP, VERSION, "remoteclusters", c, {"spec": {"unschedulableSeconds": 3}}
        )
    try:
        p = pod("picky", queue=namespace, cpu="100m")
        p["spec"]["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": blocker_label}, "topologyKey": "kubernetes.io/hostname"}
                ]
            }
        }
        k8s.CoreV1Api(cluster_api("front")).create_namespaced_pod(namespace, p)
        (running,) = wait_running(cluster_api, namespace, 1, timeout=180)
        cluster = cluster_of(running)
        assert cluster in REMOTES
        node = (running.metadata.annotations or {}).get(keys.ASSIGNED_REMOTE_NODE)
        assert node == f"{cluster}-node-3", node
        remote = [r for r in remote_pods(cluster_api, cluster, namespace) if r.metadata.name == "picky"]
        assert len(remote) == 1 and remote[0].spec.node_name == node
        events = events_for(cluster_api, namespace, "picky")
        assert any(e.startswith("RemoteUnschedulable") for e in events), events
        refused = json.loads((running.metadata.annotations or {})[keys.REMOTE_REJECTION])
        assert node not in refused["nodes"] and refused["nodes"], refused
    finally:
        for c in REMOTES:
            custom.patch_cluster_custom_object(
                GROUP, VERSION, "remoteclusters", c, {"spec": {"unschedulableSeconds": None}}
            )


def test_remote_namespaces_go_with_their_front_namespace(namespace: str, cluster_api: Api) -> None:
    """A namespace the vkubelet created in a remote cluster is removed once the front one is gone."""
    name = f"t-nsgc-{uuid.uuid4().hex[:6]}"
    front = k8s.CoreV1Api(cluster_api("front"))
    # opened to the queue of the test's namespace, which it then uses
    front.create_namespace({"metadata": {"name": name, "labels": {keys.QUEUE_LABEL: namespace}}})
    try:
        front.create_namespaced_pod(name, pod("p", queue=None, cpu="100m"))
        (running,) = wait_running(cluster_api, name, 1)
        remote = k8s.CoreV1Api(cluster_api(str(cluster_of(running))))
        labels = remote.read_namespace(name).metadata.labels or {}
        assert labels.get(keys.MANAGED_BY_LABEL) == keys.MANAGED_BY_VALUE
        # The remote cluster's own Pod Security Admission applies (RemoteCluster defaults).
        assert labels.get(keys.POD_SECURITY_ENFORCE) == "baseline", labels
        assert labels.get(keys.POD_SECURITY_AUDIT) == "restricted", labels
        # A namespace the remote cluster has of its own is never touched.
        other = next(c for c in REMOTES if c != cluster_of(running))
        k8s.CoreV1Api(cluster_api(other)).create_namespace({"metadata": {"name": name}})
    finally:
        front.delete_namespace(name)

    def gone() -> bool:
        try:
            remote.read_namespace(name)
            return False
        except ApiException as e:
            return e.status == 404

    wait_for(f"remote namespace {name} deleted", gone, timeout=120, interval=1)
    mine = k8s.CoreV1Api(cluster_api(other)).read_namespace(name)
    assert mine.status.phase == "Active"
    k8s.CoreV1Api(cluster_api(other)).delete_namespace(name)


def test_queue_status_says_what_is_allocated_now(namespace: str, cluster_api: Api) -> None:
    custom = k8s.CustomObjectsApi(cluster_api("front"))
    queue = f"t-q-{uuid.uuid4().hex[:6]}"
    custom.create_cluster_custom_object(
        GROUP,
        VERSION,
        "queues",
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
        },
    )
    try:
        core = k8s.CoreV1Api(cluster_api("front"))
        for i in range(3):
            core.create_namespaced_pod(namespace, pod(f"q-{i}", queue=queue, cpu="1", memory="1Gi"))
        wait_running(cluster_api, namespace, 3)

        def allocated() -> dict[str, Any]:
            q = custom.get_cluster_custom_object(GROUP, VERSION, "queues", queue)
            return dict((q.get("status") or {}).get("allocated") or {})

        held = wait_for(
            "the queue's allocation", lambda: allocated() if allocated().get("cpu") == "3" else None
        )
        assert held.get("memory") == "3Gi", held
        for p in front_pods(cluster_api, namespace):
            core.delete_namespaced_pod(p.metadata.name, namespace, grace_period_seconds=0)
        wait_for("nothing allocated to the queue", lambda: allocated() == {}, timeout=60)
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, "queues", queue)


def test_a_pod_pinned_to_a_cluster_by_its_virtual_node_label_runs_there(
    namespace: str, cluster_api: Api
) -> None:
    """nodeSelector bridge.armadaproject.io/cluster picks the cluster in the front; no remote node
    carries that label, so it must not be asked of the remote scheduler."""
    for target in REMOTES:
        p = pod(f"pinned-{target}", queue=namespace, cpu="100m", labels={"pinned": target})
        p["spec"]["nodeSelector"] = {keys.CLUSTER_LABEL: target}
        k8s.CoreV1Api(cluster_api("front")).create_namespaced_pod(namespace, p)
        (running,) = wait_running(cluster_api, namespace, 1, f"pinned={target}", timeout=60)
        assert cluster_of(running) == target


def test_a_pod_that_leaves_its_queue_is_released_from_the_bridge_gate(
    namespace: str, cluster_api: Api
) -> None:
    """A managed pod waits at the bridge's scheduling gate; once it names no queue any more the
    bridge no longer manages it and lifts the gate (it is not left Pending for ever)."""
    core = k8s.CoreV1Api(cluster_api("front"))
    core.create_namespaced_pod(namespace, pod("leaver", queue="no-such-queue"))

    def gates() -> list[str]:
        return [g.name for g in core.read_namespaced_pod("leaver", namespace).spec.scheduling_gates or []]

    wait_for(
        "the pod waiting with a reason",
        lambda: any("no-such-queue" in e for e in events_for(cluster_api, namespace, "leaver")),
        timeout=30,
    )
    assert gates() == [keys.SCHEDULING_GATE]
    core.patch_namespaced_pod("leaver", namespace, {"metadata": {"labels": {keys.QUEUE_LABEL: None}}})
    wait_for("the gate lifted", lambda: gates() == [], timeout=30)
