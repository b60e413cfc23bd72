"""Killing the extender mid-round and restarting it admits no gang twice and loses no pod."""

from __future__ import annotations

import os
import random
import signal
import time
from collections import defaultdict

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from devenv.processes.environment import Environment
from tests.framework.bridge import Api, cluster_of, events_for, front_pods, pod, remote_pods, wait_running
from tests.framework.kube import wait_for

# Alone in the environment: it kills and stops the extender.
pytestmark = pytest.mark.exclusive

GANGS, SIZE = 12, 4


def test_sigkill_during_admission_loses_nothing_and_duplicates_nothing(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    rng = random.Random(7)
    core = k8s.CoreV1Api(cluster_api("front"))
    kills = 0
    for g in range(GANGS):
        ann = {keys.GANG_ID: f"g{g}", keys.GANG_CARDINALITY: str(SIZE)}
        for i in range(SIZE):
            core.create_namespaced_pod(
                namespace,
                pod(f"g{g}-{i}", queue=namespace, cpu="4", annotations=ann, labels={"gang": f"g{g}"}),
            )
        if g % 3 == 2:  # kill the extender while it is admitting what was just created
            time.sleep(rng.uniform(0.05, 0.6))
            pid = dev_env.supervisor.pid("extender")
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            kills += 1
            wait_for("extender gone", lambda: dev_env.supervisor.pid("extender") is None, timeout=10)
            dev_env.up()  # what a Deployment's restart would do: a fresh process rebuilds its state
    assert kills == GANGS // 3
    running = wait_running(cluster_api, namespace, GANGS * SIZE, timeout=120)
    by_gang: dict[str, set[str | None]] = defaultdict(set)
    for p in running:
        by_gang[p.metadata.labels["gang"]].add(cluster_of(p))
    assert all(len(c) == 1 for c in by_gang.values()), by_gang
    remote = {
        c: {p.metadata.name: p for p in remote_pods(cluster_api, c, namespace)}
        for c in ("remote-1", "remote-2")
    }
    for p in front_pods(cluster_api, namespace):
        where = [c for c, pods in remote.items() if p.metadata.name in pods]
        assert where == [cluster_of(p)], (p.metadata.name, where, cluster_of(p))
        assert remote[where[0]][p.metadata.name].metadata.labels[keys.FRONT_UID] == p.metadata.uid
    assert sum(len(v) for v in remote.values()) == GANGS * SIZE


def test_pods_created_while_every_replica_is_down_are_set_up_afterwards(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    """The webhook lets pods through unchanged while no extender serves it (failurePolicy Ignore):
    a gang and a single pod made then run once the extender is back, set up by its loop; a pod
    whose nodeSelector (immutable) would keep it off every virtual node waits and says why."""
    core = k8s.CoreV1Api(cluster_api("front"))
    replicas = [n for n in dev_env.supervisor.names() if n == "extender" or n.startswith("extender-")]
    for name in replicas:
        dev_env.supervisor.stop(name)
    try:
        ann = {keys.GANG_ID: "late", keys.GANG_CARDINALITY: "3"}
        for i in range(3):
            core.create_namespaced_pod(namespace, pod(f"late-{i}", queue=namespace, cpu="1", annotations=ann))
        core.create_namespaced_pod(namespace, pod("single", queue=namespace, cpu="1"))
        picky = pod("picky", queue=namespace, cpu="1")
        picky["spec"]["nodeSelector"] = {"disk": "ssd"}
        core.create_namespaced_pod(namespace, picky)
        unset = core.read_namespaced_pod("single", namespace).metadata.annotations or {}
        assert keys.SCHEDULING_CONSTRAINTS not in unset  # the webhook did not see it
    finally:
        dev_env.up()
    running = wait_running(cluster_api, namespace, 4, timeout=120)
    assert {p.metadata.name for p in running} == {"late-0", "late-1", "late-2", "single"}
    assert len({cluster_of(p) for p in running if p.metadata.name.startswith("late-")}) == 1
    assert any(e.startswith("ArmadaSetUp") for e in events_for(cluster_api, namespace, "single"))
    wait_for(
        "the picky pod's reason",
        lambda: any(
            e.startswith("ArmadaWaiting") and "cannot change now" in e
            for e in events_for(cluster_api, namespace, "picky")
        ),
        timeout=60,
    )
    assert core.read_namespaced_pod("picky", namespace).status.phase == "Pending"
