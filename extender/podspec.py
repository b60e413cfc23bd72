"""Pod -> scheduling facts, and Kubernetes objects -> the scheduling core's model. Pure.

* :func:`pod_requests` — effective requests as Kubernetes computes them
  (``k8s.io/component-helpers/resource/helpers.go`` ``PodRequests``): the sum of the containers;
  restartable (sidecar) init containers add to that sum and to every later init container's use;
  the result is the element-wise max of that and each init container's use; pod-level
  ``spec.resources.requests`` (cpu, memory, hugepages-*) replace the aggregate for those names;
  ``spec.overhead`` is added. A container request left unset where a limit is set defaults to the
  limit, as the API server defaults it.
* :class:`SchedulingConstraints` — the pod's *own* nodeSelector, affinity, tolerations and
  topologySpreadConstraints: the ``keys.SCHEDULING_CONSTRAINTS`` annotation the admission webhook
  set aside when present, else the spec's.
* :func:`job_from_pod` / :func:`node_from_remote` — the core's :class:`~armada_bridge.core.model.Job`
  and :class:`~armada_bridge.core.model.Node`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from armada_bridge import keys
from armada_bridge.core.model import (
    CLUSTER_LABEL,
    Job,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)
from armada_bridge.core.quantities import MILLI, QuantityError, Resources, add_into, parse_quantity

if TYPE_CHECKING:
    from extender.intent import GangSpec

Obj = Mapping[str, Any]

#: Pseudo-label carrying a remote node's name on core nodes, so node affinity ``matchFields`` on
#: ``metadata.name`` (the only field Kubernetes supports there) can be checked like a label.
NODE_NAME_FIELD = "metadata.name"

#: Spec fields the admission webhook moves into ``keys.SCHEDULING_CONSTRAINTS`` (JSON keys alike).
CONSTRAINT_FIELDS = ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints")

_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


class PodSpecError(ValueError):
    """A pod (or node) field is malformed; the message names the field."""


# --------------------------------------------------------------------------- resources
def _quantities(values: Any, what: str) -> Resources:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise PodSpecError(f"{what} must be a map of resource name to quantity")
    out: Resources = {}
    for name, raw in values.items():
        try:
            out[str(name)] = parse_quantity(raw)
        except QuantityError as e:
            raise PodSpecError(f"{what}[{name}]: {e}") from None
    return out


def _requests_defaulting_to_limits(resources: Any, what: str) -> Resources:
    """requests, each unset one defaulting to its limit (zero entries kept: an explicit 0 counts)."""
    resources = resources if isinstance(resources, Mapping) else {}
    requests = _quantities(resources.get("requests"), f"{what}.requests")
    for name, qty in _quantities(resources.get("limits"), f"{what}.limits").items():
        requests.setdefault(name, qty)
    return requests


def container_requests(container: Obj, what: str = "container") -> Resources:
    return _requests_defaulting_to_limits(container.get("resources"), f"{what}.resources")


def _max_into(acc: Resources, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > acc.get(k, 0):
            acc[k] = v


def _is_pod_level(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith(_HUGEPAGES)


def pod_requests(pod: Obj) -> Resources:
    """Effective resource requests of a pod, in milli-units (zero entries dropped)."""
    spec = pod.get("spec") or {}
    result: Resources = {}
    for i, c in enumerate(spec.get("containers") or []):
        add_into(result, container_requests(c, f"spec.containers[{i}]"))
    sidecars: Resources = {}
    init_use: Resources = {}
    for i, c in enumerate(spec.get("initContainers") or []):
        req = container_requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":  # restartable init container (sidecar)
            add_into(result, req)
            add_into(sidecars, req)
            use = dict(sidecars)
        else:
            use = dict(req)
            add_into(use, sidecars)
        _max_into(init_use, use)
    _max_into(result, init_use)
    # Pod-level resources; an unset pod-level request defaults to the containers' aggregate when
    # they request the resource, else to the pod-level limit (defaults.go defaultPodRequests).
    raw_pod_level = spec.get("resources")
    pod_level: Obj = raw_pod_level if isinstance(raw_pod_level, Mapping) else {}
    explicit = _quantities(pod_level.get("requests"), "spec.resources.requests")
    for name, qty in explicit.items():
        if _is_pod_level(name):
            result[name] = qty
    for name, qty in _quantities(pod_level.get("limits"), "spec.resources.limits").items():
        if _is_pod_level(name) and name not in explicit and name not in result:
            result[name] = qty
    add_into(result, _quantities(spec.get("overhead"), "spec.overhead"))
    return {k: v for k, v in result.items() if v}


#: The node resource that counts pods (status.allocatable.pods): each pod takes one slot.
POD_SLOTS = "pods"
_ONE_POD = {POD_SLOTS: MILLI}


def pod_usage(pod: Obj) -> Resources:
    """What a pod takes from its node: its effective requests and one pod slot (the kubelet
    admits no more pods than allocatable ``pods``, and kube-scheduler counts them so)."""
    usage = pod_requests(pod)
    add_into(usage, _ONE_POD)
    return usage


def admitted_pod_usage(pod: Obj) -> Resources:
    """:func:`pod_usage` of a pod an API server already admitted to a node: a quantity we cannot
    read there still leaves its pod slot counted."""
    try:
        return pod_usage(pod)
    except PodSpecError:
        return dict(_ONE_POD)


def priority_class_name(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("priorityClassName") or "")


# --------------------------------------------------------------------------- constraints
@dataclass(frozen=True)
class SchedulingConstraints:
    """A pod's own placement constraints, as Kubernetes JSON (camelCase)."""

    node_selector: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, Any] | None = None
    tolerations: tuple[dict[str, Any], ...] = ()
    topology_spread_constraints: tuple[dict[str, Any], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (
            self.node_selector or self.affinity or self.tolerations or self.topology_spread_constraints
        )

    @classmethod
    def from_mapping(cls, value: Obj, what: str) -> SchedulingConstraints:
        """From a spec or the annotation's JSON object (absent or null keys: none set)."""
        node_selector = value.get("nodeSelector") or {}
        affinity = value.get("affinity") or None
        tolerations = value.get("tolerations") or []
        spread = value.get("topologySpreadConstraints") or []
        if not isinstance(node_selector, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in node_selector.items()
        ):
            raise PodSpecError(f"{what}.nodeSelector must be a map of strings")
        if affinity is not None and not isinstance(affinity, Mapping):
            raise PodSpecError(f"{what}.affinity must be an object")
        for name, items in (("tolerations", tolerations), ("topologySpreadConstraints", spread)):
            if not isinstance(items, list) or not all(isinstance(t, Mapping) for t in items):
                raise PodSpecError(f"{what}.{name} must be a list of objects")
        return cls(
            node_selector=dict(node_selector),
            affinity=dict(affinity) if affinity is not None else None,
            tolerations=tuple(dict(t) for t in tolerations),
            topology_spread_constraints=tuple(dict(t) for t in spread),
        )

    @classmethod
    def from_annotation(cls, raw: str) -> SchedulingConstraints:
        try:
            value = json.loads(raw)
        except ValueError as e:
            raise PodSpecError(f"annotation {keys.SCHEDULING_CONSTRAINTS} is not valid JSON: {e}") from None
        if not isinstance(value, Mapping):
            raise PodSpecError(f"annotation {keys.SCHEDULING_CONSTRAINTS} must hold a JSON object")
        return cls.from_mapping(value, f"annotation {keys.SCHEDULING_CONSTRAINTS}")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.node_selector:
            out["nodeSelector"] = dict(self.node_selector)
        if self.affinity:
            out["affinity"] = dict(self.affinity)
        if self.tolerations:
            out["tolerations"] = [dict(t) for t in self.tolerations]
        if self.topology_spread_constraints:
            out["topologySpreadConstraints"] = [dict(t) for t in self.topology_spread_constraints]
        return out

    def to_annotation(self) -> str:
        """Deterministic JSON (sorted keys, compact) so equal constraints give equal annotations."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


def scheduling_constraints(pod: Obj) -> SchedulingConstraints:
    """The pod's original constraints: the webhook's annotation when present, else the spec's."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(keys.SCHEDULING_CONSTRAINTS)
    if raw is not None:
        return SchedulingConstraints.from_annotation(raw)
    return SchedulingConstraints.from_mapping(pod.get("spec") or {}, "spec")


def tolerations_to_core(tolerations: Iterable[Obj]) -> tuple[Toleration, ...]:
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


def node_affinity_terms(affinity: Obj | None) -> tuple[NodeSelectorTerm, ...]:
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
def job_from_pod(pod: Obj, *, job_id: str, queue: str, gang: GangSpec | None, submit_time: float) -> Job:
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
        submit_time=submit_time,
        node_selector=dict(constraints.node_selector),
        affinity=node_affinity_terms(constraints.affinity),
        tolerations=tolerations_to_core(constraints.tolerations),
    )
    if gang is not None:
        job.gang_id = f"{namespace}/{gang.key}"
        job.gang_cardinality = max(1, gang.min_member)
        job.gang_node_uniformity_label = gang.node_uniformity_label
        job.gang_min_resources = dict(gang.min_resources) if gang.min_resources else None
    return job


def _ready(node: Obj) -> bool:
    conditions = (node.get("status") or {}).get("conditions")
    if not conditions:
        return True  # no conditions reported (yet): taints and spec.unschedulable decide
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def node_from_remote(
    node: Obj, cluster: str, used_by_others: Mapping[str, int], *, core_name: str | None = None
) -> Node:
    """A remote cluster's real node for the core.

    Allocatable minus what non-bridge pods use (never below zero); unschedulable when cordoned or
    not Ready; its taints; its labels plus :data:`NODE_NAME_FIELD` and the virtual nodes'
    ``keys.CLUSTER_LABEL``. ``core_name`` defaults to ``<cluster>/<node>`` (unique across clusters).
    """
    md = node.get("metadata") or {}
    name = str(md.get("name") or "")
    if not name:
        raise PodSpecError(f"a node of cluster {cluster} has no metadata.name")
    allocatable = _quantities(
        (node.get("status") or {}).get("allocatable"), f"node {name} status.allocatable"
    )
    free = {k: max(0, v - used_by_others.get(k, 0)) for k, v in allocatable.items()}
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
        unschedulable=bool((node.get("spec") or {}).get("unschedulable")) or not _ready(node),
    )
