"""The Armada API's pure parts: job items as pods, job ids, queues both ways, job states, the
caller's token, and Armada's status codes."""

from __future__ import annotations

import grpc
import pytest
from armada_client.armada import submit_pb2
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity

from armada_api import ids, jobs, queues, states
from armada_api.errors import Refused, status_for
from armada_api.front import Caller, bearer_token, certificate_caller, subject_attributes
from armada_api.services import QueueCalls
from armada_bridge import keys
from armada_bridge.contract.pods import job_priority, job_priority_value
from armada_bridge.kube.client import ApiError
from tests.framework.pods import pod


def _spec(**kw: object) -> core.PodSpec:
    container = core.Container(
        name="main",
        image="busybox",
        resources=core.ResourceRequirements(
            requests={"cpu": Quantity(string="1")}, limits={"cpu": Quantity(string="1")}
        ),
    )
    return core.PodSpec(containers=[container], **kw)  # type: ignore[arg-type]


def _item(**kw: object) -> submit_pb2.JobSubmitRequestItem:
    fields: dict[str, object] = {"namespace": "team", "pod_specs": [_spec()]}
    fields.update(kw)
    return submit_pb2.JobSubmitRequestItem(**fields)  # type: ignore[arg-type]


def _request(*items: submit_pb2.JobSubmitRequestItem, job_set: str = "set-1") -> submit_pb2.JobSubmitRequest:
    return submit_pb2.JobSubmitRequest(queue="q1", job_set_id=job_set, job_request_items=list(items))


def test_an_item_becomes_a_pod_under_its_queue_and_job_set() -> None:
    item = _item(
        priority=2.6,
        labels={"app": "x"},
        annotations={keys.GANG_ID: "g", keys.GANG_CARDINALITY: "2"},
        required_node_labels={"zone": "a"},
    )
    (jp,) = jobs.job_pods(_request(item), new_id=lambda: "01hzzzzzzzzzzzzzzzzzzzzzzz")
    assert jp.job_id == "01hzzzzzzzzzzzzzzzzzzzzzzz"
    md = jp.pod["metadata"]
    assert (md["name"], md["namespace"]) == ("armada-01hzzzzzzzzzzzzzzzzzzzzzzz-0", "team")
    assert md["labels"] == {
        "app": "x",
        keys.QUEUE_LABEL: "q1",
        keys.ARMADA_QUEUE_ID_LABEL: "q1",
        keys.ARMADA_JOB_ID_LABEL: jp.job_id,
        keys.JOB_SET_LABEL: "set-1",
    }
    assert md["annotations"] == {
        keys.GANG_ID: "g",
        keys.GANG_CARDINALITY: "2",
        keys.ARMADA_JOB_SET_ID_ANNOTATION: "set-1",
        keys.JOB_PRIORITY_ANNOTATION: "3",
    }
    assert jp.pod["spec"]["nodeSelector"] == {"zone": "a"}
    assert jp.pod["spec"]["restartPolicy"] == "Never"
    assert jp.pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1"}
    assert job_priority(jp.pod) == 3


def test_a_job_set_that_is_no_label_value_is_labelled_by_its_digest() -> None:
    odd = "my job set / 2026"
    (jp,) = jobs.job_pods(_request(_item(), job_set=odd), new_id=ids.new_job_id)
    value = jp.pod["metadata"]["labels"][keys.JOB_SET_LABEL]
    assert value.startswith("sha256-") and len(value) <= 63
    assert jp.pod["metadata"]["annotations"][keys.ARMADA_JOB_SET_ID_ANNOTATION] == odd
    assert jobs.in_job_set(jp.pod, odd) and not jobs.in_job_set(jp.pod, "other")
    assert jobs.job_set_selector("q1", odd) == f"{keys.ARMADA_QUEUE_ID_LABEL}=q1,{keys.JOB_SET_LABEL}={value}"


def test_a_client_id_always_names_the_same_job_in_its_queue_and_namespace() -> None:
    a = jobs.job_pods(_request(_item(client_id="c-1"), _item(client_id="c-1"), _item(client_id="c-2")))
    assert a[0].job_id == a[1].job_id != a[2].job_id
    again = jobs.job_pods(_request(_item(client_id="c-1")))
    assert again[0].job_id == a[0].job_id and ids.is_job_id(a[0].job_id)
    assert again[0].pod["metadata"]["annotations"][keys.CLIENT_ID_ANNOTATION] == "c-1"
    other_ns = jobs.job_pods(_request(_item(client_id="c-1", namespace="other")))
    assert other_ns[0].job_id != a[0].job_id


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (_item(namespace=""), "namespace is a required field"),
        (_item(namespace="../kube-system"), "not a valid namespace"),
        (_item(pod_specs=[]), "at least one PodSpec"),
        (_item(pod_specs=[_spec(), _spec()]), "multiple pods are not supported"),
        (_item(pod_spec=_spec()), "exclusive"),
        (_item(pod_specs=[core.PodSpec()]), "no containers"),
        (_item(labels={keys.QUEUE_LABEL: "other"}), "set by the Armada API"),
        (_item(annotations={keys.JOB_PRIORITY_ANNOTATION: "0"}), "set by the Armada API"),
        (
            _item(pod_specs=[_spec(nodeSelector={"zone": "b"})], required_node_labels={"zone": "a"}),
            "contradicts",
        ),
        (_item(scheduler="kube"), "not served"),
        (_item(ingress=[submit_pb2.IngressConfig(ports=[80])]), "not served yet"),
        (_item(client_id="x" * 101), "client id"),
    ],
)
def test_an_item_that_is_not_valid_fails_the_whole_request(
    item: submit_pb2.JobSubmitRequestItem, message: str
) -> None:
    with pytest.raises(jobs.RequestError, match=message):
        jobs.job_pods(_request(_item(), item))


def test_queue_and_job_set_are_required() -> None:
    with pytest.raises(jobs.RequestError, match="queue"):
        jobs.job_pods(submit_pb2.JobSubmitRequest(job_set_id="s", job_request_items=[_item()]))
    with pytest.raises(jobs.RequestError, match="job set"):
        jobs.job_pods(submit_pb2.JobSubmitRequest(queue="q", job_request_items=[_item()]))


def test_job_ids_are_lower_case_ulids_in_time_order() -> None:
    first = ids.new_job_id(now=1_700_000_000.0, entropy=bytes(10))
    later = ids.new_job_id(now=1_700_000_000.001, entropy=bytes(10))
    assert len(first) == 26 and ids.is_job_id(first) and first < later
    assert first == first.lower() and not ids.is_job_id("armada-" + first)


def test_job_priorities_are_armadas_unsigned_integers() -> None:
    assert [job_priority_value(p) for p in (-3.0, 0.4, 2.5, 7.6, 1e12, float("nan"))] == [
        0,
        0,
        2,
        8,
        2**32 - 1,
        0,
    ]
    pod = {"metadata": {"annotations": {keys.JOB_PRIORITY_ANNOTATION: "nope"}}}
    assert job_priority(pod) == 0 and job_priority({}) == 0


def test_queues_both_ways() -> None:
    q = submit_pb2.Queue(
        name="team-a", priority_factor=2.0, cordoned=True, labels={"tier": "gold"}, user_owners=["u"]
    )
    obj = queues.queue_object(q)
    assert obj["metadata"] == {"name": "team-a", "labels": {"tier": "gold"}}
    assert obj["spec"] == {"priorityFactor": 2.0, "cordoned": True}
    back = queues.armada_queue(obj)
    assert (back.name, back.priority_factor, back.cordoned, dict(back.labels)) == (
        "team-a",
        2.0,
        True,
        {"tier": "gold"},
    )
    patch = queues.update_patch({"metadata": {"labels": {"old": "1", "tier": "silver"}}}, q)
    assert patch["metadata"]["labels"] == {"old": None, "tier": "gold"}


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        (submit_pb2.Queue(name="", priority_factor=1), "required"),
        (submit_pb2.Queue(name="Team_A", priority_factor=1), "DNS label"),
        (submit_pb2.Queue(name="a", priority_factor=0), "greater than 0"),
        (
            submit_pb2.Queue(
                name="a",
                priority_factor=1,
                resource_limits_by_priority_class_name={"pc": submit_pb2.PriorityClassResourceLimits()},
            ),
            "not supported",
        ),
    ],
)
def test_a_queue_the_bridge_cannot_keep_is_refused(queue: submit_pb2.Queue, message: str) -> None:
    with pytest.raises(jobs.RequestError, match=message):
        queues.queue_object(queue)


def test_job_states_from_the_pod_and_the_bridges_decision() -> None:
    def job_pod(phase: str, cluster: str | None = None, **status: str) -> dict[str, object]:
        annotations = {keys.ASSIGNED_CLUSTER: cluster} if cluster else {}
        return pod(annotations=annotations, phase=phase, status=status)

    assert states.job_state(job_pod("Pending")) == states.QUEUED
    assert states.job_state(job_pod("Pending", "remote-1")) == states.PENDING
    assert states.job_state(job_pod("Running", "remote-1")) == states.RUNNING
    assert states.job_state(job_pod("Succeeded", "remote-1")) == states.SUCCEEDED
    assert states.job_state(job_pod("Failed")) == states.FAILED
    assert states.job_state(job_pod("Failed", "remote-1", reason="Preempted")) == states.PREEMPTED


def test_the_callers_bearer_token() -> None:
    assert bearer_token([("authorization", "Bearer abc")]) == "abc"
    assert bearer_token([("x-other", "1"), ("Authorization", b"bearer  xyz ")]) == "xyz"
    for metadata in ([], [("authorization", "Bearer ")], [("authorization", "Basic dTpw")]):
        with pytest.raises(Refused) as e:
            bearer_token(metadata)
        assert e.value.code is grpc.StatusCode.UNAUTHENTICATED


def test_a_client_certificates_user_and_groups() -> None:
    """As gRPC gives a verified peer's subject (RFC 4514: the last RDN first, `\\,` or `\\2C`
    escapes), and as kube-apiserver reads a certificate: CN the user, each O a group."""
    assert subject_attributes("CN=alice,O=dev\\, ops,O=team-a") == [
        ("CN", "alice"),
        ("O", "dev, ops"),
        ("O", "team-a"),
    ]
    assert subject_attributes("cn=b\\2Bc+O=x\\\\,O=y") == [("CN", "b+c"), ("O", "x\\"), ("O", "y")]
    caller = certificate_caller({"x509_subject": [b"CN=alice,O=dev\\, ops,O=team-a"]})
    assert caller == Caller(user="alice", groups=("dev, ops", "team-a"))
    assert certificate_caller({"transport_security_type": [b"ssl"]}) is None  # the token port
    for subject in (b"O=team-a", b"CN=a,CN=b", b"CN=system:admin", b"CN=root,O=system:masters"):
        with pytest.raises(Refused) as e:
            certificate_caller({"x509_subject": [subject]})
        assert e.value.code is grpc.StatusCode.PERMISSION_DENIED, subject


def test_armadas_codes_for_the_fronts_answers() -> None:
    codes = {s: status_for(ApiError(s, "", "m"))[0] for s in (400, 401, 403, 404, 409, 422, 429, 503)}
    assert codes == {
        400: grpc.StatusCode.INVALID_ARGUMENT,
        401: grpc.StatusCode.UNAUTHENTICATED,
        403: grpc.StatusCode.PERMISSION_DENIED,
        404: grpc.StatusCode.NOT_FOUND,
        409: grpc.StatusCode.ALREADY_EXISTS,
        422: grpc.StatusCode.INVALID_ARGUMENT,
        429: grpc.StatusCode.UNAVAILABLE,
        503: grpc.StatusCode.UNAVAILABLE,
    }
    assert status_for(jobs.RequestError("bad"))[0] is grpc.StatusCode.INVALID_ARGUMENT
    assert status_for(ValueError("x")) == (grpc.StatusCode.INTERNAL, "internal error: ValueError")


async def test_a_batch_of_queue_calls_answers_the_queues_that_failed_each_with_why() -> None:
    class Queues:
        async def create(self, caller: Caller, queue: submit_pb2.Queue) -> None:
            if queue.name == "taken":
                raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"queue {queue.name} exists")

        update = create

    class Context:
        def auth_context(self) -> dict[str, list[bytes]]:
            return {}

        def invocation_metadata(self) -> list[tuple[str, str]]:
            return [("authorization", "Bearer t")]

    calls = QueueCalls()
    calls.queues = Queues()  # type: ignore[assignment]
    request = submit_pb2.QueueList(queues=[submit_pb2.Queue(name="free"), submit_pb2.Queue(name="taken")])
    created = await calls.CreateQueues(request, Context())
    assert created == submit_pb2.BatchQueueCreateResponse(
        failed_queues=[
            submit_pb2.QueueCreateResponse(queue=submit_pb2.Queue(name="taken"), error="queue taken exists")
        ]
    )
    updated = await calls.UpdateQueues(request, Context())
    assert updated == submit_pb2.BatchQueueUpdateResponse(
        failed_queues=[
            submit_pb2.QueueUpdateResponse(queue=submit_pb2.Queue(name="taken"), error="queue taken exists")
        ]
    )


def test_the_extender_gives_the_core_the_job_priority_a_pod_carries() -> None:
    """Submitted through the API or applied with kubectl, the annotation is what orders the job."""
    from extender.translate import job_from_pod

    (jp,) = jobs.job_pods(_request(_item(priority=7)))
    jp.pod["metadata"]["uid"] = "u1"
    assert job_from_pod(jp.pod, job_id="u1", queue="q1", gang=None, submit_time=0.0).priority == 7


def test_a_job_submitted_through_the_api_is_the_same_job_to_the_core_as_its_pod_applied_with_kubectl() -> (
    None
):
    """Issue 29's acceptance, for what decides scheduling: queue, gang, priority class, job
    priority, requests and constraints are read from the pod alike, whoever created it."""
    from dataclasses import replace

    from extender import intent, protocols
    from extender.translate import job_from_pod

    gang = {keys.GANG_ID: "g", keys.GANG_CARDINALITY: "2", keys.GANG_NODE_UNIFORMITY_LABEL: "rack"}
    spec = _spec(priorityClassName="armada-preemptible", nodeSelector={"zone": "a"})
    (jp,) = jobs.job_pods(_request(_item(pod_specs=[spec], annotations=gang, priority=4)))
    by_kubectl = {
        "metadata": {
            "name": "mine",
            "namespace": "team",
            "labels": {keys.QUEUE_LABEL: "q1"},
            "annotations": {**gang, keys.JOB_PRIORITY_ANNOTATION: "4"},
        },
        "spec": {**jp.pod["spec"]},
    }

    def core_job(pod: dict[str, object]) -> object:
        queue, _ = intent.queue_of(pod, volcano_podgroup=None, namespace_labels={})
        assert queue is not None
        job = job_from_pod(pod, job_id="x", queue=queue, gang=protocols.gang_of(pod, {}), submit_time=0.0)
        return replace(job, id="")

    assert core_job(jp.pod) == core_job(by_kubectl)
    assert core_job(jp.pod).gang_id == "team/armada/g"  # type: ignore[attr-defined]


def test_an_items_services_select_its_pod_as_armada_makes_them() -> None:
    container = core.Container(
        name="web",
        image="nginx",
        ports=[core.ContainerPort(containerPort=80), core.ContainerPort(containerPort=9000, hostPort=9000)],
    )
    sidecar = core.Container(
        name="side", image="x", restartPolicy="Always", ports=[core.ContainerPort(containerPort=81)]
    )
    spec = core.PodSpec(containers=[container], initContainers=[sidecar])
    configs = [
        submit_pb2.ServiceConfig(type=submit_pb2.ServiceType.Headless, ports=[80, 81]),
        submit_pb2.ServiceConfig(type=submit_pb2.ServiceType.NodePort, ports=[80], name="web"),
        submit_pb2.ServiceConfig(ports=[9000]),  # a host port only: nothing to make
    ]
    (jp,) = jobs.job_pods(
        _request(_item(pod_specs=[spec], services=configs)), new_id=lambda: "01h0000000000000000000000a"
    )
    headless, node_port = jp.services
    assert headless["metadata"]["name"] == "armada-01h0000000000000000000000a-0-service-0"
    assert headless["spec"] == {
        "type": "ClusterIP",
        "clusterIP": "None",
        "selector": {keys.ARMADA_JOB_ID_LABEL: "01h0000000000000000000000a"},
        "ports": [{"name": "web-80", "port": 80}, {"name": "side-81", "port": 81}],
    }
    assert (node_port["metadata"]["name"], node_port["spec"]["type"]) == ("web", "NodePort")
    assert node_port["metadata"]["labels"][keys.QUEUE_LABEL] == "q1"
