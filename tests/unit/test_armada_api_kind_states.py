"""Where a kind of object states its state, as data (armada_api.kind_states): the shipped
configuration of the seed operators' kinds (manifests/armada-api/object-kinds.yaml) read on the
states those operators write, and the events an object of such a kind gets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from armada_api import states
from armada_api.found import Found
from armada_api.kind_states import KindsError, ObjectKind, load_kinds, parse_kinds
from armada_api.object_events import object_events
from armada_bridge import keys
from armada_bridge.kube.resources import Resource
from tests.framework.pods import pod

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "manifests" / "armada-api" / "object-kinds.yaml"
JOB_ID = "01aaaaaaaaaaaaaaaaaaaaaaaa"
SPARK = Resource("sparkoperator.k8s.io", "v1beta2", "sparkapplications", "SparkApplication")
RAYJOBS = Resource("ray.io", "v1", "rayjobs", "RayJob")
RAYCLUSTERS = Resource("ray.io", "v1", "rayclusters", "RayCluster")


def _shipped() -> dict[str, ObjectKind]:
    return {k.name: k for k in load_kinds(SHIPPED.read_text())}


def _found(resource: Resource, status: dict[str, Any], pods: tuple[dict[str, Any], ...] = ()) -> Found:
    obj = {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {
            "name": f"armada-{JOB_ID}",
            "namespace": "team",
            "uid": "obj-uid",
            "creationTimestamp": "2026-12-02T08:00:00Z",
            "labels": {keys.ARMADA_JOB_ID_LABEL: JOB_ID, keys.ARMADA_QUEUE_ID_LABEL: "q1"},
            "annotations": {keys.ARMADA_JOB_SET_ID_ANNOTATION: "set-1"},
        },
        "status": status,
    }
    rules = _shipped()[f"{resource.plural}.{resource.group}"].rules
    return Found(resource, obj, pods, rules)


def _running_pod() -> dict[str, Any]:
    return pod(
        "driver",
        namespace="team",
        created="2026-12-02T08:00:01Z",
        labels={keys.QUEUE_OWNER_LABEL: "obj-uid"},
        annotations={keys.ASSIGNED_CLUSTER: "remote-1"},
        cpu=None,
        spec={"nodeName": "remote-1"},
        phase="Running",
    )


def _kinds(found: Found) -> list[str]:
    return [str(e.message.WhichOneof("events")) for e in found.events()]


def test_a_sparkapplication_ends_as_its_application_state_says() -> None:
    assert _kinds(_found(SPARK, {"applicationState": {"state": "SUBMITTED"}})) == ["submitted", "queued"]
    # RUNNING: running by its own word, even before its driver is seen running...
    running = _found(SPARK, {"applicationState": {"state": "RUNNING"}})
    assert (_kinds(running), running.state()) == (["submitted", "queued", "running"], states.RUNNING)
    # ...and by its driver's (one running event: the pod's, with where it runs).
    with_pod = _found(SPARK, {"applicationState": {"state": "RUNNING"}}, (_running_pod(),))
    assert _kinds(with_pod) == ["submitted", "queued", "leased", "pending", "running"]
    assert with_pod.events()[-1].message.running.pod_name == "driver"
    done = _found(
        SPARK,
        {"applicationState": {"state": "COMPLETED"}, "terminationTime": "2026-12-02T08:07:00Z"},
        (_running_pod(),),
    )
    assert _kinds(done)[-1] == "succeeded" and done.state() == states.SUCCEEDED
    assert done.events()[-1].message.succeeded.created.ToJsonString() == "2026-12-02T08:07:00Z"
    failed = _found(SPARK, {"applicationState": {"state": "FAILED", "errorMessage": "driver exited 1"}})
    assert (failed.state(), failed.error()) == (states.FAILED, "driver exited 1")
    # A value no rule names decides nothing (FAILING: the operator may still rerun it).
    assert _kinds(_found(SPARK, {"applicationState": {"state": "FAILING"}})) == ["submitted", "queued"]


def test_a_rayjob_is_decided_by_its_deployment_then_its_ray_jobs_status() -> None:
    retrying = _found(RAYJOBS, {"jobDeploymentStatus": "Retrying", "jobStatus": "FAILED"})
    assert retrying.state() == states.RUNNING  # a new attempt: its last Ray job's FAILED is not the end
    complete = _found(RAYJOBS, {"jobDeploymentStatus": "Complete", "jobStatus": "SUCCEEDED"})
    assert complete.state() == states.SUCCEEDED
    app_failed = _found(
        RAYJOBS, {"jobDeploymentStatus": "Complete", "jobStatus": "FAILED", "message": "exit code 3"}
    )
    assert (app_failed.state(), app_failed.error()) == (states.FAILED, "exit code 3")
    deadline = _found(RAYJOBS, {"jobDeploymentStatus": "Failed", "message": "deadline exceeded"})
    assert (deadline.state(), deadline.error()) == (states.FAILED, "deadline exceeded")
    stopped = _found(RAYJOBS, {"jobDeploymentStatus": "Complete", "jobStatus": "STOPPED"})
    assert (stopped.state(), stopped.error()) == (states.FAILED, "status.jobStatus is STOPPED")
    assert _found(RAYJOBS, {"jobDeploymentStatus": "Initializing"}).state() == states.QUEUED


def test_a_raycluster_runs_when_ready_and_ends_only_when_deleted() -> None:
    ready = _found(RAYCLUSTERS, {"state": "ready"})
    assert _kinds(ready) == ["submitted", "queued", "running"]
    gone = [str(e.message.WhichOneof("events")) for e in ready.events(deleted=True)]
    assert gone == ["submitted", "queued", "running", "cancelled"]


def test_a_kinds_rules_come_before_its_conditions_which_still_hold_for_other_kinds() -> None:
    (spark,) = load_kinds(
        "- resource: sparkapplications.sparkoperator.k8s.io\n"
        "  state: [{field: status.applicationState.state, running: [RUNNING]}]\n"
    )
    status = {"applicationState": {"state": "RUNNING"}, "conditions": [{"type": "Failed", "status": "True"}]}
    obj = _found(SPARK, status).obj
    assert [e.message.WhichOneof("events") for e in object_events(obj, (), rules=spark.rules)][
        -1
    ] == "running"
    assert [e.message.WhichOneof("events") for e in object_events(obj, ())][-1] == "failed"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("resource: jobs.batch", "must be a list"),
        ("- {resource: a.b, state: [{field: status.s, succeeded: [X], failed: [X]}]}", "X named for more"),
        ("- {resource: a.b, state: [{field: status.s}]}", "names no value"),
        ("- {resource: a.b, state: [{field: status..s, running: [R]}]}", "not a dotted field path"),
        ("- {resource: a.b, state: [{field: status.s, runing: [R]}]}", "runing"),
        ("- {resource: a.b, colour: red}", "colour"),
        ("- {resource: a.b}\n- {resource: a.b}", "named twice: a.b"),
        ("- {resource: [", "not YAML"),
    ],
)
def test_a_bad_kinds_file_is_refused_with_why(text: str, says: str) -> None:
    with pytest.raises(KindsError, match=says):
        load_kinds(text)


def test_object_kinds_are_plural_dot_group() -> None:
    assert [
        (k.plural, k.group, k.rules) for k in parse_kinds("jobsets.jobset.x-k8s.io, jobs.batch,,pods")
    ] == [
        ("jobsets", "jobset.x-k8s.io", ()),
        ("jobs", "batch", ()),
        ("pods", "", ()),
    ]


def test_the_shipped_kinds_are_those_the_server_may_read() -> None:
    """object-kinds.yaml and rbac.yaml name the same resources: a kind the server may not list
    could not be cancelled nor followed; a grant for no kind is a right nobody needs."""
    rbac = yaml.safe_load_all((ROOT / "manifests" / "armada-api" / "rbac.yaml").read_text())
    (role,) = (d for d in rbac if d and d["kind"] == "ClusterRole")
    readable = {
        f"{resource}.{group}" if group else resource
        for rule in role["rules"]
        if set(rule["verbs"]) >= {"get", "list", "watch"}
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }
    assert set(_shipped()) == readable - {"pods", "queues.bridge.armadaproject.io"}
    deployment = (ROOT / "manifests" / "armada-api" / "deployment.yaml").read_text()
    assert "--object-kinds-file=/config/object-kinds.yaml" in deployment
