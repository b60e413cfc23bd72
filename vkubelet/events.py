"""Events on front pods (the vkubelet's own, and the remote pod's Events reflected) and on
RemoteClusters."""

from __future__ import annotations

import logging

from armada_bridge import keys
from armada_bridge.kube import ApiError, Kube
from armada_bridge.kube.events import event, pod_event
from armada_bridge.kube.resources import CORE_EVENTS
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "armada-bridge-vkubelet"
#: remote Events waiting to be reflected, at most (client-go's event broadcaster: maxQueuedEvents)
MAX_PENDING_EVENTS = 1000


class PendingEvents:
    """Remote Events waiting to be reflected to the front: the latest version of each (by its UID)
    with the front pod it belongs to. Bounded: when the front is slower than the remote's Events
    come, a new Event is dropped (as a kubelet's event broadcaster does) rather than held in an
    unbounded backlog; a newer version of one already waiting replaces it."""

    def __init__(self, limit: int = MAX_PENDING_EVENTS) -> None:
        self.limit = limit
        self._waiting: dict[str, tuple[Obj, Obj]] = {}

    def put(self, key: str, event: Obj, front_pod_ref: Obj) -> bool:
        """Keep `event` until taken; False: dropped (the bound is reached)."""
        if key not in self._waiting and len(self._waiting) >= self.limit:
            return False
        self._waiting[key] = (event, front_pod_ref)
        return True

    def take(self, key: str) -> tuple[Obj, Obj] | None:
        return self._waiting.pop(key, None)

    def __len__(self) -> int:
        return len(self._waiting)


class Recorder:
    """Writes core/v1 Events to the front cluster (best effort: a failed Event never fails a sync)."""

    def __init__(self, front: Kube, cluster: str) -> None:
        self.front = front
        self.cluster = cluster

    async def pod_event(self, pod: Obj, type_: str, reason: str, message: str) -> None:
        body = pod_event(
            pod, type_=type_, reason=reason, message=message, component=COMPONENT, host=self.cluster
        )
        try:
            await self.front.create(CORE_EVENTS, body)
        except ApiError as e:
            md = pod["metadata"]
            log.warning("event %s on %s/%s: %s", reason, md["namespace"], md["name"], e)

    async def cluster_event(self, rc: Obj, type_: str, reason: str, message: str) -> None:
        """An Event about the RemoteCluster itself (cluster-scoped: in namespace default)."""
        md = rc["metadata"]
        ref = {
            "apiVersion": keys.API_VERSION,
            "kind": "RemoteCluster",
            "name": md["name"],
            "uid": md["uid"],
            "resourceVersion": md.get("resourceVersion", ""),
        }
        body = event(
            ref,
            "default",
            type_=type_,
            reason=reason,
            message=message,
            component=COMPONENT,
            host=self.cluster,
        )
        try:
            await self.front.create(CORE_EVENTS, body)
        except ApiError as e:
            log.warning("event %s on RemoteCluster %s: %s", reason, md["name"], e)

    async def reflect(self, remote_event: Obj, front_pod_ref: Obj) -> None:
        """Create or update the front copy of a remote pod's Event."""
        md = remote_event["metadata"]
        name = f"{md['name']}.{self.cluster}"[:253]
        src = remote_event.get("source") or {}
        first = remote_event.get("firstTimestamp") or remote_event.get("eventTime") or rfc3339(now())
        last = remote_event.get("lastTimestamp") or first
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": front_pod_ref["namespace"]},
            "involvedObject": {
                **front_pod_ref,
                "fieldPath": (remote_event.get("involvedObject") or {}).get("fieldPath", ""),
            },
            "type": remote_event.get("type", "Normal"),
            "reason": remote_event.get("reason", ""),
            "message": f"{remote_event.get('message', '')} (remote cluster {self.cluster})",
            "source": {
                "component": src.get("component") or remote_event.get("reportingComponent") or "remote",
                "host": self.cluster,
            },
            "reportingComponent": COMPONENT,
            "reportingInstance": self.cluster,
            "firstTimestamp": first[:19] + "Z" if len(first) > 20 else first,
            "lastTimestamp": last[:19] + "Z" if len(last) > 20 else last,
            "count": remote_event.get("count") or 1,
        }
        try:
            await self.front.create(CORE_EVENTS, body)
        except ApiError as e:
            if not e.conflict:
                raise
            existing = await self.front.get(CORE_EVENTS, name, front_pod_ref["namespace"])
            await self.front.patch(
                CORE_EVENTS,
                name,
                {"count": body["count"], "lastTimestamp": body["lastTimestamp"], "message": body["message"]},
                front_pod_ref["namespace"],
                uid=existing["metadata"]["uid"],
            )
