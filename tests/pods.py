"""A front pod as Kubernetes JSON, for tests of pure code: one builder, each test saying only what
matters to it."""

from __future__ import annotations

from typing import Any

from armada_bridge.objects import Obj


def pod(
    name: str = "p-0",
    *,
    namespace: str = "team-a",
    created: str = "2026-01-01T00:00:00Z",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    cpu: str | None = "1",
    phase: str = "Pending",
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> Obj:
    """A pod named `name` (uid `uid-<name>`) with one container asking for `cpu` (None: no container)
    and `spec`'s fields beside it, in `phase` with `status`'s fields beside it."""
    containers = [{"name": "c", "resources": {"requests": {"cpu": cpu}}}] if cpu is not None else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": {**({"containers": containers} if containers else {}), **(spec or {})},
        "status": {"phase": phase, **(status or {})},
    }
