"""The Dask operator (dask-kubernetes from PyPI, unchanged): its own DaskCluster and DaskJob samples
(from its package's tests) run in one remote cluster (no gang protocol: the pods share the
DaskCluster or DaskJob as root controller) and the DaskJob ends Successful; on real nodes a DaskJob
computes on its workers, and a DaskCluster scales down through its scheduler."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from armada_bridge import keys
from devenv.operators.samples import sample
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import Api, cluster_of, front_pods
from tests.framework.kube import wait_for
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    REMOTES,
    apply,
    delete_and_wait_gone,
    kubectl,
    run_kubectl,
    wait_status,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

OPERATOR = "dask"
SAMPLES = "operator/controller/tests/resources"


def _placed(api: Api, namespace: str, count: int) -> set[str | None]:
    """The clusters of the namespace's pods once `count` of them are bound."""

    def probe() -> set[str | None] | None:
        pods = [p for p in front_pods(api, namespace) if p.spec.node_name]
        return {cluster_of(p) for p in pods} if len(pods) >= count else None

    return wait_for(f"{count} pods placed", probe, timeout=120)


def _small(obj: dict[str, Any]) -> None:
    for part in ("worker", "scheduler"):
        for c in obj["spec"][part]["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}


def test_daskcluster_runs_in_one_remote_cluster(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (dc,) = sample(OPERATOR, f"{SAMPLES}/simplecluster.yaml")
    dc["metadata"]["namespace"] = namespace
    _small(dc)
    apply(dc)
    clusters = _placed(cluster_api, namespace, 3)  # scheduler + 2 workers
    assert len(clusters) == 1 and clusters <= set(REMOTES), clusters
    # The operator sets Running when it sees its scheduler Service, then its create handler's own
    # `Pending` patch lands after that (an upstream ordering race, frequent on a fast API server);
    # with a ClusterIP Service nothing triggers Running again.
    current = wait_status(dc, "a phase", lambda d: bool((d.get("status") or {}).get("phase")))
    assert current["status"]["phase"] in ("Pending", "Running"), current["status"]
    delete_and_wait_gone(cluster_api, namespace, "daskcluster", "simple")


def test_daskjob_runs_in_one_remote_cluster_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, f"{SAMPLES}/simplejob.yaml")
    job["metadata"]["namespace"] = namespace
    job["spec"]["job"]["metadata"] = {"annotations": {keys.SIMULATED_RUNTIME: "10s"}}
    job["spec"]["job"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1", "memory": "1Gi"}}
    _small(job["spec"]["cluster"])
    apply(job)
    clusters = _placed(cluster_api, namespace, 4)  # runner + scheduler + 2 workers
    assert len(clusters) == 1 and clusters <= set(REMOTES), clusters
    done = wait_status(
        job, "Successful", lambda j: (j.get("status") or {}).get("jobStatus") in ("Successful", "Failed")
    )
    assert done["status"]["jobStatus"] == "Successful"
    assert "Successful" in kubectl("get", "daskjob", "simple-job", "-n", namespace)
    delete_and_wait_gone(cluster_api, namespace, "daskjob", "simple-job")


def _on_real_nodes(obj: dict[str, Any]) -> None:
    """Every pod spec of a DaskCluster spec (its scheduler's and its workers') on the real nodes, small."""
    for part in ("worker", "scheduler"):
        _real_pod(obj["spec"][part]["spec"])


def _real_pod(spec: dict[str, Any]) -> None:
    for c in spec["containers"]:
        c["resources"] = {"requests": {"cpu": "100m", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    on_a_real_node(spec)


def test_daskjob_computes_on_real_nodes_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """The DaskJob sample on real nodes, its runner computing on the cluster's workers: the client
    reaches the scheduler at the address the operator gives it (the scheduler Service's name, in
    the remote cluster: its DNS and kube-proxy), the sum comes back, the job ends Successful."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, f"{SAMPLES}/simplejob.yaml")
    job["metadata"]["namespace"] = namespace
    (runner,) = job["spec"]["job"]["spec"]["containers"]
    runner["args"] = [
        "python",
        "-c",
        "from dask.distributed import Client; client = Client(name='job'); "
        "client.wait_for_workers(2, timeout=120); "
        "workers = client.scheduler_info()['workers']; "
        "total = client.submit(sum, range(1001)).result(); "
        "print(f'{len(workers)} workers, sum {total}', flush=True)",
    ]
    _real_pod(job["spec"]["job"]["spec"])
    _on_real_nodes(job["spec"]["cluster"])
    apply(job)
    done = wait_status(
        job,
        "Successful",
        lambda j: (j.get("status") or {}).get("jobStatus") in ("Successful", "Failed"),
        timeout=240,
    )
    assert done["status"]["jobStatus"] == "Successful", done["status"]
    clusters = _placed(cluster_api, namespace, 1)
    assert len(clusters) == 1 and clusters <= set(REMOTES), clusters
    (pod,) = front_pods(cluster_api, namespace, "dask.org/component=job-runner")
    log = kubectl("logs", pod.metadata.name, "-n", namespace)
    assert "2 workers, sum 500500" in log, log
    delete_and_wait_gone(cluster_api, namespace, "daskjob", "simple-job")


def test_daskcluster_scales_down_through_its_scheduler_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Scaling a DaskCluster down on real nodes: the operator asks the remote scheduler which
    workers to retire (through a port-forward to the scheduler's Service: the front API server,
    the vkubelet, the remote kubelet), the scheduler retires one, its Deployment goes and its pod
    leaves the remote cluster, and the other worker runs on."""
    operators(OPERATOR)
    (dc,) = sample(OPERATOR, f"{SAMPLES}/simplecluster.yaml")
    dc["metadata"]["namespace"] = namespace
    _on_real_nodes(dc)
    apply(dc)
    workers = "dask.org/component=worker"
    wait_for(
        "2 workers Running",
        lambda: (
            len([p for p in front_pods(cluster_api, namespace, workers) if p.status.phase == "Running"]) == 2
        ),
        timeout=180,
    )
    # The operator asks the scheduler which workers to retire, once: asked before they have joined
    # it, the scheduler names none and both stay (the operator's own race, docs/operators.md).
    (scheduler,) = front_pods(cluster_api, namespace, "dask.org/component=scheduler")

    def registered() -> bool:
        log = run_kubectl("logs", scheduler.metadata.name, "-n", namespace)
        return log.returncode == 0 and log.stdout.count("Register worker") >= 2

    wait_for("both workers registered with the scheduler", registered, timeout=120, interval=2)
    kubectl(
        "patch",
        "daskcluster",
        "simple",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"worker":{"replicas":1}}}',
    )
    apps = k8s.AppsV1Api(cluster_api("front"))
    wait_for(
        "one worker Deployment left",
        lambda: len(apps.list_namespaced_deployment(namespace, label_selector=workers).items) == 1,
        timeout=120,
    )
    wait_for("one worker pod left", lambda: len(front_pods(cluster_api, namespace, workers)) == 1, timeout=90)
    log = kubectl("logs", scheduler.metadata.name, "-n", namespace)
    assert "Retire worker addresses" in log or "Retiring worker" in log, log
    (left,) = front_pods(cluster_api, namespace, workers)
    assert left.status.phase == "Running", left.status
    # The phase is the operator's own race (docs/operators.md, "DaskCluster phase"), pods or not.
    current = wait_status(dc, "a phase", lambda d: bool((d.get("status") or {}).get("phase")))
    assert current["status"]["phase"] in ("Pending", "Running"), current["status"]
    delete_and_wait_gone(cluster_api, namespace, "daskcluster", "simple")
