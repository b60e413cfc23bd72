"""A gang is admitted whole or not at all, even when one member's decision cannot be written.

The API server refuses every update of one member (an admission policy of the test's, which holds
for the bridge too), so its decision cannot be written while the others' are. The core must keep
that member placed with its gang and retry the write, not put it back in the queue with its gang
already running (issue 24: a gang partly admitted); once the write goes through, it runs in its
gang's cluster.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.processes.environment import Environment
from tests.framework.bridge import Api, cluster_of, pod
from tests.framework.kube import wait_for

pytestmark = pytest.mark.e2e

BLOCKED = "blocked-by-test"


@pytest.fixture
def blocked_updates(namespace: str, cluster_api: Api) -> Iterator[None]:
    """Until the test lifts it: no update of a pod labelled BLOCKED in the namespace, by anyone."""
    admission = k8s.AdmissionregistrationV1Api(cluster_api("front"))
    name = f"block-{namespace}"[:63]
    admission.create_validating_admission_policy(
        {
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["UPDATE"],
                            "resources": ["pods"],
                        }
                    ],
                },
                "validations": [
                    {
                        "expression": f"!has(object.metadata.labels) || !('{BLOCKED}' in object.metadata.labels)",
                        "message": "updates of this pod are refused by the test",
                    }
                ],
            },
        }
    )
    admission.create_validating_admission_policy_binding(
        {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    )
    core = k8s.CoreV1Api(cluster_api("front"))
    probe = pod("probe", queue=None, labels={BLOCKED: "yes"}, annotations={"x": "0"})
    probe["spec"]["schedulerName"] = "armada-bridge-test-hold"
    core.create_namespaced_pod(namespace, probe)

    def refused() -> bool:
        try:
            core.patch_namespaced_pod("probe", namespace, {"metadata": {"annotations": {"x": "1"}}})
            return False
        except ApiException as e:
            return e.status in (403, 422)

    wait_for("the test's policy in force", refused, timeout=30)
    core.delete_namespaced_pod("probe", namespace, grace_period_seconds=0)
    yield
    lift(cluster_api, namespace)


def lift(cluster_api: Api, namespace: str) -> None:
    admission = k8s.AdmissionregistrationV1Api(cluster_api("front"))
    name = f"block-{namespace}"[:63]
    for delete in (
        admission.delete_validating_admission_policy_binding,
        admission.delete_validating_admission_policy,
    ):
        try:
            delete(name)
        except ApiException as e:
            if e.status != 404:
                raise


def _state(env: Environment) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{env.port('extender')}/state", timeout=10) as r:
        return dict(json.load(r))


def test_a_member_whose_decision_cannot_be_written_stays_with_its_gang(
    dev_env: Environment, namespace: str, cluster_api: Api, blocked_updates: None
) -> None:
    core = k8s.CoreV1Api(cluster_api("front"))
    gang = {keys.GANG_ID: "g", keys.GANG_CARDINALITY: "3"}
    for i in range(3):
        labels = {BLOCKED: "yes"} if i == 2 else {}
        core.create_namespaced_pod(
            namespace, pod(f"g-{i}", queue=namespace, cpu="2", annotations=gang, labels=labels)
        )

    def two_running() -> list[Any] | None:
        pods = {p.metadata.name: p for p in core.list_namespaced_pod(namespace).items}
        ok = [pods[n] for n in ("g-0", "g-1") if n in pods and pods[n].status.phase == "Running"]
        return ok if len(ok) == 2 else None

    running = wait_for("the two writable members Running", two_running, timeout=60)
    cluster = cluster_of(running[0])
    assert cluster and cluster_of(running[1]) == cluster

    def held() -> dict[str, Any] | None:  # the core keeps it placed with its gang, its write retried
        entry = _state(dev_env)["pods"].get(f"{namespace}/g-2")
        return entry if entry and entry["state"] == "RUNNING" else None

    wait_for("g-2 kept placed by the core while its decision cannot be written", held, timeout=30)
    blocked = core.read_namespaced_pod("g-2", namespace)
    assert cluster_of(blocked) is None and not blocked.spec.node_name

    lift(cluster_api, namespace)
    done = wait_for(
        "g-2 Running once its decision is written",
        lambda: (p := core.read_namespaced_pod("g-2", namespace)).status.phase == "Running" and p,
        timeout=90,
    )
    assert cluster_of(done) == cluster
