"""Armada's Event service: a job set's events from its front pods and objects, listed and then
followed (pods by a watch; objects, of any accepted kind, and their pods by listing them again
every OBJECT_POLL_SECONDS).

The server reads them with its own (read-only) identity and sends the caller only those of
namespaces where the front lets the caller list pods (the caller's SelfSubjectAccessReview). Each
event is sent once per stream; a stream resumed after a listed event's id sends exactly what
sorts after it, after one sent while watching at least what the client may have missed
(:mod:`armada_api.job_events`), each job's in their order.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import grpc
from armada_client.armada import event_pb2

from armada_api import jobs
from armada_api.errors import Refused
from armada_api.found import Found
from armada_api.front import Caller, Front
from armada_api.job_events import JobEvent, Progress, resumed
from armada_api.submit import Jobs
from armada_bridge.kube.client import ApiError
from armada_bridge.kube.resources import PODS
from armada_bridge.objects import ObjView

log = logging.getLogger(__name__)
WATCH_SECONDS = 240
OBJECT_POLL_SECONDS = 2.0


class JobSetEvents:
    def __init__(self, front: Front, jobs: Jobs) -> None:
        self.front = front
        self.jobs = jobs

    async def stream(
        self, caller: Caller, queue: str, job_set: str, *, after: str, watch: bool, error_if_missing: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        jobs.check_queue_and_job_set(queue, job_set)
        await self.jobs.require_queue(queue)
        visible = Visible(self.front, caller)
        selector = jobs.job_set_selector(queue, job_set)
        listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
        pods = [Found(PODS, p) for p in listed.get("items") or []]
        objects = await self._objects(visible, selector, job_set)
        found = [f for f in pods if jobs.in_job_set(f.obj, job_set) and await visible.may(f.obj)] + objects
        if error_if_missing and not found:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"job set {job_set} of queue {queue} not found")
        progress = Progress()
        progress.record(e for f in found for e in f.events())  # sent now, or before the resume point
        for event in resumed((e for f in found for e in f.events()), after):
            yield event.stream_message()
        if not watch:
            return
        version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        followed = (
            self._pods(visible, selector, job_set, version),
            self._followed_objects(visible, selector, job_set, objects),
        )
        async for events in _merged(*followed):
            for event in progress.new(events):
                yield event.stream_message(live=True)

    async def _objects(self, visible: Visible, selector: str, job_set: str) -> list[Found]:
        found = await self.jobs.kinds.find(selector)
        return [f for f in found if jobs.in_job_set(f.obj, job_set) and await visible.may(f.obj)]

    async def _pods(
        self, visible: Visible, selector: str, job_set: str, version: str
    ) -> AsyncIterator[list[JobEvent]]:
        """The events of the job set's pods as they change (a watch, started again as it ends)."""
        while True:
            try:
                async for kind, pod in self.front.own.watch(
                    PODS, None, timeout_seconds=WATCH_SECONDS, labelSelector=selector, resourceVersion=version
                ):
                    version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
                    if kind == "BOOKMARK" or not jobs.in_job_set(pod, job_set) or not await visible.may(pod):
                        continue
                    yield Found(PODS, pod).events(deleted=kind == "DELETED")
            except ApiError as e:
                if not e.gone:
                    raise
                # the watch fell too far behind: list again; what was sent is not sent twice
                listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
                version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
                for pod in listed.get("items") or []:
                    if jobs.in_job_set(pod, job_set) and await visible.may(pod):
                        yield Found(PODS, pod).events()

    async def _followed_objects(
        self, visible: Visible, selector: str, job_set: str, known: list[Found]
    ) -> AsyncIterator[list[JobEvent]]:
        """The events of the job set's objects, listed again and again: an object no longer
        listed was deleted (cancelled, unless it had ended)."""
        seen = {f.uid: f for f in known}
        while True:
            await asyncio.sleep(OBJECT_POLL_SECONDS)
            now = {f.uid: f for f in await self._objects(visible, selector, job_set)}
            for uid, f in seen.items():
                if uid not in now:
                    yield f.events(deleted=True)
            for f in now.values():
                yield f.events()
            seen = now


async def _merged(*streams: AsyncIterator[list[JobEvent]]) -> AsyncIterator[list[JobEvent]]:
    """What several streams yield, as each yields it; the first error ends all."""
    queue: asyncio.Queue[tuple[list[JobEvent] | None, BaseException | None]] = asyncio.Queue()

    async def pump(stream: AsyncIterator[list[JobEvent]]) -> None:
        try:
            async for item in stream:
                await queue.put((item, None))
        except Exception as e:
            await queue.put((None, e))

    tasks = [asyncio.create_task(pump(s)) for s in streams]
    try:
        while True:
            item, error = await queue.get()
            if error is not None:
                raise error
            assert item is not None
            yield item
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Visible:
    """Which namespaces' pods the caller may list, asked once per namespace and stream."""

    def __init__(self, front: Front, caller: Caller) -> None:
        self.front = front
        self.caller = caller
        self.answers: dict[str, bool] = {}

    async def may(self, obj: ObjView) -> bool:
        namespace = str(obj["metadata"]["namespace"])
        if namespace not in self.answers:
            self.answers[namespace] = await self.front.may(self.caller, "list", "pods", namespace)
        return self.answers[namespace]
