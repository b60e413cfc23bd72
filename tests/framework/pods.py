"""A front pod as Kubernetes JSON, for tests of pure code: one builder, each test saying only what
matters to it; and the AdmissionReview of a pod the webhook is sent."""

from __future__ import annotations

from typing import Any

from armada_bridge.objects import Obj


def pod(
    name: str = "p-0",
    *,
    namespace: str = "team-a",
    uid: str | None = None,
    created: str = "2026-01-01T00:00:00Z",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    owners: list[dict[str, Any]] | None = None,
    cpu: str | None = "1",
    phase: str = "Pending",
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> Obj:
    """A pod named `name` (uid `uid-<name>` unless `uid` says otherwise; no labels or annotations
    map unless given, as the API server keeps a pod without them; `owners` its ownerReferences)
    with one container asking for `cpu` (None: no container) and `spec`'s fields beside it (or
    instead of it: `containers`), in `phase` with `status`'s fields beside it."""
    containers = [{"name": "c", "resources": {"requests": {"cpu": cpu}}}] if cpu is not None else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{name}",
            "creationTimestamp": created,
            **({"labels": dict(labels)} if labels is not None else {}),
            **({"annotations": dict(annotations)} if annotations is not None else {}),
            **({"ownerReferences": owners} if owners is not None else {}),
        },
        "spec": {**({"containers": containers} if containers else {}), **(spec or {})},
        "status": {"phase": phase, **(status or {})},
    }


def admission_review(
    obj: Any, *, namespace: str, uid: str = "review-1", operation: str = "CREATE", **request: Any
) -> Obj:
    """The AdmissionReview kube-apiserver sends the mutating webhook for `obj` (a pod, as a rule)
    in `namespace`; `request`, more fields of its request (subResource, dryRun)."""
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": namespace,
            "operation": operation,
            "object": obj,
            **request,
        },
    }
