"""The Spark operator, released and unchanged, with its Volcano batch scheduler and its pod webhook:
its own SparkPi sample for Volcano (`examples/spark-pi-volcano.yaml`) is submitted by the operator's
controller through a real `spark-submit` (PyPI pyspark, Debian's Java); the driver pod goes through
the bridge to a remote cluster and the application ends COMPLETED when the driver does; one whose
reservation (its PodGroup's minResources: driver + executors) fits no cluster waits whole and is not
failed. On real nodes the driver really runs and creates its executors through the front API,
which run in its cluster, and SparkPi's result is in the driver's log; an elastic application's web
UI answers through its front Service."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.objects import Obj
from tests.framework.bridge import Api, cluster_of, front_pods, remote_pods, running_pods, wait_running
from tests.framework.kube import wait_for
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    REMOTES,
    apply,
    assert_waits_whole,
    delete_and_wait_gone,
    found_podgroup,
    get,
    kubectl,
    wait_status,
)
from tests.framework.spark_apps import DRIVER, EXECUTOR, OPERATOR, elastic_app, spark_app, state

pytestmark = IN_ITS_NAMESPACES_QUEUE


def test_sparkapplication_driver_runs_in_a_remote_cluster_and_completes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:

    operators(OPERATOR)
    app = spark_app(namespace, runtime="5s")
    name = app["metadata"]["name"]
    apply(app)

    # The operator's Volcano PodGroup: one member (the driver) reserving driver + 2 executors.
    pg = _podgroup(cluster_api, namespace, name)
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

    delete_and_wait_gone(cluster_api, namespace, "sparkapplication", name)


def test_sparkapplication_too_big_for_any_cluster_waits_whole_and_is_not_failed(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    # 1 driver + 10 executors of 30 CPUs: the reservation (301 CPUs) fits no 4x32-CPU cluster,
    # though the driver alone would.
    app = spark_app(namespace, cores=30, executors=10, runtime="5s")
    name = app["metadata"]["name"]
    apply(app)

    pg = _podgroup(cluster_api, namespace, name)
    assert pg["spec"]["minResources"]["cpu"] == "330", pg["spec"]
    wait_for("the driver pod", lambda: front_pods(cluster_api, namespace, DRIVER), timeout=120)
    assert_waits_whole(cluster_api, namespace, 1)
    current = get(app)
    assert state(current) == "SUBMITTED", current.get("status")
    delete_and_wait_gone(cluster_api, namespace, "sparkapplication", name)


@pytest.mark.exclusive  # beside the other real-node tests its executors waited > 480 s (a cold CI run)
def test_sparkpi_really_runs_its_driver_and_executors_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """The sample on real nodes: the driver runs remotely and creates its two executors through the
    front API (as `https://kubernetes.default.svc`, with its own ServiceAccount's token); they are
    captured, admitted by the extender to the driver's cluster, reach the driver through its
    headless Service there, and compute; the application ends COMPLETED and the driver's log on the
    front says what SparkPi found."""
    operators(OPERATOR)
    app = spark_app(namespace, real=True)
    name = app["metadata"]["name"]
    apply(app)

    # The driver deletes its executors when it ends: they are looked at while they run. Its JVM
    # starts slowly on busy cores.
    try:
        executors = wait_for(
            "the driver's two executors Running",
            lambda: running if len(running := running_pods(cluster_api, namespace, EXECUTOR)) == 2 else None,
            timeout=480,
        )
    except AssertionError as e:
        pods = kubectl("get", "pods", "-n", namespace, "-o", "wide")
        events = kubectl("get", "events", "-n", namespace, "--sort-by=.lastTimestamp")
        raise AssertionError(f"{e}\n{pods}\n{events[-4000:]}") from None
    (driver,) = front_pods(cluster_api, namespace, DRIVER)
    assert {cluster_of(p) for p in [driver, *executors]} == {cluster_of(driver)}
    for e in executors:  # made by the driver, admitted like any other pod
        assert (e.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), e.metadata.annotations
        assert e.metadata.labels.get("spark-exec-id"), e.metadata.labels  # Spark's own label for them
    done = wait_status(app, "COMPLETED", lambda a: state(a) in ("COMPLETED", "FAILED"), timeout=300)
    assert state(done) == "COMPLETED", done["status"]
    assert len(done["status"].get("executorState") or {}) == 2, done["status"]
    log = kubectl("logs", driver.metadata.name, "-n", namespace)
    assert re.search(r"Pi is roughly 3\.1\d*", log), log[-3000:]
    delete_and_wait_gone(cluster_api, namespace, "sparkapplication", name)


def test_dynamic_allocation_executors_come_and_go_under_the_applications_queue_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """Dynamic allocation (the operator's `dynamicAllocation`, with shuffle tracking) on real nodes:
    a backlog of slow tasks makes the running driver ask for executors beyond its first, each
    captured and admitted to the driver's cluster under the application's queue; when its stage is
    done and the executors idle past their timeout, the driver releases them down to its minimum,
    and their pods leave the front and the remote cluster while the application still runs."""
    operators(OPERATOR)
    # The stage runs again until 3 executors have joined: however slow they are to start on a busy
    # machine, the backlog lasts until they run (else it could end first, and they with it).
    app = elastic_app(
        namespace, "spark_elastic.py", arguments=["16", "4", "45", "--peak", "3"], queue=namespace
    )
    name = app["metadata"]["name"]
    apply(app)

    peak = wait_running(cluster_api, namespace, 3, EXECUTOR, timeout=240)  # more than the first
    (driver,) = front_pods(cluster_api, namespace, DRIVER)
    cluster = cluster_of(driver)
    for e in peak:
        assert cluster_of(e) == cluster, (e.metadata.name, cluster_of(e), cluster)
        assert e.metadata.labels.get(keys.QUEUE_LABEL) == namespace, e.metadata.labels
        assert (e.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), e.metadata.annotations
    released = wait_for(
        "idle executors released down to the minimum",
        lambda: left if len(left := front_pods(cluster_api, namespace, EXECUTOR)) == 1 else None,
        timeout=180,
    )
    running = get(app)
    assert state(running) == "RUNNING"  # released while the application runs on
    # Its web UI, through the front Service the operator made for it (the front API server's proxy
    # dials the driver's front address: its relay's), while it runs.
    info = running["status"]["driverInfo"]
    front = k8s.CoreV1Api(cluster_api("front"))
    service = f"{info['webUIServiceName']}:{info['webUIPort']}"

    def applications() -> Any:
        try:
            return json.loads(
                front.connect_get_namespaced_service_proxy_with_path(
                    service, namespace, "api/v1/applications", _preload_content=False
                ).data
            )
        except (ApiException, ValueError):
            return None

    ui = wait_for("the driver's web UI through its front Service", applications, timeout=60)
    assert ui and str(ui[0].get("id", "")).startswith("spark-"), (
        ui
    )  # Spark's id of an application on Kubernetes
    gone = {e.metadata.name for e in peak} - {e.metadata.name for e in released}
    remaining = {p.metadata.name for p in remote_pods(cluster_api, str(cluster), namespace)}
    assert gone and not gone & remaining, (gone, remaining)

    done = wait_status(app, "COMPLETED", lambda a: state(a) in ("COMPLETED", "FAILED"), timeout=300)
    assert state(done) == "COMPLETED", done["status"]
    log = kubectl("logs", driver.metadata.name, "-n", namespace)
    assert "first stage: 120" in log and "second stage: 12" in log, log[-3000:]
    delete_and_wait_gone(cluster_api, namespace, "sparkapplication", name)


def _podgroup(api: Api, namespace: str, name: str) -> Obj:
    """The application's Volcano PodGroup, once the operator made it."""
    return wait_for(
        "the application's Volcano PodGroup", lambda: found_podgroup(api, namespace, f"spark-{name}-pg")
    )
