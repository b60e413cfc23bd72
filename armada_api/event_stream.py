"""Armada's Event service: a job set's events from its front pods, listed and then watched.

The server reads the pods with its own (read-only) identity and sends the caller only the pods of
namespaces where the front lets the caller list pods (the caller's SelfSubjectAccessReview). Each
event is sent once per stream; a stream resumed after an id sends what sorts after it
(:mod:`armada_api.job_events`), each job's in their order.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from typing import Any

import grpc
from armada_client.armada import event_pb2

from armada_api import jobs
from armada_api.errors import Refused
from armada_api.front import Front
from armada_api.job_events import Progress, job_events, job_set_events
from armada_api.submit import Jobs
from armada_bridge.kube.client import ApiError
from armada_bridge.kube.resources import PODS

log = logging.getLogger(__name__)
Obj = dict[str, Any]
WATCH_SECONDS = 240


class JobSetEvents:
    def __init__(self, front: Front, jobs: Jobs) -> None:
        self.front = front
        self.jobs = jobs

    async def stream(
        self, token: str, queue: str, job_set: str, *, after: str, watch: bool, error_if_missing: bool
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        jobs.check_queue_and_job_set(queue, job_set)
        await self.jobs.require_queue(queue)
        visible = Visible(self.front, token)
        selector = jobs.job_set_selector(queue, job_set)
        listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
        pods = await visible.of(p for p in listed.get("items") or [] if jobs.in_job_set(p, job_set))
        if error_if_missing and not pods:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"job set {job_set} of queue {queue} not found")
        progress = Progress()
        progress.record(e for p in pods for e in job_events(p))  # sent now, or before the resume point
        for event in job_set_events(pods, after):
            yield event.stream_message()
        version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        while watch:
            try:
                async for kind, pod in self.front.own.watch(
                    PODS, None, timeout_seconds=WATCH_SECONDS, labelSelector=selector, resourceVersion=version
                ):
                    version = str((pod.get("metadata") or {}).get("resourceVersion") or version)
                    if kind == "BOOKMARK" or not jobs.in_job_set(pod, job_set) or not await visible.may(pod):
                        continue
                    for event in progress.new(job_events(pod, deleted=kind == "DELETED")):
                        yield event.stream_message()
            except ApiError as e:
                if not e.gone:
                    raise
                # the watch fell too far behind: list again; what was sent is not sent twice
                listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
                version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
                for pod in await visible.of(
                    p for p in listed.get("items") or [] if jobs.in_job_set(p, job_set)
                ):
                    for event in progress.new(job_events(pod)):
                        yield event.stream_message()


class Visible:
    """Which namespaces' pods the caller may list, asked once per namespace and stream."""

    def __init__(self, front: Front, token: str) -> None:
        self.front = front
        self.token = token
        self.answers: dict[str, bool] = {}

    async def may(self, pod: Obj) -> bool:
        namespace = str(pod["metadata"]["namespace"])
        if namespace not in self.answers:
            self.answers[namespace] = await self.front.may(self.token, "list", "pods", namespace)
        return self.answers[namespace]

    async def of(self, pods: Iterable[Obj]) -> list[Obj]:
        return [p for p in pods if await self.may(p)]
