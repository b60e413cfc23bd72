"""Kubernetes Events on front pods (what `kubectl describe pod` shows), deduplicated.

The same (object, reason, message) is written once and then only has its count bumped, at most
every `min_interval` seconds, so a pod waiting for minutes does not flood the API server.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass

from armada_bridge.kube import Kube
from armada_bridge.kube.client import ApiError, Obj
from armada_bridge.kube.resources import CORE_EVENTS

log = logging.getLogger(__name__)
COMPONENT = "armada-bridge-extender"


@dataclass
class _Seen:
    name: str
    count: int
    last_sent: float


def _now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class EventRecorder:
    def __init__(self, kube: Kube, *, min_interval: float = 30.0, max_entries: int = 50_000) -> None:
        self.kube = kube
        self.min_interval = min_interval
        self.max_entries = max_entries
        self._seen: dict[str, dict[tuple[str, str], _Seen]] = {}  # uid -> (reason, message) -> seen

    async def emit(self, obj: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        md = obj["metadata"]
        key = (reason, message)
        per_object = self._seen.setdefault(md["uid"], {})
        now = time.monotonic()
        seen = per_object.get(key)
        try:
            if seen is None:
                name = f"{md['name']}.{uuid.uuid4().hex[:12]}"
                ts = _now_rfc3339()
                await self.kube.create(
                    CORE_EVENTS,
                    {
                        "metadata": {"name": name, "namespace": md["namespace"]},
                        "involvedObject": {
                            "apiVersion": obj.get("apiVersion", "v1"),
                            "kind": obj.get("kind", "Pod"),
                            "name": md["name"],
                            "namespace": md["namespace"],
                            "uid": md["uid"],
                        },
                        "reason": reason,
                        "message": message[:1024],
                        "type": "Warning" if warning else "Normal",
                        "source": {"component": COMPONENT},
                        "reportingComponent": COMPONENT,
                        "firstTimestamp": ts,
                        "lastTimestamp": ts,
                        "count": 1,
                    },
                )
                if len(self._seen) >= self.max_entries:
                    self._seen = {md["uid"]: per_object}
                per_object[key] = _Seen(name, 1, now)
            elif now - seen.last_sent >= self.min_interval:
                seen.count += 1
                seen.last_sent = now
                await self.kube.patch(
                    CORE_EVENTS,
                    seen.name,
                    {"count": seen.count, "lastTimestamp": _now_rfc3339()},
                    md["namespace"],
                )
        except ApiError as e:
            if e.not_found and seen is not None:
                per_object.pop(key, None)  # the event expired; the next call writes a new one
            else:
                log.debug("event %s on %s/%s not written: %s", reason, md["namespace"], md["name"], e)

    def forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
