"""A job's Armada events derived from its front pod: in order, with resumable ids."""

from __future__ import annotations

from typing import Any

from armada_api.job_events import Progress, event_id, job_events, job_set_events
from armada_bridge import keys
from tests.framework.pods import pod


def _pod(job: str = "01aaaaaaaaaaaaaaaaaaaaaaaa", **status: Any) -> dict[str, Any]:
    p = pod(
        f"armada-{job}-0",
        namespace="team",
        created="2026-12-02T08:00:00Z",
        labels={keys.ARMADA_JOB_ID_LABEL: job, keys.ARMADA_QUEUE_ID_LABEL: "q1"},
        annotations={keys.ARMADA_JOB_SET_ID_ANNOTATION: "set-1"},
        cpu=None,
        status=status,
    )
    p["metadata"]["uid"] = f"uid-{job}"
    return p


def _placed(pod: dict[str, Any], bound: bool = True) -> dict[str, Any]:
    pod["metadata"]["annotations"][keys.ASSIGNED_CLUSTER] = "remote-1"
    pod["metadata"]["annotations"][keys.ASSIGNED_REMOTE_NODE] = "node-a"
    if bound:
        pod["spec"]["nodeName"] = "remote-1"
        pod["status"]["conditions"] = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T08:00:05Z"}
        ]
    return pod


def _kinds(pod: dict[str, Any], **kw: Any) -> list[str]:
    return [e.message.WhichOneof("events") for e in job_events(pod, **kw)]


def test_a_waiting_pod_was_submitted_and_queued() -> None:
    events = job_events(_pod())
    assert [e.message.WhichOneof("events") for e in events] == ["submitted", "queued"]
    submitted = events[0].message.submitted
    assert (submitted.job_id, submitted.job_set_id, submitted.queue) == (
        "01aaaaaaaaaaaaaaaaaaaaaaaa",
        "set-1",
        "q1",
    )
    assert submitted.job.namespace == "team" and submitted.created.seconds == 1796198400


def test_the_bridges_decision_is_a_lease_and_the_binding_pending() -> None:
    assert _kinds(_placed(_pod(), bound=False)) == ["submitted", "queued", "leased"]
    events = job_events(_placed(_pod()))
    assert [e.message.WhichOneof("events") for e in events] == ["submitted", "queued", "leased", "pending"]
    assert events[2].message.leased.cluster_id == "remote-1"
    pending = events[3].message.pending
    assert (pending.cluster_id, pending.pod_name, pending.pod_namespace) == (
        "remote-1",
        "armada-01aaaaaaaaaaaaaaaaaaaaaaaa-0",
        "team",
    )
    assert pending.created.seconds == 1796198405


def test_a_finished_pod_ran_and_succeeded_or_failed_with_its_exit_codes() -> None:
    terminated = {
        "state": {
            "terminated": {
                "exitCode": 3,
                "reason": "Error",
                "startedAt": "2026-12-02T08:00:07Z",
                "finishedAt": "2026-12-02T08:00:09Z",
            }
        },
        "name": "main",
    }
    done = _placed(_pod(containerStatuses=[terminated]))
    done["status"]["phase"] = "Succeeded"
    assert _kinds(done)[-2:] == ["running", "succeeded"]
    assert job_events(done)[-1].message.succeeded.node_name == "node-a"
    done["status"]["phase"] = "Failed"
    failed = job_events(done)[-1].message.failed
    assert [(c.name, c.exitCode) for c in failed.container_statuses] == [("main", 3)]
    assert failed.created.seconds == 1796198409


def test_a_preempted_pod_is_preempted_and_a_deleted_one_cancelled() -> None:
    preempted = _placed(_pod(reason="Preempted", message="preempted by armada-bridge: fair share"))
    preempted["status"]["phase"] = "Failed"
    assert _kinds(preempted)[-1] == "preempted"
    assert "fair share" in job_events(preempted)[-1].message.preempted.reason
    assert _kinds(_pod(), deleted=True)[-1] == "cancelled"
    going = _pod()
    going["metadata"]["deletionTimestamp"] = "2026-12-02T08:01:00Z"
    assert _kinds(going)[-1] == "cancelled"


def test_an_events_id_never_changes_as_its_pod_goes_on() -> None:
    """Its id is the job's and the event's place in the job's order, whatever times the pod records
    later (the vkubelet copies the remote pod's conditions and container times)."""
    pod = _placed(_pod())
    pod["status"]["phase"] = "Running"
    before = {e.message.WhichOneof("events"): e.id for e in job_events(pod)}
    assert list(before) == ["submitted", "queued", "leased", "pending", "running"]
    pod["status"]["conditions"][0]["lastTransitionTime"] = "2026-12-02T08:00:07Z"
    pod["status"]["containerStatuses"] = [
        {"name": "main", "state": {"running": {"startedAt": "2026-12-02T08:00:08Z"}}}
    ]
    after = {e.message.WhichOneof("events"): e.id for e in job_events(pod)}
    assert after == before


def test_ids_order_a_job_set_and_resume_after_one() -> None:
    a, b = _placed(_pod("01aaaaaaaaaaaaaaaaaaaaaaaa")), _pod("01bbbbbbbbbbbbbbbbbbbbbbbb")
    events = job_set_events([b, a])
    assert [e.id for e in events] == sorted(e.id for e in events)
    assert events[0].id == event_id(1796198400, "01aaaaaaaaaaaaaaaaaaaaaaaa", 0)
    assert job_set_events([a, b]) == events  # derived again (a restart): the same events, the same ids
    # Resumed after a's leased event: a's pending, then b's events.
    rest = job_set_events([a, b], after=events[2].id)
    assert [(e.job_id, e.message.WhichOneof("events")) for e in rest] == [
        ("01aaaaaaaaaaaaaaaaaaaaaaaa", "pending"),
        ("01bbbbbbbbbbbbbbbbbbbbbbbb", "submitted"),
        ("01bbbbbbbbbbbbbbbbbbbbbbbb", "queued"),
    ]
    # Resumed after any event, of whichever job: exactly those listed after it, none again.
    for i, event in enumerate(events):
        assert job_set_events([b, a], after=event.id) == events[i + 1 :], i
    assert job_set_events([a, b], after="not an id") == events
    # After an event sent while watching (its id marked), whatever happened to the other jobs meanwhile
    # may be missing: the rest of that job's events, and every other job's again (at least once).
    live = events[-1].stream_message(live=True).id
    assert live != events[-1].id and job_set_events([a, b], after=live) == [
        e for e in events if e.job_id != events[-1].job_id
    ]


def test_a_stream_sends_each_jobs_events_once_and_never_back() -> None:
    """A pod preempted while its remote copy was starting shows its start after its end: the end
    went out, the start does not follow it."""
    progress = Progress()
    waiting = _pod()
    progress.record(job_events(waiting))  # listed: submitted, queued
    placed = _placed(_pod())
    assert [e.message.WhichOneof("events") for e in progress.new(job_events(placed))] == ["leased", "pending"]
    preempted = _placed(_pod(reason="Preempted", message="preempted by armada-bridge"))
    preempted["status"]["phase"] = "Failed"
    assert [e.message.WhichOneof("events") for e in progress.new(job_events(preempted))] == ["preempted"]
    preempted["status"]["containerStatuses"] = [
        {"name": "main", "state": {"running": {"startedAt": "2026-12-02T08:00:06Z"}}}
    ]
    assert _kinds(preempted)[-2:] == ["running", "preempted"]  # what a listing says, in order
    assert progress.new(job_events(preempted)) == []  # a stream past the end sends no start
