"""Which namespaces a Queue takes pods from. Pure.

Whatever way a pod names its queue (its label, its controller's, a Volcano PodGroup, Kueue's
label), the queue takes it only when the pod's namespace is one of the queue's:

- the namespace's own label ``armadaproject.io/queue`` names the queue (namespaces are an admin's
  to label: a tenant with the usual ``edit`` or ``admin`` role cannot change them), or
- the queue's ``spec.namespaceSelector``, a Kubernetes label selector, matches the namespace's
  labels (``{}``: every namespace; ``kubernetes.io/metadata.name`` selects namespaces by name).

No selector: only the namespaces labelled for the queue. Tenancy in Kubernetes is by namespace,
so this holds for pods an operator or a controller makes from a tenant's object as for the
tenant's own (Kueue's ClusterQueue ``namespaceSelector`` is the same idea). The webhook refuses a
pod whose queue does not take it, the extender admits none (docs/security.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada_bridge import keys
from armada_bridge.core.matching import requirement_matches
from armada_bridge.core.model import NodeSelectorRequirement


def selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes label selector (``matchLabels``, ``matchExpressions``) against labels."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for e in selector.get("matchExpressions") or []:
        req = NodeSelectorRequirement(
            key=str(e.get("key") or ""),
            operator=str(e.get("operator") or ""),
            values=tuple(str(v) for v in e.get("values") or ()),
        )
        if req.operator not in ("In", "NotIn", "Exists", "DoesNotExist") or not requirement_matches(
            req, labels
        ):
            return False
    return True


def refusal(queue: Mapping[str, Any], namespace: str, namespace_labels: Mapping[str, str]) -> str | None:
    """None when `queue` (a Queue object) takes pods of `namespace`; else why not, for the user."""
    name = str((queue.get("metadata") or {}).get("name") or "")
    if namespace_labels.get(keys.QUEUE_LABEL) == name:
        return None
    selector = (queue.get("spec") or {}).get("namespaceSelector")
    if isinstance(selector, Mapping) and selector_matches(selector, namespace_labels):
        return None
    why = (
        "its spec.namespaceSelector does not match the namespace's labels"
        if isinstance(selector, Mapping)
        else f"it has no spec.namespaceSelector and the namespace's label {keys.QUEUE_LABEL} does not name it"
    )
    return (
        f"queue {name} does not take pods from namespace {namespace}: {why} "
        "(an admin opens a queue to a namespace; docs/security.md)"
    )
