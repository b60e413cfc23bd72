"""Kubeflow Trainer v2, released and unchanged (with the JobSet controller it runs TrainJobs on): its
own Volcano example (a ClusterTrainingRuntime with `podGroupPolicy.volcano` and a 4-node TrainJob)
runs whole in one remote cluster and ends Complete; one too big for any cluster waits whole."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devenv.operators.samples import sample
from tests.framework.bridge import Api
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    assert_waits_whole,
    delete_and_wait_gone,
    get,
    kubectl,
    one_remote_cluster,
    true_conditions,
    wait_status,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

OPERATOR = "trainer"
SAMPLE = "examples/yaml/04-volcano-integration.yaml"


def _trainjob(api: Api, namespace: str, nodes: int, cpu: str) -> dict[str, Any]:
    runtime, job = sample(OPERATOR, SAMPLE)
    assert runtime["kind"] == "ClusterTrainingRuntime" and job["kind"] == "TrainJob"
    apply(runtime)  # cluster-scoped, shared by the tests: unchanged
    job["metadata"]["namespace"] = namespace
    job["spec"]["trainer"]["numNodes"] = nodes
    job["spec"]["trainer"]["resourcesPerNode"] = {"requests": {"cpu": cpu, "memory": "1Gi"}}
    apply(job)
    return dict(job)


def test_trainjob_runs_whole_in_one_remote_cluster_and_completes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    job = _trainjob(cluster_api, namespace, 4, "1")
    done = wait_status(job, "Complete or Failed", lambda j: {"Complete", "Failed"} & true_conditions(j))
    assert "Complete" in true_conditions(done), done.get("status")
    assert one_remote_cluster(cluster_api, namespace, 4)
    name = job["metadata"]["name"]
    assert "Complete" in kubectl(
        "get", "trainjob", name, "-n", namespace, "-o", "custom-columns=S:.status.conditions[*].type"
    )
    delete_and_wait_gone(cluster_api, namespace, "trainjob", name)


def test_trainjob_too_big_for_any_cluster_waits_whole(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    job = _trainjob(cluster_api, namespace, 5, "30")
    assert_waits_whole(cluster_api, namespace, 5)
    assert "Failed" not in true_conditions(get(job))
    delete_and_wait_gone(cluster_api, namespace, "trainjob", job["metadata"]["name"])
