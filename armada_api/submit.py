"""Armada's job calls (SubmitJobs, CancelJobs, CancelJobSet, ReprioritizeJobs, CancelOnQueue) on
front pods.

Every write is the caller's own request (:meth:`Front.as_caller`); a request's writes are all made
as dry runs first, so one the front would refuse changes nothing (docs/armada-api.md).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

import grpc
from armada_client.armada import submit_pb2

from armada_api import jobs, states
from armada_api.errors import Refused
from armada_api.front import Front
from armada_api.ids import is_job_id
from armada_api.job_services import owned_by
from armada_bridge import keys
from armada_bridge.contract.pods import job_priority_value
from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import PODS, QUEUES, SERVICES, Resource

log = logging.getLogger(__name__)
Obj = dict[str, Any]
T = TypeVar("T")
DRY_RUN = {"dryRun": "All"}


class Jobs:
    def __init__(self, front: Front) -> None:
        self.front = front

    async def require_queue(self, name: str) -> None:
        """Armada v0.22 answers a job call for a queue it does not know with PERMISSION_DENIED."""
        if not jobs.is_queue_name(name) or await self.front.own.get_or_none(QUEUES, name) is None:
            raise Refused(grpc.StatusCode.PERMISSION_DENIED, f"could not find queue {name!r}")

    # ------------------------------------------------------------------ submit
    async def submit(self, token: str, request: submit_pb2.JobSubmitRequest) -> list[str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        await self.require_queue(request.queue)  # first, as Armada authorizes before it validates
        wanted = jobs.job_pods(request)
        async with self.front.as_caller(token) as kube:
            unique = list({jp.job_id: jp for jp in wanted}.values())  # a client id twice: once
            submitted = await _each(unique, lambda jp: self._submitted(kube, jp))
            new = [jp for jp, done in zip(unique, submitted, strict=True) if not done]
            objects = [(PODS, jp.pod) for jp in new] + [(SERVICES, s) for jp in new for s in jp.services]
            await _each(objects, lambda o: _dry_run_create(kube, *o))
            outcomes = await _each(new, lambda jp: _create(kube, jp), return_exceptions=True)
            failed = [o for o in outcomes if isinstance(o, BaseException)]
            if failed:
                await _undo(kube, [o for o in outcomes if isinstance(o, dict)])
                raise failed[0]
        return [jp.job_id for jp in wanted]

    async def _submitted(self, kube: Kube, jp: jobs.JobPod) -> bool:
        """Whether a job with a client id already has its pod (its id is derived from the client id)."""
        if keys.CLIENT_ID_ANNOTATION not in jp.pod["metadata"]["annotations"]:
            return False
        pod = await kube.get_or_none(PODS, jp.pod["metadata"]["name"], jp.namespace)
        return pod is not None and jobs.job_id_of(pod) == jp.job_id

    # ------------------------------------------------------------------ cancel
    async def cancel(self, token: str, request: submit_pb2.JobCancelRequest) -> list[str]:
        ids = sorted({*request.job_ids, *([request.job_id] if request.job_id else [])})
        if not ids:  # as Armada: no job id cancels the job set
            return await self.cancel_job_set(
                token,
                submit_pb2.JobSetCancelRequest(
                    queue=request.queue, job_set_id=request.job_set_id, reason=request.reason
                ),
            )
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        await self.require_queue(request.queue)
        pods = [p for p in await self._find(request.queue, request.job_set_id, ids) if _active(p)]
        return await self._delete(token, pods)

    async def cancel_job_set(self, token: str, request: submit_pb2.JobSetCancelRequest) -> list[str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        wanted = set(request.filter.states) if request.HasField("filter") else set()
        if wanted - states.ACTIVE:
            names = ", ".join(sorted(submit_pb2.JobState.Name(s) for s in wanted - states.ACTIVE))
            raise jobs.RequestError(
                f"a job set filter may only name QUEUED, PENDING and RUNNING, not {names}"
            )
        await self.require_queue(request.queue)
        pods = await self._find(request.queue, request.job_set_id)
        return await self._delete(
            token, [p for p in pods if states.job_state(p) in (wanted or states.ACTIVE)]
        )

    async def cancel_on_queue(self, token: str, request: submit_pb2.QueueCancelRequest) -> list[str]:
        """Every job of the queue (the API's pods, any job set) in `jobStates` (default: not ended)
        and of `priorityClasses` when given."""
        if request.pools:
            raise jobs.RequestError("pools are not served: the bridge's queues span every remote cluster")
        wanted = set(request.jobStates)
        if wanted - states.ACTIVE:
            raise jobs.RequestError("only QUEUED, PENDING and RUNNING jobs can be cancelled")
        await self.require_queue(request.name)
        listed = await self.front.own.list_all(PODS, None, labelSelector=jobs.job_set_selector(request.name))
        classes = set(request.priorityClasses)
        pods = [
            p
            for p in listed.get("items") or []
            if states.job_state(p) in (wanted or states.ACTIVE)
            and (not classes or (p.get("spec") or {}).get("priorityClassName") in classes)
        ]
        return await self._delete(token, pods)

    async def _delete(self, token: str, pods: list[Obj]) -> list[str]:
        async with self.front.as_caller(token) as kube:
            await _each(pods, lambda p: _delete(kube, p, dry_run=True))
            await _each(pods, lambda p: _delete(kube, p))
        return sorted(jobs.job_id_of(p) for p in pods)

    # ------------------------------------------------------------------ reprioritize
    async def reprioritize(self, token: str, request: submit_pb2.JobReprioritizeRequest) -> dict[str, str]:
        jobs.check_queue_and_job_set(request.queue, request.job_set_id)
        await self.require_queue(request.queue)
        ids = sorted(set(request.job_ids))
        pods = await self._find(request.queue, request.job_set_id, ids or None)
        value = str(job_priority_value(request.new_priority))
        results = {
            i: f"job {i} not found in job set {request.job_set_id} of queue {request.queue}" for i in ids
        }
        if not ids:
            results[f"all jobs in job set {request.job_set_id}"] = ""
        patch = {"metadata": {"annotations": {keys.JOB_PRIORITY_ANNOTATION: value}}}

        async def one(pod: Obj) -> str:
            md = pod["metadata"]
            try:
                await kube.patch(PODS, md["name"], patch, md["namespace"], uid=md["uid"])
            except ApiError as e:
                return e.message
            return ""

        async with self.front.as_caller(token) as kube:
            errors = await _each(pods, one)
        for pod, error in zip(pods, errors, strict=True):
            if ids or error:
                results[jobs.job_id_of(pod)] = error
        return results

    # ------------------------------------------------------------------ finding jobs
    async def _find(self, queue: str, job_set: str, ids: Iterable[str] | None = None) -> list[Obj]:
        """The API's pods of a queue's job set (only those of `ids` when given), found with the
        server's read-only identity: what is done to them is the caller's request."""
        selector = jobs.job_set_selector(queue, job_set)
        if ids is not None:
            wanted = [i for i in ids if is_job_id(i)]  # nothing else could name one (nor widen the selector)
            if not wanted:
                return []
            selector += f",{keys.ARMADA_JOB_ID_LABEL} in ({','.join(wanted)})"
        listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
        return [p for p in listed.get("items") or [] if jobs.in_job_set(p, job_set)]


def _active(pod: Obj) -> bool:
    return states.job_state(pod) in states.ACTIVE


async def _delete(kube: Kube, pod: Obj, *, dry_run: bool = False) -> None:
    md = pod["metadata"]
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": md["uid"]}}
    try:
        await kube.request(
            "DELETE", PODS.path(md["namespace"], md["name"]), params=DRY_RUN if dry_run else None, body=body
        )
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


async def _create(kube: Kube, jp: jobs.JobPod) -> Obj | None:
    """The created pod, then its Services (owned by it: deleting the pod deletes them); None when
    the same client id's pod was just created by another call."""
    try:
        pod = await kube.create(PODS, jp.pod)
    except ApiError as e:
        if e.conflict and keys.CLIENT_ID_ANNOTATION in jp.pod["metadata"]["annotations"]:
            return None
        raise
    try:
        for service in jp.services:
            await kube.create(SERVICES, owned_by(service, pod))
    except BaseException:
        await _undo(kube, [pod])
        raise
    return pod


async def _undo(kube: Kube, created: list[Obj]) -> None:
    """Delete, as the caller, the pods a request created before it failed."""
    for pod in created:
        try:
            await _delete(kube, pod)
        except Exception:
            log.exception(
                "could not undo the creation of pod %s/%s",
                pod["metadata"]["namespace"],
                pod["metadata"]["name"],
            )
