"""KubeRay, released and unchanged, with `--batch-scheduler=volcano`: its own RayCluster sample runs
whole in one remote cluster and reports `ready`; one too big for any cluster waits whole. A RayJob
cannot be followed by the operator (pinned limitation)."""

from __future__ import annotations

from collections.abc import Callable

from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.dev.operators.samples import adapt, sample
from tests.e2e.bridge import Api, cluster_of, front_pods
from tests.e2e.operators import (
    apply,
    assert_waits_whole,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    wait_gone_from_remotes,
    wait_status,
)

OPERATOR = "kuberay"
SAMPLE = "config/samples/ray-cluster.sample.yaml"


def test_raycluster_runs_whole_in_one_remote_cluster_and_is_ready(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (rc,) = sample(OPERATOR, SAMPLE)
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    name = rc["metadata"]["name"]
    apply(adapt(rc, namespace, cpu="1", memory="1Gi"))

    ready = wait_status(rc, "state ready", lambda r: (r.get("status") or {}).get("state") == "ready")
    assert ready["status"].get("readyWorkerReplicas") == 2, ready["status"]
    assert one_remote_cluster(cluster_api, namespace, 3)
    assert podgroup(cluster_api, namespace, f"ray-{name}-pg")["spec"]["minMember"] == 3
    assert "ready" in kubectl("get", "raycluster", name, "-n", namespace)

    kubectl("delete", "raycluster", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_raycluster_too_big_for_any_cluster_waits_whole(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (rc,) = sample(OPERATOR, SAMPLE)
    # head + 4 workers of 30 CPU: each fits a 32-CPU node, the five do not fit a 4-node cluster.
    rc["spec"]["workerGroupSpecs"][0].update(replicas=4, minReplicas=4)
    name = rc["metadata"]["name"]
    apply(adapt(rc, namespace, cpu="30", memory="1Gi"))

    assert_waits_whole(cluster_api, namespace, 5)
    state = (get(rc).get("status") or {}).get("state")
    assert state not in ("ready", "failed"), state
    kubectl("delete", "raycluster", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_limitation_rayjob_fails_as_the_operator_cannot_reach_the_ray_dashboard(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Pinned limitation (docs/operators.md): a RayJob's cluster runs whole in one remote cluster
    and gets ready, but the operator follows the job through the Ray dashboard on the head
    Service (`<cluster>-head-svc.<ns>.svc.cluster.local:8265`), a name its host cannot resolve or
    reach; once the submitter ends, KubeRay gives up and marks the RayJob Failed."""
    operators(OPERATOR)
    k8s.CoreV1Api(cluster_api("front")).patch_namespace(
        namespace, {"metadata": {"labels": {keys.QUEUE_LABEL: "default"}}}
    )  # also for the submitter Job's pod, which KubeRay writes itself
    docs = sample(OPERATOR, "config/samples/ray-job.sample.yaml")
    (rj,) = [d for d in docs if d["kind"] == "RayJob"]
    for d in docs:
        d["metadata"]["namespace"] = namespace
        apply(adapt(d, namespace, cpu="1", memory="1Gi") if d is rj else d)
    done = wait_status(rj, "a terminal deployment status", lambda j: _deployment(j) in ("Complete", "Failed"))
    assert _deployment(done) == "Failed", done["status"]
    cluster = done["status"]["rayClusterName"]
    assert done["status"]["rayClusterStatus"]["head"]["podName"]
    assert done["status"].get("dashboardURL", "").endswith(":8265"), done["status"]
    pods = [p for p in front_pods(cluster_api, namespace) if p.metadata.name.startswith(cluster)]
    assert len({cluster_of(p) for p in pods}) == 1 and len(pods) == 2, [p.metadata.name for p in pods]
    kubectl("delete", "rayjob", rj["metadata"]["name"], "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def _deployment(rayjob: dict[str, object]) -> object:
    status = rayjob.get("status")
    return status.get("jobDeploymentStatus") if isinstance(status, dict) else None
