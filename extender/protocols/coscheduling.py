"""scheduler-plugins Coscheduling: label ``scheduling.x-k8s.io/pod-group`` names a
``scheduling.x-k8s.io/v1alpha1`` PodGroup (minMember, minResources, scheduleTimeoutSeconds).

Status as its PodGroup controller writes it (phases from ``apis/scheduling/v1alpha1/types.go`` —
Pending, Scheduling, Running, Unknown, Finished, Failed — and the logic of
``pkg/controllers/podgroup_controller.go``).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from armada_bridge import keys
from armada_bridge.kube.resources import COSCHEDULING_PODGROUPS
from armada_bridge.objects import ObjView
from extender.protocols.base import (
    GangProtocol,
    GangSpec,
    GangState,
    MemberCounts,
    StatusInputs,
    labels_of,
    min_member_gang,
    named_podgroup,
    spec_of,
    to_int,
)

NAME = "coscheduling"


def podgroup_name(pod: ObjView) -> str | None:
    return labels_of(pod).get(keys.COSCHEDULING_POD_GROUP_LABEL) or None


def read(pod: ObjView, name: str | None, podgroup: ObjView | None) -> GangSpec:
    ref, spec = named_podgroup(COSCHEDULING_PODGROUPS, name, pod, podgroup)
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None:
        timeout = to_int(timeout, f"{ref.described} spec.scheduleTimeoutSeconds")
    return min_member_gang(NAME, ref, spec, schedule_timeout_seconds=timeout)


# --------------------------------------------------------------------------- status
class CoschedulingPhase(enum.StrEnum):
    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    FINISHED = "Finished"
    FAILED = "Failed"


def occupied_by(pod: ObjView) -> str:
    """scheduler-plugins ``fillOccupiedObj``: "<namespace>/<owner name>" of each owner, sorted, joined by ","."""
    md = pod.get("metadata") or {}
    refs = sorted(f"{md.get('namespace', '')}/{r.get('name', '')}" for r in md.get("ownerReferences") or [])
    return ",".join(refs)


def phase_of(counts: MemberCounts, *, min_member: int, previous_phase: str | None) -> CoschedulingPhase:
    """The scheduler-plugins PodGroup controller's state machine (Finished and Failed are final)."""
    if previous_phase in (CoschedulingPhase.FINISHED, CoschedulingPhase.FAILED):
        return CoschedulingPhase(previous_phase)
    if not previous_phase:
        return CoschedulingPhase.PENDING
    if previous_phase == CoschedulingPhase.PENDING:
        return CoschedulingPhase.SCHEDULING if counts.total >= min_member else CoschedulingPhase.PENDING
    if counts.total < min_member:
        return CoschedulingPhase.PENDING
    phase = (
        CoschedulingPhase.RUNNING
        if counts.succeeded + counts.running >= min_member
        else CoschedulingPhase.SCHEDULING
    )
    if counts.failed and counts.failed + counts.running + counts.succeeded >= min_member:
        phase = CoschedulingPhase.FAILED
    if counts.succeeded >= min_member:
        phase = CoschedulingPhase.FINISHED
    return phase


def status_of(
    gang_state: GangState,
    members: Sequence[ObjView],
    *,
    min_member: int,
    now: str,
    previous: ObjView | None = None,
) -> dict[str, Any]:
    """The scheduler-plugins PodGroup ``status`` for these member pods.

    Upstream's controller steps one phase per reconcile ("" -> Pending -> Scheduling -> ...); this
    runs the steps to their fixed point, so one call gives the status the controller settles on.
    ``scheduleStartTime`` is set when the gang is first admitted (kept afterwards); ``occupiedBy``
    when the group first leaves Pending, from the first member's owners (as upstream).
    """
    previous = previous or {}
    counts = MemberCounts.of(members)
    min_member = max(1, min_member)
    phase: str | None = previous.get("phase") or None
    while True:
        nxt = phase_of(counts, min_member=min_member, previous_phase=phase)
        if nxt == phase:
            break
        phase = nxt
    status: dict[str, Any] = {"phase": str(phase)}
    occupied = previous.get("occupiedBy") or ""
    if not occupied and phase != CoschedulingPhase.PENDING and members:
        occupied = occupied_by(members[0])
    if occupied:
        status["occupiedBy"] = occupied
    counts.into(status)
    start = previous.get("scheduleStartTime")
    if not start and gang_state is not GangState.WAITING:
        start = now
    if start:
        status["scheduleStartTime"] = start
    return status


def status(inputs: StatusInputs, podgroup: ObjView, members: Sequence[ObjView]) -> ObjView:
    state, _ = inputs.gang_state(members)
    min_member = int(spec_of(podgroup).get("minMember") or 1)
    return status_of(state, members, min_member=min_member, now=inputs.now, previous=podgroup.get("status"))


PROTOCOL = GangProtocol(NAME, read, COSCHEDULING_PODGROUPS, podgroup_name, status)
