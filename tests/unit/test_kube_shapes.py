"""What informers keep of objects (armada_bridge/kube/shapes.py), and that every shape the bridge
uses keeps what its readers read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract.pods import USAGE_SHAPE, pod_usage
from armada_bridge.kube.shapes import WHOLE, project, shaped
from extender.inputs import FRONT_POD_SHAPE
from extender.overview import read_pod
from tests.framework.pods import pod
from vkubelet.agent import REMOTE_POD_SHAPE
from vkubelet.status import front_status, unschedulable_since

pytestmark = pytest.mark.unit


def _pod() -> dict[str, Any]:
    """A pod as an operator makes it and the API server returns it: sidecar, init container,
    pod-level resources and overhead, environment, volumes, statuses, managedFields."""
    container = {
        "name": "main",
        "image": "rayproject/ray:2.9",
        "command": ["/bin/bash", "-c", "ray start --head --block " * 20],
        "env": [{"name": f"VAR_{i}", "value": "x" * 40} for i in range(30)],
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "kube-api-access", "mountPath": "/var/run/secrets"}],
        "ports": [{"containerPort": 6379, "hostPort": 6379}],
    }
    p = pod(
        "head-0",
        namespace="ray",
        uid="u-1",
        created="2026-12-01T10:00:00Z",
        labels={keys.QUEUE_LABEL: "a", keys.FRONT_UID: "f-1"},
        annotations={keys.ASSIGNED_CLUSTER: "remote-1", keys.GANG_ID: "g", keys.GANG_CARDINALITY: "2"},
        owners=[{"kind": "RayCluster", "name": "rc", "uid": "o", "controller": True}],
        cpu=None,
        spec={
            "nodeName": "vnode-remote-1",
            "priorityClassName": "armada-preemptible",
            "schedulingGates": [{"name": keys.SCHEDULING_GATE}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}},
            "containers": [container, {**container, "name": "side"}],
            "initContainers": [
                {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                {"name": "init", "resources": {"requests": {"cpu": "8"}}, "env": container["env"]},
            ],
            "resources": {"limits": {"memory": "16Gi"}},
            "overhead": {"cpu": "100m"},
            "volumes": [
                {"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {}}] * 3}}
            ],
        },
        phase="Running",
        status={
            "reason": "",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-01T10:00:01Z"},
            ],
            "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {}}, "image": "x"}],
            "podIP": "10.0.0.1",
        },
    )
    p["metadata"] |= {
        "resourceVersion": "42",
        "managedFields": [{"manager": "kuberay", "fieldsV1": {"f:spec": {"f:containers": {}}}}] * 5,
    }
    return p


def test_project_keeps_listed_keys_and_the_star_default() -> None:
    value = {"a": 1, "b": {"c": 2, "d": 3}, "e": [{"f": 1, "g": 2}, {"f": 3}], "h": 4}
    assert project(value, {"a": True, "e": [{"f": True}]}) == {"a": 1, "e": [{"f": 1}, {"f": 3}]}
    assert project(value, {"*": True, "b": {"*": True, "d": False}, "h": False}) == {
        "a": 1,
        "b": {"c": 2},
        "e": value["e"],
    }
    # A value without the shape's form is kept as it is (a malformed object stays for its reader to judge).
    assert project({"e": "not a list", "b": 7}, {"e": [{"f": True}], "b": {"c": True}}) == {
        "e": "not a list",
        "b": 7,
    }


def test_shaped_always_keeps_identity_and_leaves_the_input_alone() -> None:
    pod = _pod()
    before = copy.deepcopy(pod)
    out = shaped({"status": {"phase": True}})(pod)
    assert pod == before
    assert out == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "head-0", "namespace": "ray", "uid": "u-1", "resourceVersion": "42"},
        "status": {"phase": "Running"},
    }
    with pytest.raises(ValueError):
        shaped({"spec": True, "metadata": False})


def test_whole_drops_only_managed_fields() -> None:
    pod = _pod()
    out = shaped(WHOLE)(pod)
    del pod["metadata"]["managedFields"]
    assert out == pod


def test_usage_shape_keeps_what_a_pod_takes_and_little_else() -> None:
    pod = _pod()
    slim = shaped(USAGE_SHAPE)(pod)
    assert pod_usage(slim) == pod_usage(pod)
    assert slim["spec"]["nodeName"] == "vnode-remote-1" and slim["status"] == {"phase": "Running"}
    assert slim["metadata"]["labels"][keys.FRONT_UID] == "f-1"
    assert "env" not in slim["spec"]["containers"][0] and "volumes" not in slim["spec"]
    assert len(repr(slim)) < len(repr(pod)) / 5


def test_front_pod_shape_keeps_what_the_extender_reads() -> None:
    pod = _pod()
    slim = shaped(FRONT_POD_SHAPE)(pod)
    assert read_pod(slim, {}, {}) == read_pod(pod, {}, {})
    assert pod_usage(slim) == pod_usage(pod)
    for k in ("schedulingGates", "tolerations", "affinity", "priorityClassName", "nodeName"):
        assert slim["spec"][k] == pod["spec"][k]
    assert slim["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]
    assert slim["status"]["conditions"] == pod["status"]["conditions"]
    assert slim["spec"]["containers"][0]["ports"] == pod["spec"]["containers"][0]["ports"]
    assert "env" not in slim["spec"]["containers"][0] and "volumes" not in slim["spec"]
    assert "containerStatuses" not in slim["status"] and "managedFields" not in slim["metadata"]


def test_remote_pod_shape_keeps_what_the_vkubelet_reflects() -> None:
    pod = _pod()
    slim = shaped(REMOTE_POD_SHAPE)(pod)
    assert front_status(slim, "remote-1", {}) == front_status(pod, "remote-1", {})
    assert unschedulable_since(slim) == unschedulable_since(pod)
    assert slim["status"] == pod["status"] and slim["spec"] == {"nodeName": "vnode-remote-1"}
    md = dict(pod["metadata"])
    del md["managedFields"]
    assert slim["metadata"] == md
