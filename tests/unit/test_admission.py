"""The mutating webhook's decision (extender/admission.py)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract import pods
from extender.admission import AdmissionError, admission_response, pod_of, pod_patch, virtual_node_toleration
from tests.framework.pods import admission_review, pod

NOT_READY_300 = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE_300 = {
    "key": "node.kubernetes.io/unreachable",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]
        }
    },
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}
        ]
    },
}
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {}}]


def new_pod(**spec: Any) -> dict[str, Any]:
    """A pod as the webhook sees it on CREATE: DefaultTolerationSeconds already ran."""
    return pod(
        "p",
        namespace="ns",
        spec={
            "containers": [{"name": "c", "image": "x"}],
            "tolerations": [NOT_READY_300, UNREACHABLE_300],
            **spec,
        },
    )


def review(
    pod: Any, *, operation: str = "CREATE", sub: str | None = None, uid: str = "req-1"
) -> dict[str, Any]:
    return admission_review(
        pod, namespace="ns", uid=uid, operation=operation, **({"subResource": sub} if sub else {})
    )


def apply_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A small RFC 6902 applier (add/remove on objects) to check the patch's effect."""
    out = copy.deepcopy(obj)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = out
        for p in parts[:-1]:
            parent = parent[p]
        if op["op"] == "add" and parts[-1] == "-":
            parent.append(copy.deepcopy(op["value"]))
        elif op["op"] == "add":
            parent[parts[-1]] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[parts[-1]]
        else:  # pragma: no cover
            raise AssertionError(op)
    return out


def decode(response: dict[str, Any]) -> list[dict[str, Any]]:
    assert response["response"]["patchType"] == "JSONPatch"
    return json.loads(base64.b64decode(response["response"]["patch"]))


def admit(pod: dict[str, Any], **kw: Any) -> dict[str, Any]:
    """Run the webhook on a CREATE and return the pod as stored."""
    resp = admission_response(review(pod), managed=True, **kw)
    assert resp["response"]["allowed"] is True
    if "patch" not in resp["response"]:
        return pod
    return apply_patch(pod, decode(resp))


# ------------------------------------------------------------------------------------- managed
def test_managed_pod_constraints_set_aside() -> None:
    own = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    pod = new_pod(
        nodeSelector={"disk": "ssd"},
        affinity=AFFINITY,
        topologySpreadConstraints=SPREAD,
        tolerations=[own, NOT_READY_300, UNREACHABLE_300],
    )
    resp = admission_response(review(pod), managed=True)
    assert resp["apiVersion"] == "admission.k8s.io/v1" and resp["kind"] == "AdmissionReview"
    assert resp["response"]["uid"] == "req-1" and resp["response"]["allowed"] is True
    stored = apply_patch(pod, decode(resp))
    spec = stored["spec"]
    assert "nodeSelector" not in spec and "affinity" not in spec and "topologySpreadConstraints" not in spec
    assert spec["tolerations"] == [virtual_node_toleration(), NOT_READY_300, UNREACHABLE_300]
    assert virtual_node_toleration() == {
        "key": keys.VIRTUAL_NODE_TAINT_KEY,
        "operator": "Equal",
        "value": keys.VIRTUAL_NODE_TAINT_VALUE,
        "effect": keys.VIRTUAL_NODE_TAINT_EFFECT,
    }
    saved = json.loads(stored["metadata"]["annotations"][keys.SCHEDULING_CONSTRAINTS])
    assert saved == {
        "nodeSelector": {"disk": "ssd"},
        "affinity": AFFINITY,
        "tolerations": [own, NOT_READY_300, UNREACHABLE_300],
        "topologySpreadConstraints": SPREAD,
    }
    # and the core reads the originals back
    assert pods.scheduling_constraints(stored).node_selector == {"disk": "ssd"}


def test_pod_without_constraints_gets_empty_annotation_and_tolerations() -> None:
    pod = new_pod()
    stored = admit(pod)
    assert stored["metadata"]["annotations"] == {
        keys.SCHEDULING_CONSTRAINTS: json.dumps(
            {"tolerations": [NOT_READY_300, UNREACHABLE_300]}, sort_keys=True, separators=(",", ":")
        )
    }
    assert stored["spec"]["tolerations"] == [virtual_node_toleration(), NOT_READY_300, UNREACHABLE_300]


def test_managed_pod_is_gated_until_the_decision() -> None:
    gate = {"name": keys.SCHEDULING_GATE}
    assert admit(new_pod())["spec"]["schedulingGates"] == [gate]
    # Other gates stay, ours comes after them; a pod that names its node is never gated.
    other = {"name": "example.com/quota"}
    assert admit(new_pod(schedulingGates=[other]))["spec"]["schedulingGates"] == [other, gate]
    assert "schedulingGates" not in admit(new_pod(nodeName="n1"))["spec"]
    stored = admit(new_pod(schedulingGates=[other]))
    assert pods.scheduling_gates(stored) == ("example.com/quota", keys.SCHEDULING_GATE)
    # Lifting ours keeps the others; lifting the last one removes the field (merge patch: null).
    assert pods.gates_without(pods.scheduling_gates(stored)) == [other]
    assert pods.gates_without((keys.SCHEDULING_GATE,)) is None


def test_pod_without_any_tolerations_gets_the_defaults() -> None:
    pod = new_pod()
    del pod["spec"]["tolerations"]
    stored = admit(pod)
    assert stored["spec"]["tolerations"] == [virtual_node_toleration(), NOT_READY_300, UNREACHABLE_300]
    assert stored["metadata"]["annotations"][keys.SCHEDULING_CONSTRAINTS] == "{}"


def test_own_not_ready_seconds_kept() -> None:
    """A pod's own not-ready/unreachable tolerations keep their seconds (wildcards count, as upstream)."""
    pod = new_pod(
        tolerations=[
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 5,
            },
            {"operator": "Exists"},  # tolerates everything, forever
        ]
    )
    stored = admit(pod)
    assert stored["spec"]["tolerations"] == [
        virtual_node_toleration(),
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 5,
        },
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    ]


def test_existing_annotations_kept_and_key_escaped() -> None:
    pod = new_pod()
    pod["metadata"]["annotations"] = {"keep": "me"}
    ops = pod_patch(pod)
    annotation_ops = [o for o in ops if o["path"].startswith("/metadata/annotations")]
    assert (
        annotation_ops[0]["path"] == "/metadata/annotations/bridge.armadaproject.io~1scheduling-constraints"
    )
    assert apply_patch(pod, ops)["metadata"]["annotations"]["keep"] == "me"


def test_scheduler_name_and_extra_annotations() -> None:
    pod = new_pod(schedulerName="volcano")
    stored = admit(
        pod,
        scheduler_name="armada-bridge-scheduler",
        extra_annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "podgroup-uid"},
    )
    assert stored["spec"]["schedulerName"] == "armada-bridge-scheduler"
    assert stored["metadata"]["annotations"][keys.VOLCANO_GROUP_NAME_ANNOTATION] == "podgroup-uid"
    # without scheduler_name the operator's choice of profile is left alone
    assert admit(new_pod(schedulerName="volcano"))["spec"]["schedulerName"] == "volcano"


# ------------------------------------------------------------------------------------- idempotence
def test_reinvocation_is_a_no_op() -> None:
    pod = new_pod(nodeSelector={"disk": "ssd"}, affinity=AFFINITY, topologySpreadConstraints=SPREAD)
    once = admit(pod, scheduler_name="s2", extra_annotations={"x/y": "z"})
    resp = admission_response(review(once), managed=True, scheduler_name="s2", extra_annotations={"x/y": "z"})
    assert resp["response"] == {"uid": "req-1", "allowed": True}
    assert pod_patch(once, scheduler_name="s2", extra_annotations={"x/y": "z"}) == []


def test_reinvocation_after_another_webhook_added_constraints() -> None:
    pod = new_pod(nodeSelector={"disk": "ssd"}, tolerations=[{"key": "a", "operator": "Exists"}])
    once = admit(pod)
    # another mutating webhook runs after us and adds constraints; we are re-invoked
    once["spec"]["nodeSelector"] = {"zone": "z1"}
    once["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    twice = admit(once)
    assert "nodeSelector" not in twice["spec"]
    assert twice["spec"]["tolerations"] == [virtual_node_toleration(), NOT_READY_300, UNREACHABLE_300]
    saved = pods.scheduling_constraints(twice)
    assert saved.node_selector == {"disk": "ssd", "zone": "z1"}
    assert saved.tolerations == ({"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"})
    assert pod_patch(twice) == []


# ------------------------------------------------------------------------------------- not mutated
def test_unmanaged_pod_allowed_without_patch() -> None:
    pod = new_pod(nodeSelector={"disk": "ssd"})
    assert admission_response(review(pod), managed=False) == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "req-1", "allowed": True},
    }


@pytest.mark.parametrize(("operation", "sub"), [("UPDATE", None), ("DELETE", None), ("CREATE", "binding")])
def test_only_pod_create_is_mutated(operation: str, sub: str | None) -> None:
    resp = admission_response(
        review(new_pod(nodeSelector={"a": "b"}), operation=operation, sub=sub), managed=True
    )
    assert resp["response"] == {"uid": "req-1", "allowed": True}


def test_other_kinds_allowed() -> None:
    r = review({"kind": "ConfigMap"})
    r["request"]["kind"] = {"group": "", "version": "v1", "kind": "ConfigMap"}
    r["request"]["resource"] = {"group": "", "version": "v1", "resource": "configmaps"}
    assert admission_response(r, managed=True)["response"] == {"uid": "req-1", "allowed": True}


# ------------------------------------------------------------------------------------- malformed
@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ([], "not a JSON object"),
        (
            {"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {"uid": "u"}},
            "expected apiVersion",
        ),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "Pod"}, "kind 'Pod'"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}, "no request"),
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": 7}},
            "request.uid",
        ),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}}, "request.uid"),
    ],
)
def test_malformed_review_raises(body: Any, fragment: str) -> None:
    with pytest.raises(AdmissionError, match=fragment):
        admission_response(body, managed=True)


def test_malformed_review_raises_even_when_unmanaged() -> None:
    with pytest.raises(AdmissionError):
        admission_response({"request": {"uid": "u"}}, managed=False)


def test_missing_object_on_create_raises() -> None:
    with pytest.raises(AdmissionError, match=r"request\.object"):
        admission_response(review(None), managed=True)


def test_bad_constraints_annotation_is_denied_with_reason() -> None:
    pod = new_pod()
    pod["metadata"]["annotations"] = {keys.SCHEDULING_CONSTRAINTS: "{oops"}
    resp = admission_response(review(pod), managed=True)["response"]
    assert resp["allowed"] is False
    assert resp["status"]["code"] == 400
    assert keys.SCHEDULING_CONSTRAINTS in resp["status"]["message"]
    assert "patch" not in resp


def test_bad_spec_field_is_denied() -> None:
    resp = admission_response(review(new_pod(nodeSelector={"a": 1})), managed=True)["response"]
    assert resp["allowed"] is False and "nodeSelector" in resp["status"]["message"]


def test_pod_of() -> None:
    pod = new_pod()
    assert pod_of(review(pod)) == pod
    unnamed = {"metadata": {"generateName": "job-"}, "spec": {}}
    assert pod_of(review(unnamed))["metadata"] == {"generateName": "job-", "namespace": "ns", "name": "job-"}  # type: ignore[index]
    assert pod_of(review(pod, operation="UPDATE")) is None
    assert pod_of(review(pod, sub="status")) is None
    with pytest.raises(AdmissionError, match=r"request\.object"):
        pod_of(review("not a pod"))
    with pytest.raises(AdmissionError, match="no request"):
        pod_of({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})


def test_a_pod_the_webhook_never_saw_is_set_up_within_what_a_live_pod_allows() -> None:
    from extender.admission import setup_patch, virtual_node_toleration

    defaults = [
        {
            "key": "node.kubernetes.io/not-ready",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    own = {"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
    pod = {
        "metadata": {"name": "p"},
        "spec": {"tolerations": [own, *defaults], "schedulerName": "default-scheduler"},
    }
    patch = setup_patch(pod, extra_annotations={"x": "y"})
    assert patch is not None
    # Tolerations may only be added to a live pod: every one kept, in order, the virtual node's last.
    assert patch["spec"]["tolerations"] == [own, *defaults, virtual_node_toleration()]
    stored = json.loads(patch["metadata"]["annotations"][keys.SCHEDULING_CONSTRAINTS])
    assert stored["tolerations"] == [own, *defaults] and "nodeSelector" not in stored
    assert patch["metadata"]["annotations"]["x"] == "y"
    # Already tolerating the virtual node: not added twice.
    again = setup_patch({**pod, "spec": {**pod["spec"], "tolerations": patch["spec"]["tolerations"]}})
    assert again is not None and again["spec"]["tolerations"].count(virtual_node_toleration()) == 1
    # Immutable fields the front scheduler would judge virtual nodes by, or another scheduler: no.
    for field, value in (
        ("nodeSelector", {"disk": "ssd"}),
        ("affinity", {"nodeAffinity": {}}),
        ("topologySpreadConstraints", [{"maxSkew": 1}]),
    ):
        assert setup_patch({**pod, "spec": {**pod["spec"], field: value}}) is None, field
    assert setup_patch(pod, scheduler_name="armada-bridge-scheduler") is None


def test_a_pod_its_queue_does_not_take_is_denied_unchanged() -> None:
    why = "queue q does not take pods from namespace ns"
    resp = admission_response(review(new_pod()), managed=True, refused=why)["response"]
    assert resp["allowed"] is False and "patch" not in resp
    assert resp["status"]["code"] == 403 and resp["status"]["reason"] == "Forbidden"
    assert resp["status"]["message"] == f"armada-bridge: {why}"
    # An unmanaged pod has no queue to refuse it.
    assert admission_response(review(new_pod()), managed=False, refused=why)["response"]["allowed"] is True
