"""core/v1 Events about pods (and other objects), as the bridge's components write them."""

from __future__ import annotations

import uuid

from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj


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
    return event(
        pod_ref(pod),
        pod["metadata"]["namespace"],
        type_=type_,
        reason=reason,
        message=message,
        component=component,
        host=host,
    )


def event(
    ref: Obj, namespace: str, *, type_: str, reason: str, message: str, component: str, host: str = ""
) -> Obj:
    """A new Event (count 1, now) about the object `ref` names (an involvedObject), in `namespace`
    (the object's own; `default` for a cluster-scoped one, as the kubelet does for its Node)."""
    t = rfc3339(now())
    source = {"component": component, **({"host": host} if host else {})}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{ref['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": ref,
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
