"""Which remote nodes take pods, and what is left on them. Pure.

One rule for the extender (the core's nodes) and the vkubelet (the virtual node's capacity): a node
takes pods when it is not a virtual node, not cordoned and Ready; what is left on it is its
allocatable minus what pods already admitted there use (:func:`~.pods.admitted_pod_usage`,
pod slots included), never below zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from armada_bridge import keys
from armada_bridge.contract.pods import PodSpecError, admitted_pod_usage, quantities
from armada_bridge.core.quantities import Resources, add_into, format_quantity
from armada_bridge.objects import ObjView


def node_ready(node: ObjView) -> bool:
    """The Ready condition is True; a node that reports no conditions yet is left to its taints
    and spec.unschedulable (as kube-scheduler does)."""
    conditions = (node.get("status") or {}).get("conditions")
    if not conditions:
        return True
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def is_virtual(node: ObjView) -> bool:
    return (node["metadata"].get("labels") or {}).get(keys.NODE_TYPE_LABEL) == keys.NODE_TYPE_VIRTUAL


def node_usable(node: ObjView) -> bool:
    """Takes new pods: not a virtual node (of a bridge that runs in this cluster too), not
    cordoned, Ready."""
    return not is_virtual(node) and not (node.get("spec") or {}).get("unschedulable") and node_ready(node)


def open_to_all(node: ObjView) -> bool:
    """Usable, and no taint keeps a pod that tolerates nothing off it (the dev remote clusters' real
    nodes are tainted: what measures room for ordinary pods leaves them out)."""
    taints = (node.get("spec") or {}).get("taints") or []
    return node_usable(node) and not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints)


def allocatable(node: ObjView) -> Resources:
    """status.allocatable in milli-units (PodSpecError names the node and the field)."""
    name = node["metadata"].get("name")
    return quantities((node.get("status") or {}).get("allocatable"), f"node {name} status.allocatable")


def free(alloc: Mapping[str, int], used: Mapping[str, int]) -> Resources:
    """Allocatable minus what is used, never below zero."""
    return {k: max(0, v - used.get(k, 0)) for k, v in alloc.items()}


def running_on_node(pod: ObjView) -> bool:
    """A pod that takes room on its node: admitted there and not finished."""
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded",
        "Failed",
    )


@dataclass(frozen=True)
class Capacity:
    capacity: dict[str, str]
    allocatable: dict[str, str]
    nodes: int


def cluster_capacity(
    nodes: Iterable[ObjView],
    others: Iterable[ObjView],
    ours: Iterable[tuple[str, str]] = (),
    front_of: Callable[[str], ObjView | None] = lambda _: None,
) -> Capacity:
    """A cluster's usable nodes summed: capacity, and allocatable minus what `others` (pods
    admitted there) use. A node whose quantities cannot be read is left out.

    `ours` are the bridge's pods that take room in this cluster, as (front pod UID, the node its
    remote pod is bound to), and `front_of` gives a front pod by UID (its spec says what the pod
    uses; looked up only for those on nodes left out, and a pod without one is not counted): the
    front counts all of them against the virtual node's allocatable,
    so those running on nodes left out (cordoned, not Ready) add what they use, and the room the
    front sees is the room on the usable nodes (else draining a node would make the front's
    scheduler refuse pods the core placed on the others)."""
    cap: Resources = {}
    alloc: Resources = {}
    names: set[str] = set()
    for n in nodes:
        if not node_usable(n):
            continue
        try:
            node_cap = quantities((n.get("status") or {}).get("capacity"), "status.capacity")
            node_alloc = allocatable(n)
        except PodSpecError:
            continue
        names.add(n["metadata"]["name"])
        add_into(cap, node_cap)
        add_into(alloc, node_alloc)
    used: Resources = {}
    for p in others:
        if running_on_node(p) and p["spec"]["nodeName"] in names:
            add_into(used, admitted_pod_usage(p))
    left = free(alloc, used)
    for uid, node in ours:
        if node not in names:
            front = front_of(uid)
            if front is not None:
                add_into(left, admitted_pod_usage(front))
    return Capacity(
        {k: format_quantity(k, v) for k, v in sorted(cap.items())},
        {k: format_quantity(k, v) for k, v in sorted(left.items())},
        len(names),
    )
