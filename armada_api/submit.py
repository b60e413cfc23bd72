"""Armada's job calls (SubmitJobs, CancelJobs, CancelJobSet, ReprioritizeJobs, CancelOnQueue) on
front pods.

Every write is the caller's own request (:meth:`Front.as_caller`); a request's writes are all made
as dry runs first, so one the front would refuse changes nothing (docs/armada-api.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import grpc
from armada_client.armada import submit_pb2

from armada_api import jobs, states
from armada_api.errors import Refused
from armada_api.found import Found
from armada_api.front import Caller, Front
from armada_api.ids import is_job_id
from armada_api.job_services import owned_by
from armada_api.object_kinds import ObjectKinds
from armada_bridge import keys
from armada_bridge.contract import queue_access
from armada_bridge.contract.pods import job_priority_value
from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import NAMESPACES, PODS, QUEUES, SERVICES, Resource
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)
T = TypeVar("T")
DRY_RUN = {"dryRun": "All"}


class Jobs:
    def __init__(self, front: Front, kinds: ObjectKinds) -> None:
        self.front = front
        self.kinds = kinds

    async def require_queue(self, name: str) -> Obj:
        """Armada v0.22 answers a job call for a queue it does not know with PERMISSION_DENIED."""
        queue = await self.front.own.get_or_none(QUEUES, name) if jobs.is_queue_name(name) else None
        if queue is None:
            raise Refused(grpc.StatusCode.PERMISSION_DENIED, f"could not find queue {name!r}")
        return queue

    async def require_open(self, queue: Obj, namespaces: set[str]) -> None:
        """PERMISSION_DENIED when the queue does not take pods of one of the namespaces (the
        webhook would refuse them; said first, before anything is made)."""
        for ns in sorted(namespaces):
            found = await self.front.own.get_or_none(NAMESPACES, ns)
            labels = ((found or {}).get("metadata") or {}).get("labels") or {}
            if (why := queue_access.refusal(queue, ns, labels)) is not None:
                raise Refused(grpc.StatusCode.PERMISSION_DENIED, why)

    # ------------------------------------------------------------------ submit
    async def submit(self, caller: Caller, request: submit_pb2.JobSubmitRequest) -> list[str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        queue = await self.require_queue(request.queue)  # first, as Armada authorizes before it validates
        wanted = jobs.job_pods(request)
        await self.require_open(queue, {jp.namespace for jp in wanted})
        unique = list({jp.job_id: jp for jp in wanted}.values())  # a client id twice: once
        resources = await _each(unique, self._resource)
        pairs = list(zip(unique, resources, strict=True))
        async with self.front.as_caller(caller) as kube:
            submitted = await _each(pairs, lambda u: _submitted(kube, *u))
            new = [u for u, done in zip(pairs, submitted, strict=True) if not done]
            writes = [(r, jp.pod) for jp, r in new] + [(SERVICES, s) for jp, _r in new for s in jp.services]
            await _each(writes, lambda o: _dry_run_create(kube, *o))
            outcomes = await _each(new, lambda u: _create(kube, *u), return_exceptions=True)
            failed = [o for o in outcomes if isinstance(o, BaseException)]
            if failed:
                await _undo(kube, [o for o in outcomes if isinstance(o, Found)])
                raise failed[0]
        return [jp.job_id for jp in wanted]

    async def _resource(self, jp: jobs.JobPod) -> Resource:
        """What a job is created as: a pod, or its object's resource (an accepted kind)."""
        return await self.kinds.resource_of(jp.pod) if jp.is_object else PODS

    # ------------------------------------------------------------------ cancel
    async def cancel(self, caller: Caller, request: submit_pb2.JobCancelRequest) -> list[str]:
        ids = sorted({*request.job_ids, *([request.job_id] if request.job_id else [])})
        if not ids:  # as Armada: no job id cancels the job set
            return await self.cancel_job_set(
                caller,
                submit_pb2.JobSetCancelRequest(
                    queue=request.queue, job_set_id=request.job_set_id, reason=request.reason
                ),
            )
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        await self.require_queue(request.queue)
        found = await self._find(request.queue, request.job_set_id, ids)
        return await self._delete(caller, [f for f in found if f.state() in states.ACTIVE])

    async def cancel_job_set(self, caller: Caller, request: submit_pb2.JobSetCancelRequest) -> list[str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        wanted = set(request.filter.states) if request.HasField("filter") else set()
        if wanted - states.ACTIVE:
            names = ", ".join(sorted(submit_pb2.JobState.Name(s) for s in wanted - states.ACTIVE))
            raise jobs.RequestError(
                f"a job set filter may only name QUEUED, PENDING and RUNNING, not {names}"
            )
        await self.require_queue(request.queue)
        found = await self._find(request.queue, request.job_set_id)
        return await self._delete(caller, [f for f in found if f.state() in (wanted or states.ACTIVE)])

    async def cancel_on_queue(self, caller: Caller, request: submit_pb2.QueueCancelRequest) -> list[str]:
        """Every job of the queue (the API's pods, any job set) in `jobStates` (default: not ended)
        and of `priorityClasses` when given."""
        if request.pools:
            raise jobs.RequestError("pools are not served: the bridge's queues span every remote cluster")
        wanted = set(request.jobStates)
        if wanted - states.ACTIVE:
            raise jobs.RequestError("only QUEUED, PENDING and RUNNING jobs can be cancelled")
        await self.require_queue(request.name)
        classes = set(request.priorityClasses)
        found = [
            f
            for f in await self.find(jobs.job_set_selector(request.name))
            if f.state() in (wanted or states.ACTIVE)
            and (not classes or (f.obj.get("spec") or {}).get("priorityClassName") in classes)
        ]
        return await self._delete(caller, found)

    async def _delete(self, caller: Caller, found: list[Found]) -> list[str]:
        async with self.front.as_caller(caller) as kube:
            await _each(found, lambda f: _delete(kube, f, dry_run=True))
            await _each(found, lambda f: _delete(kube, f))
        return sorted(f.job_id for f in found)

    # ------------------------------------------------------------------ reprioritize
    async def reprioritize(
        self, caller: Caller, request: submit_pb2.JobReprioritizeRequest
    ) -> dict[str, str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        await self.require_queue(request.queue)
        ids = sorted(set(request.job_ids))
        found = await self._find(request.queue, request.job_set_id, ids or None)
        value = str(job_priority_value(request.new_priority))
        results = {
            i: f"job {i} not found in job set {request.job_set_id} of queue {request.queue}" for i in ids
        }
        if not ids:
            results[f"all jobs in job set {request.job_set_id}"] = ""
        patch = {"metadata": {"annotations": {keys.JOB_PRIORITY_ANNOTATION: value}}}

        async def one(f: Found) -> str:
            md = f.obj["metadata"]
            try:
                await kube.patch(f.resource, md["name"], patch, md["namespace"], uid=md["uid"])
                if f.is_object:  # then the pods that took its priority, as they are after it
                    for pod in await self.kinds.pods_of([f.uid]):
                        await _patch_pod(kube, pod, patch)
            except ApiError as e:
                return e.message
            return ""

        async with self.front.as_caller(caller) as kube:
            errors = await _each(found, one)
        for f, error in zip(found, errors, strict=True):
            if ids or error:
                results[f.job_id] = error
        return results

    # ------------------------------------------------------------------ finding jobs
    async def _find(self, queue: str, job_set: str, ids: Iterable[str] | None = None) -> list[Found]:
        """The API's jobs (pods and objects) of a queue's job set (only those of `ids` when given),
        found with the server's read-only identity: what is done to them is the caller's request."""
        selector = jobs.job_set_selector(queue, job_set)
        if ids is not None:
            wanted = [i for i in ids if is_job_id(i)]  # nothing else could name one (nor widen the selector)
            if not wanted:
                return []
            selector += f",{keys.ARMADA_JOB_ID_LABEL} in ({','.join(wanted)})"
        return [f for f in await self.find(selector) if jobs.in_job_set(f.obj, job_set)]

    async def find(self, selector: str) -> list[Found]:
        """The API's pods and objects that a label selector selects (the server's own identity)."""
        pods, objects = await asyncio.gather(
            self.front.own.list_all(PODS, None, labelSelector=selector), self.kinds.find(selector)
        )
        found = [Found(PODS, p) for p in pods.get("items") or []] + objects
        return [f for f in found if jobs.is_submitted(f.obj)]


async def _patch_pod(kube: Kube, pod: Mapping[str, Any], patch: Obj) -> None:
    """Patch `pod` (UID precondition); one gone meanwhile is left alone."""
    md = pod["metadata"]
    try:
        await kube.patch(PODS, md["name"], patch, md["namespace"], uid=md["uid"])
    except ApiError as e:
        if not e.not_found:
            raise


async def _delete(kube: Kube, found: Found, *, dry_run: bool = False) -> None:
    md = found.obj["metadata"]
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": md["uid"]}}
    path = found.resource.path(md["namespace"], md["name"])
    try:
        await kube.request("DELETE", path, params=DRY_RUN if dry_run else None, body=body)
    except ApiError as e:
        if not e.not_found:
            raise


#: front requests one call makes at once (a job set of hundreds of pods is not sent one by one)
CONCURRENCY = 16


async def _each(
    items: Sequence[T], call: Callable[[T], Awaitable[Any]], *, return_exceptions: bool = False
) -> list[Any]:
    """`call` on every item, CONCURRENCY at a time; the results in order (the first error raised,
    or with `return_exceptions` every outcome, as asyncio.gather gives them)."""
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(item: T) -> Any:
        async with gate:
            return await call(item)

    return list(await asyncio.gather(*(one(i) for i in items), return_exceptions=return_exceptions))


async def _dry_run_create(kube: Kube, resource: Resource, body: Obj) -> None:
    await kube.request("POST", resource.path(body["metadata"]["namespace"]), params=DRY_RUN, body=body)


async def _submitted(kube: Kube, jp: jobs.JobPod, resource: Resource) -> bool:
    """Whether a job with a client id already has its pod or object (its id is derived from the
    client id)."""
    if keys.CLIENT_ID_ANNOTATION not in jp.pod["metadata"]["annotations"]:
        return False
    existing = await kube.get_or_none(resource, jp.pod["metadata"]["name"], jp.namespace)
    return existing is not None and jobs.job_id_of(existing) == jp.job_id


async def _create(kube: Kube, jp: jobs.JobPod, resource: Resource) -> Found | None:
    """The created pod (or object), then its Services (owned by it: deleting the pod deletes them);
    None when the same client id's job was just created by another call."""
    try:
        created = Found(resource, await kube.create(resource, jp.pod))
    except ApiError as e:
        if e.conflict and keys.CLIENT_ID_ANNOTATION in jp.pod["metadata"]["annotations"]:
            return None
        raise
    try:
        for service in jp.services:
            await kube.create(SERVICES, owned_by(service, dict(created.obj)))
    except BaseException:
        await _undo(kube, [created])
        raise
    return created


async def _undo(kube: Kube, created: list[Found]) -> None:
    """Delete, as the caller, the pods and objects a request created before it failed."""
    for found in created:
        try:
            await _delete(kube, found)
        except Exception:
            md = found.obj["metadata"]
            log.exception(
                "could not undo the creation of %s %s/%s", found.resource.kind, md["namespace"], md["name"]
            )
