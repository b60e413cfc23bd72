"""The remote pod for a front pod (pure): what is kept, restored, pinned and dropped."""

from __future__ import annotations

import copy

from armada_bridge import keys
from armada_bridge.contract.pods import PodSpecError, SchedulingConstraints
from armada_bridge.objects import Obj

# Set by the front cluster's admission for the front cluster only; the remote cluster's own
# admission adds its equivalents (ServiceAccount token volume, priority from its PriorityClass).
_DROPPED_SPEC_FIELDS = (
    "nodeName",
    "priority",
    "priorityClassName",
    "preemptionPolicy",
    "schedulerName",
    "readinessGates",
    "schedulingGates",
    "ephemeralContainers",
    "nominatedNodeName",
)
_TOKEN_VOLUME_PREFIX = "kube-api-access-"
_CONTAINER_LISTS = ("initContainers", "containers")


def is_bridge_toleration(t: Obj) -> bool:
    return t.get("key") == keys.VIRTUAL_NODE_TAINT_KEY


def set_aside_constraints(front: Obj) -> Obj:
    """The constraints the admission webhook set aside (none when absent or unreadable: the
    extender holds such a pod back, so it never reaches a virtual node)."""
    raw = (front["metadata"].get("annotations") or {}).get(keys.SCHEDULING_CONSTRAINTS)
    if not raw:
        return {}
    try:
        return SchedulingConstraints.from_annotation(raw).to_json()
    except PodSpecError:
        return {}


def _virtual_only(key: str, values: list[str] | tuple[str, ...]) -> bool:
    """A node selection only virtual nodes match (the cluster choice, made in the front)."""
    return key == keys.CLUSTER_LABEL or (key == keys.NODE_TYPE_LABEL and keys.NODE_TYPE_VIRTUAL in values)


def without_virtual_node_selection(constraints: Obj) -> Obj:
    """The pod's own node selection for the remote cluster: without what selects the virtual node
    (``bridge.armadaproject.io/cluster``, ``type=virtual-kubelet``), which no remote node carries;
    the cluster was chosen in the front and the remote node is pinned."""
    out = copy.deepcopy(constraints)
    selector = {k: v for k, v in (out.get("nodeSelector") or {}).items() if not _virtual_only(k, [v])}
    if selector:
        out["nodeSelector"] = selector
    else:
        out.pop("nodeSelector", None)
    required = ((out.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    for term in (required or {}).get("nodeSelectorTerms") or []:
        exprs = [
            e
            for e in term.get("matchExpressions") or []
            if not (e.get("operator") == "In" and _virtual_only(str(e.get("key")), e.get("values") or []))
        ]
        if exprs or "matchExpressions" in term:
            term["matchExpressions"] = exprs
    return out


def pin_to_node(affinity: Obj, node: str) -> Obj:
    """`affinity` with a required node affinity on metadata.name == node in every term."""
    out = copy.deepcopy(affinity)
    required = out.setdefault("nodeAffinity", {}).setdefault(
        "requiredDuringSchedulingIgnoredDuringExecution", {}
    )
    terms = required.get("nodeSelectorTerms") or [{}]
    pin = {"key": "metadata.name", "operator": "In", "values": [node]}
    for term in terms:
        fields = [f for f in term.get("matchFields", []) if f.get("key") != "metadata.name"]
        term["matchFields"] = [*fields, pin]
    required["nodeSelectorTerms"] = terms
    return out


def host_access(front: Obj) -> list[str]:
    """What a pod asks of the host (empty: nothing)."""
    spec = front.get("spec", {})
    asks = [f for f in ("hostNetwork", "hostPID", "hostIPC") if spec.get(f)]
    asks += [f"hostPath volume {v['name']}" for v in spec.get("volumes") or [] if "hostPath" in v]
    for kind in (*_CONTAINER_LISTS, "ephemeralContainers"):
        for c in spec.get(kind) or []:
            sc = c.get("securityContext") or {}
            if sc.get("privileged"):
                asks.append(f"privileged container {c['name']}")
    return asks


def remote_pod(front: Obj) -> Obj:
    """The pod to create in the remote cluster for `front` (same namespace and name)."""
    md = front["metadata"]
    spec = copy.deepcopy(front.get("spec", {}))
    for f in _DROPPED_SPEC_FIELDS:
        spec.pop(f, None)

    token_volumes = {
        v["name"] for v in spec.get("volumes") or [] if v["name"].startswith(_TOKEN_VOLUME_PREFIX)
    }
    if token_volumes:
        spec["volumes"] = [v for v in spec["volumes"] if v["name"] not in token_volumes]
        for kind in _CONTAINER_LISTS:
            for c in spec.get(kind) or []:
                mounts = [m for m in c.get("volumeMounts") or [] if m["name"] not in token_volumes]
                if mounts:
                    c["volumeMounts"] = mounts
                else:
                    c.pop("volumeMounts", None)

    tolerations = [t for t in spec.get("tolerations") or [] if not is_bridge_toleration(t)]
    constraints = without_virtual_node_selection(set_aside_constraints(front))
    tolerations += constraints.get("tolerations") or []
    if tolerations:
        spec["tolerations"] = tolerations
    else:
        spec.pop("tolerations", None)
    for f in ("nodeSelector", "affinity", "topologySpreadConstraints"):
        if constraints.get(f):
            spec[f] = constraints[f]
    node = (md.get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE)
    if node:
        spec["affinity"] = pin_to_node(spec.get("affinity") or {}, node)

    labels = {
        **(md.get("labels") or {}),
        keys.FRONT_UID: md["uid"],
        keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": md["name"],
            "namespace": md["namespace"],
            "labels": labels,
            "annotations": dict(md.get("annotations") or {}),
        },
        "spec": spec,
    }
