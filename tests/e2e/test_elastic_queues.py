"""Elastic work under the queues, on a real node: a Spark application with dynamic allocation
(queue a) and an autoscaling RayCluster (queue b), released operators unchanged, both asking for
more pods while they run. Their later pods (the executors the driver asks for, the workers the Ray
autoscaler adds) queue under their object's queue like any other: when both want more than the room
there is, each gets its half (neither takes room beyond its fair share), and room one of them frees
goes to the other while it still wants more.

The pool is made one real node (about one CPU): every other node of the remote clusters is
cordoned for the test (the core leaves cordoned nodes out of the pool), and given back after."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.contract.pods import pod_usage
from armada_bridge.core.quantities import parse_quantity
from tests.framework import ray_clusters, spark_apps
from tests.framework.bridge import Api, cluster_of, cordoned, front_pods, running_pods
from tests.framework.kube import wait_for
from tests.framework.operators import REMOTES, apply, kubectl, wait_gone_from_remotes, wait_status

# Alone in the environment: it cordons every remote node but one real node and needs that node to itself.
pytestmark = pytest.mark.exclusive

CLUSTER = REMOTES[0]  # the cluster whose real node is the pool
ELASTIC_CPU = "150m"  # a later executor or worker
GO = "/tmp/go"  # the Spark program's first stage waits for this file in the driver
ACTORS = [f"actor{i}" for i in range(6)]  # six one-CPU actors: the autoscaler wants six workers

SERIALIZE = k8s.ApiClient().sanitize_for_serialization


@dataclass(frozen=True)
class Pool:
    """The one real node the queues share: its allocatable CPU and memory (milli-units)."""

    node: str
    cpu: int
    memory: int

    def cost(self, pods: list[Any]) -> float:
        """Dominant resource share of these pods' requests (DRF over CPU and memory, as the core)."""
        usage = [pod_usage(SERIALIZE(p)) for p in pods]
        cpu = sum(u.get("cpu", 0) for u in usage)
        memory = sum(u.get("memory", 0) for u in usage)
        return max(cpu / self.cpu, memory / self.memory)


def test_later_executors_and_autoscaled_workers_share_one_node_by_fair_share(
    namespace: str, cluster_api: Api, operators: Callable[..., None], queues: list[str]
) -> None:
    operators(spark_apps.OPERATOR, ray_clusters.OPERATOR)
    a, b = queues
    with one_real_node_pool(cluster_api) as pool:
        # Heads first: the driver (with the one executor it starts with) and the Ray head.
        app = spark_apps.elastic_app(
            namespace,
            "spark_elastic.py",
            arguments=["24", "5", "60", "--go", GO],
            queue=a,
            driver_cpu="200m",
            executor_cpu=ELASTIC_CPU,
            max_executors=8,
        )
        rc = ray_clusters.autoscaling_raycluster(
            namespace,
            queue=b,
            head_cpu="150m",
            worker_cpu=ELASTIC_CPU,
            worker_memory="1Gi",
            autoscaler_cpu="50m",
        )
        apply(app)
        apply(rc)
        wait_status(rc, "state ready", lambda r: (r.get("status") or {}).get("state") == "ready", timeout=300)
        wait_for(
            "the driver and its first executor Running",
            lambda: (
                len(running_pods(cluster_api, namespace, spark_apps.EXECUTOR)) == 1
                and len(running_pods(cluster_api, namespace, spark_apps.DRIVER)) == 1
            ),
            timeout=300,
        )
        (driver,) = front_pods(cluster_api, namespace, spark_apps.DRIVER)
        (head,) = front_pods(cluster_api, namespace, ray_clusters.HEAD)

        # Both ask for more while the node takes nothing new: the stage's backlog makes the driver
        # ask for executors, the actors make the autoscaler ask for workers.
        with cordoned(cluster_api, [(CLUSTER, pool.node)]):
            before = {p.metadata.name for p in bound(front_pods(cluster_api, namespace))}
            kubectl("exec", driver.metadata.name, "-n", namespace, "--", "touch", GO)
            ray_clusters.detached_actors(head.metadata.name, namespace, ACTORS)
            wait_for(
                "both queues with later pods waiting, more than half the room each",
                lambda: (
                    len(waiting(cluster_api, namespace, a)) >= 3
                    and len(waiting(cluster_api, namespace, b)) >= 3
                ),
                timeout=180,
            )
            assert {p.metadata.name for p in bound(front_pods(cluster_api, namespace))} == before

        # The node is back: both want more than the room, and each gets its half.
        one = max(pool.cost(queue_pods(cluster_api, namespace, q)[-1:]) for q in (a, b))
        shares: list[tuple[float, float]] = []
        over: list[tuple[float, float]] = []

        def shared() -> bool:
            pods = front_pods(cluster_api, namespace)
            if not (waiting(cluster_api, namespace, a) and waiting(cluster_api, namespace, b)):
                return False  # one of them wants no more: nothing to share
            cost_a, cost_b = (pool.cost(bound([p for p in pods if queue_of(p) == q])) for q in (a, b))
            shares.append((cost_a, cost_b))
            if max(cost_a, cost_b) > 0.5 + one:
                over.append((cost_a, cost_b))
            return pool.cost(bound(pods)) > 1 - one  # the room used: no later pod fits any more

        wait_for("the room shared by the two queues", shared, timeout=120, interval=1)
        deadline = time.monotonic() + 20  # and it stays so while both still want more
        while time.monotonic() < deadline:
            shared()
            time.sleep(1)
        assert not over, f"a queue took more than half the node while the other waited: {over}"
        cost_a, cost_b = shares[-1]
        assert min(cost_a, cost_b) >= 0.5 - one, shares[-1]
        later = {
            q: [p for p in bound(queue_pods(cluster_api, namespace, q)) if p.metadata.name not in before]
            for q in (a, b)
        }
        assert later[a] and later[b], later
        for p in later[a] + later[b]:
            assert cluster_of(p) == CLUSTER, (p.metadata.name, cluster_of(p))
            assert (p.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), p.metadata.name
        at_share = len(later[b])

        # Spark's stage ends and its executors idle: the driver releases them down to one, and the
        # Ray workers still waiting take the room they free.
        wait_for(
            "the driver's idle executors released down to one",
            lambda: len(front_pods(cluster_api, namespace, spark_apps.EXECUTOR)) == 1,
            timeout=300,
            interval=1,
        )
        wait_for(
            "queue b's waiting workers admitted to the room queue a freed",
            lambda: len(bound(front_pods(cluster_api, namespace, ray_clusters.WORKERS))) > at_share,
            timeout=120,
            interval=1,
        )
        log = kubectl("logs", driver.metadata.name, "-n", namespace)
        assert f"first stage: {sum(range(24))}" in log, log[-3000:]

        kubectl("delete", "sparkapplication", app["metadata"]["name"], "-n", namespace, "--wait=true")
        kubectl("delete", "raycluster", rc["metadata"]["name"], "-n", namespace, "--wait=true")
        wait_gone_from_remotes(cluster_api, namespace, timeout=180)


@contextmanager
def one_real_node_pool(api: Api) -> Iterator[Pool]:
    """Cordon every schedulable node of the remote clusters but the first real node of `CLUSTER`
    (which must hold nothing of anyone else), and give them back after."""
    core = {c: k8s.CoreV1Api(api(c)) for c in REMOTES}
    nodes = {c: [n for n in core[c].list_node().items if not n.spec.unschedulable] for c in REMOTES}
    real = [
        n
        for n in nodes[CLUSTER]
        if (n.metadata.labels or {}).get(keys.NODE_TYPE_LABEL) != keys.DEV_NODE_TYPE_VALUE
    ]
    assert real, f"{CLUSTER} has no real node"
    node = real[0]
    held = [
        p.metadata.name
        for p in core[CLUSTER]
        .list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node.metadata.name}")
        .items
        if p.status.phase not in ("Succeeded", "Failed")
    ]
    assert not held, f"{node.metadata.name} holds pods of others: {held}"
    others = [(c, n.metadata.name) for c in REMOTES for n in nodes[c] if n is not node]
    with cordoned(api, others):
        alloc = node.status.allocatable
        yield Pool(node.metadata.name, parse_quantity(alloc["cpu"]), parse_quantity(alloc["memory"]))


def queue_of(p: Any) -> str | None:
    return (p.metadata.labels or {}).get(keys.QUEUE_LABEL)


def queue_pods(api: Api, namespace: str, queue: str) -> list[Any]:
    """The queue's pods, oldest first."""
    pods = [p for p in front_pods(api, namespace) if queue_of(p) == queue]
    return sorted(pods, key=lambda p: p.metadata.creation_timestamp)


def bound(pods: list[Any]) -> list[Any]:
    """Admitted and holding room: bound to a virtual node, not ended, not going."""
    return [
        p
        for p in pods
        if p.spec.node_name
        and p.status.phase not in ("Succeeded", "Failed")
        and not p.metadata.deletion_timestamp
    ]


def waiting(api: Api, namespace: str, queue: str) -> list[Any]:
    return [
        p
        for p in queue_pods(api, namespace, queue)
        if not p.spec.node_name and not p.metadata.deletion_timestamp
    ]
