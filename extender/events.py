"""Kubernetes Events on front pods (what `kubectl describe pod` shows), deduplicated.

The same (object, reason, message) is written once and then only has its count bumped, at most
every `min_interval` seconds, so a pod waiting for minutes does not flood the API server.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import aiohttp

from armada_bridge.kube import Kube
from armada_bridge.kube.client import ApiError, Obj
from armada_bridge.kube.events import pod_event
from armada_bridge.kube.resources import CORE_EVENTS
from armada_bridge.kube.times import now, rfc3339

log = logging.getLogger(__name__)
COMPONENT = "armada-bridge-extender"


@dataclass
class _Seen:
    name: str
    uid: str
    count: int
    last_sent: float


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
        t = time.monotonic()
        seen = per_object.get(key)
        try:
            if seen is None:
                body = pod_event(
                    obj,
                    type_="Warning" if warning else "Normal",
                    reason=reason,
                    message=message,
                    component=COMPONENT,
                )
                created = await self.kube.create(CORE_EVENTS, body)
                name, event_uid = created["metadata"]["name"], created["metadata"]["uid"]
                if len(self._seen) >= self.max_entries:
                    self._seen = {md["uid"]: per_object}
                per_object[key] = _Seen(name, event_uid, 1, t)
            elif t - seen.last_sent >= self.min_interval:
                seen.count += 1
                seen.last_sent = t
                await self.kube.patch(
                    CORE_EVENTS,
                    seen.name,
                    {"count": seen.count, "lastTimestamp": rfc3339(now())},
                    md["namespace"],
                    uid=seen.uid,
                )
        except (aiohttp.ClientError, OSError, TimeoutError) as e:  # best effort: never stops a round
            log.debug(
                "event %s on %s/%s not written: %s: %s",
                reason,
                md["namespace"],
                md["name"],
                type(e).__name__,
                e,
            )
        except ApiError as e:
            if (e.not_found or e.uid_mismatch) and seen is not None:
                per_object.pop(key, None)  # the event expired; the next call writes a new one
            else:
                log.debug("event %s on %s/%s not written: %s", reason, md["namespace"], md["name"], e)

    def forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
