"""A job's Armada events, derived from its front pod as it is now. Pure.

A pod's state implies the events that led to it: submitted and queued (created), leased (the
bridge's decision: a remote cluster assigned), pending (bound to that cluster's virtual node),
running, then succeeded, failed (reason, exit codes) or preempted (the bridge marks a preempted
pod Failed with reason Preempted); a pod deleted before it ended was cancelled. Each is stamped
with the time the pod records for it where it has one (PodScheduled, a container's start and end,
the deletion), else the job's previous event's. Deriving from the state, not remembering
transitions, keeps the state in the cluster.

An event's id is ``<job created, seconds>.<job id>.<ordinal>`` (submitted 0 ... an end 5): the same
however often, and by whichever server, it is derived, and the ids order a job set's events (by
job submission, then each job's own order) as a stream lists them. A stream resumed after a listed
event's id sends exactly the events whose ids sort after it, in that order: what the listing gave
after that event, whichever server answers.

A watching stream sends events as they happen, after its listing: a later-submitted job's event
can then come before an earlier job's, whose id sorts before it. Such an event's id is marked
(``<id>+``), and a stream resumed after a marked id sends the rest of that job's events and every
other job's again (at least once: what happened to an earlier job while the client was away
cannot be told from what it was sent before, so nothing is lost).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from armada_client.armada import event_pb2, submit_pb2
from google.protobuf.timestamp_pb2 import Timestamp

from armada_api import jobs
from armada_bridge import keys
from armada_bridge.objects import ObjView


@dataclass(frozen=True)
class JobEvent:
    id: str
    message: event_pb2.EventMessage

    @property
    def job_id(self) -> str:
        return self.id.split(".")[1]

    @property
    def ordinal(self) -> int:
        return int(self.id.split(".")[2])

    def stream_message(self, *, live: bool = False) -> event_pb2.EventStreamMessage:
        """The message a stream sends: `live`, one sent while watching (its id marked)."""
        return event_pb2.EventStreamMessage(id=self.id + LIVE_MARK if live else self.id, message=self.message)


#: marks the id of an event a stream sent while watching (:func:`resumes`).
LIVE_MARK = "+"


#: a job's events in their order; an end is one of the last four
ORDINAL = {
    "submitted": 0,
    "queued": 1,
    "leased": 2,
    "pending": 3,
    "running": 4,
    "succeeded": 5,
    "failed": 5,
    "preempted": 5,
    "cancelled": 5,
}


def event_id(created: int, job_id: str, ordinal: int) -> str:
    """Sorts a job set's events by job submission, then each job's own order."""
    return f"{created:012d}.{job_id}.{ordinal:02d}"


def seconds_of(value: Any) -> int | None:
    """An RFC 3339 time of the Kubernetes API as seconds since the epoch."""
    if not value:
        return None
    try:
        return int(datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


def _condition_time(pod: ObjView, kind: str) -> int | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == kind and c.get("status") == "True":
            return seconds_of(c.get("lastTransitionTime"))
    return None


def _container_times(pod: ObjView, state: str, field: str) -> list[int]:
    out = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        for moment in (
            (cs.get("state") or {}).get(state) or {},
            (cs.get("lastState") or {}).get(state) or {},
        ):
            t = seconds_of(moment.get(field))
            if t is not None:
                out.append(t)
    return out


def _exit_codes(pod: ObjView) -> list[event_pb2.ContainerStatus]:
    out = []
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        terminated = (cs.get("state") or {}).get("terminated")
        if terminated:
            out.append(
                event_pb2.ContainerStatus(
                    name=str(cs.get("name") or ""),
                    exitCode=int(terminated.get("exitCode") or 0),
                    reason=str(terminated.get("reason") or ""),
                    message=str(terminated.get("message") or ""),
                )
            )
    return out


Step = tuple[int | None, str, dict[str, Any]]


def common_fields(obj: ObjView) -> dict[str, str]:
    """The fields every event of a job has, from its pod (or object): the same keys on both."""
    md = obj.get("metadata") or {}
    return {
        "job_id": jobs.job_id_of(obj),
        "job_set_id": str((md.get("annotations") or {}).get(keys.ARMADA_JOB_SET_ID_ANNOTATION) or ""),
        "queue": str((md.get("labels") or {}).get(keys.ARMADA_QUEUE_ID_LABEL) or ""),
    }


def submission_steps(obj: ObjView) -> list[Step]:
    """submitted (with the job as it was submitted) and queued, when the pod (or object) was created."""
    md = obj.get("metadata") or {}
    labels, annotations = md.get("labels") or {}, md.get("annotations") or {}
    common = common_fields(obj)
    created = created_of(obj)
    job = submit_pb2.Job(
        id=common["job_id"],
        client_id=str(annotations.get(keys.CLIENT_ID_ANNOTATION) or ""),
        job_set_id=common["job_set_id"],
        queue=common["queue"],
        namespace=str(md.get("namespace") or ""),
        labels={str(k): str(v) for k, v in labels.items()},
        annotations={str(k): str(v) for k, v in annotations.items()},
    )
    return [(created, "submitted", {"job": job}), (created, "queued", {})]


def created_of(obj: ObjView) -> int:
    return seconds_of((obj.get("metadata") or {}).get("creationTimestamp")) or 0


def _where(pod: ObjView) -> dict[str, str]:
    md = pod.get("metadata") or {}
    return {
        "cluster_id": str((md.get("annotations") or {}).get(keys.ASSIGNED_CLUSTER) or ""),
        "kubernetes_id": str(md.get("uid") or ""),
        "pod_name": str(md.get("name") or ""),
        "pod_namespace": str(md.get("namespace") or ""),
    }


def _node_name(pod: ObjView) -> str:
    return str(((pod.get("metadata") or {}).get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE) or "")


def placement_steps(pod: ObjView) -> list[Step]:
    """leased (the bridge's decision), pending (bound to the cluster's virtual node), running."""
    where = _where(pod)
    steps: list[Step] = []
    scheduled = _condition_time(pod, "PodScheduled")
    if where["cluster_id"]:
        steps.append((scheduled, "leased", {"cluster_id": where["cluster_id"]}))
        if (pod.get("spec") or {}).get("nodeName"):
            steps.append((scheduled, "pending", where))
    started = _container_times(pod, "running", "startedAt") + _container_times(pod, "terminated", "startedAt")
    if (pod.get("status") or {}).get("phase") == "Running" or started:
        steps.append((min(started, default=None), "running", {**where, "node_name": _node_name(pod)}))
    return steps


def job_events(pod: ObjView, *, deleted: bool = False) -> list[JobEvent]:
    """The events a job's pod implies, in order (`deleted`: the pod is gone, or going)."""
    md = pod.get("metadata") or {}
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    where = {**_where(pod), "node_name": _node_name(pod)}
    steps = submission_steps(pod) + placement_steps(pod)
    finished = max(_container_times(pod, "terminated", "finishedAt"), default=None)
    if phase == "Succeeded":
        steps.append((finished, "succeeded", where))
    elif phase == "Failed" and status.get("reason") == "Preempted":
        reason = str(status.get("message") or "")
        steps.append(
            (
                _condition_time(pod, "DisruptionTarget"),
                "preempted",
                {"cluster_id": where["cluster_id"], "reason": reason},
            )
        )
    elif phase == "Failed":
        reason = str(status.get("message") or status.get("reason") or "failed")
        steps.append(
            (finished, "failed", {**where, "reason": reason, "container_statuses": _exit_codes(pod)})
        )
    elif deleted or md.get("deletionTimestamp"):
        steps.append(cancelled_step(md, "the job's pod was deleted"))
    return list(numbered(common_fields(pod), created_of(pod), steps))


def cancelled_step(md: ObjView, reason: str) -> Step:
    return (seconds_of(md.get("deletionTimestamp")), "cancelled", {"reason": reason})


def numbered(common: dict[str, str], created: int, steps: Iterable[Step]) -> Iterable[JobEvent]:
    """The steps as events, stamped (never back in time) and numbered by their order."""
    last = 0
    for t, kind, fields in steps:
        last = max(last, t or last)  # a job's events never go back in time
        body = getattr(event_pb2, _MESSAGES[kind])(**common, created=Timestamp(seconds=last), **fields)
        message = event_pb2.EventMessage(**{kind: body})
        yield JobEvent(event_id(created, common["job_id"], ORDINAL[kind]), message)


_MESSAGES = {
    "submitted": "JobSubmittedEvent",
    "queued": "JobQueuedEvent",
    "leased": "JobLeasedEvent",
    "pending": "JobPendingEvent",
    "running": "JobRunningEvent",
    "succeeded": "JobSucceededEvent",
    "failed": "JobFailedEvent",
    "preempted": "JobPreemptedEvent",
    "cancelled": "JobCancelledEvent",
}


def resumes(event: JobEvent, after: str) -> bool:
    """Whether a stream resumed after the id `after` sends `event`: after a listed event, those that
    sort after it; after one sent while watching (marked), all but that job's events up to it;
    ("", or not one of our ids: every event)."""
    live = after.endswith(LIVE_MARK)
    after = after.removesuffix(LIVE_MARK)
    parts = after.split(".")
    if len(parts) != 3 or not parts[0].isdigit() or not parts[2].isdigit():
        return True
    if live:
        return not (event.job_id == parts[1] and event.ordinal <= int(parts[2]))
    return event.id > after


def job_set_events(pods: Iterable[ObjView], after: str = "") -> list[JobEvent]:
    """The events of a job set's pods a stream resumed after `after` sends, in order."""
    return resumed((e for p in pods for e in job_events(p)), after)


def resumed(events: Iterable[JobEvent], after: str = "") -> list[JobEvent]:
    """Those of a job set's events a stream resumed after `after` sends, in order."""
    return sorted((e for e in events if resumes(e, after)), key=lambda e: e.id)


class Progress:
    """What a stream has sent of each job: a job's events go out in their order and never back
    (a pod's status can show a start after the end was already derived, e.g. a pod preempted while
    its remote copy was starting: that start is then not sent)."""

    def __init__(self) -> None:
        self.sent: dict[str, int] = {}  # job id -> the highest ordinal sent (or skipped at a resume)

    def record(self, events: Iterable[JobEvent]) -> None:
        for e in events:
            self.sent[e.job_id] = max(self.sent.get(e.job_id, -1), e.ordinal)

    def new(self, events: Iterable[JobEvent]) -> list[JobEvent]:
        """Those of a job's events now derived that go out, recorded as sent."""
        out = [e for e in events if e.ordinal > self.sent.get(e.job_id, -1)]
        self.record(out)
        return out
