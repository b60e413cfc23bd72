"""Argo Workflows, released and unchanged: its own steps and DAG samples run in one remote cluster
(no gang protocol: the pods share the Workflow as root controller) and end Succeeded. On real
nodes, a DAG task's output parameter reaches the next task: argoexec's `wait` container reports it
through the front API from the remote pod."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from armada_bridge import keys
from devenv.operators.samples import sample
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import Api, front_pods
from tests.framework.kube import RBAC_GROUP, role_binding
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    delete_and_wait_gone,
    kubectl,
    one_remote_cluster,
    wait_status,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

OPERATOR = "argo"


def workflow(path: str, namespace: str, name: str) -> dict[str, Any]:
    (wf,) = sample(OPERATOR, path)
    wf["metadata"] = {"name": name, "namespace": namespace}  # the sample uses generateName
    # Argo's own way to put labels and annotations on every pod of a Workflow.
    wf["spec"]["podMetadata"] = {
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
    delete_and_wait_gone(api, namespace, "workflow", "wf")


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


# What argoexec's `wait` container needs of the workflow's ServiceAccount to report a step's results
# (Argo's docs, "Workflow RBAC": WorkflowTaskResults since v3.4).
EXECUTOR_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "executor"},
    "rules": [
        {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}
    ],
}


def output_parameter_dag(namespace: str) -> dict[str, Any]:
    """Argo's output-parameter sample as a DAG (the second task consumes the first's output
    parameter), its pods on the real nodes (the Workflow's own affinity and tolerations; the
    imported images, never pulled)."""
    wf = workflow("examples/output-parameter.yaml", namespace, "wf")
    wf["spec"]["podMetadata"]["annotations"] = {}
    templates = {t["name"]: t for t in wf["spec"]["templates"]}
    steps = templates.pop(wf["spec"]["entrypoint"])["steps"]
    (generate,), (consume,) = steps
    consume["dependencies"] = [generate["name"]]
    for argument in consume["arguments"]["parameters"]:
        argument["value"] = argument["value"].replace("{{steps.", "{{tasks.")
    wf["spec"]["templates"] = [
        {"name": "main", "dag": {"tasks": [generate, consume]}},
        *templates.values(),
    ]
    wf["spec"]["entrypoint"] = "main"
    on_a_real_node(wf["spec"])
    for t in templates.values():
        t["container"]["imagePullPolicy"] = "IfNotPresent"
    return wf


def test_dag_output_parameter_reaches_the_next_task_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """argoexec (the pinned version's image, built here) reports the first task's output parameter
    through the front API from the remote pod; the controller passes it to the second task, which
    prints it; the Workflow ends Succeeded with the output in its status."""
    operators(OPERATOR)
    apply({**EXECUTOR_ROLE, "metadata": {"name": "executor", "namespace": namespace}})
    binding = role_binding("executor", "executor", "default", namespace, kind="Role")
    binding["metadata"]["namespace"] = namespace
    apply({"apiVersion": f"{RBAC_GROUP}/v1", "kind": "RoleBinding", **binding})
    wf = output_parameter_dag(namespace)
    apply(wf)
    done = wait_status(
        wf, "phase Succeeded", lambda w: phase(w) in ("Succeeded", "Failed", "Error"), timeout=240
    )
    assert phase(done) == "Succeeded", done["status"]
    nodes = {n["displayName"]: n for n in done["status"]["nodes"].values()}
    (produced,) = nodes["generate-parameter"]["outputs"]["parameters"]
    assert (produced["name"], produced["value"]) == ("hello-param", "hello world")  # not the default
    (consumed,) = nodes["consume-parameter"]["inputs"]["parameters"]
    assert consumed["value"] == "hello world"
    (pod,) = [
        p
        for p in front_pods(cluster_api, namespace)
        if (p.metadata.annotations or {}).get("workflows.argoproj.io/node-name") == "wf.consume-parameter"
    ]
    # The step's own output first (argoexec, which runs the command, logs after it).
    log = kubectl("logs", pod.metadata.name, "-c", "main", "-n", namespace)
    assert log.splitlines()[0] == "hello world", log
    assert one_remote_cluster(cluster_api, namespace, 2)
    delete_and_wait_gone(cluster_api, namespace, "workflow", "wf")
