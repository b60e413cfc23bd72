"""The native Workload API: pod field ``spec.schedulingGroup.podGroupName`` names a
``scheduling.k8s.io`` PodGroup (v1alpha2/v1alpha3/v1beta1) whose ``spec.schedulingPolicy.gang.minCount``
is the gang's size and ``spec.schedulingConstraints.topology`` its uniformity label. A PodGroup
with the ``basic`` policy is not a gang (the next protocol is asked)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from armada_bridge.kube.resources import NATIVE_PODGROUPS
from armada_bridge.objects import ObjView
from extender.protocols.base import (
    GangProtocol,
    GangSpec,
    GangState,
    StatusInputs,
    condition,
    named_podgroup,
    spec_of,
    to_int,
)

NAME = "workload"
VERSIONS = ("v1beta1", "v1alpha3", "v1alpha2")
INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"


def podgroup_name(pod: ObjView) -> str | None:
    group = spec_of(pod).get("schedulingGroup")
    name = group.get("podGroupName") if isinstance(group, Mapping) else None
    return name if isinstance(name, str) and name else None


def read(pod: ObjView, name: str | None, podgroup: ObjView | None) -> GangSpec | None:
    ref, spec = named_podgroup(NATIVE_PODGROUPS, name, pod, podgroup, VERSIONS)
    policy = spec.get("schedulingPolicy") or {}
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    if not isinstance(gang, Mapping):
        return None  # "basic" policy: no gang semantics
    what = f"{ref.described} spec.schedulingPolicy.gang.minCount"
    topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
    label = topology[0].get("key") or None if topology and isinstance(topology[0], Mapping) else None
    return GangSpec(
        key=f"{NAME}/{ref.name}",
        protocol=NAME,
        min_member=to_int(gang.get("minCount", 1), what, minimum=1),
        node_uniformity_label=label,
        podgroup_ref=ref,
        priority_class_name=spec.get("priorityClassName") or None,
    )


def conditions(
    gang_state: GangState, *, now: str, message: str = "", previous: ObjView | None = None
) -> list[dict[str, Any]]:
    """Conditions of a native PodGroup (metav1.Condition): the terminal ``PodGroupInitiallyScheduled``
    (True once admitted, then never False again; False with reason ``Unschedulable`` while waiting)."""
    previous = previous or {}
    old = [c for c in previous.get("conditions") or [] if isinstance(c, Mapping)]
    was = next((c for c in old if c.get("type") == INITIALLY_SCHEDULED), None)
    others = [dict(c) for c in old if c.get("type") != INITIALLY_SCHEDULED]
    if (was is not None and was.get("status") == "True") or gang_state is not GangState.WAITING:
        cond = condition(old, INITIALLY_SCHEDULED, "True", "Scheduled", "", now)
    else:
        cond = condition(
            old, INITIALLY_SCHEDULED, "False", "Unschedulable", message or "the gang does not fit yet", now
        )
    cond.pop("transitionID", None)
    cond.setdefault("message", "")  # metav1.Condition requires the field
    return [*others, cond]


def status(inputs: StatusInputs, podgroup: ObjView, members: Sequence[ObjView]) -> ObjView:
    state, reason = inputs.gang_state(members)
    previous = podgroup.get("status") or {}
    return {**previous, "conditions": conditions(state, now=inputs.now, message=reason, previous=previous)}


PROTOCOL = GangProtocol(NAME, read, NATIVE_PODGROUPS, podgroup_name, status)
