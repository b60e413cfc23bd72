"""Armada's queue calls on Queue objects, each the caller's own request (RBAC on
``queues.bridge.armadaproject.io`` decides who may read, create, change or delete them)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from armada_client.armada import submit_pb2

from armada_api import queues
from armada_api.errors import Refused
from armada_api.front import Caller, Front
from armada_api.jobs import RequestError, is_queue_name
from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import QUEUES


class Queues:
    def __init__(self, front: Front) -> None:
        self.front = front

    async def create(self, caller: Caller, queue: submit_pb2.Queue) -> None:
        body = queues.new_queue_object(queue)
        async with self.front.as_caller(caller) as kube:
            try:
                await kube.create(QUEUES, body)
            except ApiError as e:
                if e.conflict:
                    raise Refused(
                        grpc.StatusCode.ALREADY_EXISTS, f"queue {queue.name} already exists"
                    ) from None
                raise

    async def update(self, caller: Caller, queue: submit_pb2.Queue) -> None:
        queues.queue_object(queue)  # valid before anything is read
        async with self.front.as_caller(caller) as kube:
            current = await _get(kube, queue.name)
            await kube.patch(
                QUEUES, queue.name, queues.update_patch(current, queue), uid=current["metadata"]["uid"]
            )

    async def set_cordoned(self, caller: Caller, name: str, cordoned: bool) -> None:
        async with self.front.as_caller(caller) as kube:
            current = await _get(kube, name)
            await kube.patch(QUEUES, name, {"spec": {"cordoned": cordoned}}, uid=current["metadata"]["uid"])

    async def delete(self, caller: Caller, name: str) -> None:
        if not is_queue_name(name):
            raise RequestError(f"queue name {name!r} is not a DNS label")
        async with self.front.as_caller(caller) as kube:
            await kube.delete(QUEUES, name)  # an absent queue: done, as Armada's

    async def get(self, caller: Caller, name: str) -> submit_pb2.Queue:
        async with self.front.as_caller(caller) as kube:
            return queues.armada_queue(await _get(kube, name))

    async def get_all(self, caller: Caller, most: int) -> AsyncIterator[submit_pb2.StreamingQueueMessage]:
        async with self.front.as_caller(caller) as kube:
            listed = await kube.list_all(QUEUES)
        items = sorted(listed.get("items") or [], key=lambda q: str(q["metadata"]["name"]))
        for obj in items[:most] if most else items:
            yield submit_pb2.StreamingQueueMessage(queue=queues.armada_queue(obj))
        yield submit_pb2.StreamingQueueMessage(end=submit_pb2.EndMarker())


async def _get(kube: Kube, name: str) -> dict:
    if not is_queue_name(name):
        raise Refused(grpc.StatusCode.NOT_FOUND, f"queue {name!r} not found")
    obj = await kube.get_or_none(QUEUES, name)
    if obj is None:
        raise Refused(grpc.StatusCode.NOT_FOUND, f"queue {name!r} not found")
    return obj
