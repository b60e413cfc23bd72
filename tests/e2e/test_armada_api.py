"""Armada's API in front of the bridge, driven by a client nobody here wrote: the `armada-client`
package from PyPI submits job sets to `python -m armada_api` running against the real front
cluster; the bridge schedules the pods; bad requests get Armada's codes and change nothing
(docs/armada-api.md)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from armada_client.armada import event_pb2, submit_pb2
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity
from kubernetes import client as k8s
from kubernetes import watch as k8s_watch

from armada_api.job_events import LIVE_MARK
from armada_bridge import certs, keys
from devenv import binaries
from devenv.names import FRONT
from devenv.operators.samples import adapt, pod_templates
from tests.framework.bridge import bind_cluster_role, free_in_remotes, service_account_token
from tests.framework.kube import kubectl, role_binding, wait_for
from tests.framework.spark_apps import spark_app

Api = Callable[[str], k8s.ApiClient]
ROOT = Path(__file__).resolve().parents[2]
#: the objects a job may carry in these tests, and where each states its state: the shipped list
#: (the shipped RBAC lets the server read them)
OBJECT_KINDS = ROOT / "manifests" / "armada-api" / "object-kinds.yaml"


@dataclass
class Armada:
    address: str
    kubeconfig: Path
    ca: bytes | None = None  # the server speaks TLS with a certificate of this CA

    def client(self, token: str | None) -> ArmadaClient:
        creds = (
            grpc.ssl_channel_credentials(root_certificates=self.ca)
            if self.ca
            else grpc.local_channel_credentials(grpc.LocalConnectionType.LOCAL_TCP)
        )
        if token is not None:
            creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(token))
        return ArmadaClient(grpc.secure_channel(self.address, creds))


@pytest.fixture(scope="module")
def armada(dev_env: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Armada]:
    """`python -m armada_api` on a free loopback port, against the dev front cluster, as the
    shipped ServiceAccount with the shipped read-only rights (manifests/armada-api/rbac.yaml)."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    applied = kubectl(dev_env, "apply", "-f", str(ROOT / "manifests" / "armada-api" / "rbac.yaml"))
    assert applied.returncode == 0, applied.stderr
    made = kubectl(dev_env, "create", "token", "armada-bridge-armada-api", "-n", keys.SYSTEM_NAMESPACE)
    assert made.returncode == 0, made.stderr
    kubeconfig = yaml.safe_load(dev_env.kubeconfig(FRONT).read_text())
    for user in kubeconfig["users"]:
        user["user"] = {"token": made.stdout.strip()}  # its own identity: no admin certificate
    own = tmp_path_factory.mktemp("armada-api") / "kubeconfig.yaml"
    own.write_text(yaml.safe_dump(kubeconfig))
    with _serving(own, "--object-kinds-file", str(OBJECT_KINDS)) as server:
        yield server


@contextlib.contextmanager
def _serving(kubeconfig: Path, *args: str, ca: bytes | None = None) -> Iterator[Armada]:
    """A server process on a free loopback port (more `args`: TLS, with clients trusting `ca`),
    stopped after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable,
        "-m",
        "armada_api",
        "--kubeconfig",
        str(kubeconfig),
        "--listen",
        f"127.0.0.1:{port}",
    ]
    proc = subprocess.Popen([*cmd, *args])
    server = Armada(f"127.0.0.1:{port}", kubeconfig, ca)
    try:
        wait_for("the Armada API's health", lambda: _healthy(server), timeout=30)
        yield server
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def _healthy(server: Armada) -> bool:
    try:
        return server.client(None).submit_health().status == 1  # SERVING
    except grpc.RpcError:
        return False


def _spec(cpu: str = "100m", name: str = "main", priority_class: str | None = None) -> core.PodSpec:
    resources = {"cpu": Quantity(string=cpu), "memory": Quantity(string="64Mi")}
    return core.PodSpec(
        containers=[
            core.Container(
                name=name,
                image="busybox",
                resources=core.ResourceRequirements(requests=resources, limits=resources),
            )
        ],
        priorityClassName=priority_class,
    )


def _pods(api: Api, namespace: str) -> list[k8s.V1Pod]:
    return list(k8s.CoreV1Api(api(FRONT)).list_namespaced_pod(namespace).items)


def _describe(api: Api, namespace: str) -> str:
    """The pods' phases, decisions and the namespace's Events, for a failure's message."""
    pods = [
        (p.metadata.name, p.status.phase, (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER))
        for p in _pods(api, namespace)
    ]
    events = k8s.CoreV1Api(api(FRONT)).list_namespaced_event(namespace).items
    return f"pods {pods}; events {[(e.involved_object.name, e.reason, e.message) for e in events]}"


def _rpc_error(call: Callable[[], object]) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as e:
        call()
    return e.value


def test_armada_client_submits_a_job_set_the_bridge_schedules(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    queue, job_set = queues[0], f"set-{uuid.uuid4().hex[:6]}"
    client = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    gang = {keys.GANG_ID: "g1", keys.GANG_CARDINALITY: "2"}
    items = [
        client.create_job_request_item(
            namespace=namespace, pod_spec=_spec(), priority=1, labels={"app": "a"}
        ),
        client.create_job_request_item(namespace=namespace, pod_spec=_spec(), client_id="only-once"),
        client.create_job_request_item(namespace=namespace, pod_spec=_spec(), annotations=gang),
        client.create_job_request_item(namespace=namespace, pod_spec=_spec(), annotations=gang),
    ]
    response = client.submit_jobs(queue=queue, job_set_id=job_set, job_request_items=items)
    job_ids = [r.job_id for r in response.job_response_items]
    assert len(set(job_ids)) == 4 and all(not r.error for r in response.job_response_items)

    # The pods are in the namespace under the queue and the job set, and the bridge schedules them.
    def scheduled() -> dict[str, str] | None:
        pods = {p.metadata.labels.get(keys.ARMADA_JOB_ID_LABEL): p for p in _pods(cluster_api, namespace)}
        clusters = {
            i: (pods[i].metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) for i in job_ids if i in pods
        }
        return clusters if len(clusters) == 4 and all(clusters.values()) else None

    try:
        clusters = wait_for("the job set admitted by the bridge", scheduled, timeout=60)
    except AssertionError as e:
        raise AssertionError(f"{e}; {_describe(cluster_api, namespace)}") from None
    assert clusters[job_ids[2]] == clusters[job_ids[3]]  # the gang, in one remote cluster
    by_job = {p.metadata.labels[keys.ARMADA_JOB_ID_LABEL]: p for p in _pods(cluster_api, namespace)}
    first = by_job[job_ids[0]]
    assert first.metadata.name == f"armada-{job_ids[0]}-0"
    assert first.metadata.labels[keys.QUEUE_LABEL] == queue and first.metadata.labels["app"] == "a"
    assert first.metadata.annotations[keys.ARMADA_JOB_SET_ID_ANNOTATION] == job_set
    assert first.metadata.annotations[keys.JOB_PRIORITY_ANNOTATION] == "1"
    wait_for(
        "the job set running in the remote clusters",
        lambda: all(p.status.phase == "Running" for p in _pods(cluster_api, namespace)),
        timeout=60,
    )

    # Their states, as the Jobs service a client polls says them (a stranger's: unknown).
    running = submit_pb2.JobState.RUNNING
    assert dict(client.get_job_status(job_ids).job_states) == dict.fromkeys(job_ids, running)
    stranger = armada.client(service_account_token(cluster_api, namespace, "stranger", None))
    unknown = submit_pb2.JobState.UNKNOWN
    assert dict(stranger.get_job_status(job_ids).job_states) == dict.fromkeys(job_ids, unknown)

    # A client id submitted again is the same job: nothing new is created.
    again = client.submit_jobs(
        queue=queue,
        job_set_id=job_set,
        job_request_items=[
            client.create_job_request_item(namespace=namespace, pod_spec=_spec(), client_id="only-once")
        ],
    )
    assert [r.job_id for r in again.job_response_items] == [job_ids[1]]
    assert len(_pods(cluster_api, namespace)) == 4

    # Reprioritized and cancelled, as the caller.
    result = client.reprioritize_jobs(new_priority=5, job_ids=[job_ids[1]], job_set_id=job_set, queue=queue)
    assert dict(result.reprioritization_results) == {job_ids[1]: ""}
    pod = k8s.CoreV1Api(cluster_api(FRONT)).read_namespaced_pod(f"armada-{job_ids[1]}-0", namespace)
    assert pod.metadata.annotations[keys.JOB_PRIORITY_ANNOTATION] == "5"
    cancelled = client.cancel_jobs(queue=queue, job_set_id=job_set, job_id=job_ids[0])
    assert list(cancelled.cancelled_ids) == [job_ids[0]]
    wait_for(
        "the cancelled job's pod gone",
        lambda: (
            job_ids[0]
            not in {p.metadata.labels[keys.ARMADA_JOB_ID_LABEL] for p in _pods(cluster_api, namespace)}
        ),
        timeout=60,
    )
    client.cancel_jobset(queue=queue, job_set_id=job_set, filter_states=[])
    wait_for("the job set cancelled", lambda: not _pods(cluster_api, namespace), timeout=60)
    # And queue-wide, whatever the job set (QueueService.CancelOnQueue).
    other = client.create_job_request_item(namespace=namespace, pod_spec=_spec())
    client.submit_jobs(queue=queue, job_set_id="other", job_request_items=[other])
    client.queue_stub.CancelOnQueue(submit_pb2.QueueCancelRequest(name=queue))
    wait_for("the queue's jobs cancelled", lambda: not _pods(cluster_api, namespace), timeout=60)


def test_bad_requests_get_armadas_codes_and_change_nothing(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    queue = queues[0]
    submitter = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    stranger = armada.client(
        service_account_token(cluster_api, namespace, "stranger", None)
    )  # no RBAC at all
    good = submitter.create_job_request_item(namespace=namespace, pod_spec=_spec())
    closed = queues[1]  # another team's: it does not take pods of this namespace
    k8s.CustomObjectsApi(cluster_api(FRONT)).patch_cluster_custom_object(
        keys.GROUP,
        "v1alpha1",
        "queues",
        closed,
        {"spec": {"namespaceSelector": {"matchLabels": {"team": closed}}}},
    )

    def submit(client: ArmadaClient, *items: submit_pb2.JobSubmitRequestItem, to: str = queue) -> object:
        return client.submit_jobs(queue=to, job_set_id="bad", job_request_items=list(items))

    cases = {
        "unknown queue": (
            grpc.StatusCode.PERMISSION_DENIED,
            lambda: submit(submitter, good, to="no-such-queue"),
        ),
        "no rights": (grpc.StatusCode.PERMISSION_DENIED, lambda: submit(stranger, good)),
        "a queue that does not take the namespace": (
            grpc.StatusCode.PERMISSION_DENIED,
            lambda: submit(submitter, good, to=closed),
        ),
        # the API server refuses the second item's pod spec (a container name is a DNS label): the
        # valid first item is not created either
        "malformed pod spec": (
            grpc.StatusCode.INVALID_ARGUMENT,
            lambda: submit(
                submitter,
                good,
                submitter.create_job_request_item(namespace=namespace, pod_spec=_spec(name="Not_A_Name")),
            ),
        ),
        "bad quantity": (
            grpc.StatusCode.INVALID_ARGUMENT,
            lambda: submit(
                submitter,
                good,
                submitter.create_job_request_item(namespace=namespace, pod_spec=_spec(cpu="lots")),
            ),
        ),
        "two pod specs": (
            grpc.StatusCode.INVALID_ARGUMENT,
            lambda: submit(
                submitter, submit_pb2.JobSubmitRequestItem(namespace=namespace, pod_specs=[_spec(), _spec()])
            ),
        ),
        # the bridge's own decision keys: the front's admission policy refuses them for a tenant,
        # through the API as through kubectl (docs/security.md)
        "a forged decision": (
            grpc.StatusCode.PERMISSION_DENIED,
            lambda: submit(
                submitter,
                submitter.create_job_request_item(
                    namespace=namespace, pod_spec=_spec(), annotations={keys.ASSIGNED_CLUSTER: "remote-1"}
                ),
            ),
        ),
        "no token": (grpc.StatusCode.UNAUTHENTICATED, lambda: submit(armada.client(None), good)),
        "a token the front rejects": (
            grpc.StatusCode.UNAUTHENTICATED,
            lambda: submit(armada.client("forged"), good),
        ),
    }
    for what, (code, call) in cases.items():
        error = _rpc_error(call)
        assert error.code() == code, f"{what}: {error.code()} {error.details()}"
        if what == "a queue that does not take the namespace":
            assert f"queue {closed} does not take pods from namespace {namespace}" in str(error.details())
    time.sleep(1)
    assert _pods(cluster_api, namespace) == []

    # A stranger cannot cancel the submitter's job either: the pod stays.
    (item,) = submit(submitter, good).job_response_items  # type: ignore[attr-defined]
    error = _rpc_error(lambda: stranger.cancel_jobs(queue=queue, job_set_id="bad", job_id=item.job_id))
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED
    assert [p.metadata.labels[keys.ARMADA_JOB_ID_LABEL] for p in _pods(cluster_api, namespace)] == [
        item.job_id
    ]


def test_queue_calls_are_the_callers_rbac_on_queue_objects(
    armada: Armada, namespace: str, cluster_api: Api
) -> None:
    admin = cluster_api(FRONT)
    rbac = k8s.RbacAuthorizationV1Api(admin)
    manager = f"queue-manager-{uuid.uuid4().hex[:6]}"
    rbac.create_cluster_role(
        {
            "metadata": {"name": manager},
            "rules": [{"apiGroups": [keys.GROUP], "resources": ["queues"], "verbs": ["*"]}],
        }
    )
    try:
        k8s.CoreV1Api(admin).create_namespaced_service_account(namespace, {"metadata": {"name": "manager"}})
        rbac.create_cluster_role_binding(role_binding(manager, manager, "manager", namespace))
        token = k8s.CoreV1Api(admin).create_namespaced_service_account_token(
            "manager", namespace, {"spec": {}}
        )
        client = armada.client(str(token.status.token))
        tenant = armada.client(service_account_token(cluster_api, namespace, "tenant", "edit"))
        name = f"aq-{uuid.uuid4().hex[:6]}"
        queue = client.create_queue_request(name=name, priority_factor=2.0)
        assert _rpc_error(lambda: tenant.create_queue(queue)).code() == grpc.StatusCode.PERMISSION_DENIED
        wait_for("the manager's grant", lambda: _created(client, queue), timeout=30)
        assert _rpc_error(lambda: client.create_queue(queue)).code() == grpc.StatusCode.ALREADY_EXISTS
        got = client.get_queue(name)
        assert (got.name, got.priority_factor, got.cordoned) == (name, 2.0, False)
        client.update_queue(client.create_queue_request(name=name, priority_factor=3.0))
        assert client.get_queue(name).priority_factor == 3.0
        assert name in [q.name for q in client.get_queues()]
        crd = k8s.CustomObjectsApi(admin).get_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", name)
        assert crd["spec"]["priorityFactor"] == 3.0
        client.delete_queue(name)
        assert _rpc_error(lambda: client.get_queue(name)).code() == grpc.StatusCode.NOT_FOUND
    finally:
        rbac.delete_cluster_role(manager)
        with contextlib.suppress(k8s.ApiException):
            rbac.delete_cluster_role_binding(manager)


def _created(client: ArmadaClient, queue: submit_pb2.Queue) -> bool:
    try:
        client.create_queue(queue)
        return True
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.PERMISSION_DENIED:
            return False
        raise


class _Collector:
    """The events of a job set, read by the armada-client package's own resilient stream in a thread."""

    def __init__(self, client: ArmadaClient, queue: str, job_set: str) -> None:
        self.stream = client.get_job_events_stream(queue=queue, job_set_id=job_set)
        self.events: list[tuple[str, str, str]] = []  # (id, type, job id)
        self.received: dict[tuple[str, str], float] = {}  # (job id, type) -> when (monotonic)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with contextlib.suppress(grpc.RpcError, StopIteration, ValueError):
            for message in self.stream:
                event = ArmadaClient.unmarshal_event_response(message)
                self.events.append((event.id, event.type.value, event.message.job_id))
                self.received.setdefault((event.message.job_id, event.type.value), time.monotonic())

    def of(self, job_id: str) -> list[str]:
        return [t for _, t, j in list(self.events) if j == job_id]

    def close(self) -> None:
        self.stream.cancel()


def test_a_job_sets_events_follow_its_pods_and_resume_after_an_id(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    queue, job_set = queues[0], f"events-{uuid.uuid4().hex[:6]}"
    token = service_account_token(cluster_api, namespace, "submitter", "edit")
    client = armada.client(token)
    brief = {keys.SIMULATED_RUNTIME: "3s"}  # the dev remote clusters end such a pod Succeeded
    items = [
        client.create_job_request_item(namespace=namespace, pod_spec=_spec(), annotations=brief),
        client.create_job_request_item(namespace=namespace, pod_spec=_spec(), annotations=brief),
        client.create_job_request_item(namespace=namespace, pod_spec=_spec()),  # runs until cancelled
    ]
    response = client.submit_jobs(queue=queue, job_set_id=job_set, job_request_items=items)
    a, b, c = (r.job_id for r in response.job_response_items)
    collector = _Collector(client, queue, job_set)
    try:
        lifecycle = ["submitted", "queued", "leased", "pending", "running", "succeeded"]
        try:
            wait_for(
                "both brief jobs' events to their end, the third running",
                lambda: collector.of(a) == lifecycle == collector.of(b) and "running" in collector.of(c),
                timeout=90,
            )
        except AssertionError as e:
            seen = {j: collector.of(j) for j in (a, b, c)}
            raise AssertionError(f"{e}; events {seen}; {_describe(cluster_api, namespace)}") from None
        client.cancel_jobs(queue=queue, job_set_id=job_set, job_id=c)
        wait_for("the cancelled job's event", lambda: collector.of(c)[-1:] == ["cancelled"], timeout=60)
        assert collector.of(c) == [*lifecycle[:-1], "cancelled"]
        ids = [i for i, _, _ in collector.events]
        assert len(ids) == len(set(ids))  # each event once
    finally:
        collector.close()

    # From the pods as they are now (once the cancelled one is gone): the same ids, and a stream
    # resumed after one sends exactly what follows it, whichever job's it is.
    wait_for("the cancelled job's pod gone", lambda: len(_pods(cluster_api, namespace)) == 2, timeout=60)

    def listed(after: str = "") -> list[str]:
        request = event_pb2.JobSetRequest(queue=queue, id=job_set, from_message_id=after, watch=False)
        return [m.id for m in client.event_stub.GetJobSetEvents(request)]

    everything = listed()
    # the same events (those the watching stream sent as they happened have their ids marked)
    assert everything == sorted(everything) and len(everything) == 12
    assert set(everything) <= {i.removesuffix(LIVE_MARK) for i in ids}
    for i in (4, 8):  # the first job's running; the second job's leased
        assert listed(after=everything[i]) == everything[i + 1 :], i
    # Another server (a restart, a replica) derives the same events with the same ids, and resumes
    # after one of the second job's just as exactly.
    with _serving(armada.kubeconfig) as other:
        stub = other.client(token).event_stub
        request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=False)
        assert [m.id for m in stub.GetJobSetEvents(request)] == everything
        request = event_pb2.JobSetRequest(queue=queue, id=job_set, from_message_id=everything[8], watch=False)
        assert [m.id for m in stub.GetJobSetEvents(request)] == everything[9:]

    # Someone who may not list the namespace's pods sees no such job set.
    stranger = armada.client(service_account_token(cluster_api, namespace, "stranger", None))
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=False, errorIfMissing=True)
    error = _rpc_error(lambda: list(stranger.event_stub.GetJobSetEvents(request)))
    assert error.code() == grpc.StatusCode.NOT_FOUND
    error = _rpc_error(lambda: list(armada.client(None).event_stub.GetJobSetEvents(request)))
    assert error.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.exclusive  # it fills the remotes
def test_a_job_the_bridge_preempts_is_reported_preempted_within_2_s(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    """Issue 29's acceptance: queue a's preemptible jobs fill the remote clusters (one more than
    fits); an urgent job of queue b makes the bridge's core preempt one; the client following a's
    job set hears of it within 2 s of the pod being marked."""
    a, b = queues
    client = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    count = free_in_remotes(cluster_api) // 16 + 1
    fill = [
        client.create_job_request_item(
            namespace=namespace, pod_spec=_spec("16", priority_class="armada-preemptible")
        )
        for _ in range(count)
    ]
    client.submit_jobs(queue=a, job_set_id="fill", job_request_items=fill)

    def filled() -> bool:
        pods = _pods(cluster_api, namespace)
        running = [p for p in pods if p.status.phase == "Running"]
        return len(pods) == count and len(running) == count - sum(1 for p in pods if not _cluster(p))

    wait_for("queue a's jobs running as far as they fit", filled, timeout=120)
    collector = _Collector(client, a, "fill")
    try:
        urgent = client.create_job_request_item(
            namespace=namespace, pod_spec=_spec("16", priority_class="armada-urgent")
        )
        client.submit_jobs(queue=b, job_set_id="urgent", job_request_items=[urgent])

        def marked() -> tuple[str, float] | None:
            for p in _pods(cluster_api, namespace):
                if p.status.phase == "Failed" and p.status.reason == "Preempted":
                    return p.metadata.labels[keys.ARMADA_JOB_ID_LABEL], time.monotonic()
            return None

        job_id, seen_at = wait_for("a job of queue a preempted", marked, timeout=120, interval=0.05)
        reported = wait_for(
            "the preempted event", lambda: collector.received.get((job_id, "preempted")), timeout=10
        )
        assert reported - seen_at < 2.0, f"reported {reported - seen_at:.2f}s after the pod was marked"
        assert collector.of(job_id)[-1] == "preempted", [e for e in collector.events if e[2] == job_id]
        assert client.get_job_status([job_id]).job_states[job_id] == submit_pb2.JobState.PREEMPTED
        assert "preempted" in client.get_job_errors([job_id]).job_errors[job_id]
    finally:
        collector.close()


def _cluster(pod: k8s.V1Pod) -> str | None:
    return (pod.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)


def test_armadactl_submits_its_example_job_files_and_watches_them_to_the_end(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, tmp_path: Path
) -> None:
    """Armada's own armadactl (built from the Armada module at the pinned release) submits the
    example job files of that release, a job and a gang, with the queue, job set and namespace of
    this test and a simulated run time, then watches the job sets until their jobs end."""
    armadactl = binaries.armadactl()
    examples = armadactl.parent / "module" / "example"
    token = tmp_path / "token"
    token.write_text(service_account_token(cluster_api, namespace, "submitter", "edit"))
    config = tmp_path / "armadactl.yaml"
    context = {
        "armadaUrl": armada.address,
        "forceNoTls": True,
        "execAuth": {"cmd": "cat", "args": [str(token)]},
    }
    config.write_text(yaml.safe_dump({"currentContext": "bridge", "contexts": {"bridge": context}}))

    def run(*args: str, timeout: float = 60) -> str:
        done = subprocess.run(
            [str(armadactl), "--config", str(config), *args], capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, f"armadactl {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    for example in ("example-job.yaml", "example-gang-job.yaml"):
        spec = yaml.safe_load((examples / example).read_text())
        job_set = f"{spec['jobSetId']}-{uuid.uuid4().hex[:6]}"
        spec.update(queue=queues[0], jobSetId=job_set)
        for job in spec["jobs"]:
            job["namespace"] = namespace
            job.setdefault("annotations", {})[keys.SIMULATED_RUNTIME] = "2s"
        job_file = tmp_path / example
        job_file.write_text(yaml.safe_dump(spec))
        submitted = re.findall(r"Submitted job with id (\S+)", run("submit", str(job_file)))
        assert len(submitted) == len(spec["jobs"])
        watched = run("watch", queues[0], job_set, "--exit-if-inactive", timeout=120)
        for job_id in submitted:
            assert re.search(rf"JobSucceededEvent, job id: {job_id}", watched), watched
    assert all(p.status.phase == "Succeeded" for p in _pods(cluster_api, namespace))


def test_a_request_the_front_refuses_half_way_leaves_nothing(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    """Dry runs pass one pod at a time; a ResourceQuota of 2 pods refuses the third real creation:
    the two created are deleted again, and the call fails with the front's reason."""
    core_api = k8s.CoreV1Api(cluster_api(FRONT))
    core_api.create_namespaced_resource_quota(
        namespace, {"metadata": {"name": "two"}, "spec": {"hard": {"pods": "2"}}}
    )
    wait_for(
        "the quota counted",
        lambda: (core_api.read_namespaced_resource_quota("two", namespace).status.hard or {}).get("pods"),
        timeout=30,
    )
    client = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    items = [client.create_job_request_item(namespace=namespace, pod_spec=_spec()) for _ in range(3)]
    error = _rpc_error(
        lambda: client.submit_jobs(queue=queues[0], job_set_id="over", job_request_items=items)
    )
    assert error.code() == grpc.StatusCode.PERMISSION_DENIED and "quota" in error.details(), error.details()
    wait_for(
        "the pods created before the refusal deleted", lambda: not _pods(cluster_api, namespace), timeout=30
    )


@pytest.mark.exclusive  # it fills the remotes
def test_reprioritized_jobs_are_admitted_first_within_their_queue(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    """The job priority an Armada client gives (and changes) orders the core's queue: with the
    remote clusters full, of two waiting jobs the one reprioritized to 0 gets the first room."""
    queue = queues[0]
    client = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    count = free_in_remotes(cluster_api) // 16
    blockers = [
        client.create_job_request_item(namespace=namespace, pod_spec=_spec("16")) for _ in range(count)
    ]
    blocking = [
        r.job_id
        for r in client.submit_jobs(
            queue=queue, job_set_id="block", job_request_items=blockers
        ).job_response_items
    ]
    wait_for(
        "the remote clusters full",
        lambda: sum(1 for p in _pods(cluster_api, namespace) if p.status.phase == "Running") == count,
        timeout=120,
    )
    ids = []
    for _ in range(2):  # a second apart: the one submitted first is first while priorities are equal
        item = client.create_job_request_item(namespace=namespace, pod_spec=_spec("16"), priority=1)
        response = client.submit_jobs(queue=queue, job_set_id="wait", job_request_items=[item])
        ids.append(response.job_response_items[0].job_id)
        time.sleep(1.1)
    first, second = ids
    result = client.reprioritize_jobs(new_priority=0, job_ids=[second], job_set_id="wait", queue=queue)
    assert dict(result.reprioritization_results) == {second: ""}
    time.sleep(2)  # the extender sees the new priority
    client.cancel_jobs(queue=queue, job_set_id="block", job_id=blocking[0])

    def admitted() -> list[str]:
        by_job = {p.metadata.labels[keys.ARMADA_JOB_ID_LABEL]: p for p in _pods(cluster_api, namespace)}
        return [j for j in (first, second) if j in by_job and _cluster(by_job[j])]

    assert wait_for("one waiting job admitted", admitted, timeout=90) == [second]


def test_the_server_speaks_tls_and_refuses_plaintext_off_loopback(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, tmp_path: Path
) -> None:
    """Callers send their front token: beyond loopback only over TLS."""
    cert, key = certs.self_signed(tmp_path, "armada-api", "/CN=armada-api", ["127.0.0.1", "localhost"])
    tls = ("--tls-cert", str(cert), "--tls-key", str(key))
    with _serving(armada.kubeconfig, *tls, ca=cert.read_bytes()) as secure:
        client = secure.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
        item = client.create_job_request_item(namespace=namespace, pod_spec=_spec())
        (job,) = client.submit_jobs(
            queue=queues[0], job_set_id="tls", job_request_items=[item]
        ).job_response_items
        assert [p.metadata.labels[keys.ARMADA_JOB_ID_LABEL] for p in _pods(cluster_api, namespace)] == [
            job.job_id
        ]
    plain = subprocess.run(
        [sys.executable, "-m", "armada_api", "--kubeconfig", str(armada.kubeconfig), "--listen", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert plain.returncode == 2 and "need TLS" in plain.stderr, plain.stderr


def _client_certificate(directory: Path, ca: Path, stem: str, subject: str) -> tuple[bytes, bytes]:
    """(certificate, key), PEM, for `subject`, signed by the CA `ca` (its .crt and .key beside)."""
    key, csr, crt = (directory / f"{stem}.{x}" for x in ("key", "csr", "crt"))
    for cmd in (
        [
            "openssl",
            "req",
            "-new",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            key,
            "-out",
            csr,
            "-subj",
            subject,
        ],
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            ca,
            "-CAkey",
            ca.with_suffix(".key"),
            "-out",
            crt,
            "-days",
            "1",
            "-set_serial",
            str(uuid.uuid4().int >> 64),
        ],
    ):
        subprocess.run([str(c) for c in cmd], check=True, capture_output=True)
    return crt.read_bytes(), key.read_bytes()


def test_a_caller_with_a_client_certificate_acts_as_its_user(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, dev_env: object, tmp_path: Path
) -> None:
    """On the port for client certificates, a caller with a certificate of the front's client CA
    acts as its user and groups (the server impersonates them, as far as the opt-in
    manifests/armada-api/client-certificates.yaml grants): what RBAC lets that group do, nothing
    more; a system: identity is refused by the server; another CA's certificate at the handshake."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    front_ca = dev_env.cluster(FRONT).workdir / "pki" / "ca.crt"  # kube-apiserver's --client-ca-file
    suffix = uuid.uuid4().hex[:6]
    user, group = f"alice-{suffix}", f"team-{suffix}"
    grant = list(
        yaml.safe_load_all((ROOT / "manifests" / "armada-api" / "client-certificates.yaml").read_text())
    )
    grant[0]["rules"][0]["resourceNames"], grant[0]["rules"][1]["resourceNames"] = [user], [group]
    applied = kubectl(dev_env, "apply", "-f", "-", stdin=yaml.safe_dump_all(grant))
    assert applied.returncode == 0, applied.stderr
    k8s.RbacAuthorizationV1Api(cluster_api(FRONT)).create_namespaced_role_binding(
        namespace,
        {
            "metadata": {"name": "group-edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}],
        },
    )
    elsewhere = f"{namespace[:50]}-cert"
    k8s.CoreV1Api(cluster_api(FRONT)).create_namespace({"metadata": {"name": elsewhere}})
    other_ca, other_key = certs.self_signed(tmp_path, "other-ca", "/CN=other-ca", ["127.0.0.1"])
    callers = {
        "alice": _client_certificate(tmp_path, front_ca, "alice", f"/O={group}/CN={user}"),
        "masters": _client_certificate(tmp_path, front_ca, "masters", "/O=system:masters/CN=root"),
        "stranger": (other_ca.read_bytes(), other_key.read_bytes()),
    }
    serving, serving_key = certs.self_signed(
        tmp_path, "armada-api", "/CN=armada-api", ["127.0.0.1", "localhost"]
    )
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = ("--tls-cert", str(serving), "--tls-key", str(serving_key), "--client-ca", str(front_ca))
    try:
        with _serving(
            armada.kubeconfig,
            *args,
            "--client-certificates-listen",
            f"127.0.0.1:{port}",
            ca=serving.read_bytes(),
        ):

            def submit(who: str, to: str) -> Any:
                crt, key = callers[who]
                creds = grpc.ssl_channel_credentials(
                    serving.read_bytes(), private_key=key, certificate_chain=crt
                )
                client = ArmadaClient(grpc.secure_channel(f"127.0.0.1:{port}", creds))
                item = client.create_job_request_item(namespace=to, pod_spec=_spec())
                return client.submit_jobs(queue=queues[0], job_set_id="cert", job_request_items=[item])

            (job,) = submit("alice", namespace).job_response_items
            assert [p.metadata.labels[keys.ARMADA_JOB_ID_LABEL] for p in _pods(cluster_api, namespace)] == [
                job.job_id
            ]
            refused = _rpc_error(lambda: submit("alice", elsewhere))  # the group may not create pods there
            assert refused.code() == grpc.StatusCode.PERMISSION_DENIED, refused.details()
            refused = _rpc_error(lambda: submit("masters", namespace))
            assert refused.code() == grpc.StatusCode.PERMISSION_DENIED and "system:" in str(refused.details())
            refused = _rpc_error(lambda: submit("stranger", namespace))  # the handshake fails
            assert refused.code() == grpc.StatusCode.UNAVAILABLE, refused.details()
            assert _pods(cluster_api, elsewhere) == [] and len(_pods(cluster_api, namespace)) == 1
    finally:
        kubectl(dev_env, "delete", "-f", "-", "--ignore-not-found", stdin=yaml.safe_dump_all(grant))
        k8s.CoreV1Api(cluster_api(FRONT)).delete_namespace(elsewhere)


def test_a_jobs_service_selects_its_pod_and_follows_it_to_its_remote_cluster(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api
) -> None:
    """Armada's ServiceConfig: a headless Service selecting the job's pod, owned by it; the vkubelet
    mirrors it into the remote cluster the pod runs in, so its name resolves there."""
    client = armada.client(service_account_token(cluster_api, namespace, "submitter", "edit"))
    spec = _spec()
    spec.containers[0].ports.append(core.ContainerPort(containerPort=8080))
    service = submit_pb2.ServiceConfig(type=submit_pb2.ServiceType.Headless, ports=[8080])
    item = client.create_job_request_item(namespace=namespace, pod_spec=spec, services=[service])
    (job,) = client.submit_jobs(
        queue=queues[0], job_set_id="svc", job_request_items=[item]
    ).job_response_items
    front = k8s.CoreV1Api(cluster_api(FRONT))
    made = front.read_namespaced_service(f"armada-{job.job_id}-0-service-0", namespace)
    assert made.spec.cluster_ip == "None" and made.spec.selector == {keys.ARMADA_JOB_ID_LABEL: job.job_id}
    assert [(p.name, p.port) for p in made.spec.ports] == [("main-8080", 8080)]
    assert [r.kind for r in made.metadata.owner_references] == ["Pod"]
    pod = wait_for(
        "the job running remotely",
        lambda: next((p for p in _pods(cluster_api, namespace) if p.status.phase == "Running"), None),
        timeout=60,
    )
    remote = k8s.CoreV1Api(cluster_api(_cluster(pod) or ""))
    wait_for(
        "the Service mirrored where the pod runs",
        lambda: any(
            s.metadata.name == made.metadata.name for s in remote.list_namespaced_service(namespace).items
        ),
        timeout=60,
    )
    client.cancel_jobs(queue=queues[0], job_set_id="svc", job_id=job.job_id)
    wait_for(
        "the Service gone with its pod",
        lambda: not front.list_namespaced_service(namespace, label_selector=keys.ARMADA_JOB_ID_LABEL).items,
        timeout=60,
    )


# ------------------------------------------------------------------ objects through the API
def _object_submitter(
    api: Api, namespace: str, group: str = "jobset.x-k8s.io", plural: str = "jobsets"
) -> str:
    """A token that may create and delete pods (edit) and objects of `plural`.`group` in `namespace`."""
    rbac = k8s.RbacAuthorizationV1Api(api(FRONT))
    editor = f"armada-api-test-{plural}-editor"
    role = {
        "metadata": {"name": editor},
        "rules": [
            {
                "apiGroups": [group],
                "resources": [plural],
                "verbs": ["create", "delete", "get", "list", "watch", "patch"],
            }
        ],
    }
    with contextlib.suppress(k8s.ApiException):  # made by an earlier test: the same
        rbac.create_cluster_role(role)
    token = service_account_token(api, namespace, "submitter", "edit")
    bind_cluster_role(api, namespace, "submitter", editor)
    return token


def _jobset(namespace: str, *, cpu: str = "100m") -> dict[str, Any]:
    """The JobSet sample (2 Jobs of 2 pods, one Armada gang of 4), its pods without a queue of
    their own: they take the queue of the JobSet, which the API labels with the job's."""
    js = dict(yaml.safe_load((ROOT / "manifests" / "samples" / "jobset.yaml").read_text()))
    adapt(js, namespace, cpu=cpu, memory="64Mi", runtime="3s")
    del js["metadata"]["name"]  # named after its job
    return js


def _object_item(
    client: ArmadaClient, namespace: str, obj: dict[str, Any]
) -> submit_pb2.JobSubmitRequestItem:
    return client.create_job_request_item(
        namespace=namespace, annotations={keys.OBJECT_ANNOTATION: json.dumps(obj)}
    )


def _jobsets(api: Api, namespace: str) -> list[dict[str, Any]]:
    listed = k8s.CustomObjectsApi(api(FRONT)).list_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets"
    )
    return list(listed["items"])


def _submit_object(
    armada: Armada,
    api: Api,
    namespace: str,
    queue: str,
    obj: dict[str, Any],
    operators: Callable[..., None],
    *,
    operator: str = "jobset",
    priority: float = 0,
) -> tuple[ArmadaClient, str, str]:
    """`obj` submitted as one job of a new job set by an object submitter (its operator running):
    the client, the job set, the job id."""
    operators(operator)
    job_set = f"objects-{uuid.uuid4().hex[:6]}"
    group, _, _version = obj["apiVersion"].partition("/")
    client = armada.client(_object_submitter(api, namespace, group, f"{obj['kind'].lower()}s"))
    item = _object_item(client, namespace, obj)
    item.priority = priority
    response = client.submit_jobs(queue=queue, job_set_id=job_set, job_request_items=[item])
    (job_id,) = (r.job_id for r in response.job_response_items)
    return client, job_set, job_id


def _followed_to_success(
    client: ArmadaClient, queue: str, job_set: str, job_id: str, api: Api, namespace: str, *, timeout: float
) -> _Collector:
    """The job set's events (the client's own stream), once `job_id`'s went all the way to succeeded
    (closed; what it received is kept)."""
    collector = _Collector(client, queue, job_set)
    lifecycle = ["submitted", "queued", "leased", "pending", "running", "succeeded"]
    try:
        wait_for("the job's events to its end", lambda: collector.of(job_id) == lifecycle, timeout=timeout)
    except AssertionError as e:
        raise AssertionError(f"{e}; events {collector.of(job_id)}; {_describe(api, namespace)}") from None
    finally:
        collector.close()
    return collector


def test_an_object_submitted_through_the_api_runs_its_pods_under_its_queue_to_its_end(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, operators: Callable[..., None]
) -> None:
    queue = queues[0]
    client, job_set, job_id = _submit_object(
        armada, cluster_api, namespace, queue, _jobset(namespace), operators
    )
    collector = _followed_to_success(client, queue, job_set, job_id, cluster_api, namespace, timeout=120)
    # The job is the JobSet, labelled with the job; its operator's pods took its queue and ran as
    # one gang in one remote cluster.
    (js,) = _jobsets(cluster_api, namespace)
    assert js["metadata"]["name"] == f"armada-{job_id}"
    assert js["metadata"]["labels"][keys.ARMADA_JOB_ID_LABEL] == job_id
    assert js["metadata"]["labels"][keys.QUEUE_LABEL] == queue
    assert any(c["type"] == "Completed" and c["status"] == "True" for c in js["status"]["conditions"])
    pods = _pods(cluster_api, namespace)
    assert len(pods) == 4
    assert {p.metadata.labels[keys.QUEUE_LABEL] for p in pods} == {queue}
    assert {p.metadata.labels[keys.QUEUE_OWNER_LABEL] for p in pods} == {js["metadata"]["uid"]}
    assert len({(p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) for p in pods}) == 1
    assert dict(client.get_job_status([job_id]).job_states) == {job_id: submit_pb2.JobState.SUCCEEDED}
    # Listed again (another stream): the same events, the same ids.
    request = event_pb2.JobSetRequest(queue=queue, id=job_set, watch=False)
    listed = [m.id for m in client.event_stub.GetJobSetEvents(request)]
    assert listed == [i.removesuffix(LIVE_MARK) for i, _, j in collector.events if j == job_id]


def test_an_object_is_cancelled_by_deleting_it(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, operators: Callable[..., None]
) -> None:
    queue = queues[0]
    big = _jobset(namespace, cpu="500")  # no remote cluster holds its gang: it waits in its queue
    client, job_set, job_id = _submit_object(armada, cluster_api, namespace, queue, big, operators)
    collector = _Collector(client, queue, job_set)
    try:
        wait_for("the JobSet queued", lambda: collector.of(job_id) == ["submitted", "queued"], timeout=30)
        wait_for("its pods, in its queue", lambda: len(_pods(cluster_api, namespace)) == 4, timeout=60)
        assert dict(client.get_job_status([job_id]).job_states) == {job_id: submit_pb2.JobState.QUEUED}
        cancelled = client.cancel_jobs(queue=queue, job_set_id=job_set, job_id=job_id)
        assert list(cancelled.cancelled_ids) == [job_id]
        wait_for(
            "the cancelled event",
            lambda: collector.of(job_id) == ["submitted", "queued", "cancelled"],
            timeout=30,
        )
    finally:
        collector.close()
    wait_for("the JobSet gone", lambda: not _jobsets(cluster_api, namespace), timeout=30)
    wait_for("its pods gone", lambda: not _pods(cluster_api, namespace), timeout=60)
    assert dict(client.get_job_status([job_id]).job_states) == {job_id: submit_pb2.JobState.UNKNOWN}


def test_bad_objects_get_clear_codes_and_change_nothing(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators("jobset")
    queue = queues[0]
    submitter = armada.client(_object_submitter(cluster_api, namespace))
    pods_only = armada.client(
        service_account_token(cluster_api, namespace, "pods-only", "edit")
    )  # no JobSet rights
    good = _jobset(namespace)
    unknown = {"apiVersion": "example.com/v1", "kind": "Nothing", "metadata": {}}
    not_accepted = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}, "data": {"a": "b"}}
    elsewhere = {**good, "metadata": {"namespace": "default"}}
    invalid = {**good, "spec": {"replicatedJobs": "not a list"}}
    cases = {
        "malformed": (submitter, "{not: [json", grpc.StatusCode.INVALID_ARGUMENT, "neither JSON nor YAML"),
        "unknown kind": (submitter, unknown, grpc.StatusCode.INVALID_ARGUMENT, "serves no kind Nothing"),
        "kind not accepted": (
            submitter,
            not_accepted,
            grpc.StatusCode.INVALID_ARGUMENT,
            "does not accept ConfigMap",
        ),
        "namespace mismatch": (
            submitter,
            elsewhere,
            grpc.StatusCode.INVALID_ARGUMENT,
            "not the job's namespace",
        ),
        "invalid for the front": (submitter, invalid, grpc.StatusCode.INVALID_ARGUMENT, "front cluster"),
        "no rights": (pods_only, good, grpc.StatusCode.PERMISSION_DENIED, "jobsets"),
    }
    for what, (client, obj, code, says) in cases.items():
        text = obj if isinstance(obj, str) else json.dumps(obj)
        item = client.create_job_request_item(namespace=namespace, annotations={keys.OBJECT_ANNOTATION: text})
        # With a good JobSet before it: all or nothing.
        items = [_object_item(client, namespace, good), item]
        error = _rpc_error(lambda: client.submit_jobs(queue=queue, job_set_id="bad", job_request_items=items))  # noqa: B023
        assert (error.code(), what) == (code, what), error.details()
        assert says in (error.details() or ""), (what, error.details())
    assert _jobsets(cluster_api, namespace) == [] and _pods(cluster_api, namespace) == []


def test_a_sparkapplication_is_followed_to_its_end_by_the_state_its_kind_states(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, operators: Callable[..., None]
) -> None:
    """A SparkApplication states its end in `status.applicationState.state`, no condition: the
    shipped kinds' configuration (object-kinds.yaml) says where, and the job set's events follow it
    to `succeeded` (the operator's own SparkPi sample, its driver made by a real spark-submit and
    run on the KWOK nodes of a remote cluster)."""
    operators("spark-operator")  # its samples come with it
    queue = queues[0]
    # With its namespace's Spark RBAC; its pods name no queue: they are in the job's, the application's.
    app = spark_app(namespace, runtime="5s")
    client, job_set, job_id = _submit_object(
        armada, cluster_api, namespace, queue, app, operators, operator="spark-operator"
    )
    _followed_to_success(client, queue, job_set, job_id, cluster_api, namespace, timeout=300)
    done = k8s.CustomObjectsApi(cluster_api(FRONT)).get_namespaced_custom_object(
        "sparkoperator.k8s.io", "v1beta2", namespace, "sparkapplications", app["metadata"]["name"]
    )
    assert done["status"]["applicationState"]["state"] == "COMPLETED"
    assert not done["status"].get("conditions"), done["status"]  # its end is not a condition
    (driver,) = (p for p in _pods(cluster_api, namespace) if p.metadata.labels.get("spark-role") == "driver")
    assert driver.metadata.labels[keys.QUEUE_LABEL] == queue
    assert driver.metadata.labels[keys.QUEUE_OWNER_LABEL] == done["metadata"]["uid"]
    assert driver.metadata.annotations[keys.JOB_PRIORITY_ANNOTATION] == "0"  # the job's
    assert dict(client.get_job_status([job_id]).job_states) == {job_id: submit_pb2.JobState.SUCCEEDED}


@pytest.mark.exclusive  # it fills the remotes
def test_an_objects_priority_orders_its_pods_and_reprioritizing_it_reaches_them(
    armada: Armada, namespace: str, queues: list[str], cluster_api: Api, operators: Callable[..., None]
) -> None:
    """An object's job priority is its pods' (they take it with its queue, at their creation), so
    the core orders them as it orders a pod's job, and ReprioritizeJobs on the object's job reaches
    them: with the remote clusters full, of two waiting JobSets the one reprioritized to 0 gets the
    first room."""
    operators("jobset")
    queue = queues[0]
    client = armada.client(_object_submitter(cluster_api, namespace))
    count = free_in_remotes(cluster_api) // 16
    blockers = [
        client.create_job_request_item(namespace=namespace, pod_spec=_spec("16")) for _ in range(count)
    ]
    response = client.submit_jobs(queue=queue, job_set_id="block", job_request_items=blockers)
    blocking = [r.job_id for r in response.job_response_items]
    wait_for(
        "the remote clusters full",
        lambda: sum(1 for p in _pods(cluster_api, namespace) if p.status.phase == "Running") == count,
        timeout=120,
    )
    ids = []
    for name in ("first", "second"):  # a second apart: the first is first while priorities are equal
        js = _jobset(namespace, cpu="16")  # one pod, the room of one blocker, running until deleted
        js["metadata"]["name"] = name
        (workers,) = js["spec"]["replicatedJobs"]
        workers["replicas"] = 1
        workers["template"]["spec"].update(parallelism=1, completions=1)
        for template in pod_templates(js):
            template["metadata"]["annotations"] = {}
        item = _object_item(client, namespace, js)
        item.priority = 1
        response = client.submit_jobs(queue=queue, job_set_id="wait", job_request_items=[item])
        ids.append(response.job_response_items[0].job_id)
        time.sleep(1.1)
    second = ids[1]

    def priorities(job_set_name: str) -> set[str]:
        return {
            (p.metadata.annotations or {}).get(keys.JOB_PRIORITY_ANNOTATION, "")
            for p in _pods(cluster_api, namespace)
            if (p.metadata.labels or {}).get("jobset.sigs.k8s.io/jobset-name") == job_set_name
        }

    wait_for(
        "the JobSets' pods, with their job's priority",
        lambda: priorities("first") == priorities("second") == {"1"},
    )
    assert (
        len([p for p in _pods(cluster_api, namespace) if p.metadata.labels.get(keys.QUEUE_OWNER_LABEL)]) == 2
    )
    result = client.reprioritize_jobs(new_priority=0, job_ids=[second], job_set_id="wait", queue=queue)
    assert dict(result.reprioritization_results) == {second: ""}
    assert {
        js["metadata"]["name"]: js["metadata"]["annotations"][keys.JOB_PRIORITY_ANNOTATION]
        for js in _jobsets(cluster_api, namespace)
    } == {"first": "1", "second": "0"}
    assert priorities("second") == {"0"} and priorities("first") == {"1"}
    # The JobSet whose pod the extender admits first: the first of their pods the front's watch
    # shows with a decision (the front's order of writes; the admitted pod may end at once on KWOK,
    # as a Job's, and its room go to the other).
    core_api = k8s.CoreV1Api(cluster_api(FRONT))
    since = core_api.list_namespaced_pod(namespace).metadata.resource_version
    admitted: list[str] = []

    def watch_decisions() -> None:
        w = k8s_watch.Watch()
        for event in w.stream(
            core_api.list_namespaced_pod, namespace, resource_version=since, timeout_seconds=90
        ):
            pod = event["object"]
            name = pod.metadata.name
            if name.startswith(("first-", "second-")) and keys.ASSIGNED_CLUSTER in (
                pod.metadata.annotations or {}
            ):
                admitted.append(name.split("-")[0])
                w.stop()

    watcher = threading.Thread(target=watch_decisions, daemon=True)
    watcher.start()
    client.cancel_jobs(queue=queue, job_set_id="block", job_id=blocking[0])
    watcher.join(timeout=100)
    assert admitted[:1] == ["second"], f"admitted first: {admitted}; {_describe(cluster_api, namespace)}"
