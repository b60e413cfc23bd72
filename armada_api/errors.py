"""Armada's gRPC status codes for what went wrong: a request that is not well formed, the front's
answers, a refusal of the API's own. Pure (the mapping); :func:`handled` puts it on an RPC."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import aiohttp
import grpc

from armada_api.jobs import RequestError
from armada_bridge.kube.client import ApiError

log = logging.getLogger(__name__)
T = TypeVar("T")


class Refused(Exception):
    """The API refuses a call with a gRPC code and a message."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status_for(e: BaseException) -> tuple[grpc.StatusCode, str]:
    """The gRPC code and message a client gets for an error."""
    if isinstance(e, Refused):
        return e.code, e.message
    if isinstance(e, RequestError):
        return grpc.StatusCode.INVALID_ARGUMENT, str(e)
    if isinstance(e, ApiError):
        code = {
            400: grpc.StatusCode.INVALID_ARGUMENT,
            401: grpc.StatusCode.UNAUTHENTICATED,
            403: grpc.StatusCode.PERMISSION_DENIED,
            404: grpc.StatusCode.NOT_FOUND,
            409: grpc.StatusCode.ALREADY_EXISTS,
            422: grpc.StatusCode.INVALID_ARGUMENT,
        }.get(
            e.status,
            grpc.StatusCode.UNAVAILABLE if e.status == 429 or e.status >= 500 else grpc.StatusCode.UNKNOWN,
        )
        return code, f"front cluster: {e.message}"
    if isinstance(e, aiohttp.ClientError | TimeoutError | OSError):
        return grpc.StatusCode.UNAVAILABLE, f"front cluster unreachable: {e}"
    return grpc.StatusCode.INTERNAL, f"internal error: {type(e).__name__}"


def handled(method: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """An RPC whose errors reach the client as Armada's codes (and are logged when internal)."""

    @functools.wraps(method)
    async def rpc(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        try:
            return await method(self, request, context)
        except (Refused, RequestError, ApiError, aiohttp.ClientError, TimeoutError, OSError) as e:
            code, message = status_for(e)
        except Exception as e:
            log.exception("%s failed", method.__name__)
            code, message = status_for(e)
        await context.abort(code, message)
        raise AssertionError("abort raises")

    return rpc
