"""Objects through the Armada API, the pure parts: a job item's object as the object to create, and
its events from the object and its pods (the end read from status conditions of any kind)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from armada_client.armada import submit_pb2

from armada_api import jobs, states
from armada_api.found import Found
from armada_api.object_events import object_events
from armada_bridge import keys
from armada_bridge.kube.resources import Resource
from extender.admission import pod_patch
from tests.framework.pods import pod

JOBSETS = Resource("jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet")
JOB_ID = "01aaaaaaaaaaaaaaaaaaaaaaaa"
JOBSET = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"labels": {"app": "train"}},
    "spec": {"replicatedJobs": []},
}


def _item(manifest: Any = JOBSET, **kw: Any) -> submit_pb2.JobSubmitRequestItem:
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    annotations = {keys.OBJECT_ANNOTATION: text, **kw.pop("annotations", {})}
    return submit_pb2.JobSubmitRequestItem(namespace="team", annotations=annotations, **kw)


def _one(item: submit_pb2.JobSubmitRequestItem) -> jobs.JobPod:
    request = submit_pb2.JobSubmitRequest(queue="q1", job_set_id="set-1", job_request_items=[item])
    (job,) = jobs.job_pods(request, new_id=lambda: JOB_ID)
    return job


def test_an_items_object_carries_the_jobs_queue_job_set_and_id() -> None:
    job = _one(_item(labels={"team": "a"}, annotations={"note": "x"}, priority=3))
    assert job.is_object and job.services == ()
    obj = job.pod
    assert (obj["apiVersion"], obj["kind"], obj["spec"]) == (
        "jobset.x-k8s.io/v1alpha2",
        "JobSet",
        JOBSET["spec"],
    )
    md = obj["metadata"]
    assert (md["name"], md["namespace"]) == (f"armada-{JOB_ID}", "team")
    assert md["labels"] == {
        "app": "train",
        "team": "a",
        keys.QUEUE_LABEL: "q1",
        keys.ARMADA_QUEUE_ID_LABEL: "q1",
        keys.ARMADA_JOB_ID_LABEL: JOB_ID,
        keys.JOB_SET_LABEL: "set-1",
    }
    assert md["annotations"] == {
        "note": "x",
        keys.ARMADA_JOB_SET_ID_ANNOTATION: "set-1",
        keys.JOB_PRIORITY_ANNOTATION: "3",
    }  # the manifest itself is not copied onto the object


def test_an_object_in_yaml_keeps_its_name_and_a_client_id_gives_its_id() -> None:
    manifest = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: mine, namespace: team}\nspec: {}\n"
    job = _one(_item(manifest, client_id="c1"))
    assert job.pod["metadata"]["name"] == "mine" and job.pod["kind"] == "Job"
    assert job.job_id == _one(_item(manifest, client_id="c1")).job_id != JOB_ID


@pytest.mark.parametrize(
    ("manifest", "kw", "says"),
    [
        ("{not json", {}, "neither JSON nor YAML"),
        ("- a\n- b\n", {}, "must be a mapping"),
        ({"kind": "JobSet"}, {}, "no apiVersion"),
        ({**JOBSET, "metadata": {"namespace": "other"}}, {}, "namespace 'other' is not the job's namespace"),
        ({**JOBSET, "metadata": {"name": "Not_A_Name"}}, {}, "not a valid object name"),
        (
            {**JOBSET, "metadata": {"labels": {"team": "b"}}},
            {"labels": {"team": "a"}},
            "labels team given both",
        ),
        (JOBSET, {"labels": {keys.QUEUE_LABEL: "other"}}, "set by the Armada API"),
        ({**JOBSET, "metadata": {"ownerReferences": [{"controller": True}]}}, {}, "has no controller"),
        (JOBSET, {"pod_specs": [submit_pb2.JobSubmitRequestItem().pod_spec]}, "has no pod spec"),
        (JOBSET, {"services": [submit_pb2.ServiceConfig(ports=[80])]}, "has no services"),
    ],
)
def test_a_malformed_object_is_invalid_argument(manifest: Any, kw: dict[str, Any], says: str) -> None:
    with pytest.raises(jobs.RequestError, match=says):
        _one(_item(manifest, **kw))


def _obj(*conditions: dict[str, str], deleting: bool = False) -> dict[str, Any]:
    obj = _one(_item()).pod
    obj["metadata"].update(uid="obj-uid", creationTimestamp="2026-12-02T08:00:00Z")
    if deleting:
        obj["metadata"]["deletionTimestamp"] = "2026-12-02T08:09:00Z"
    obj["status"] = {"conditions": list(conditions)}
    return obj


def _pod(name: str, *, cluster: str = "", bound: bool = False, running: bool = False) -> dict[str, Any]:
    return pod(
        name,
        namespace="team",
        created="2026-12-02T08:00:01Z",
        labels={keys.QUEUE_OWNER_LABEL: "obj-uid"},
        annotations={keys.ASSIGNED_CLUSTER: cluster} if cluster else {},
        cpu=None,
        spec={"nodeName": cluster} if bound else {},
        phase="Running" if running else "Pending",
    )


def _kinds(obj: dict[str, Any], pods: list[dict[str, Any]] = [], **kw: Any) -> list[str]:  # noqa: B006
    return [str(e.message.WhichOneof("events")) for e in object_events(obj, pods, **kw)]


def test_an_objects_events_follow_its_furthest_pod_and_end_by_its_conditions() -> None:
    assert _kinds(_obj()) == ["submitted", "queued"]
    pods = [_pod("a", cluster="remote-1"), _pod("b", cluster="remote-1", bound=True)]
    assert _kinds(_obj(), pods) == ["submitted", "queued", "leased", "pending"]
    pods.append(_pod("c", cluster="remote-1", bound=True, running=True))
    events = object_events(_obj(), pods)
    assert [e.message.WhichOneof("events") for e in events][-1] == "running"
    assert events[-1].message.running.pod_name == "c"
    assert {e.job_id for e in events} == {JOB_ID}
    assert events[0].message.submitted.job.namespace == "team"
    # The end, from the object's own conditions, whatever its kind (JobSet, Job, Kubeflow's jobs).
    for kind in ("Completed", "Complete", "Succeeded"):
        done = _obj({"type": kind, "status": "True", "lastTransitionTime": "2026-12-02T08:05:00Z"})
        assert _kinds(done, pods)[-1] == "succeeded"
    assert _kinds(_obj({"type": "Completed", "status": "False"}), pods)[-1] == "running"
    failed = object_events(_obj({"type": "Failed", "status": "True", "message": "worker 1 exited 3"}), pods)
    assert failed[-1].message.failed.reason == "worker 1 exited 3"
    assert _kinds(_obj(deleting=True), pods)[-1] == "cancelled"
    assert _kinds(_obj(), pods, deleted=True)[-1] == "cancelled"
    # The same events (the same ids) however often derived.
    assert [e.id for e in object_events(_obj(), pods)] == [e.id for e in events]


def test_an_objects_state_and_error_come_from_its_events() -> None:
    assert Found(JOBSETS, _obj()).state() == states.QUEUED
    assert Found(JOBSETS, _obj(), (_pod("a", cluster="remote-1", running=True),)).state() == states.RUNNING
    failed = Found(JOBSETS, _obj({"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}))
    assert (failed.state(), failed.error()) == (states.FAILED, "BackoffLimitExceeded")
    assert Found(JOBSETS, _obj(deleting=True)).state() == submit_pb2.JobState.CANCELLED


def test_the_webhook_gives_a_pod_its_owners_queue_as_labels() -> None:
    labelled = pod("p", namespace="team", labels={"app": "a"}, cpu=None)
    ops = pod_patch(labelled, extra_labels={keys.QUEUE_LABEL: "q1", keys.QUEUE_OWNER_LABEL: "obj-uid"})
    added = {o["path"]: o["value"] for o in ops if o["path"].startswith("/metadata/labels")}
    assert added == {
        "/metadata/labels/armadaproject.io~1queue": "q1",
        "/metadata/labels/bridge.armadaproject.io~1queue-owner": "obj-uid",
    }
    bare = pod("p", namespace="team", cpu=None)
    ops = pod_patch(bare, extra_labels={keys.QUEUE_LABEL: "q1"})
    assert {"op": "add", "path": "/metadata/labels", "value": {keys.QUEUE_LABEL: "q1"}} in ops


def test_what_an_operator_made_from_a_job_is_not_a_job() -> None:
    obj = _obj()
    assert jobs.in_job_set(obj, "set-1") and jobs.is_submitted(obj)
    child = {
        **obj,
        "metadata": {**obj["metadata"], "ownerReferences": [{"controller": True, "uid": "obj-uid"}]},
    }
    assert not jobs.in_job_set(child, "set-1") and not jobs.is_submitted(child)
