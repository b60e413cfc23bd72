"""Kubernetes Events on front pods (what `kubectl describe pod` shows), deduplicated, written in
the background.

The same (object, reason, message) is written once and then only has its count bumped, at most
every `min_interval` seconds, so a pod waiting for minutes does not flood the API server. `emit`
only queues the Event: a few workers write them, so a round and its decisions never wait on
Events (with thousands of pods admitted or waiting, they were half of the extender's writes).
Best effort, as Events are: beyond `max_queued` waiting to be written, new ones are dropped.
"""

from __future__ import annotations

import asyncio
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


_Queued = tuple[Obj, str, str, bool]  # object, reason, message, warning


class EventRecorder:
    def __init__(
        self,
        kube: Kube,
        *,
        min_interval: float = 30.0,
        max_entries: int = 50_000,
        workers: int = 4,
        max_queued: int = 20_000,
    ) -> None:
        self.kube = kube
        self.min_interval = min_interval
        self.max_entries = max_entries
        self.workers = workers
        self.max_queued = max_queued
        self.dropped = 0  # Events not written because too many were waiting
        self._seen: dict[str, dict[tuple[str, str], _Seen]] = {}  # uid -> (reason, message) -> seen
        self._queue: asyncio.Queue[_Queued] = asyncio.Queue()
        self._queued: set[tuple[str, str, str]] = set()  # (uid, reason, message) waiting or in flight
        self._tasks: list[asyncio.Task[None]] = []

    async def emit(self, obj: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        """Queue the Event; the recorder's workers (started on first use) write it."""
        key = (obj["metadata"]["uid"], reason, message)
        if key in self._queued:
            return
        if self._queue.qsize() >= self.max_queued:
            self.dropped += 1
            return
        self._queued.add(key)
        self._queue.put_nowait((obj, reason, message, warning))
        if not self._tasks:
            self._tasks = [asyncio.create_task(self._work(), name="events") for _ in range(self.workers)]

    async def _work(self) -> None:
        while True:
            obj, reason, message, warning = await self._queue.get()
            try:
                await self._write(obj, reason, message, warning)
            except Exception:  # best effort: a worker never dies
                log.exception("event %s not written", reason)
            finally:
                self._queued.discard((obj["metadata"]["uid"], reason, message))
                self._queue.task_done()

    async def _write(self, obj: Obj, reason: str, message: str, warning: bool) -> None:
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
        except (aiohttp.ClientError, OSError, TimeoutError) as e:  # best effort
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
