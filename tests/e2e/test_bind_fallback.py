"""Nothing but the core rejects an admitted pod (DESIGN invariant 4): when the front kube-scheduler
refuses the virtual node the core admitted a pod to, the extender binds the pod itself.

kube-scheduler has been seen doing this after faults (a deleted pod it kept "assumed" on a virtual
node, counted against that node's room). Here the refusal is made on purpose: a NoSchedule taint on
every virtual node that the pods do not tolerate. The core does not see it (it places pods on the
remote clusters' real nodes), so it admits the gang; kube-scheduler then finds no node for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from extender.controller import BIND_REFUSED_AFTER
from tests.framework.bridge import Api, cluster_of, events_for, front_pods, pod, remote_pods, wait_running
from tests.framework.kube import wait_for

# Alone in the environment: it taints every virtual node.
pytestmark = pytest.mark.exclusive

REFUSE = {"key": "test.armada-bridge/refuse", "value": "yes", "effect": "NoSchedule"}


def _virtual_nodes(core: k8s.CoreV1Api) -> list[k8s.V1Node]:
    selector = f"{keys.NODE_TYPE_LABEL}={keys.NODE_TYPE_VIRTUAL}"
    return list(core.list_node(label_selector=selector).items)


def _set_refusal(core: k8s.CoreV1Api, on: bool) -> None:
    for node in _virtual_nodes(core):
        taints = [
            {k: v for k, v in (("key", t.key), ("value", t.value), ("effect", t.effect)) if v}
            for t in node.spec.taints or []
            if t.key != REFUSE["key"]
        ]
        if on:
            taints.append(REFUSE)
        # The whole list is replaced; the vkubelet only ever adds its own taint, kept here.
        core.patch_node(node.metadata.name, {"spec": {"taints": taints}})


@pytest.fixture
def refusing_scheduler(cluster_api: Api) -> Iterator[k8s.CoreV1Api]:
    core = k8s.CoreV1Api(cluster_api("front"))
    _set_refusal(core, True)
    try:
        yield core
    finally:
        _set_refusal(core, False)


def test_admitted_gang_refused_by_kube_scheduler_is_bound_by_the_extender(
    namespace: str, cluster_api: Api, refusing_scheduler: k8s.CoreV1Api
) -> None:
    core = refusing_scheduler
    gang = {keys.GANG_ID: "refused", keys.GANG_CARDINALITY: "4"}
    for i in range(4):
        core.create_namespaced_pod(namespace, pod(f"r-{i}", queue=namespace, cpu="2", annotations=gang))

    def refused() -> list[str] | None:
        pods = front_pods(cluster_api, namespace)
        msgs = [
            c.message or ""
            for p in pods
            for c in p.status.conditions or []
            if c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
        ]
        admitted = all(cluster_of(p) for p in pods) and all(not p.spec.scheduling_gates for p in pods)
        return msgs if admitted and len(msgs) == 4 and all(not p.spec.node_name for p in pods) else None

    # First the core admits the whole gang to one cluster and kube-scheduler refuses every member.
    msgs = wait_for("the admitted gang refused by kube-scheduler", refused, timeout=60)
    assert all("untolerated taint" in m for m in msgs), msgs

    running = wait_running(cluster_api, namespace, 4, timeout=BIND_REFUSED_AFTER + 90)
    (cluster,) = {cluster_of(p) or "" for p in running}
    assert len(remote_pods(cluster_api, cluster, namespace)) == 4
    vnode_cluster = {n.metadata.name: n.metadata.labels.get(keys.CLUSTER_LABEL) for n in _virtual_nodes(core)}
    for p in running:
        assert vnode_cluster.get(p.spec.node_name) == cluster, (p.spec.node_name, vnode_cluster)
        said = [e for e in events_for(cluster_api, namespace, p.metadata.name) if e.startswith("ArmadaBound")]
        assert said and "untolerated taint" in said[0], said
