"""Kubernetes REST over aiohttp: typed errors, watches and streams (kubeconfig loading:
:mod:`armada_bridge.kube.kubeconfig`).

Objects are plain dicts as the API server sends them: the bridge copies pods and other objects
between clusters, so it keeps every field it does not know about.

Requests other than POST are retried, with exponential backoff and jitter, on 429 (honouring
Retry-After), 5xx and connection errors: GET, PUT (resourceVersion), DELETE (preconditions) and the
bridge's PATCHes (fixed values, UID precondition) are idempotent. A token read from a file (the
in-cluster ServiceAccount token, which rotates) is read again when the file changes.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
from multidict import CIMultiDict

from armada_bridge.kube.resources import Resource
from armada_bridge.objects import Obj

PATCH_TYPES = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}


class ApiError(Exception):
    """A non-2xx answer from the API server, with its Status reason and message."""

    def __init__(self, status: int, reason: str, message: str, body: Obj | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body or {}

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409

    @property
    def uid_mismatch(self) -> bool:
        """A UID precondition failed: the name now belongs to another object (or none)."""
        if self.status == 409 and "precondition" in self.message.lower():
            return True
        causes = ((self.body or {}).get("details") or {}).get("causes") or []
        return self.status == 422 and any(c.get("field") == "metadata.uid" for c in causes)

    @property
    def gone(self) -> bool:
        return self.status == 410


@dataclass
class KubeConfig:
    server: str
    ssl_context: ssl.SSLContext | bool = True
    headers: dict[str, str] = field(default_factory=dict)
    #: a bearer token file read again whenever it changes (in-cluster ServiceAccount tokens rotate)
    token_file: str | None = None
    #: groups to impersonate (one `Impersonate-Group` header each), beside `Impersonate-User` in
    #: `headers`
    impersonate_groups: tuple[str, ...] = ()


@dataclass
class RetryPolicy:
    attempts: int = 4
    base_seconds: float = 0.2
    max_seconds: float = 10.0

    def delay(self, attempt: int, retry_after: str | None = None) -> float:
        if retry_after:
            try:
                return min(self.max_seconds, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_seconds, self.base_seconds * 2**attempt) * (0.5 + random.random() / 2)


RETRIED_STATUS = frozenset({429, 500, 502, 503, 504})
_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "PATCH"})


#: The longest watch event read: etcd stores objects up to 1.5 MiB, JSON can be larger than that.
MAX_EVENT_BYTES = 64 * 1024 * 1024


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[bytes]:
    """Non-empty lines of a stream of any length each (a watch sends one object per line, and an
    object may be megabytes: aiohttp's own line reader stops at 512 KiB)."""
    buf = bytearray()
    async for chunk in content.iter_any():
        buf += chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            line = bytes(buf[start:end])
            start = end + 1
            if line.strip():
                yield line
        del buf[:start]
        if len(buf) > MAX_EVENT_BYTES:
            raise ApiError(413, "EventTooLarge", f"a watch event longer than {MAX_EVENT_BYTES} bytes")
    if bytes(buf).strip():
        yield bytes(buf)


def _params(params: Mapping[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (params or {}).items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


class Kube:
    """One API server. Use as `async with Kube(cfg) as kube:`."""

    def __init__(
        self,
        config: KubeConfig,
        *,
        timeout: float = 30,
        user_agent: str = "armada-bridge",
        retry: RetryPolicy | None = None,
    ) -> None:
        self.config = config
        self.retry = retry or RetryPolicy()
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._headers = CIMultiDict(
            {"User-Agent": user_agent, "Accept": "application/json", **config.headers}
        )
        for group in config.impersonate_groups:
            self._headers.add("Impersonate-Group", group)
        self._session: aiohttp.ClientSession | None = None
        self._token_mtime = 0.0

    @property
    def session(self) -> aiohttp.ClientSession:
        self._refresh_token()
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.config.ssl_context, limit=64)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        return self._session

    def _refresh_token(self) -> None:
        """Read the token file again when it changed (a new session carries the new token)."""
        path = self.config.token_file
        if not path:
            return
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            return
        if mtime == self._token_mtime:
            return
        self._token_mtime = mtime
        try:
            token = Path(path).read_text().strip()
        except OSError:
            return
        if token and self._headers.get("Authorization") != f"Bearer {token}":
            self._headers["Authorization"] = f"Bearer {token}"
            if self._session is not None and not self._session.closed:
                self._session.headers["Authorization"] = f"Bearer {token}"

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def __aenter__(self) -> Kube:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # ------------------------------------------------------------------ raw
    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Obj:
        data = None if body is None else (body if isinstance(body, bytes | str) else json.dumps(body))
        headers = {"Content-Type": content_type} if data is not None else {}
        t = aiohttp.ClientTimeout(total=timeout) if timeout else self._timeout
        attempts = self.retry.attempts if method in _IDEMPOTENT else 1
        for attempt in range(attempts):
            last = attempt == attempts - 1
            try:
                async with self.session.request(
                    method,
                    self.config.server + path,
                    params=_params(params),
                    data=data,
                    headers=headers,
                    timeout=t,
                ) as resp:
                    text = await resp.text()
                    if resp.status in RETRIED_STATUS and not last:
                        await asyncio.sleep(self.retry.delay(attempt, resp.headers.get("Retry-After")))
                        continue
                    if resp.status >= 400:
                        raise _error(resp.status, text)
                    return dict(json.loads(text)) if text else {}
            except (aiohttp.ClientConnectionError, TimeoutError):
                if last:
                    raise
                await asyncio.sleep(self.retry.delay(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    # ------------------------------------------------------------------ typed
    async def get(
        self, r: Resource, name: str, namespace: str | None = None, subresource: str | None = None
    ) -> Obj:
        return await self.request("GET", r.path(namespace, name, subresource))

    async def get_or_none(self, r: Resource, name: str, namespace: str | None = None) -> Obj | None:
        try:
            return await self.get(r, name, namespace)
        except ApiError as e:
            if e.not_found:
                return None
            raise

    async def list(self, r: Resource, namespace: str | None = None, **params: Any) -> Obj:
        return await self.request("GET", r.path(namespace), params=params)

    async def list_pages(
        self, r: Resource, namespace: str | None = None, *, page: int = 500, **params: Any
    ) -> AsyncIterator[Obj]:
        """List in pages of `page` (the API server's `limit`/`continue`), each page as the API server
        sent it; all pages belong to the snapshot of the first page's resourceVersion. A caller that
        keeps less than every item whole lets each page go before the next is read."""
        token: str | None = ""
        while token is not None:
            more = await self.list(r, namespace, limit=page, **{**params, "continue": token or None})
            token = (more.get("metadata") or {}).get("continue") or None
            yield more

    async def list_all(
        self, r: Resource, namespace: str | None = None, *, page: int = 500, **params: Any
    ) -> Obj:
        """List in pages of `page`; one list of every item, with the resourceVersion of the first
        page (the snapshot the pages belong to)."""
        first: Obj = {}
        items: list[Obj] = []
        async for more in self.list_pages(r, namespace, page=page, **params):
            first = first or more
            items += more.get("items") or []
        return {**first, "items": items}

    async def create(self, r: Resource, body: Obj, namespace: str | None = None) -> Obj:
        ns = namespace or body.get("metadata", {}).get("namespace")
        return await self.request("POST", r.path(ns), body=body)

    async def replace(self, r: Resource, body: Obj, subresource: str | None = None) -> Obj:
        md = body["metadata"]
        return await self.request("PUT", r.path(md.get("namespace"), md["name"], subresource), body=body)

    async def patch(
        self,
        r: Resource,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
        params: Mapping[str, Any] | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        """Patch an object by name. With ``uid``, the patch applies only to that very object: a
        namespace/name reused by a new object makes it fail (422: the UID is immutable) instead of
        changing the new one. With ``resource_version``, only that
        version of it: a change made since makes it fail (409 Conflict) instead of being undone by
        a patch computed from the older one."""
        patch = with_preconditions(patch, patch_type, uid=uid, resource_version=resource_version)
        return await self.request(
            "PATCH",
            r.path(namespace, name, subresource),
            body=patch,
            content_type=PATCH_TYPES[patch_type],
            params=params,
        )

    async def delete(
        self, r: Resource, name: str, namespace: str | None = None, *, body: Obj | None = None
    ) -> Obj | None:
        """Delete; None when it was already gone."""
        try:
            return await self.request("DELETE", r.path(namespace, name), body=body)
        except ApiError as e:
            if e.not_found:
                return None
            raise

    # ------------------------------------------------------------------ streams
    async def watch(
        self, r: Resource, namespace: str | None = None, *, timeout_seconds: int = 300, **params: Any
    ) -> AsyncIterator[tuple[str, Obj]]:
        """Yield (type, object) from a watch; an ERROR event raises ApiError (410 means relist)."""
        q = {"watch": True, "allowWatchBookmarks": True, "timeoutSeconds": timeout_seconds, **params}
        t = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=timeout_seconds + 30)
        async with self.session.get(
            self.config.server + r.path(namespace), params=_params(q), timeout=t
        ) as resp:
            if resp.status >= 400:
                raise _error(resp.status, await resp.text())
            async for line in _lines(resp.content):
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    st = event.get("object", {})
                    raise ApiError(int(st.get("code", 500)), st.get("reason", ""), st.get("message", ""), st)
                yield event["type"], event["object"]

    async def stream(self, path: str, params: Mapping[str, Any] | None = None) -> AsyncIterator[bytes]:
        """Yield the raw body of a GET as it arrives (pod logs with follow)."""
        t = aiohttp.ClientTimeout(total=None, sock_connect=10)
        async with self.session.get(self.config.server + path, params=_params(params), timeout=t) as resp:
            if resp.status >= 400:
                raise _error(resp.status, await resp.text())
            async for chunk in resp.content.iter_any():
                yield chunk


def with_preconditions(
    patch: Any, patch_type: str, *, uid: str | None = None, resource_version: str | None = None
) -> Any:
    """`patch` made to fail unless the object's UID is `uid` and its resourceVersion is
    `resource_version` (those given; pure).

    Merge and strategic patches carry them in ``metadata``: the API server refuses to change a
    UID (the patch fails on any other object) and answers 409 Conflict to a resourceVersion that is
    not the object's. A JSON patch gets a ``test`` operation for each, first.
    """
    fields = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v is not None}
    if not fields:
        return patch
    if patch_type == "json":
        return [*({"op": "test", "path": f"/metadata/{k}", "value": v} for k, v in fields.items()), *patch]
    if patch_type not in ("merge", "strategic"):
        raise ValueError(f"a precondition cannot be put on a {patch_type} patch")
    return {**patch, "metadata": {**(patch.get("metadata") or {}), **fields}}


def _error(status: int, text: str) -> ApiError:
    try:
        body = json.loads(text)
        return ApiError(status, body.get("reason", ""), body.get("message", text), body)
    except (ValueError, AttributeError):
        return ApiError(status, "", text[:500])
