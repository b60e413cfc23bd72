"""Fair share and preemption end to end: two remote clusters of 4x32 CPUs (256 CPUs in all).

The tests size themselves to the CPUs free when they start (the demo, or other tests, may hold
some): what others hold is not demanded again, so the two test queues share the rest."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from tests.framework.bridge import Api, cluster_of, free_in_remotes, front_pods, pod
from tests.framework.kube import wait_for

# Alone in the environment: they fill the remotes and measure the queues' shares.
pytestmark = pytest.mark.exclusive

PREEMPTIBLE = "armada-preemptible"
URGENT = "armada-urgent"


def _running_pods(pods: list[Any], queue: str) -> int:
    return sum(
        1
        for p in pods
        if (p.metadata.labels or {}).get(keys.QUEUE_LABEL) == queue
        and p.status.phase == "Running"
        and cluster_of(p)
    )


def _top_up(
    core: k8s.CoreV1Api, namespace: str, pods: list[Any], queue: str, pending: int, seq: list[int]
) -> None:
    waiting = [
        p
        for p in pods
        if (p.metadata.labels or {}).get(keys.QUEUE_LABEL) == queue
        and p.status.phase == "Pending"
        and not cluster_of(p)
    ]
    for _ in range(pending - len(waiting)):
        seq[0] += 1
        core.create_namespaced_pod(
            namespace, pod(f"{queue}-{seq[0]}", queue=queue, cpu="1", priority_class=PREEMPTIBLE)
        )


def test_two_queues_submitting_continuously_converge_to_fair_shares(
    namespace: str, cluster_api: Api, queues: list[str]
) -> None:
    a, b = queues
    core = k8s.CoreV1Api(cluster_api("front"))
    seq = [0]
    pool = free_in_remotes(cluster_api)
    assert pool >= 64, f"only {pool} CPUs free"
    # Queue a alone first: it takes what is free (one-CPU pods).
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        pods = front_pods(cluster_api, namespace)
        if _running_pods(pods, a) >= pool - 6:
            break
        _top_up(core, namespace, pods, a, 60, seq)
        time.sleep(1)
    assert _running_pods(front_pods(cluster_api, namespace), a) >= pool - 6
    # Then both submit continuously; b's fair share comes from preempting a's preemptible pods.
    shares: tuple[float, float] = (1.0, 0.0)
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline:
        pods = front_pods(cluster_api, namespace)
        ra, rb = _running_pods(pods, a), _running_pods(pods, b)
        shares = (ra / pool, rb / pool)
        if abs(shares[0] - 0.5) <= 0.05 and abs(shares[1] - 0.5) <= 0.05:
            break
        _top_up(core, namespace, pods, a, 20, seq)
        _top_up(core, namespace, pods, b, 20, seq)
        time.sleep(2)
    assert abs(shares[0] - 0.5) <= 0.05 and abs(shares[1] - 0.5) <= 0.05, (shares, pool)
    preempted = [
        p
        for p in front_pods(cluster_api, namespace)
        if p.status.phase == "Failed" and p.status.reason == "Preempted"
    ]
    assert preempted and all((p.metadata.labels or {}).get(keys.QUEUE_LABEL) == a for p in preempted)


def test_higher_priority_gang_preempts_whole_gangs_of_an_over_share_queue(
    namespace: str, cluster_api: Api, queues: list[str]
) -> None:
    a, b = queues
    core = k8s.CoreV1Api(cluster_api("front"))
    # Queue a fills both clusters with preemptible gangs of 4 x 8 CPUs, one more than fit.
    gangs = free_in_remotes(cluster_api) // 32 + 1
    for g in range(gangs):
        ann = {keys.GANG_ID: f"a{g}", keys.GANG_CARDINALITY: "4"}
        for i in range(4):
            labels = {"gang": f"a{g}"}
            core.create_namespaced_pod(
                namespace,
                pod(
                    f"a{g}-{i}", queue=a, cpu="8", annotations=ann, labels=labels, priority_class=PREEMPTIBLE
                ),
            )

    def a_full() -> bool:
        pods = front_pods(cluster_api, namespace)
        waiting = [p for p in pods if not cluster_of(p)]
        return bool(waiting) and _running_pods(pods, a) == 4 * gangs - len(waiting)

    # Wait until a's gangs that fit run and the rest wait: no room is left for that shape.
    wait_for("queue a's gangs placed as far as they fit", a_full, timeout=120)
    time.sleep(3)
    assert a_full()
    # Queue b (no share yet) asks for one gang of the same shape, of a higher priority class.
    ann = {keys.GANG_ID: "b0", keys.GANG_CARDINALITY: "4"}
    for i in range(4):
        urgent = pod(
            f"b0-{i}", queue=b, cpu="8", annotations=ann, labels={"gang": "b0"}, priority_class=URGENT
        )
        core.create_namespaced_pod(namespace, urgent)
    wait_for(
        "queue b's gang Running",
        lambda: _running_pods(front_pods(cluster_api, namespace), b) == 4,
        timeout=120,
    )
    pods = front_pods(cluster_api, namespace)
    assert len({cluster_of(p) for p in pods if (p.metadata.labels or {}).get("gang") == "b0"}) == 1
    preempted_gangs: dict[str, int] = {}
    for p in pods:
        if p.status.phase == "Failed" and p.status.reason == "Preempted":
            gang = (p.metadata.labels or {})["gang"]
            preempted_gangs[gang] = preempted_gangs.get(gang, 0) + 1
    assert preempted_gangs, "nothing was preempted"
    assert all(n == 4 for n in preempted_gangs.values()), f"partial gang preemption: {preempted_gangs}"
    assert all(g.startswith("a") for g in preempted_gangs)


def test_queue_resource_limit_caps_what_it_holds(namespace: str, cluster_api: Api) -> None:
    crd = k8s.CustomObjectsApi(cluster_api("front"))
    name = f"q{uuid.uuid4().hex[:6]}-capped"
    spec = {
        "priorityFactor": 1,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceLimits": {"cpu": {"absolute": "16"}},
    }
    crd.create_cluster_custom_object(
        keys.GROUP,
        "v1alpha1",
        "queues",
        {"apiVersion": keys.API_VERSION, "kind": "Queue", "metadata": {"name": name}, "spec": spec},
    )
    try:
        core = k8s.CoreV1Api(cluster_api("front"))
        for i in range(12):
            core.create_namespaced_pod(namespace, pod(f"c-{i}", queue=name, cpu="2"))
        wait_for(
            "8 pods (16 CPUs) Running",
            lambda: _running_pods(front_pods(cluster_api, namespace), name) == 8,
            timeout=60,
        )
        time.sleep(4)
        pods = front_pods(cluster_api, namespace)
        assert _running_pods(pods, name) == 8
        waiting = [p for p in pods if not cluster_of(p)]
        assert len(waiting) == 4
    finally:
        crd.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", name)
