"""Kubernetes objects -> the scheduling core's model. Pure.

* :func:`job_from_pod` — the core's :class:`~armada_bridge.core.model.Job` for a front pod: its
  requests and pod slot, its own constraints (:mod:`armada_bridge.contract.pods`), its gang;
* :func:`node_from_remote` — the core's :class:`~armada_bridge.core.model.Node` for a remote
  cluster's real node (:mod:`armada_bridge.contract.capacity` decides what is left on it);
* :func:`pinned_to_cluster` — a job kept to one cluster (a gang's, a refused pod's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from armada_bridge import keys
from armada_bridge.contract import capacity
from armada_bridge.contract.pods import (
    PodSpecError,
    job_priority,
    pod_usage,
    priority_class_name,
    scheduling_constraints,
)
from armada_bridge.core.model import (
    CLUSTER_LABEL,
    Job,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)
from armada_bridge.objects import ObjView

if TYPE_CHECKING:
    from extender.protocols.base import GangSpec


#: Pseudo-label carrying a remote node's name on core nodes, so node affinity ``matchFields`` on
#: ``metadata.name`` (the only field Kubernetes supports there) can be checked like a label.
NODE_NAME_FIELD = "metadata.name"


def tolerations_to_core(tolerations: Iterable[ObjView]) -> tuple[Toleration, ...]:
    """Kubernetes tolerations for the core (tolerationSeconds does not matter for placement)."""
    return tuple(
        Toleration(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or "Equal"),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )
        for t in tolerations
    )


def _requirement(expr: Any, what: str, key: str | None = None) -> NodeSelectorRequirement:
    if not isinstance(expr, Mapping) or not expr.get("operator"):
        raise PodSpecError(f"{what} must be an object with key, operator and values")
    values = expr.get("values") or []
    if not isinstance(values, list):
        raise PodSpecError(f"{what}.values must be a list")
    return NodeSelectorRequirement(
        key=key if key is not None else str(expr.get("key") or ""),
        operator=str(expr["operator"]),
        values=tuple(str(v) for v in values),
    )


#: A requirement no node meets: Kubernetes' "empty node selector term matches no objects".
_MATCHES_NOTHING = NodeSelectorRequirement(key=NODE_NAME_FIELD, operator="In", values=())


def node_affinity_terms(affinity: ObjView | None) -> tuple[NodeSelectorTerm, ...]:
    """Required node affinity terms (ORed); ``matchFields`` on metadata.name become requirements
    on :data:`NODE_NAME_FIELD`. Preferred terms, pod (anti-)affinity: not the core's concern."""
    node_affinity = (affinity or {}).get("nodeAffinity") or {}
    required = node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or []
    out: list[NodeSelectorTerm] = []
    for i, term in enumerate(terms):
        what = f"affinity.nodeAffinity.required...nodeSelectorTerms[{i}]"
        term = term if isinstance(term, Mapping) else {}
        reqs = [
            _requirement(e, f"{what}.matchExpressions[{j}]")
            for j, e in enumerate(term.get("matchExpressions") or [])
        ]
        for j, f in enumerate(term.get("matchFields") or []):
            if isinstance(f, Mapping) and f.get("key") != NODE_NAME_FIELD:
                raise PodSpecError(f"{what}.matchFields[{j}]: only {NODE_NAME_FIELD} is supported")
            reqs.append(_requirement(f, f"{what}.matchFields[{j}]", key=NODE_NAME_FIELD))
        out.append(NodeSelectorTerm(tuple(reqs) if reqs else (_MATCHES_NOTHING,)))
    return tuple(out)


def pinned_to_cluster(job: Job, cluster: str, *, avoid_nodes: tuple[str, ...] = ()) -> Job:
    """`job` restricted to `cluster`'s nodes, other than `avoid_nodes` (nodes that refused it)."""
    selector = {**job.node_selector, CLUSTER_LABEL: cluster}
    affinity = job.affinity
    if avoid_nodes:
        avoid = NodeSelectorRequirement(key=NODE_NAME_FIELD, operator="NotIn", values=tuple(avoid_nodes))
        terms = affinity or (NodeSelectorTerm(),)
        affinity = tuple(NodeSelectorTerm((*t.match_expressions, avoid)) for t in terms)
    return replace(job, node_selector=selector, affinity=affinity)


# --------------------------------------------------------------------------- core model
def job_from_pod(
    pod: ObjView,
    *,
    job_id: str,
    queue: str,
    gang: GangSpec | None,
    submit_time: float,
    colocation: str | None = None,
) -> Job:
    """The core's job for a front pod.

    Gangs are keyed ``<namespace>/<gang.key>`` so equal PodGroup names in two namespaces of one
    queue stay apart. A reservation (``min_member`` 1 + ``min_resources``) becomes a gang of one
    with ``gang_min_resources``; the core admits it only where the whole reservation fits.
    """
    constraints = scheduling_constraints(pod)
    namespace = str((pod.get("metadata") or {}).get("namespace") or "")
    priority_class = priority_class_name(pod) or (gang.priority_class_name if gang else None) or ""
    job = Job(
        id=job_id,
        queue=queue,
        requests=pod_usage(pod),
        priority_class=priority_class,
        priority=job_priority(pod),
        submit_time=submit_time,
        node_selector=dict(constraints.node_selector),
        affinity=node_affinity_terms(constraints.affinity),
        tolerations=tolerations_to_core(constraints.tolerations),
        colocation=colocation,
    )
    if gang is not None:
        job.gang_id = f"{namespace}/{gang.key}"
        job.gang_cardinality = max(1, gang.min_member)
        job.gang_node_uniformity_label = gang.node_uniformity_label
        job.gang_min_resources = dict(gang.min_resources) if gang.min_resources else None
    return job


def node_from_remote(
    node: ObjView, cluster: str, used_by_others: Mapping[str, int], *, core_name: str | None = None
) -> Node:
    """A remote cluster's real node for the core.

    Allocatable minus what pods the core does not account use (never below zero);
    unschedulable unless :func:`~armada_bridge.contract.capacity.node_usable`; its taints; its labels plus :data:`NODE_NAME_FIELD` and the virtual nodes'
    ``keys.CLUSTER_LABEL``. ``core_name`` defaults to ``<cluster>/<node>`` (unique across clusters).
    """
    md = node.get("metadata") or {}
    name = str(md.get("name") or "")
    if not name:
        raise PodSpecError(f"a node of cluster {cluster} has no metadata.name")
    free = capacity.free(capacity.allocatable(node), used_by_others)
    taints = tuple(
        Taint(
            key=str(t.get("key") or ""),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or "NoSchedule"),
        )
        for t in (node.get("spec") or {}).get("taints") or []
    )
    labels = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
    labels[NODE_NAME_FIELD] = name
    # The virtual node's cluster label, so a pod pinned to a cluster the way it would pin to a
    # virtual node (nodeSelector bridge.armadaproject.io/cluster=<name>) is placed there.
    labels.setdefault(keys.CLUSTER_LABEL, cluster)
    return Node(
        name=core_name or f"{cluster}/{name}",
        cluster=cluster,
        allocatable=free,
        labels=labels,
        taints=taints,
        unschedulable=not capacity.node_usable(node),
    )
