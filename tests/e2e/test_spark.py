"""The Spark operator, released and unchanged, with its Volcano batch scheduler and its pod webhook:
its own SparkPi sample for Volcano (`examples/spark-pi-volcano.yaml`) is submitted by the operator's
controller through a real `spark-submit` (PyPI pyspark, Debian's Java); the driver pod goes through
the bridge to a remote cluster and the application ends COMPLETED when the driver does; one whose
reservation (its PodGroup's minResources: driver + executors) fits no cluster waits whole and is not
failed. Executors are created by a really running driver, which the KWOK remotes cannot provide:
pinned below."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.dev.operators.samples import sample
from tests.e2e.bridge import Api, cluster_of, front_pods, remote_pods
from tests.e2e.operators import (
    REMOTES,
    Obj,
    apply,
    assert_waits_whole,
    get,
    kubectl,
    podgroup,
    wait_gone_from_remotes,
    wait_status,
)
from tests.support import wait_for

OPERATOR = "spark-operator"
SAMPLE = "examples/spark-pi-volcano.yaml"
# The ServiceAccount and Role its Helm chart installs in each job namespace (the driver runs as it).
JOB_NAMESPACE_RBAC = "config/spark-rbac/spark-application-rbac.yaml"
DRIVER = "spark-role=driver"
EXECUTOR = "spark-role=executor"


def spark_app(
    namespace: str,
    *,
    cores: int = 1,
    executors: int | None = None,
    runtime: str | None = None,
    queue: str = "default",
) -> Obj:
    """The operator's own SparkPi sample for Volcano, with its job namespace's RBAC applied, changed
    only in namespace, sizes, the queue label and (driver) how long KWOK lets it run."""
    for doc in sample(OPERATOR, JOB_NAMESPACE_RBAC):
        doc["metadata"]["namespace"] = namespace
        apply(doc)
    (app,) = sample(OPERATOR, SAMPLE)
    app["metadata"]["namespace"] = namespace
    spec = app["spec"]
    assert spec["batchScheduler"] == "volcano"
    for role in ("driver", "executor"):
        spec[role]["cores"] = cores
        spec[role].setdefault("labels", {})[keys.QUEUE_LABEL] = queue
    if executors is not None:
        spec["executor"]["instances"] = executors
    if runtime is not None:
        spec["driver"].setdefault("annotations", {})[keys.SIMULATED_RUNTIME] = runtime
    return app


def state(app: Obj) -> str:
    return str(((app.get("status") or {}).get("applicationState") or {}).get("state") or "")


def test_sparkapplication_driver_runs_in_a_remote_cluster_and_completes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    app = spark_app(namespace, runtime="5s")
    name = app["metadata"]["name"]
    apply(app)

    # The operator's Volcano PodGroup: one member (the driver) reserving driver + 2 executors.
    pg = wait_for("the application's Volcano PodGroup", lambda: _podgroup(cluster_api, namespace, name))
    assert pg["spec"]["minMember"] == 1
    assert pg["spec"]["minResources"]["cpu"] == "3", pg["spec"]
    driver = wait_for(
        "the driver pod, made by spark-submit, admitted to a remote cluster",
        lambda: next((p for p in front_pods(cluster_api, namespace, DRIVER) if p.spec.node_name), None),
        timeout=120,
    )
    # The operator's pod webhook gave it the batch scheduler's name.
    assert driver.spec.scheduler_name == "volcano"
    cluster = cluster_of(driver)
    assert cluster in REMOTES
    wait_for(
        f"the driver pod, alone, in {cluster}",
        lambda: (
            [p.metadata.name for p in remote_pods(cluster_api, cluster, namespace)] == [driver.metadata.name]
        ),
    )

    done = wait_status(app, "COMPLETED", lambda a: state(a) == "COMPLETED")
    assert done["status"]["driverInfo"]["podName"] == driver.metadata.name
    # `kubectl get` tells the truth: its STATUS column is the operator's application state.
    assert "COMPLETED" in kubectl("get", "sparkapplication", name, "-n", namespace)

    kubectl("delete", "sparkapplication", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_sparkapplication_too_big_for_any_cluster_waits_whole_and_is_not_failed(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    # 1 driver + 10 executors of 30 CPUs: the reservation (301 CPUs) fits no 4x32-CPU cluster,
    # though the driver alone would.
    app = spark_app(namespace, cores=30, executors=10, runtime="5s")
    name = app["metadata"]["name"]
    apply(app)

    pg = wait_for("the application's Volcano PodGroup", lambda: _podgroup(cluster_api, namespace, name))
    assert pg["spec"]["minResources"]["cpu"] == "330", pg["spec"]
    wait_for("the driver pod", lambda: front_pods(cluster_api, namespace, DRIVER), timeout=120)
    assert_waits_whole(cluster_api, namespace, 1)
    current = get(app)
    assert state(current) == "SUBMITTED", current.get("status")
    kubectl("delete", "sparkapplication", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_limitation_executors_never_appear_as_the_driver_does_not_really_run(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Spark's driver, once running, creates the executor pods through the Kubernetes API. In the
    KWOK remotes no container runs, so the driver never asks for them: the application is RUNNING
    (the operator follows the driver pod) with no executor, and the operator reports none."""
    operators(OPERATOR)
    app = spark_app(namespace)  # no simulated runtime: the driver runs until deleted
    name = app["metadata"]["name"]
    apply(app)

    running = wait_status(app, "RUNNING", lambda a: state(a) == "RUNNING")
    (driver,) = front_pods(cluster_api, namespace, DRIVER)
    assert driver.status.phase == "Running" and cluster_of(driver) in REMOTES
    time.sleep(15)
    assert front_pods(cluster_api, namespace, EXECUTOR) == []
    remote = {c: sorted(p.metadata.name for p in remote_pods(cluster_api, c, namespace)) for c in REMOTES}
    assert remote == {c: [driver.metadata.name] if c == cluster_of(driver) else [] for c in REMOTES}
    current = get(app)
    assert state(current) == "RUNNING"
    assert not (current.get("status") or {}).get("executorState"), current["status"]
    assert running["status"]["driverInfo"]["podName"] == driver.metadata.name

    kubectl("delete", "sparkapplication", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def _podgroup(api: Api, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        return podgroup(api, namespace, f"spark-{name}-pg")
    except ApiException as e:
        if e.status == 404:
            return None
        raise
