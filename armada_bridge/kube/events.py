"""core/v1 Events about pods, as the bridge's components write them."""

from __future__ import annotations

import uuid
from typing import Any

from armada_bridge.kube.times import now, rfc3339

Obj = dict[str, Any]


def pod_ref(pod: Obj) -> Obj:
    """The involvedObject of an Event about `pod`."""
    md = pod["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": md["name"],
        "namespace": md["namespace"],
        "uid": md["uid"],
        "resourceVersion": md.get("resourceVersion", ""),
    }


def pod_event(pod: Obj, *, type_: str, reason: str, message: str, component: str, host: str = "") -> Obj:
    """A new Event (count 1, now) about `pod`, ready to create."""
    md = pod["metadata"]
    t = rfc3339(now())
    source = {"component": component, **({"host": host} if host else {})}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{md['name']}.{uuid.uuid4().hex[:16]}", "namespace": md["namespace"]},
        "involvedObject": pod_ref(pod),
        "type": type_,
        "reason": reason,
        "message": message[:1024],
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host,
        "firstTimestamp": t,
        "lastTimestamp": t,
        "count": 1,
    }
