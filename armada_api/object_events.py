"""A job's Armada events when the job is an object (:mod:`armada_api.objects`), derived from the
object and the pods its operator made, as they are. Pure.

submitted and queued when the object was created; leased, pending and running from its pods (the
one that got furthest: a cluster assigned, bound, a container started); its end from the object
itself (:func:`own_state`): first by the rules the administrator gave its kind, where it states its
state in a field of its own (:mod:`armada_api.kind_states`: a SparkApplication's
``status.applicationState.state``), then the same way for every kind: a status condition that is
``True`` of type ``Succeeded``, ``Complete`` or ``Completed`` (Kubeflow's jobs, batch/v1 Job, JobSet)
is succeeded, of type ``Failed`` failed (with the condition's message), and so is a
``status.phase`` of those names; an object deleted before it ended was cancelled. A kind's rule
may also say the object runs (a RayCluster ``ready``): then it is running even before a pod of
its own is seen running. Ids as for a pod's job
(:mod:`armada_api.job_events`): a job's events have one id whoever derives them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from armada_api.job_events import (
    JobEvent,
    Step,
    cancelled_step,
    common_fields,
    created_of,
    numbered,
    placement_steps,
    seconds_of,
    submission_steps,
)
from armada_api.kind_states import StateRule, stated
from armada_bridge.objects import ObjView

#: the condition types (or phases) that end an object, for any kind
SUCCEEDED = ("Succeeded", "Complete", "Completed")
FAILED = ("Failed",)


def own_state(obj: ObjView, rules: tuple[StateRule, ...] = ()) -> Step | None:
    """What the object states of itself: its end (a ``succeeded`` or ``failed`` step) or, by one of
    its kind's `rules`, that it runs (a ``running`` step); None: neither. Its kind's rules first."""
    decided = stated(obj, rules)
    if decided is not None:
        outcome, why, when = decided
        return (seconds_of(when), outcome, {"reason": why} if outcome == "failed" else {})
    status = obj.get("status") or {}
    for c in status.get("conditions") or ():
        if not isinstance(c, Mapping) or c.get("status") != "True":
            continue
        when = seconds_of(c.get("lastTransitionTime"))
        if c.get("type") in SUCCEEDED:
            return (when, "succeeded", {})
        if c.get("type") in FAILED:
            why = str(c.get("message") or c.get("reason") or "failed")
            return (when, "failed", {"reason": why})
    phase = status.get("phase")
    if phase in SUCCEEDED:
        return (None, "succeeded", {})
    if phase in FAILED:
        return (None, "failed", {"reason": str(status.get("message") or status.get("reason") or "failed")})
    return None


def _furthest(pods: Iterable[ObjView]) -> list[Step]:
    """The placement steps of the pod that got furthest (the earliest created among equals)."""
    placements = sorted((placement_steps(p) for p in pods), key=lambda steps: -len(steps))
    return placements[0] if placements else []


def object_events(
    obj: ObjView, pods: Iterable[ObjView], *, deleted: bool = False, rules: tuple[StateRule, ...] = ()
) -> list[JobEvent]:
    """The events an object and its pods imply, in order (`deleted`: the object is gone, or going;
    `rules`: where its kind states its state, besides its conditions)."""
    md = obj.get("metadata") or {}
    steps = submission_steps(obj) + _furthest(sorted(pods, key=created_of))
    end = own_state(obj, rules)
    if end is not None and end[1] == "running":
        if not any(kind == "running" for _t, kind, _f in steps):
            steps.append(end)  # its pods' running, else its own word
        end = None
    if end is not None:
        steps.append(end)
    elif deleted or md.get("deletionTimestamp"):
        steps.append(cancelled_step(md, "the job's object was deleted"))
    return list(numbered(common_fields(obj), created_of(obj), steps))
