"""Argo Workflows, released and unchanged: its own steps and DAG samples run in one remote cluster
(no gang protocol: the pods share the Workflow as root controller) and end Succeeded. A step with
output parameters never completes: its results are reported by the argoexec `wait` container
through the front API, which the remote pods cannot reach yet (and a KWOK pod runs no container)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from armada_bridge import keys
from armada_bridge.dev.operators.samples import sample
from tests.e2e.bridge import Api, front_pods
from tests.e2e.operators import apply, kubectl, one_remote_cluster, wait_gone_from_remotes, wait_status
from tests.support import wait_for

OPERATOR = "argo"


def workflow(path: str, namespace: str, name: str) -> dict[str, Any]:
    (wf,) = sample(OPERATOR, path)
    wf["metadata"] = {"name": name, "namespace": namespace}  # the sample uses generateName
    # Argo's own way to put labels and annotations on every pod of a Workflow.
    wf["spec"]["podMetadata"] = {
        "labels": {keys.QUEUE_LABEL: "default"},
        "annotations": {keys.SIMULATED_RUNTIME: "2s"},
    }
    return dict(wf)


def phase(wf: dict[str, Any]) -> str | None:
    return (wf.get("status") or {}).get("phase")


def _runs_and_succeeds(path: str, pods: int, namespace: str, api: Api) -> None:
    wf = workflow(path, namespace, "wf")
    apply(wf)
    done = wait_status(wf, "phase Succeeded", lambda w: phase(w) in ("Succeeded", "Failed", "Error"))
    assert phase(done) == "Succeeded", done["status"]
    assert one_remote_cluster(api, namespace, pods)
    assert "Succeeded" in kubectl("get", "workflow", "wf", "-n", namespace)
    kubectl("delete", "workflow", "wf", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(api, namespace)


def test_steps_workflow_runs_in_one_remote_cluster_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    _runs_and_succeeds("examples/steps.yaml", 3, namespace, cluster_api)


def test_dag_workflow_runs_in_one_remote_cluster_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    _runs_and_succeeds("examples/dag-diamond.yaml", 4, namespace, cluster_api)


def test_limitation_output_parameters_are_never_reported(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Pinned limitation (docs/operators.md): the step's pod completes remotely, but its outputs
    never reach the Workflow, so the step stays Pending and the Workflow Running."""
    operators(OPERATOR)
    wf = workflow("examples/output-parameter.yaml", namespace, "wf")
    apply(wf)
    wait_for(
        "the first step's pod completed remotely",
        lambda: any(p.status.phase == "Succeeded" for p in front_pods(cluster_api, namespace)),
        timeout=120,
    )
    time.sleep(10)
    current = wait_status(wf, "still running", lambda w: phase(w) == "Running")
    nodes = (current.get("status") or {}).get("nodes") or {}
    producer = [n for n in nodes.values() if n.get("displayName") == "generate-parameter"]
    assert producer and producer[0]["phase"] != "Succeeded", producer
    kubectl("delete", "workflow", "wf", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)
