"""The Armada job state of a front pod made by the API. Pure.

QUEUED: waiting for the bridge's decision (no remote cluster assigned); PENDING: admitted to a
remote cluster, not running yet; RUNNING; SUCCEEDED and FAILED from the pod's phase, PREEMPTED
when the bridge preempted it (Failed, reason Preempted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada_client.armada import submit_pb2

from armada_bridge import keys

QUEUED = submit_pb2.JobState.QUEUED
PENDING = submit_pb2.JobState.PENDING
RUNNING = submit_pb2.JobState.RUNNING
SUCCEEDED = submit_pb2.JobState.SUCCEEDED
FAILED = submit_pb2.JobState.FAILED
PREEMPTED = submit_pb2.JobState.PREEMPTED
UNKNOWN = submit_pb2.JobState.UNKNOWN
#: what a CancelJobSet without a filter cancels: every job that has not ended
ACTIVE = frozenset({QUEUED, PENDING, RUNNING})


def job_state(pod: Mapping[str, Any]) -> int:
    phase = (pod.get("status") or {}).get("phase") or "Pending"
    if phase == "Succeeded":
        return SUCCEEDED
    if phase == "Failed":
        return PREEMPTED if (pod.get("status") or {}).get("reason") == "Preempted" else FAILED
    if phase == "Running":
        return RUNNING
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return PENDING if annotations.get(keys.ASSIGNED_CLUSTER) else QUEUED


#: the state a job is in after each of its events
AFTER_EVENT = {
    "submitted": QUEUED,
    "queued": QUEUED,
    "leased": PENDING,
    "pending": PENDING,
    "running": RUNNING,
    "succeeded": SUCCEEDED,
    "failed": FAILED,
    "preempted": PREEMPTED,
    "cancelled": submit_pb2.JobState.CANCELLED,
}
