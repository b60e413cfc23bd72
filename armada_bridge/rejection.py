"""A remote cluster's refusal of a pod, noted on the front pod (pure codec, used by both components).

The vkubelet writes it when the remote scheduler leaves a remote pod unschedulable past its
RemoteCluster's bound, and deletes that remote pod; the extender then places the front pod again on
another node of the same cluster (a bound pod cannot change cluster). While the note's last
refusal is the node the pod is assigned to, nothing runs it; the extender keeps the pod off every
node the note names, so a pod is never sent back where it was refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys


@dataclass(frozen=True)
class Rejection:
    """The nodes of the pod's cluster that refused it (the last one first) and the last reason."""

    nodes: tuple[str, ...]
    reason: str

    def encode(self) -> str:
        return json.dumps({"nodes": list(self.nodes), "reason": self.reason}, sort_keys=True)

    def adding(self, node: str, reason: str) -> Rejection:
        return Rejection((node, *(n for n in self.nodes if n != node)), reason)


def _decode(raw: str | None) -> Rejection | None:
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    nodes = value.get("nodes") if isinstance(value, dict) else None
    if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) for n in nodes):
        return None
    return Rejection(tuple(nodes), str(value.get("reason") or ""))


def rejections_of(pod: Mapping[str, Any]) -> Rejection | None:
    """Every refusal noted on the pod, pending or not."""
    return _decode(((pod.get("metadata") or {}).get("annotations") or {}).get(keys.REMOTE_REJECTION))


def rejection_of(pod: Mapping[str, Any]) -> Rejection | None:
    """The pod's pending rejection: one whose last refusal is the node it is assigned to now."""
    found = rejections_of(pod)
    assigned = ((pod.get("metadata") or {}).get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE)
    return found if found is not None and found.nodes[0] == assigned else None
