"""The gRPC servicers: Armada's Submit, QueueService, Event and Jobs, on the stubs the
armada-client package ships. Each call takes its caller (a token from its metadata, or a client
certificate) and hands the work to :class:`~armada_api.submit.Jobs`, :class:`~armada_api.queue_calls.Queues`,
:class:`~armada_api.event_stream.JobSetEvents` or :class:`~armada_api.job_status.JobStatus`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeAlias

import grpc
from armada_client.armada import (
    event_pb2,
    event_pb2_grpc,
    health_pb2,
    job_pb2,
    job_pb2_grpc,
    submit_pb2,
    submit_pb2_grpc,
)
from google.protobuf import empty_pb2

from armada_api.errors import Refused, handled, status_for
from armada_api.event_stream import JobSetEvents
from armada_api.front import Caller, bearer_token, certificate_caller
from armada_api.job_status import JobStatus
from armada_api.queue_calls import Queues
from armada_api.submit import Jobs

Context: TypeAlias = "grpc.aio.ServicerContext[Any, Any]"
EMPTY = empty_pb2.Empty()


def caller_of(context: Context) -> Caller:
    """The caller: the user of its client certificate on the port that requires one (verified
    against the front's client CA, as kube-apiserver reads a certificate before a token), else its
    bearer token."""
    return certificate_caller(context.auth_context()) or Caller(
        token=bearer_token(context.invocation_metadata())
    )


def not_served(what: str) -> Refused:
    return Refused(
        grpc.StatusCode.UNIMPLEMENTED, f"{what} is not served by the bridge yet (docs/armada-api.md)"
    )


async def _batch(
    request: submit_pb2.QueueList,
    call: Callable[[Caller, submit_pb2.Queue], Awaitable[None]],
    caller: Caller,
    response: Callable[..., Any],
    item: Callable[..., Any],
) -> Any:
    """A batch call: each queue on its own; `response` lists the queues that failed, each an
    `item` with why."""
    failed = []
    for queue in request.queues:
        try:
            await call(caller, queue)
        except Exception as e:
            failed.append(item(queue=queue, error=status_for(e)[1]))
    return response(failed_queues=failed)


class QueueCalls:
    """The queue calls, in both services that carry them."""

    queues: Queues

    @handled
    async def CreateQueue(self, request: submit_pb2.Queue, context: Context) -> empty_pb2.Empty:
        await self.queues.create(caller_of(context), request)
        return EMPTY

    @handled
    async def CreateQueues(self, request: submit_pb2.QueueList, context: Context) -> Any:
        return await _batch(
            request,
            self.queues.create,
            caller_of(context),
            submit_pb2.BatchQueueCreateResponse,
            submit_pb2.QueueCreateResponse,
        )

    @handled
    async def UpdateQueue(self, request: submit_pb2.Queue, context: Context) -> empty_pb2.Empty:
        await self.queues.update(caller_of(context), request)
        return EMPTY

    @handled
    async def UpdateQueues(self, request: submit_pb2.QueueList, context: Context) -> Any:
        return await _batch(
            request,
            self.queues.update,
            caller_of(context),
            submit_pb2.BatchQueueUpdateResponse,
            submit_pb2.QueueUpdateResponse,
        )

    @handled
    async def DeleteQueue(self, request: submit_pb2.QueueDeleteRequest, context: Context) -> empty_pb2.Empty:
        await self.queues.delete(caller_of(context), request.name)
        return EMPTY

    @handled
    async def GetQueue(self, request: submit_pb2.QueueGetRequest, context: Context) -> submit_pb2.Queue:
        return await self.queues.get(caller_of(context), request.name)

    async def GetQueues(
        self, request: submit_pb2.StreamingQueueGetRequest, context: Context
    ) -> AsyncIterator[submit_pb2.StreamingQueueMessage]:
        async def queues() -> AsyncIterator[submit_pb2.StreamingQueueMessage]:
            async for message in self.queues.get_all(caller_of(context), request.num):
                yield message

        async for message in _aborting(queues(), context):
            yield message


class SubmitService(QueueCalls, submit_pb2_grpc.SubmitServicer):
    def __init__(self, jobs: Jobs, queues: Queues) -> None:
        self.jobs = jobs
        self.queues = queues

    @handled
    async def SubmitJobs(self, request: submit_pb2.JobSubmitRequest, context: Context) -> Any:
        job_ids = await self.jobs.submit(caller_of(context), request)
        return submit_pb2.JobSubmitResponse(
            job_response_items=[submit_pb2.JobSubmitResponseItem(job_id=i) for i in job_ids]
        )

    @handled
    async def CancelJobs(self, request: submit_pb2.JobCancelRequest, context: Context) -> Any:
        return submit_pb2.CancellationResult(
            cancelled_ids=await self.jobs.cancel(caller_of(context), request)
        )

    @handled
    async def CancelJobSet(
        self, request: submit_pb2.JobSetCancelRequest, context: Context
    ) -> empty_pb2.Empty:
        await self.jobs.cancel_job_set(caller_of(context), request)
        return EMPTY

    @handled
    async def ReprioritizeJobs(self, request: submit_pb2.JobReprioritizeRequest, context: Context) -> Any:
        results = await self.jobs.reprioritize(caller_of(context), request)
        return submit_pb2.JobReprioritizeResponse(reprioritization_results=results)

    @handled
    async def PreemptJobs(self, request: submit_pb2.JobPreemptRequest, context: Context) -> Any:
        raise not_served("PreemptJobs")

    async def Health(self, request: empty_pb2.Empty, context: Context) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class QueueService(QueueCalls, submit_pb2_grpc.QueueServiceServicer):
    def __init__(self, queues: Queues, jobs: Jobs) -> None:
        self.queues = queues
        self.jobs = jobs

    @handled
    async def CordonQueue(self, request: submit_pb2.QueueCordonRequest, context: Context) -> empty_pb2.Empty:
        await self.queues.set_cordoned(caller_of(context), request.name, True)
        return EMPTY

    @handled
    async def UncordonQueue(
        self, request: submit_pb2.QueueUncordonRequest, context: Context
    ) -> empty_pb2.Empty:
        await self.queues.set_cordoned(caller_of(context), request.name, False)
        return EMPTY

    @handled
    async def PreemptOnQueue(
        self, request: submit_pb2.QueuePreemptRequest, context: Context
    ) -> empty_pb2.Empty:
        raise not_served("PreemptOnQueue")

    @handled
    async def CancelOnQueue(
        self, request: submit_pb2.QueueCancelRequest, context: Context
    ) -> empty_pb2.Empty:
        await self.jobs.cancel_on_queue(caller_of(context), request)
        return EMPTY


class EventService(event_pb2_grpc.EventServicer):
    def __init__(self, events: JobSetEvents) -> None:
        self.events = events

    async def GetJobSetEvents(
        self, request: event_pb2.JobSetRequest, context: Context
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        async def events() -> AsyncIterator[event_pb2.EventStreamMessage]:
            stream = self.events.stream(
                caller_of(context),
                request.queue,
                request.id,
                after=request.from_message_id,
                watch=request.watch,
                error_if_missing=request.errorIfMissing,
            )
            async for message in stream:
                yield message

        async for message in _aborting(events(), context):
            yield message

    async def Watch(
        self, request: event_pb2.WatchRequest, context: Context
    ) -> AsyncIterator[event_pb2.EventStreamMessage]:
        """Armada's deprecated form of a watching GetJobSetEvents."""
        same = event_pb2.JobSetRequest(
            queue=request.queue, id=request.job_set_id, from_message_id=request.from_id, watch=True
        )
        async for message in self.GetJobSetEvents(same, context):
            yield message

    async def Health(self, request: empty_pb2.Empty, context: Context) -> health_pb2.HealthCheckResponse:
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


async def _aborting(stream: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
    """A stream's messages; its error ends the call with Armada's code."""
    try:
        async for message in stream:
            yield message
    except Exception as e:
        await context.abort(*status_for(e))


class JobsService(job_pb2_grpc.JobsServicer):
    """Armada's Jobs service: the states and errors of jobs (details and runs are not served)."""

    def __init__(self, status: JobStatus) -> None:
        self.status = status

    @handled
    async def GetJobStatus(self, request: job_pb2.JobStatusRequest, context: Context) -> Any:
        states = await self.status.states(caller_of(context), list(request.job_ids))
        return job_pb2.JobStatusResponse(job_states=states)

    @handled
    async def GetJobErrors(self, request: job_pb2.JobErrorsRequest, context: Context) -> Any:
        errors = await self.status.errors(caller_of(context), list(request.job_ids))
        return job_pb2.JobErrorsResponse(job_errors=errors)

    @handled
    async def GetJobStatusUsingExternalJobUri(
        self, request: job_pb2.JobStatusUsingExternalJobUriRequest, context: Context
    ) -> Any:
        raise not_served("GetJobStatusUsingExternalJobUri")

    @handled
    async def GetJobDetails(self, request: job_pb2.JobDetailsRequest, context: Context) -> Any:
        raise not_served("GetJobDetails")

    @handled
    async def GetJobRunDetails(self, request: job_pb2.JobRunDetailsRequest, context: Context) -> Any:
        raise not_served("GetJobRunDetails")

    @handled
    async def GetActiveQueues(self, request: job_pb2.GetActiveQueuesRequest, context: Context) -> Any:
        raise not_served("GetActiveQueues")
