"""What a pod asks for and takes from a node, and its own scheduling constraints. Pure.

* :func:`pod_requests` — effective requests as Kubernetes computes them
  (``k8s.io/component-helpers/resource/helpers.go`` ``PodRequests``): the sum of the containers;
  restartable (sidecar) init containers add to that sum and to every later init container's use;
  the result is the element-wise max of that and each init container's use; pod-level
  ``spec.resources.requests`` (cpu, memory, hugepages-*) replace the aggregate for those names;
  ``spec.overhead`` is added. A container request left unset where a limit is set defaults to the
  limit, as the API server defaults it.
* :func:`pod_usage` — requests plus the pod slot it takes on its node.
* :func:`is_terminal` — the pod has ended (Succeeded or Failed).
* :func:`job_priority` / :func:`job_priority_value` — Armada's per-job priority within its queue
  (``keys.JOB_PRIORITY_ANNOTATION``; lower is scheduled first), as the Armada API writes it and the
  extender reads it.
* :func:`scheduler_refusal` — kube-scheduler's message when it found no node for the pod.
* :func:`scheduling_gates` / :func:`gates_without` — the pod's scheduling gates, and the list left
  once the bridge's own gate (``keys.SCHEDULING_GATE``) is lifted.
* :class:`SchedulingConstraints` — the pod's *own* nodeSelector, affinity, tolerations and
  topologySpreadConstraints: the codec of the ``keys.SCHEDULING_CONSTRAINTS`` annotation where the
  admission webhook sets them aside, and the reading of a spec's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.core.quantities import MILLI, QuantityError, Resources, add_into, parse_quantity
from armada_bridge.kube.shapes import Shape
from armada_bridge.objects import ObjView

#: the phases a pod never leaves once in them (nothing runs it again; the API server would allow it)
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def is_terminal(pod: ObjView) -> bool:
    return (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def scheduled_at(pod: ObjView) -> str | None:
    """When the pod was bound: its PodScheduled condition's lastTransitionTime, if True."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "True" and c.get("lastTransitionTime"):
            return str(c["lastTransitionTime"])
    return None


def scheduling_gates(pod: ObjView) -> tuple[str, ...]:
    """The names of the pod's scheduling gates, in order."""
    gates = (pod.get("spec") or {}).get("schedulingGates")
    if not isinstance(gates, list):
        return ()
    return tuple(str(g.get("name", "")) for g in gates if isinstance(g, Mapping))


def scheduler_refusal(pod: ObjView) -> str | None:
    """kube-scheduler's message when it last found no node for the pod (its PodScheduled condition
    False for `Unschedulable`); None otherwise (not tried, bound, or a scheduler error it retries)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == "PodScheduled":
            if c.get("status") == "False" and c.get("reason") == "Unschedulable":
                return str(c.get("message") or "no node fits")
            return None
    return None


def gates_without(gates: tuple[str, ...], gate: str = keys.SCHEDULING_GATE) -> list[dict[str, str]] | None:
    """`spec.schedulingGates` for a merge patch that lifts `gate` and keeps the others (None: the
    field goes). A stale `gates` can only name more gates than the pod has (gates are never added
    after creation), and the API server refuses the patch then, so nobody else's gate is undone."""
    rest = [{"name": g} for g in gates if g != gate]
    return rest or None


#: Spec fields the admission webhook moves into ``keys.SCHEDULING_CONSTRAINTS`` (JSON keys alike).
CONSTRAINT_FIELDS = ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints")


class PodSpecError(ValueError):
    """A pod (or node) field is malformed; the message names the field."""


# --------------------------------------------------------------------------- resources
def quantities(values: Any, what: str) -> Resources:
    """A resource list (requests, limits, allocatable) in milli-units; PodSpecError names `what`."""
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


_POD_LEVEL = ("cpu", "memory")
_HUGEPAGES = "hugepages-"


def _requests_defaulting_to_limits(resources: Any, what: str) -> Resources:
    """requests, each unset one defaulting to its limit (zero entries kept: an explicit 0 counts)."""
    resources = resources if isinstance(resources, Mapping) else {}
    requests = quantities(resources.get("requests"), f"{what}.requests")
    for name, qty in quantities(resources.get("limits"), f"{what}.limits").items():
        requests.setdefault(name, qty)
    return requests


def container_requests(container: ObjView, what: str = "container") -> Resources:
    return _requests_defaulting_to_limits(container.get("resources"), f"{what}.resources")


def _max_into(acc: Resources, other: Mapping[str, int]) -> None:
    for k, v in other.items():
        if v > acc.get(k, 0):
            acc[k] = v


def _is_pod_level(name: str) -> bool:
    return name in _POD_LEVEL or name.startswith(_HUGEPAGES)


def pod_requests(pod: ObjView) -> Resources:
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
    pod_level: ObjView = raw_pod_level if isinstance(raw_pod_level, Mapping) else {}
    explicit = quantities(pod_level.get("requests"), "spec.resources.requests")
    for name, qty in explicit.items():
        if _is_pod_level(name):
            result[name] = qty
    for name, qty in quantities(pod_level.get("limits"), "spec.resources.limits").items():
        if _is_pod_level(name) and name not in explicit and name not in result:
            result[name] = qty
    add_into(result, quantities(spec.get("overhead"), "spec.overhead"))
    return {k: v for k, v in result.items() if v}


#: What :func:`pod_requests` reads of a pod (and where it runs, and whether it still does): the
#: informer shape of a cache that only counts what pods take from their nodes.
USAGE_SHAPE: Mapping[str, Shape] = {
    "metadata": {"labels": True, "deletionTimestamp": True},
    "spec": {
        "nodeName": True,
        "containers": [{"name": True, "resources": True}],
        "initContainers": [{"name": True, "resources": True, "restartPolicy": True}],
        "resources": True,
        "overhead": True,
    },
    "status": {"phase": True},
}

#: The node resource that counts pods (status.allocatable.pods): each pod takes one slot.
POD_SLOTS = "pods"
_ONE_POD = {POD_SLOTS: MILLI}


def pod_usage(pod: ObjView) -> Resources:
    """What a pod takes from its node: its effective requests and one pod slot (the kubelet
    admits no more pods than allocatable ``pods``, and kube-scheduler counts them so)."""
    usage = pod_requests(pod)
    add_into(usage, _ONE_POD)
    return usage


def admitted_pod_usage(pod: ObjView) -> Resources:
    """:func:`pod_usage` of a pod an API server already admitted to a node: a quantity we cannot
    read there still leaves its pod slot counted."""
    try:
        return pod_usage(pod)
    except PodSpecError:
        return dict(_ONE_POD)


def priority_class_name(pod: ObjView) -> str:
    return str((pod.get("spec") or {}).get("priorityClassName") or "")


#: Armada's job priorities are unsigned 32-bit integers (conversion.PriorityAsInt32).
MAX_JOB_PRIORITY = 2**32 - 1


def job_priority_value(priority: float) -> int:
    """Armada's job priority as it stores it: rounded, clamped to 0..2^32-1 (NaN counts as 0)."""
    if priority != priority or priority <= 0:
        return 0
    return int(min(round(priority), MAX_JOB_PRIORITY))


def job_priority(pod: ObjView) -> int:
    """The pod's Armada job priority (its annotation; 0 when absent or not a number in range)."""
    raw = ((pod.get("metadata") or {}).get("annotations") or {}).get(keys.JOB_PRIORITY_ANNOTATION)
    try:
        value = int(str(raw))
    except ValueError:
        return 0
    return value if 0 <= value <= MAX_JOB_PRIORITY else 0


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
    def from_mapping(cls, value: ObjView, what: str) -> SchedulingConstraints:
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


def scheduling_constraints(pod: ObjView) -> SchedulingConstraints:
    """The pod's original constraints: the webhook's annotation when present, else the spec's."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(keys.SCHEDULING_CONSTRAINTS)
    if raw is not None:
        return SchedulingConstraints.from_annotation(raw)
    return SchedulingConstraints.from_mapping(pod.get("spec") or {}, "spec")
