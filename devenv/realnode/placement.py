"""How a pod asks for a real node of the dev remote clusters: it tolerates their taint and requires a
node that is not KWOK's (the node affinity it would use anywhere to avoid simulated nodes)."""

from __future__ import annotations

from typing import Any

from armada_bridge import keys


def on_a_real_node(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` (a pod spec, changed in place and returned) asking for a real node; its containers use
    the images the nodes have (imported, never pulled: `IfNotPresent`)."""
    spec.setdefault("tolerations", []).append(
        {"key": keys.DEV_REAL_NODE_TAINT_KEY, "operator": "Exists", "effect": keys.DEV_REAL_NODE_TAINT_EFFECT}
    )
    not_kwok = {"key": keys.NODE_TYPE_LABEL, "operator": "NotIn", "values": [keys.DEV_NODE_TYPE_VALUE]}
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    terms = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {}).setdefault(
        "nodeSelectorTerms", []
    )
    if not terms:
        terms.append({})
    for term in terms:  # the terms are ORed: each must say it
        term.setdefault("matchExpressions", []).append(dict(not_kwok))
    for c in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        c.setdefault("imagePullPolicy", "IfNotPresent")
    return spec
