"""A remote cluster's refusal of a pod, noted on the front pod (pure codec, used by both components).

The vkubelet writes it when the remote scheduler leaves a remote pod unschedulable past its
RemoteCluster's bound, and deletes that remote pod; the extender then places the front pod again on
another node of the same cluster (a bound pod cannot change cluster), clearing the note as it
writes the new node. While the note names the node the pod is assigned to, nothing runs it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys


@dataclass(frozen=True)
class Rejection:
    node: str
    reason: str

    def encode(self) -> str:
        return json.dumps({"node": self.node, "reason": self.reason}, sort_keys=True)


def rejection_of(pod: Mapping[str, Any]) -> Rejection | None:
    """The pod's pending rejection: one that names the node it is assigned to now (else None)."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(keys.REMOTE_REJECTION)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("node"), str):
        return None
    if value["node"] != annotations.get(keys.ASSIGNED_REMOTE_NODE):
        return None  # placed again since
    return Rejection(value["node"], str(value.get("reason") or ""))
