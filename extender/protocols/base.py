"""What every gang protocol module shares: the gang it reads, the plug-in it registers, the
inputs its PodGroup status is written from, and small readers of plain-dict objects. Pure."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from armada_bridge.core.quantities import QuantityError, Resources, parse_quantity
from armada_bridge.kube.resources import Resource
from armada_bridge.objects import ObjView

PODGROUP_KIND = "PodGroup"


class IntentError(ValueError):
    """A pod's queue or gang intent is malformed; the message names the object and the field."""


class PodGroupMissing(IntentError):
    """The pod names a PodGroup that was not supplied (not created yet, or never): it must wait."""

    def __init__(self, ref: PodGroupRef) -> None:
        self.ref = ref
        super().__init__(
            f"pod references {ref.described} ({ref.api_version}), which does not "
            "exist (yet); the pod waits for it"
        )


@dataclass(frozen=True)
class PodGroupRef:
    """The object that backs a gang, so its status can be written."""

    api_version: str
    kind: str
    name: str
    namespace: str

    @property
    def group(self) -> str:
        return self.api_version.partition("/")[0]

    @property
    def described(self) -> str:
        """``PodGroup <namespace>/<name>``, as messages name it."""
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class GangSpec:
    """A gang as one protocol describes it.

    ``min_resources`` is in the core's milli-units (:mod:`armada_bridge.core.quantities`). A gang
    with ``min_member == 1`` and ``min_resources`` is a capacity reservation (Spark style), not a
    1-pod gang: see :attr:`is_reservation`.
    """

    #: unique within the namespace, prefixed by protocol: ``volcano/<pg>``, ``armada/<gangId>``, ...
    key: str
    protocol: str
    min_member: int
    min_resources: Resources | None = None
    node_uniformity_label: str | None = None
    schedule_timeout_seconds: int | None = None
    podgroup_ref: PodGroupRef | None = None
    #: the PodGroup's priorityClassName (Volcano, native), used when the pod names none.
    priority_class_name: str | None = None

    @property
    def is_reservation(self) -> bool:
        return self.min_member <= 1 and bool(self.min_resources)


# --------------------------------------------------------------------------- PodGroup status
class GangState(enum.StrEnum):
    #: no decision yet, or the gang does not fit: waiting.
    WAITING = "waiting"
    #: the core admitted the gang (decision made, capacity reserved); members may not exist yet.
    ADMITTED = "admitted"
    #: the gang's members are bound and running remotely.
    RUNNING = "running"


@dataclass(frozen=True)
class StatusInputs:
    """What a protocol's PodGroup status is written from, besides the PodGroup and its members."""

    #: RFC 3339 time for conditions that change now.
    now: str
    #: members -> the gang's state and, when it waits, why (the core's reason).
    gang_state: Callable[[Sequence[ObjView]], tuple[GangState, str]]
    #: what each remote cluster's schedulable nodes hold in all (allocatable), free or in use: what
    #: a gang could get there, by preemption if need be.
    capacity_by_cluster: Mapping[str, Resources]
    #: queue name -> (exists, cordoned).
    queue: Callable[[str], tuple[bool, bool]]
    #: namespace -> the queue its label ``armadaproject.io/queue`` names (None: none).
    namespace_queue: Callable[[str], str | None]


@dataclass(frozen=True)
class MemberCounts:
    """What a PodGroup's status counts, from its member pods."""

    total: int = 0
    #: bound to a node (spec.nodeName), whatever their phase — Volcano's "scheduled".
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @property
    def completed(self) -> int:
        return self.succeeded + self.failed

    @classmethod
    def of(cls, pods: Iterable[ObjView]) -> MemberCounts:
        total = scheduled = running = succeeded = failed = 0
        for pod in pods:
            total += 1
            phase = (pod.get("status") or {}).get("phase")
            if (pod.get("spec") or {}).get("nodeName"):
                scheduled += 1
            running += phase == "Running"
            succeeded += phase == "Succeeded"
            failed += phase == "Failed"
        return cls(total, scheduled, running, succeeded, failed)

    def into(self, status: dict[str, Any]) -> None:
        """running/succeeded/failed, each only when non-zero (int32 omitempty, as both serialise)."""
        for name, value in (
            ("running", self.running),
            ("succeeded", self.succeeded),
            ("failed", self.failed),
        ):
            if value:
                status[name] = value


def condition(
    previous: Sequence[ObjView], ctype: str, status: str, reason: str, message: str, now: str
) -> dict[str, Any]:
    """A condition, keeping the previous lastTransitionTime (and transitionID) when unchanged."""
    cond: dict[str, Any] = {"type": ctype, "status": status, "reason": reason}
    if message:
        cond["message"] = message
    old = next((c for c in previous if c.get("type") == ctype), None)
    if old is not None and all(
        (old.get(k) or "") == (cond.get(k) or "") for k in ("status", "reason", "message")
    ):
        cond["lastTransitionTime"] = old.get("lastTransitionTime") or now
        if old.get("transitionID"):
            cond["transitionID"] = old["transitionID"]
    else:
        cond["lastTransitionTime"] = now
    return cond


# --------------------------------------------------------------------------- the plug-in
def _names_none(pod: ObjView) -> str | None:
    return None


@dataclass(frozen=True)
class GangProtocol:
    """One way operators ask for gangs, registered in :data:`extender.protocols.PRECEDENCE`.

    ``read(pod, podgroup name, podgroup)`` gives the pod's gang under this protocol, or None when
    the pod does not speak it (then the next protocol is asked); a protocol with a ``resource``
    is asked only for pods that name one of its PodGroups (``podgroup_name``), and its PodGroups
    are watched; with ``status``, their status is written as that protocol's scheduler would.
    """

    name: str
    read: Callable[[ObjView, str | None, ObjView | None], GangSpec | None]
    resource: Resource | None = None
    podgroup_name: Callable[[ObjView], str | None] = _names_none
    status: Callable[[StatusInputs, ObjView, Sequence[ObjView]], ObjView] | None = None
    #: False where the PodGroup CRD has no status subresource (the object itself is patched).
    status_subresource: bool = True


# --------------------------------------------------------------------------- readers
def metadata(obj: ObjView | None) -> ObjView:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, Mapping) else {}


def labels_of(obj: ObjView | None) -> Mapping[str, str]:
    labels = metadata(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def annotations_of(obj: ObjView | None) -> Mapping[str, str]:
    annotations = metadata(obj).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def spec_of(obj: ObjView | None) -> ObjView:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def where(pod: ObjView) -> str:
    md = metadata(pod)
    return f"pod {md.get('namespace', '')}/{md.get('name', '')}"


def to_int(value: Any, what: str, *, minimum: int = 0) -> int:
    """An integer from an int or a decimal string (annotations are strings)."""
    if isinstance(value, bool):
        raise IntentError(f"{what} must be an integer, not {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        number = int(value.strip())
    else:
        raise IntentError(f"{what} must be an integer, not {value!r}")
    if number < minimum:
        raise IntentError(f"{what} must be at least {minimum}, not {number}")
    return number


def normalize_min_resources(values: Any, what: str) -> Resources | None:
    """A PodGroup's ``minResources`` as the core's resource vector (None when absent or all zero).

    PodGroups the Volcano controller creates itself hold quota-style names (``pods``,
    ``count/pods``, ``requests.cpu``, ``limits.cpu``; see ``GetPodQuotaUsage``): ``requests.X``
    counts as ``X`` where ``X`` is absent, and the pod-count and limit entries are dropped, so only
    what nodes offer is compared.
    """
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise IntentError(f"{what} must be a map of resource name to quantity, not {values!r}")
    out: Resources = {}
    requests: Resources = {}
    for name, raw in values.items():
        name = str(name)
        try:
            qty = parse_quantity(raw)
        except QuantityError as e:
            raise IntentError(f"{what}[{name}]: {e}") from None
        if name == "pods" or name.startswith(("count/", "limits.")):
            continue
        if name.startswith("requests."):
            requests[name.removeprefix("requests.")] = qty
        elif qty:
            out[name] = qty
    for name, qty in requests.items():
        if name not in out and qty:
            out[name] = qty
    return out or None


def podgroup_ref(resource: Resource, name: str, pod: ObjView, podgroup: ObjView | None) -> PodGroupRef:
    """The PodGroup a pod names; PodGroupMissing when it was not found, IntentError when the
    object found is of another API group or version than the protocol reads."""
    actual = (podgroup or {}).get("apiVersion")
    ref = PodGroupRef(
        api_version=actual if isinstance(actual, str) and actual else resource.api_version,
        kind=PODGROUP_KIND,
        name=name,
        namespace=str(metadata(pod).get("namespace", "")),
    )
    if podgroup is None:
        raise PodGroupMissing(ref)
    return ref


def named_podgroup(
    resource: Resource,
    name: str | None,
    pod: ObjView,
    podgroup: ObjView | None,
    versions: tuple[str, ...] | None = None,
) -> tuple[PodGroupRef, ObjView]:
    """The PodGroup the pod names under a protocol and its spec: PodGroupMissing when it was not
    found, IntentError when it is of another group or version than the protocol reads."""
    assert name is not None, "asked only for pods that name one"
    ref = podgroup_ref(resource, name, pod, podgroup)
    assert podgroup is not None
    check_podgroup(podgroup, resource.group, ref, versions)
    return ref, spec_of(podgroup)


def min_member(spec: ObjView, what: str) -> int:
    """``spec.minMember`` (at least 1; absent: 1)."""
    return max(1, to_int(spec.get("minMember", 1), f"{what} spec.minMember"))


def min_member_gang(protocol: str, ref: PodGroupRef, spec: ObjView, **extra: Any) -> GangSpec:
    """The gang of a PodGroup that counts its members in ``spec.minMember`` and may reserve
    ``spec.minResources`` (Volcano's and scheduler-plugins'); `extra`, what only its protocol reads."""
    return GangSpec(
        key=f"{protocol}/{ref.name}",
        protocol=protocol,
        min_member=min_member(spec, ref.described),
        min_resources=normalize_min_resources(spec.get("minResources"), f"{ref.described} spec.minResources"),
        podgroup_ref=ref,
        **extra,
    )


def check_podgroup(
    podgroup: ObjView, group: str, ref: PodGroupRef, versions: tuple[str, ...] | None = None
) -> None:
    api_version = podgroup.get("apiVersion")
    if api_version is None:  # typed clients and informers may strip it; trust the caller
        return
    g, _, v = str(api_version).partition("/")
    if g != group or (versions is not None and v not in versions):
        raise IntentError(f"{ref.described}: expected apiVersion {group}/..., got {api_version}")
