"""Gangs end to end: front cluster + extender + vkubelet + two remote clusters of 4x32-CPU nodes."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from tests.framework.bridge import Api, cluster_of, events_for, front_pods, pod, remote_pods, wait_running
from tests.framework.kube import wait_for

REMOTES = ("remote-1", "remote-2")


@pytest.mark.exclusive  # its gang takes a whole remote's KWOK room
def test_sixteen_pod_gang_runs_whole_in_one_cluster(namespace: str, cluster_api: Api) -> None:
    core = k8s.CoreV1Api(cluster_api("front"))
    gang = {keys.GANG_ID: "big", keys.GANG_CARDINALITY: "16"}
    for i in range(16):
        core.create_namespaced_pod(
            namespace, pod(f"g-{i}", queue=namespace, cpu="8", annotations=gang, labels={"gang": "big"})
        )
    running = wait_running(cluster_api, namespace, 16, "gang=big")
    clusters = {cluster_of(p) for p in running}
    assert len(clusters) == 1 and clusters <= set(REMOTES), clusters
    (chosen,) = clusters
    other = next(c for c in REMOTES if c != chosen)
    assert len(remote_pods(cluster_api, chosen, namespace)) == 16
    assert remote_pods(cluster_api, other, namespace) == []
    # The decision lifted the bridge's scheduling gate (the front scheduler could then bind them).
    assert all(not p.spec.scheduling_gates for p in running)


def test_gang_bigger_than_any_cluster_waits_and_never_runs_partially(
    namespace: str, cluster_api: Api
) -> None:
    core = k8s.CoreV1Api(cluster_api("front"))
    gang = {keys.GANG_ID: "huge", keys.GANG_CARDINALITY: "17"}
    for i in range(17):
        core.create_namespaced_pod(namespace, pod(f"h-{i}", queue=namespace, cpu="8", annotations=gang))
    msg = wait_for(
        "an Event saying no cluster fits the gang",
        lambda: next((e for e in events_for(cluster_api, namespace, "h-0") if "fits" in e), None),
        timeout=30,
    )
    assert "largest" in msg or "free" in msg, msg
    time.sleep(5)
    pods = front_pods(cluster_api, namespace)
    assert all(not p.spec.node_name and cluster_of(p) is None for p in pods)
    for c in REMOTES:
        assert remote_pods(cluster_api, c, namespace) == []
    # Waiting pods are held at the bridge's scheduling gate: the front scheduler never tries them.
    assert all([g.name for g in p.spec.scheduling_gates or []] == [keys.SCHEDULING_GATE] for p in pods)
    assert not [e for e in events_for(cluster_api, namespace, "h-0") if e.startswith("FailedScheduling")]
