"""KubeRay, released and unchanged, with `--batch-scheduler=volcano`: its own RayCluster sample runs
whole in one remote cluster and reports `ready`; one too big for any cluster waits whole."""

from __future__ import annotations

from collections.abc import Callable

from tests.e2e.bridge import Api
from tests.e2e.operators import (
    adapt,
    apply,
    assert_waits_whole,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    sample,
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
