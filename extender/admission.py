"""The mutating pod webhook's decision, pure: AdmissionReview in, AdmissionReview response out.

For a managed pod being created, the pod's own nodeSelector, affinity, tolerations and
topologySpreadConstraints move into the one annotation ``keys.SCHEDULING_CONSTRAINTS`` (JSON,
sorted keys; absent keys: none set; ``{}`` when the pod had none — the annotation's presence marks
the pod as processed). The front kube-scheduler then sees a spec that fits any virtual node: the
only tolerations left are the virtual-node toleration and the ``not-ready``/``unreachable``
NoExecute tolerations the DefaultTolerationSeconds plugin gives every pod (the pod's own
``tolerationSeconds`` kept when it had such a toleration, else 300 s), so a virtual node that goes
NotReady evicts as a real one would. The scheduling core and the vkubelet read the annotation.
The pod also gets the scheduling gate ``keys.SCHEDULING_GATE``: the front kube-scheduler leaves it
alone until the extender's decision lifts the gate.

Re-invocation (``reinvocationPolicy: IfNeeded``) is idempotent: a processed pod yields no patch.
When a later webhook added constraints after the first pass, they are merged into the annotation
(nodeSelector entries added, tolerations appended, affinity/topologySpreadConstraints replaced)
and removed from the spec again.

Only ``CREATE`` of ``pods`` (no subresource) is mutated: scheduling fields cannot change later.
Anything else, and unmanaged pods, are allowed unchanged. A review that is not a well-formed
``admission.k8s.io/v1`` AdmissionReview raises :class:`AdmissionError` (the server answers 400);
a managed pod whose constraints annotation is malformed is denied with a 400 status and a message.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.pods import PodSpecError, SchedulingConstraints, scheduling_gates
from armada_bridge.objects import ObjView

API_VERSION = "admission.k8s.io/v1"
KIND = "AdmissionReview"
#: tolerationSeconds the DefaultTolerationSeconds plugin uses by default for both taints.
DEFAULT_TOLERATION_SECONDS = 300
DEFAULT_TOLERATION_TAINTS = (keys.TAINT_NODE_NOT_READY, keys.TAINT_NODE_UNREACHABLE)


class AdmissionError(ValueError):
    """The AdmissionReview itself is malformed; the message says what is wrong."""


def virtual_node_toleration() -> dict[str, Any]:
    return {
        "key": keys.VIRTUAL_NODE_TAINT_KEY,
        "operator": "Equal",
        "value": keys.VIRTUAL_NODE_TAINT_VALUE,
        "effect": keys.VIRTUAL_NODE_TAINT_EFFECT,
    }


def _tolerates_default(toleration: ObjView, taint_key: str) -> bool:
    """The DefaultTolerationSeconds plugin's test: key matches (or empty), effect NoExecute (or empty)."""
    key, effect = toleration.get("key") or "", toleration.get("effect") or ""
    return key in ("", taint_key) and effect in ("", "NoExecute")


def default_tolerations(own: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """not-ready and unreachable NoExecute tolerations: the pod's own seconds, else the default."""
    out: list[dict[str, Any]] = []
    for taint_key in DEFAULT_TOLERATION_TAINTS:
        toleration: dict[str, Any] = {"key": taint_key, "operator": "Exists", "effect": "NoExecute"}
        match = next((t for t in own if _tolerates_default(t, taint_key)), None)
        if match is None:
            toleration["tolerationSeconds"] = DEFAULT_TOLERATION_SECONDS
        elif match.get("tolerationSeconds") is not None:
            toleration["tolerationSeconds"] = match["tolerationSeconds"]
        out.append(toleration)
    return out


def _is_ours(toleration: ObjView) -> bool:
    """A toleration this webhook puts in the spec (so not one of the pod's own on re-invocation)."""
    if dict(toleration) == virtual_node_toleration():
        return True
    return (
        toleration.get("key") in DEFAULT_TOLERATION_TAINTS
        and toleration.get("operator") == "Exists"
        and toleration.get("effect") == "NoExecute"
    )


def _escape(key: str) -> str:
    """RFC 6901 JSON Pointer escaping of one path segment."""
    return key.replace("~", "~0").replace("/", "~1")


def _constraints(spec: ObjView, stored: SchedulingConstraints | None) -> SchedulingConstraints:
    """The pod's constraints: the spec's on the first pass, merged into the stored ones after it."""
    current = SchedulingConstraints.from_mapping(spec, "spec")
    if stored is None:
        return current
    added = tuple(t for t in current.tolerations if not _is_ours(t) and t not in stored.tolerations)
    return SchedulingConstraints(
        node_selector={**stored.node_selector, **current.node_selector},
        affinity=current.affinity or stored.affinity,
        tolerations=stored.tolerations + added,
        topology_spread_constraints=current.topology_spread_constraints or stored.topology_spread_constraints,
    )


def pod_patch(
    pod: ObjView,
    *,
    scheduler_name: str | None = None,
    extra_annotations: Mapping[str, str] | None = None,
    extra_labels: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """JSONPatch operations that make a managed pod's spec fit virtual nodes ([] when it already does).

    Raises :class:`~armada_bridge.contract.pods.PodSpecError` when the pod's constraints are malformed.
    """
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    annotations = metadata.get("annotations")
    raw = (annotations or {}).get(keys.SCHEDULING_CONSTRAINTS)
    stored = SchedulingConstraints.from_annotation(raw) if raw is not None else None
    merged = _constraints(spec, stored)

    wanted_annotations = {keys.SCHEDULING_CONSTRAINTS: merged.to_annotation(), **(extra_annotations or {})}
    ops = _metadata_ops(metadata, "annotations", wanted_annotations)
    ops += _metadata_ops(metadata, "labels", extra_labels or {})
    for field in ("nodeSelector", "affinity", "topologySpreadConstraints"):
        if field in spec:
            ops.append({"op": "remove", "path": f"/spec/{field}"})
    tolerations = [virtual_node_toleration(), *default_tolerations(merged.tolerations)]
    if spec.get("tolerations") != tolerations:
        ops.append({"op": "add", "path": "/spec/tolerations", "value": tolerations})
    if scheduler_name and spec.get("schedulerName") != scheduler_name:
        ops.append({"op": "add", "path": "/spec/schedulerName", "value": scheduler_name})
    gates = scheduling_gates(pod)
    if keys.SCHEDULING_GATE not in gates and not spec.get("nodeName"):
        gate = {"name": keys.SCHEDULING_GATE}
        if isinstance(spec.get("schedulingGates"), list):
            ops.append({"op": "add", "path": "/spec/schedulingGates/-", "value": gate})
        else:
            ops.append({"op": "add", "path": "/spec/schedulingGates", "value": [gate]})
    return ops


def _metadata_ops(metadata: ObjView, field: str, wanted: Mapping[str, str]) -> list[dict[str, Any]]:
    """JSONPatch operations that set `wanted` in the pod's labels or annotations (`field`)."""
    current = metadata.get(field)
    if not wanted:
        return []
    if not isinstance(current, Mapping):
        return [{"op": "add", "path": f"/metadata/{field}", "value": dict(wanted)}]
    return [
        {"op": "add", "path": f"/metadata/{field}/{_escape(key)}", "value": value}
        for key, value in wanted.items()
        if current.get(key) != value
    ]


def setup_patch(
    pod: ObjView, *, scheduler_name: str | None = None, extra_annotations: Mapping[str, str] | None = None
) -> dict[str, Any] | None:
    """A merge patch that sets up, once created, a managed pod the webhook never saw (it was down
    then): what :func:`pod_patch` does, within what the API allows on a live pod — the constraints
    annotation set and the virtual-node toleration added (tolerations may only be added). None
    when that is not enough: a nodeSelector, affinity or topology spread constraints (immutable)
    that the front scheduler would judge virtual nodes by, or another scheduler than the one
    named (`scheduler_name`). Raises :class:`PodSpecError` when the pod's constraints are malformed.
    """
    spec = pod.get("spec") or {}
    if any(spec.get(f) for f in ("nodeSelector", "affinity", "topologySpreadConstraints")):
        return None
    if scheduler_name and spec.get("schedulerName") != scheduler_name:
        return None
    constraints = SchedulingConstraints.from_mapping(spec, "spec")
    tolerations = list(spec.get("tolerations") or [])
    if virtual_node_toleration() not in tolerations:
        tolerations.append(virtual_node_toleration())
    annotations = {keys.SCHEDULING_CONSTRAINTS: constraints.to_annotation(), **(extra_annotations or {})}
    return {"metadata": {"annotations": annotations}, "spec": {"tolerations": tolerations}}


def _request(review: Any) -> ObjView:
    if not isinstance(review, Mapping):
        raise AdmissionError(
            "the body is not a JSON object (expected an admission.k8s.io/v1 AdmissionReview)"
        )
    if review.get("apiVersion") != API_VERSION or review.get("kind") != KIND:
        raise AdmissionError(
            f"expected apiVersion {API_VERSION} kind {KIND}, got apiVersion "
            f"{review.get('apiVersion')!r} kind {review.get('kind')!r}"
        )
    request = review.get("request")
    if not isinstance(request, Mapping):
        raise AdmissionError("AdmissionReview has no request object")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise AdmissionError("AdmissionReview request.uid is missing or not a string")
    return request


def _is_pod_create(request: ObjView) -> bool:
    kind = request.get("kind")
    resource = request.get("resource")
    is_pod = (isinstance(kind, Mapping) and kind.get("group", "") == "" and kind.get("kind") == "Pod") or (
        isinstance(resource, Mapping)
        and resource.get("group", "") == ""
        and resource.get("resource") == "pods"
    )
    return is_pod and not request.get("subResource") and request.get("operation") == "CREATE"


def pod_of(review: Any) -> dict[str, Any] | None:
    """The pod of a well-formed pod ``CREATE`` review, its namespace (and, for generateName, name)
    filled in from the request; None for any other request (let through).

    Raises :class:`AdmissionError` when the review is malformed (the same checks as
    :func:`admission_response`), so callers can decide ``managed`` from the pod first.
    """
    request = _request(review)
    if not _is_pod_create(request):
        return None
    pod = request.get("object")
    if not isinstance(pod, Mapping):
        raise AdmissionError("AdmissionReview request.object is missing or not an object for a pod CREATE")
    out = dict(pod)
    # The object of a CREATE may not carry its namespace (or name, with generateName) yet.
    meta = dict(out.get("metadata") or {})
    meta.setdefault("namespace", request.get("namespace") or "")
    meta.setdefault("name", meta.get("generateName") or "")
    out["metadata"] = meta
    return out


def _response(uid: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, "response": {"uid": uid, **fields}}


def _refusal(uid: str, code: int, reason: str, message: str) -> dict[str, Any]:
    status = {"status": "Failure", "code": code, "reason": reason, "message": f"armada-bridge: {message}"}
    return _response(uid, allowed=False, status=status)


def admission_response(
    review: Any,
    *,
    managed: bool,
    scheduler_name: str | None = None,
    extra_annotations: Mapping[str, str] | None = None,
    extra_labels: Mapping[str, str] | None = None,
    refused: str | None = None,
) -> dict[str, Any]:
    """The full AdmissionReview response for ``review``.

    ``managed``: the caller's verdict (a queue applies to the pod). ``scheduler_name``: point
    managed pods at that kube-scheduler (managed Kubernetes whose default scheduler cannot be given
    the extender). ``extra_annotations``: set on managed pods as well (e.g. the Volcano group-name
    of an auto-grouped Job's pod, :func:`extender.protocols.volcano.job_pod_annotations`).
    ``extra_labels``: likewise (the queue a pod takes from its root controller,
    :meth:`extender.describe.Describer.inherited`). ``refused``: why the pod's queue does not take
    it (:mod:`armada_bridge.contract.queue_access`): a managed pod is then denied (403).
    """
    uid = _request(review)["uid"]
    pod = pod_of(review)
    if pod is None or not managed:
        return _response(uid, allowed=True)
    if refused is not None:
        return _refusal(uid, 403, "Forbidden", refused)
    try:
        ops = pod_patch(
            pod, scheduler_name=scheduler_name, extra_annotations=extra_annotations, extra_labels=extra_labels
        )
    except PodSpecError as e:
        return _refusal(uid, 400, "BadRequest", str(e))
    if not ops:
        return _response(uid, allowed=True)
    patch = base64.b64encode(json.dumps(ops, separators=(",", ":")).encode()).decode()
    return _response(uid, allowed=True, patchType="JSONPatch", patch=patch)
