"""Kubernetes Events on front pods (what `kubectl describe pod` shows), deduplicated, written in
the background.

The same (object, reason, message) is written once and then only has its count bumped, at most
every `min_interval` seconds, so a pod waiting for minutes does not flood the API server. `emit`
only queues the Event: a few workers write them, so a round and its decisions never wait on
Events (with thousands of pods admitted or waiting, they were half of the extender's writes).
Best effort, as Events are: beyond `max_queued` waiting to be written, new ones are dropped. An
Event dropped or whose write failed is never lost silently: it is counted
(`armada_bridge_extender_events_lost_total{cause}`), logged at warning (at most every
`warn_interval` seconds, with how many since), and handed to `on_lost`, so that the loop posts a
waiting reason again. How many wait to be written is a gauge (`armada_bridge_extender_events_queued`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from armada_bridge.kube import Kube
from armada_bridge.kube.client import ApiError
from armada_bridge.kube.events import pod_event
from armada_bridge.kube.resources import CORE_EVENTS
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj
from extender.metrics import Metrics

log = logging.getLogger(__name__)
COMPONENT = "armada-bridge-extender"
#: the reason of the Event that says why a pod waits
WAITING = "ArmadaWaiting"
_FIGURES = re.compile(r"\d+(?:\.\d+)?")


def gist(reason: str) -> str:
    """A waiting reason without its figures (shares, free room, members present): a pod whose
    reason changes in its figures alone is not told again. With thousands of pods waiting, each
    admission changed every waiting pod's figures, and each change was an Event;
    the dashboard gives the figures of the moment (``armada-bridge why`` the last Event's)."""
    return _FIGURES.sub("#", reason)


@dataclass
class _Seen:
    name: str
    uid: str
    count: int
    last_sent: float


_Queued = tuple[Obj, str, str, bool]  # object, reason, message, warning
#: told of every Event not written: (the object's UID, the Event's reason, its message)
LostHandler = Callable[[str, str, str], None]


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        metrics: Metrics,
        *,
        on_lost: LostHandler | None = None,
        min_interval: float = 30.0,
        max_entries: int = 50_000,
        workers: int = 4,
        max_queued: int = 20_000,
        warn_interval: float = 10.0,
    ) -> None:
        self.kube = kube
        self.metrics = metrics
        self.on_lost = on_lost
        self.min_interval = min_interval
        self.max_entries = max_entries
        self.workers = workers
        self.max_queued = max_queued
        self.warn_interval = warn_interval
        self._warned_at = -math.inf
        self._unwarned = 0  # Events lost since the last warning
        self._seen: dict[str, dict[tuple[str, str], _Seen]] = {}  # uid -> (reason, message) -> seen
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self._queued: set[tuple[str, str, str]] = set()  # (uid, reason, message) waiting or in flight
        self._tasks: list[asyncio.Task[None]] = []
        metrics.events_queued.set_function(self._queue.qsize)

    async def emit(self, obj: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """Queue the Event; the recorder's workers (started on first use) write it."""
        key = (obj["metadata"]["uid"], reason, message)
        if key in self._queued:
            return
        if self._queue.qsize() >= self.max_queued:
            self._lost(
                "dropped", obj, reason, message, f"{self.max_queued} Events already wait to be written"
            )
            return
        self._queued.add(key)
        # What the Event names, not the object: a decision's patch answers with the whole pod
        # (managed fields and all), and thousands of Events may wait behind a slow API server.
        md = obj["metadata"]
        brief = {"metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion") if k in md}}
        self._queue.put_nowait((brief, reason, message, warning))
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._work(), name="events") for _ in range(self.workers)]

    async def _work(self) -> None:
        while True:
            obj, reason, message, warning = await self._queue.get()
            try:
                await self._write(obj, reason, message, warning)
            except Exception as e:  # a worker never dies: the Event is lost, and says so
                self._lost("failed", obj, reason, message, f"{type(e).__name__}: {e}")
            finally:
                self._queued.discard((obj["metadata"]["uid"], reason, message))
                self._queue.task_done()

    async def _write(self, obj: Obj, reason: str, message: str, warning: bool) -> None:
        """Bump the count of the Event written before for (reason, message), at most every
        `min_interval`, else create it; raises when it could not be written."""
        md = obj["metadata"]
        key = (reason, message)
        per_object = self._seen.setdefault(md["uid"], {})
        t = time.monotonic()
        seen = per_object.get(key)
        if seen is not None:
            if t - seen.last_sent < self.min_interval:
                return
            try:
                await self.kube.patch(
                    CORE_EVENTS,
                    seen.name,
                    {"count": seen.count + 1, "lastTimestamp": rfc3339(now())},
                    md["namespace"],
                    uid=seen.uid,
                )
                seen.count += 1
                seen.last_sent = t
                return
            except ApiError as e:
                if not (e.not_found or e.uid_mismatch):
                    raise
                per_object.pop(key, None)  # the Event expired: written anew
        body = pod_event(
            obj, type_="Warning" if warning else "Normal", reason=reason, message=message, component=COMPONENT
        )
        created = await self.kube.create(CORE_EVENTS, body)
        if len(self._seen) >= self.max_entries:
            self._seen = {md["uid"]: per_object}
        per_object[key] = _Seen(created["metadata"]["name"], created["metadata"]["uid"], 1, t)

    def _lost(self, cause: str, obj: Obj, reason: str, message: str, why: str) -> None:
        """An Event not written: counted, logged at warning (rate-limited), and told `on_lost`."""
        md = obj["metadata"]
        self.metrics.events_lost.labels(cause=cause).inc()
        self._unwarned += 1
        t = time.monotonic()
        if t - self._warned_at >= self.warn_interval:
            log.warning(
                "%d Event(s) not written since the last warning; the last, %s on pod %s/%s, %s: %s",
                self._unwarned,
                reason,
                md.get("namespace"),
                md.get("name"),
                cause,
                why,
            )
            self._warned_at, self._unwarned = t, 0
        if self.on_lost is not None:
            self.on_lost(md["uid"], reason, message)

    def forget(self, uid: str) -> None:
        self._seen.pop(uid, None)
