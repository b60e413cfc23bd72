"""A job's Armada events when the job is an object (:mod:`armada_api.objects`), derived from the
object and the pods its operator made, as they are. Pure.

submitted and queued when the object was created; leased, pending and running from its pods (the
one that got furthest: a cluster assigned, bound, a container started); its end from the object
itself, read the same way for every kind (:func:`ended`): a status condition that is ``True`` of
type ``Succeeded``, ``Complete`` or ``Completed`` (Kubeflow's jobs, batch/v1 Job, JobSet) is
succeeded, of type ``Failed`` failed (with the condition's message), and so is a ``status.phase``
of those names; an object deleted before it ended was cancelled. Ids as for a pod's job
(:mod:`armada_api.job_events`): a job's events have one id whoever derives them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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

Obj = Mapping[str, Any]

#: the condition types (or phases) that end an object, for any kind
SUCCEEDED = ("Succeeded", "Complete", "Completed")
FAILED = ("Failed",)


def ended(obj: Obj) -> Step | None:
    """The object's end as its operator states it (None: not ended)."""
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


def _furthest(pods: Iterable[Obj]) -> list[Step]:
    """The placement steps of the pod that got furthest (the earliest created among equals)."""
    placements = sorted((placement_steps(p) for p in pods), key=lambda steps: -len(steps))
    return placements[0] if placements else []


def object_events(obj: Obj, pods: Iterable[Obj], *, deleted: bool = False) -> list[JobEvent]:
    """The events an object and its pods imply, in order (`deleted`: the object is gone, or going)."""
    md = obj.get("metadata") or {}
    steps = submission_steps(obj) + _furthest(sorted(pods, key=created_of))
    end = ended(obj)
    if end is not None:
        steps.append(end)
    elif deleted or md.get("deletionTimestamp"):
        steps.append(cancelled_step(md, "the job's object was deleted"))
    return list(numbered(common_fields(obj), created_of(obj), steps))
