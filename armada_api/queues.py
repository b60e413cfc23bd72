"""Armada's Queue message and the bridge's Queue object, both ways. Pure.

Name, priority factor, cordoned and labels map one to one; owners and permissions are accepted and
not kept (RBAC decides who may change a queue); per-priority-class limits are refused (the
bridge's limits are ``spec.resourceLimits``). A queue created through the API takes pods of every
namespace (``spec.namespaceSelector: {}``), as an Armada queue without permissions takes any
submitter's jobs; an admin narrows it on the Queue object, and updates through the API keep that.
docs/armada-api.md, "Queues".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from armada_client.armada import submit_pb2

from armada_api.jobs import RequestError, is_queue_name
from armada_bridge import keys
from armada_bridge.objects import Obj


def queue_object(queue: submit_pb2.Queue) -> Obj:
    """The Queue object for an Armada queue; RequestError when the bridge cannot keep it as given."""
    if not queue.name:
        raise RequestError("queue name is a required field")
    if not is_queue_name(queue.name):
        raise RequestError(
            f"queue name {queue.name!r} must be a DNS label (lower-case letters, digits and '-', 63 at most)"
        )
    if not queue.priority_factor > 0:
        raise RequestError(f"priority factor of queue {queue.name} must be greater than 0")
    if queue.resource_limits_by_priority_class_name:
        raise RequestError(
            "resource limits by priority class are not supported: the bridge's Queue limits each"
            " resource for all classes (spec.resourceLimits)"
        )
    metadata: Obj = {"name": queue.name}
    if queue.labels:
        metadata["labels"] = dict(queue.labels)
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "Queue",
        "metadata": metadata,
        "spec": {"priorityFactor": queue.priority_factor, "cordoned": queue.cordoned},
    }


def new_queue_object(queue: submit_pb2.Queue) -> Obj:
    """The Queue object CreateQueue makes: :func:`queue_object`, open to every namespace."""
    obj = queue_object(queue)
    obj["spec"]["namespaceSelector"] = {}
    return obj


def update_patch(current: Mapping[str, Any], queue: submit_pb2.Queue) -> Obj:
    """The merge patch that makes `current` what `queue` says (labels replaced as a whole)."""
    wanted = queue_object(queue)
    old_labels = (current.get("metadata") or {}).get("labels") or {}
    new_labels = wanted["metadata"].get("labels") or {}
    labels: dict[str, str | None] = {k: None for k in old_labels if k not in new_labels}
    labels.update(new_labels)
    patch: Obj = {"spec": wanted["spec"]}
    if labels:
        patch["metadata"] = {"labels": labels}
    return patch


def armada_queue(obj: Mapping[str, Any]) -> submit_pb2.Queue:
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    return submit_pb2.Queue(
        name=str(md.get("name") or ""),
        priority_factor=float(spec.get("priorityFactor") or 1),
        cordoned=bool(spec.get("cordoned")),
        labels={str(k): str(v) for k, v in (md.get("labels") or {}).items()},
    )
