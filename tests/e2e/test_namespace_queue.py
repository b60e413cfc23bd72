"""A team's operator jobs run in its namespace's queue (issue 48): an admin creates a Queue and
labels the team's namespace `armadaproject.io/queue=<queue>`; a RayCluster, a PyTorchJob and a
SparkApplication that name no queue (their operators write Volcano's `default` on their PodGroups)
then run in that queue, in an environment where no catch-all queue takes the namespace."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.contract import queue_access
from armada_bridge.contract.pods import pod_requests
from armada_bridge.core import quantities
from cli.views import why
from devenv.operators.samples import adapt, sample
from tests.framework import ray_clusters, spark_apps
from tests.framework.bridge import Api, front_pods
from tests.framework.kube import wait_for
from tests.framework.operators import apply, kubectl, wait_gone_from_remotes

PYTORCH = "training-operator"
PODGROUPS = ("scheduling.volcano.sh", "v1beta1", "podgroups")


def _queue(api: Api, name: str) -> dict[str, Any]:
    return dict(
        k8s.CustomObjectsApi(api("front")).get_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", name)
    )


def test_operator_jobs_that_name_no_queue_run_in_their_namespaces_queue(
    namespace_in_its_queue: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    namespace = queue = namespace_in_its_queue
    front = cluster_api("front")
    labels = dict(k8s.CoreV1Api(front).read_namespace(namespace).metadata.labels or {})
    # No catch-all: the environment's `default` queue does not take this namespace.
    assert queue_access.refusal(_queue(cluster_api, "default"), namespace, labels) is not None

    operators(ray_clusters.OPERATOR, PYTORCH, spark_apps.OPERATOR)
    (rc,) = sample(ray_clusters.OPERATOR, "config/samples/ray-cluster.sample.yaml")
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 1
    apply(adapt(rc, namespace, cpu="1", memory="1Gi"))
    (job,) = sample(PYTORCH, "examples/pytorch/simple.yaml")
    apply(adapt(job, namespace, cpu="1", memory="1Gi"))
    apply(spark_apps.spark_app(namespace))
    # head + worker, master + worker, the driver
    expected = 2 + 1 + int(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"]) + 1

    def running() -> list[Any] | None:
        pods = [p for p in front_pods(cluster_api, namespace) if p.status.phase == "Running"]
        return pods if len(pods) >= expected else None

    pods = wait_for(f"the {expected} pods of the three objects Running", running, timeout=240)
    # Each operator made a Volcano PodGroup that names no queue but Volcano's default.
    groups = k8s.CustomObjectsApi(front).list_namespaced_custom_object(
        *PODGROUPS[:2], namespace, PODGROUPS[2]
    )
    assert len(groups["items"]) == 3, [g["metadata"]["name"] for g in groups["items"]]
    assert {g["spec"].get("queue") for g in groups["items"]} == {"default"}, groups["items"]
    for p in pods:
        assert keys.QUEUE_LABEL not in (p.metadata.labels or {}), p.metadata.labels
        said = why(front, p.metadata.name, namespace)
        assert f"queue: {queue} (from the namespace's label {keys.QUEUE_LABEL})" in said, said
    # `why` of an object explains each of its pods (found through their ownerReferences).
    workers = int(job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"])
    for target, count in (
        (f"pytorchjob/{job['metadata']['name']}", 1 + workers),
        (f"raycluster/{rc['metadata']['name']}", 2),
    ):
        said = why(front, target, namespace)
        assert said.startswith(
            f"{target.split('/')[0]} {namespace}/{target.split('/')[1]}: {count} pod(s): {count} Running"
        ), said
        assert said.count(f"queue: {queue} (from the namespace's label") == count, said
    # The queue is charged with all of them.
    requests: dict[str, int] = {}
    for p in pods:
        quantities.add_into(requests, pod_requests(front.sanitize_for_serialization(p)))
    cpu = quantities.format_quantity("cpu", requests["cpu"])

    def allocated() -> str | None:
        return ((_queue(cluster_api, queue).get("status") or {}).get("allocated") or {}).get("cpu")

    wait_for(f"queue {queue} allocated cpu {cpu}", lambda: allocated() == cpu, timeout=60)
    for kind in ("raycluster", "pytorchjob", "sparkapplication"):
        kubectl("delete", kind, "--all", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)
