"""The PodGroup status a gang scheduler would write, pure. Operators wait on it.

* Volcano (``scheduling.volcano.sh/v1beta1``; phases and condition names from volcano-sh/apis
  ``pkg/apis/scheduling/v1beta1/types.go``, phase logic after the scheduler's
  ``getPodGroupPhase``/``jobStatus``): Pending -> Inqueue -> Running / Unknown / Completed.
  ``Inqueue`` means "controllers can start to create pods": training-operator v1 creates no pod
  before it, so a gang the bridge has *admitted* (decision made, capacity reserved) is Inqueue
  even with no pod yet; :func:`volcano_should_enqueue` decides admission from queue state and
  whether ``minResources`` fits. Inqueue is sticky, as in Volcano. Note the Volcano PodGroup CRD
  has no status subresource: its status is written with a patch of the object itself.
* scheduler-plugins Coscheduling (``scheduling.x-k8s.io/v1alpha1``; phases from
  ``apis/scheduling/v1alpha1/types.go`` — Pending, Scheduling, Running, Unknown, Finished, Failed —
  and the logic of its PodGroup controller ``pkg/controllers/podgroup_controller.go``).

Both take the previous status so unchanged conditions keep their ``lastTransitionTime`` and a
re-run yields an identical dict (level-triggered writers compare and skip).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from armada_bridge.core.quantities import fits, format_resources

Obj = Mapping[str, Any]


class GangState(enum.StrEnum):
    #: no decision yet, or the gang does not fit: waiting.
    WAITING = "waiting"
    #: the core admitted the gang (decision made, capacity reserved); members may not exist yet.
    ADMITTED = "admitted"
    #: the gang's members are bound and running remotely.
    RUNNING = "running"


class VolcanoPhase(enum.StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


class CoschedulingPhase(enum.StrEnum):
    PENDING = "Pending"
    SCHEDULING = "Scheduling"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    FINISHED = "Finished"
    FAILED = "Failed"


# Volcano condition types and reasons (volcano-sh/apis v1beta1 and the scheduler's gang plugin).
VOLCANO_UNSCHEDULABLE = "Unschedulable"
VOLCANO_SCHEDULED = "Scheduled"
VOLCANO_NOT_ENOUGH_RESOURCES = "NotEnoughResources"
VOLCANO_NOT_ENOUGH_TASKS = "NotEnoughTasks"
#: the reason Volcano's gang plugin writes on the Scheduled condition (sic, not CamelCase).
VOLCANO_SCHEDULED_REASON = "tasks in gang are ready to be scheduled"


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
    def of(cls, pods: Iterable[Obj]) -> MemberCounts:
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


@dataclass(frozen=True)
class EnqueueDecision:
    inqueue: bool
    reason: str
    message: str


def volcano_should_enqueue(
    *,
    queue_exists: bool,
    queue_name: str,
    queue_cordoned: bool = False,
    min_resources: Mapping[str, int] | None,
    free_by_domain: Mapping[str, Mapping[str, int]],
    queue_headroom: Mapping[str, int] | None = None,
) -> EnqueueDecision:
    """Whether a Volcano PodGroup may go Inqueue (its operator may then create the pods).

    ``free_by_domain``: free resources per placement domain (a remote cluster, or one value of the
    gang's node-uniformity label) as the core sees them; ``queue_headroom``: what the queue may
    still take under its limits (None: unlimited). Like Volcano's enqueue action, a PodGroup
    without ``minResources`` is always enqueueable (pod-level gang scheduling follows); one with
    ``minResources`` goes Inqueue only when some single domain can hold all of it.
    """
    if not queue_exists:
        return EnqueueDecision(False, "QueueNotFound", f"queue {queue_name} does not exist")
    if queue_cordoned:
        return EnqueueDecision(False, "QueueCordoned", f"queue {queue_name} is cordoned")
    if not min_resources:
        return EnqueueDecision(True, "Enqueued", "no minResources: enqueued")
    if queue_headroom is not None and not fits(min_resources, queue_headroom):
        return EnqueueDecision(
            False,
            VOLCANO_NOT_ENOUGH_RESOURCES,
            f"queue {queue_name} limits leave {format_resources(queue_headroom)}; "
            f"the gang needs {format_resources(min_resources)}",
        )
    for domain in sorted(free_by_domain):
        if fits(min_resources, free_by_domain[domain]):
            return EnqueueDecision(True, "Enqueued", f"minResources fit in {domain}")
    return EnqueueDecision(
        False,
        VOLCANO_NOT_ENOUGH_RESOURCES,
        f"no cluster has {format_resources(min_resources)} free for the gang",
    )


def _condition(
    previous: Sequence[Obj], ctype: str, status: str, reason: str, message: str, now: str
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


def volcano_phase(
    gang_state: GangState, counts: MemberCounts, *, min_member: int, previous_phase: str | None = None
) -> VolcanoPhase:
    """Volcano's ``getPodGroupPhase``: Unknown when some run while the rest cannot be placed;
    Running (or Completed when all scheduled ones finished) once minMember are scheduled;
    Inqueue when admitted (and it stays Inqueue, as in Volcano); else Pending."""
    min_member = max(1, min_member)
    if counts.running and gang_state is GangState.WAITING:
        return VolcanoPhase.UNKNOWN
    if counts.scheduled >= min_member:
        return VolcanoPhase.COMPLETED if counts.scheduled == counts.completed else VolcanoPhase.RUNNING
    if gang_state is not GangState.WAITING or previous_phase == VolcanoPhase.INQUEUE:
        return VolcanoPhase.INQUEUE
    return VolcanoPhase.PENDING


def volcano_status(
    gang_state: GangState,
    members: Iterable[Obj],
    *,
    min_member: int,
    now: str,
    message: str = "",
    previous: Obj | None = None,
) -> dict[str, Any]:
    """The Volcano PodGroup ``status`` for a gang in ``gang_state`` with these member pods.

    ``message``: why a waiting gang waits (the core's reason); ``now``: RFC 3339 timestamp for
    conditions that change. Waiting: ``Unschedulable`` True (reason ``NotEnoughTasks`` while fewer
    than minMember pods exist, else ``NotEnoughResources``); admitted or running: ``Scheduled``
    True with Volcano's reason. The other condition, when present, is set False so the two agree.
    """
    previous = previous or {}
    old_conditions = [c for c in previous.get("conditions") or [] if isinstance(c, Mapping)]
    counts = MemberCounts.of(members)
    min_member = max(1, min_member)
    phase = volcano_phase(gang_state, counts, min_member=min_member, previous_phase=previous.get("phase"))
    conditions = [
        c for c in old_conditions if c.get("type") not in (VOLCANO_UNSCHEDULABLE, VOLCANO_SCHEDULED)
    ]
    has_old = {c.get("type") for c in old_conditions}
    if gang_state is GangState.WAITING:
        reason = VOLCANO_NOT_ENOUGH_TASKS if counts.total < min_member else VOLCANO_NOT_ENOUGH_RESOURCES
        unready = max(0, min_member - counts.scheduled)
        text = f"{unready}/{counts.total} tasks in gang unschedulable: pod group is not ready, {min_member} minAvailable"
        if message:
            text += f"; {message}"
        conditions.append(_condition(old_conditions, VOLCANO_UNSCHEDULABLE, "True", reason, text, now))
        if VOLCANO_SCHEDULED in has_old:
            conditions.append(_condition(old_conditions, VOLCANO_SCHEDULED, "False", reason, "", now))
    else:
        if VOLCANO_UNSCHEDULABLE in has_old:
            conditions.append(
                _condition(old_conditions, VOLCANO_UNSCHEDULABLE, "False", VOLCANO_SCHEDULED, "", now)
            )
        conditions.append(
            _condition(old_conditions, VOLCANO_SCHEDULED, "True", VOLCANO_SCHEDULED_REASON, "", now)
        )
    status: dict[str, Any] = {"phase": str(phase), "conditions": conditions}
    for name, value in (
        ("running", counts.running),
        ("succeeded", counts.succeeded),
        ("failed", counts.failed),
    ):
        if value:
            status[name] = value  # int32 omitempty, as Volcano serialises
    return status


def occupied_by(pod: Obj) -> str:
    """scheduler-plugins ``fillOccupiedObj``: "<namespace>/<owner name>" of each owner, sorted, joined by ","."""
    md = pod.get("metadata") or {}
    refs = sorted(f"{md.get('namespace', '')}/{r.get('name', '')}" for r in md.get("ownerReferences") or [])
    return ",".join(refs)


def coscheduling_phase(
    counts: MemberCounts, *, min_member: int, previous_phase: str | None
) -> CoschedulingPhase:
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


def coscheduling_status(
    gang_state: GangState,
    members: Sequence[Obj],
    *,
    min_member: int,
    now: str,
    previous: Obj | None = None,
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
        nxt = coscheduling_phase(counts, min_member=min_member, previous_phase=phase)
        if nxt == phase:
            break
        phase = nxt
    status: dict[str, Any] = {"phase": str(phase)}
    occupied = previous.get("occupiedBy") or ""
    if not occupied and phase != CoschedulingPhase.PENDING and members:
        occupied = occupied_by(members[0])
    if occupied:
        status["occupiedBy"] = occupied
    for name, value in (
        ("running", counts.running),
        ("succeeded", counts.succeeded),
        ("failed", counts.failed),
    ):
        if value:
            status[name] = value
    start = previous.get("scheduleStartTime")
    if not start and gang_state is not GangState.WAITING:
        start = now
    if start:
        status["scheduleStartTime"] = start
    return status


def native_podgroup_conditions(
    gang_state: GangState, *, now: str, message: str = "", previous: Obj | None = None
) -> list[dict[str, Any]]:
    """Conditions of a native ``scheduling.k8s.io`` PodGroup (metav1.Condition): the terminal
    ``PodGroupInitiallyScheduled`` (True once admitted, then never False again; False with reason
    ``Unschedulable`` while waiting)."""
    previous = previous or {}
    old = [c for c in previous.get("conditions") or [] if isinstance(c, Mapping)]
    ctype = "PodGroupInitiallyScheduled"
    was = next((c for c in old if c.get("type") == ctype), None)
    others = [dict(c) for c in old if c.get("type") != ctype]
    if (was is not None and was.get("status") == "True") or gang_state is not GangState.WAITING:
        cond = _condition(old, ctype, "True", "Scheduled", "", now)
    else:
        cond = _condition(old, ctype, "False", "Unschedulable", message or "the gang does not fit yet", now)
    cond.pop("transitionID", None)
    cond.setdefault("message", "")  # metav1.Condition requires the field
    return [*others, cond]
