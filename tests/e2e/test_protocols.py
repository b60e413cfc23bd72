"""Every gang protocol operators speak: the gang waits until complete, then runs whole in one cluster."""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from devenv.processes.environment import Environment
from tests.framework.bridge import (
    Api,
    cluster_of,
    create_podgroup,
    events_for,
    front_pods,
    label_namespace_queue,
    pod,
    wait_running,
)
from tests.framework.kube import wait_for
from tests.framework.pods import admission_review

N = 4


def _assert_gang_waits(api: Api, namespace: str, selector: str) -> None:
    """Once the extender says the gang selected waits N-1/N (or places part of it: the failure),
    none of its N-1 pods may have been placed."""

    def placed() -> list[str]:
        return [
            f"{p.metadata.name}: node {p.spec.node_name}, cluster {cluster_of(p)}, "
            f"events {events_for(api, namespace, p.metadata.name)}"
            for p in front_pods(api, namespace, selector)
            if p.spec.node_name or cluster_of(p) is not None
        ]

    def seen() -> bool:
        pods = front_pods(api, namespace, selector)
        if placed():
            return True
        said = events_for(api, namespace, pods[0].metadata.name) if len(pods) == N - 1 else []
        return any("ArmadaWaiting" in e and f"{N - 1}/{N}" in e for e in said)

    wait_for(f"the gang said to wait {N - 1}/{N}", seen, timeout=60)
    assert len(front_pods(api, namespace, selector)) == N - 1
    assert not placed(), f"part of an incomplete gang was placed: {placed()}"


def _assert_waits_then_runs(
    api: Api,
    namespace: str,
    group: str,
    *,
    labels: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    **member: Any,
) -> None:
    """The gang of N pods `<group>-<i>` (labelled g=<group> and `labels`, `spec` added to theirs,
    `member`: the rest of what :func:`pod` makes them of) waits while one is missing, then runs whole
    in one cluster."""

    def make(i: int) -> dict[str, Any]:
        p = pod(f"{group}-{i}", cpu="2", labels={"g": group, **(labels or {})}, **member)
        p["spec"].update(spec or {})
        return p

    core = k8s.CoreV1Api(api("front"))
    for i in range(N - 1):
        core.create_namespaced_pod(namespace, make(i))
    _assert_gang_waits(api, namespace, f"g={group}")
    core.create_namespaced_pod(namespace, make(N - 1))
    running = wait_running(api, namespace, N, f"g={group}")
    assert len({cluster_of(p) for p in running}) == 1


def test_armada_annotations(namespace: str, cluster_api: Api) -> None:
    ann = {keys.GANG_ID: "g", keys.GANG_CARDINALITY: str(N)}
    _assert_waits_then_runs(cluster_api, namespace, "a", queue=namespace, annotations=ann)


def test_volcano_podgroup(namespace: str, cluster_api: Api) -> None:
    # Volcano's `default` (as the operators write it where nobody named a queue) yields to the
    # namespace's queue.
    label_namespace_queue(cluster_api, namespace)
    create_podgroup(
        cluster_api, namespace, "scheduling.volcano.sh", "v1beta1", "vg", {"minMember": N, "queue": "default"}
    )
    ann = {keys.VOLCANO_GROUP_NAME_ANNOTATION: "vg"}
    _assert_waits_then_runs(cluster_api, namespace, "v", queue=None, scheduler="volcano", annotations=ann)


def test_scheduler_plugins_podgroup(namespace: str, cluster_api: Api) -> None:
    create_podgroup(cluster_api, namespace, "scheduling.x-k8s.io", "v1alpha1", "cg", {"minMember": N})
    _assert_waits_then_runs(
        cluster_api,
        namespace,
        "c",
        labels={keys.COSCHEDULING_POD_GROUP_LABEL: "cg"},
        queue=namespace,
        scheduler="scheduler-plugins-scheduler",
    )


def test_kueue_pod_group(namespace: str, cluster_api: Api) -> None:
    _assert_waits_then_runs(
        cluster_api,
        namespace,
        "k",
        labels={keys.KUEUE_POD_GROUP_NAME_LABEL: "kg", keys.KUEUE_QUEUE_NAME_LABEL: namespace},
        queue=None,
        annotations={keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION: str(N)},
    )


def test_volcano_group_min_member_on_a_job(namespace: str, cluster_api: Api) -> None:
    """A plain Job annotated `scheduling.volcano.sh/group-min-member`: gets Volcano's auto PodGroup."""
    batch = k8s.BatchV1Api(cluster_api("front"))
    template = pod("ignored", queue=namespace, cpu="2", scheduler="volcano", labels={"g": "j"})
    template["spec"]["restartPolicy"] = "Never"
    job = {
        "metadata": {"name": "vj", "annotations": {keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: str(N)}},
        "spec": {
            "parallelism": N - 1,
            "completions": N,
            "template": {"metadata": {"labels": template["metadata"]["labels"]}, "spec": template["spec"]},
        },
    }
    batch.create_namespaced_job(namespace, job)
    _assert_gang_waits(cluster_api, namespace, "g=j")
    pods = front_pods(cluster_api, namespace, "g=j")
    group = (pods[0].metadata.annotations or {}).get(keys.VOLCANO_GROUP_NAME_ANNOTATION, "")
    assert group.startswith("podgroup-"), pods[0].metadata.annotations
    batch.patch_namespaced_job("vj", namespace, {"spec": {"parallelism": N}})

    # The Job's pods run, then complete (remote KWOK completes mirrored Job pods): count both.
    def ran_or_done() -> list[Any] | None:
        pods = [
            p for p in front_pods(cluster_api, namespace, "g=j") if p.status.phase in ("Running", "Succeeded")
        ]
        return pods if len(pods) >= N else None

    ran = wait_for(f"{N} Job pods Running or Succeeded", ran_or_done, timeout=90)
    assert len({cluster_of(p) for p in ran}) == 1


def test_admission_names_the_job_podgroup_and_creates_nothing(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    """The webhook only annotates (admission has no side effects: a dry run, or a request the API
    server later rejects, must change nothing); the PodGroup is made by the extender's loop."""
    batch = k8s.BatchV1Api(cluster_api("front"))
    template = pod("ignored", queue=namespace, scheduler="volcano")
    template["spec"]["restartPolicy"] = "Never"
    job = batch.create_namespaced_job(
        namespace,
        {
            "metadata": {"name": "quiet", "annotations": {keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "2"}},
            "spec": {"suspend": True, "template": {"metadata": {}, "spec": template["spec"]}},
        },
    )
    member = pod("quiet-x", queue=namespace, scheduler="volcano")
    member["metadata"]["namespace"] = namespace
    member["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "quiet",
            "uid": job.metadata.uid,
            "controller": True,
        }
    ]
    review = admission_review(member, namespace=namespace, dryRun=True)
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # loopback, the dev CA's certificate
    req = urllib.request.Request(
        f"https://127.0.0.1:{dev_env.port('webhook')}/mutate",
        data=json.dumps(review).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        answer = json.loads(r.read())["response"]
    patch = json.loads(base64.b64decode(answer["patch"]))
    wanted = f"podgroup-{job.metadata.uid}"
    assert any(wanted in json.dumps(op) for op in patch), patch
    time.sleep(3)  # a PodGroup created by admission would be there by now
    groups = k8s.CustomObjectsApi(cluster_api("front")).list_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", namespace, "podgroups"
    )["items"]
    assert groups == []


@pytest.mark.parametrize("phase_before_pods", ["Inqueue"])
def test_volcano_podgroup_goes_inqueue_before_pods_exist(
    namespace: str, cluster_api: Api, phase_before_pods: str
) -> None:
    """training-operator creates pods only once its Volcano PodGroup is Inqueue."""
    create_podgroup(
        cluster_api,
        namespace,
        "scheduling.volcano.sh",
        "v1beta1",
        "early",
        {"minMember": 2, "queue": "default", "minResources": {"cpu": "4"}},
    )
    label_namespace_queue(cluster_api, namespace)
    crd = k8s.CustomObjectsApi(cluster_api("front"))
    from tests.framework.kube import wait_for

    wait_for(
        f"PodGroup phase {phase_before_pods}",
        lambda: (
            (
                crd.get_namespaced_custom_object(
                    "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", "early"
                ).get("status")
                or {}
            ).get("phase")
            == phase_before_pods
        ),
        timeout=20,
    )


def test_native_workload_podgroup(namespace: str, cluster_api: Api) -> None:
    """The native scheduling.k8s.io PodGroup (gang minCount) and the pod field spec.schedulingGroup."""
    create_podgroup(
        cluster_api,
        namespace,
        "scheduling.k8s.io",
        "v1beta1",
        "ng",
        {"schedulingPolicy": {"gang": {"minCount": N}}},
    )

    _assert_waits_then_runs(
        cluster_api, namespace, "n", spec={"schedulingGroup": {"podGroupName": "ng"}}, queue=namespace
    )


def test_late_member_does_not_deadlock_its_gang(namespace: str, cluster_api: Api) -> None:
    """mpi-operator#608: minMember counts the launcher, which is created only once the workers run.
    The workers (one short, with minResources covering all) are admitted after the stall time with
    room reserved; the launcher then joins them in the same cluster."""
    label_namespace_queue(cluster_api, namespace)
    spec = {"minMember": 3, "queue": "default", "minResources": {"cpu": "6", "memory": "3Gi"}}
    create_podgroup(cluster_api, namespace, "scheduling.volcano.sh", "v1beta1", "mpi", spec)
    core = k8s.CoreV1Api(cluster_api("front"))
    ann = {keys.VOLCANO_GROUP_NAME_ANNOTATION: "mpi"}

    def member(name: str) -> dict[str, Any]:
        return pod(name, queue=None, cpu="2", scheduler="volcano", labels={"g": "mpi"}, annotations=ann)

    for i in range(2):
        core.create_namespaced_pod(namespace, member(f"worker-{i}"))
    workers = wait_running(cluster_api, namespace, 2, "g=mpi", timeout=90)
    waited = [e for e in events_for(cluster_api, namespace, "worker-0") if "ArmadaWaiting" in e]
    assert any("2/3" in e for e in waited), waited  # it did wait for the whole gang first
    core.create_namespaced_pod(namespace, member("launcher"))
    running = wait_running(cluster_api, namespace, 3, "g=mpi", timeout=60)
    assert {cluster_of(p) for p in running} == {cluster_of(workers[0])}


def test_pods_created_right_after_their_podgroup_and_namespace_are_managed(
    namespace: str, cluster_api: Api
) -> None:
    """Operators create a PodGroup just before its pods, users a namespace with its queue label just
    before a pod in it: the webhook must see them even when its watches have not yet (it reads them
    from the API server), or the pods would be left unmanaged and the front scheduler would place
    them on a real front node outside every queue. A burst of fresh namespaces, each with a
    Volcano gang of two (one member: it waits) and a pod that names only its namespace's queue."""
    core = k8s.CoreV1Api(cluster_api("front"))
    names = [f"t-read-through-{uuid.uuid4().hex[:6]}-{i}" for i in range(16)]

    def make(ns: str) -> None:
        core.create_namespace({"metadata": {"name": ns, "labels": {keys.QUEUE_LABEL: namespace}}})
        create_podgroup(cluster_api, ns, "scheduling.volcano.sh", "v1beta1", "vg", {"minMember": 2})
        member = pod("member", queue=None, cpu="100m", scheduler="volcano")
        member["metadata"]["annotations"] = {keys.VOLCANO_GROUP_NAME_ANNOTATION: "vg"}
        core.create_namespaced_pod(ns, member)
        core.create_namespaced_pod(ns, pod("single", queue=None, cpu="100m"))

    try:
        with ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(make, names))
        for ns in names:
            for p in core.list_namespaced_pod(ns).items:
                gates = [g.name for g in p.spec.scheduling_gates or []]
                assert keys.SCHEDULING_GATE in gates or cluster_of(p) is not None, (
                    f"{ns}/{p.metadata.name} was not taken by the bridge: gates {gates}, "
                    f"node {p.spec.node_name}, scheduler {p.spec.scheduler_name}"
                )

        def settled() -> list[str] | None:
            """Each namespace's single pod placed by the bridge, its gang member still waiting."""
            out = []
            for ns in names:
                pods = {p.metadata.name: p for p in core.list_namespaced_pod(ns).items}
                if cluster_of(pods["single"]) is None:
                    return None
                out.append(f"{ns}: member on {pods['member'].spec.node_name} ({cluster_of(pods['member'])})")
            return out

        said = wait_for("every single pod placed by the bridge", settled, timeout=120)
        assert all("member on None (None)" in s for s in said), said
    finally:
        for ns in names:
            core.delete_namespace(ns)
