"""Static node-job compatibility: node selectors, required node affinity, taints and tolerations.

These depend only on a node's labels and taints and on a job's constraints, so results are cached
per (node type, job requirements) pair; see :class:`armada_bridge.core.nodedb.NodeDb`.
"""

from __future__ import annotations

from collections.abc import Mapping

from armada_bridge.core.model import Job, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration

RequirementsKey = tuple[object, ...]


def requirements_key(job: Job) -> RequirementsKey:
    """Hashable summary of a job's static placement constraints."""
    return (tuple(sorted(job.node_selector.items())), job.affinity, job.tolerations)


def toleration_matches(tol: Toleration, taint: Taint) -> bool:
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.operator == "Exists":
        return not tol.key or tol.key == taint.key
    return tol.key == taint.key and tol.value == taint.value


def tolerates(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...]) -> Taint | None:
    """Return the first NoSchedule/NoExecute taint not tolerated, or None."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule":
            continue
        if not any(toleration_matches(t, taint) for t in tolerations):
            return taint
    return None


def requirement_matches(req: NodeSelectorRequirement, labels: Mapping[str, str]) -> bool:
    """One requirement of a node selector term (a label selector's expressions are the same)."""
    op = req.operator
    present = req.key in labels
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt"):
        if not present or len(req.values) != 1:
            return False
        try:
            have, want = int(labels[req.key]), int(req.values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def affinity_matches(terms: tuple[NodeSelectorTerm, ...], labels: Mapping[str, str]) -> bool:
    if not terms:
        return True
    return any(all(requirement_matches(r, labels) for r in term.match_expressions) for term in terms)


#: the checks of :func:`static_mismatch`, in its order: a node that fails a later one passed the
#: earlier ones, so its reason is the closer to the job's real cause (mismatch_stage).
SELECTOR, AFFINITY, TAINT = "node selector", "required node affinity", "untolerated taint"
STAGES = (SELECTOR, AFFINITY, TAINT)


def static_mismatch(job: Job, labels: Mapping[str, str], taints: tuple[Taint, ...]) -> str | None:
    """Why ``job`` can never run on a node with these labels and taints (None if it can)."""
    for key, value in job.node_selector.items():
        if labels.get(key) != value:
            return f"{SELECTOR} {key}={value} not matched"
    if not affinity_matches(job.affinity, labels):
        return f"{AFFINITY} not matched"
    taint = tolerates(job.tolerations, taints)
    if taint is not None:
        return f"{TAINT} {taint.key}={taint.value}:{taint.effect}"
    return None


def mismatch_stage(reason: str) -> int:
    """How far a node got in :func:`static_mismatch` before `reason` (a later stage: closer)."""
    return next((i for i, stage in enumerate(STAGES) if reason.startswith(stage)), -1)
