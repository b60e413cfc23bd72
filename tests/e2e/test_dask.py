"""The Dask operator (dask-kubernetes from PyPI, unchanged): its own DaskCluster and DaskJob samples
(from its package's tests) run in one remote cluster (no gang protocol: the pods share the
DaskCluster or DaskJob as root controller) and the DaskJob ends Successful. Pinned limitations
(docs/operators.md): the DaskCluster's phase may stay Pending, and scaling down never completes."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.dev.operators.samples import sample
from tests.e2e.bridge import Api, cluster_of, front_pods
from tests.e2e.operators import REMOTES, apply, kubectl, wait_gone_from_remotes, wait_status
from tests.support import wait_for

OPERATOR = "dask"
SAMPLES = "operator/controller/tests/resources"


def _in_queue(api: Api, namespace: str) -> None:
    """The queue label on the namespace: the Dask objects have several pod templates of their own shape."""
    k8s.CoreV1Api(api("front")).patch_namespace(
        namespace, {"metadata": {"labels": {keys.QUEUE_LABEL: "default"}}}
    )


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
    _in_queue(cluster_api, namespace)
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
    kubectl("delete", "daskcluster", "simple", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_daskjob_runs_in_one_remote_cluster_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    _in_queue(cluster_api, namespace)
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
    kubectl("delete", "daskjob", "simple-job", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_limitation_scale_down_cannot_retire_workers_through_the_scheduler(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Pinned limitation (docs/operators.md): scaling down asks the Dask scheduler which workers to
    retire, over HTTP to the scheduler Service (no such name on the operator's host) and then
    through a port-forward to the scheduler pod, which the vkubelet does not serve (404); kr8s
    retries that without end, so no worker is removed until the DaskCluster is deleted."""
    operators(OPERATOR)
    _in_queue(cluster_api, namespace)
    (dc,) = sample(OPERATOR, f"{SAMPLES}/simplecluster.yaml")
    dc["metadata"]["namespace"] = namespace
    _small(dc)
    apply(dc)
    _placed(cluster_api, namespace, 3)
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
    time.sleep(15)
    workers = apps.list_namespaced_deployment(namespace, label_selector="dask.org/component=worker").items
    assert len(workers) == 2, [d.metadata.name for d in workers]
    kubectl("delete", "daskcluster", "simple", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)
