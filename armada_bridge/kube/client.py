"""Kubernetes REST over aiohttp: kubeconfig loading, typed errors, watches and streams.

Objects are plain dicts as the API server sends them: the bridge copies pods and other objects
between clusters, so it keeps every field it does not know about.
"""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from armada_bridge.kube.resources import Resource

Obj = dict[str, Any]

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


def load_config(
    kubeconfig: str | Path | dict[str, Any] | None = None, context: str | None = None
) -> KubeConfig:
    """From a kubeconfig (a file, or its parsed content), else $KUBECONFIG, else in-cluster."""
    c = k8s_client.Configuration()
    path = kubeconfig or os.environ.get("KUBECONFIG")
    if isinstance(path, dict):
        k8s_config.load_kube_config_from_dict(path, context=context, client_configuration=c)
    elif path:
        k8s_config.load_kube_config(config_file=str(path), context=context, client_configuration=c)
    else:
        k8s_config.load_incluster_config(client_configuration=c)
    ctx: ssl.SSLContext | bool = True
    if c.host.startswith("https"):
        sctx = (
            ssl.create_default_context(cafile=c.ssl_ca_cert)
            if c.ssl_ca_cert
            else ssl.create_default_context()
        )
        if c.cert_file and c.key_file:
            sctx.load_cert_chain(c.cert_file, c.key_file)
        if not c.verify_ssl:
            sctx.check_hostname = False
            sctx.verify_mode = ssl.CERT_NONE
        ctx = sctx
    headers = {}
    token = (c.api_key or {}).get("authorization")  # "Bearer <token>" as the loaders set it
    if token:
        headers["Authorization"] = token
    return KubeConfig(server=c.host.rstrip("/"), ssl_context=ctx, headers=headers)


def _params(params: Mapping[str, Any] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in (params or {}).items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


class Kube:
    """One API server. Use as `async with Kube(cfg) as kube:`."""

    def __init__(self, config: KubeConfig, *, timeout: float = 30, user_agent: str = "armada-bridge") -> None:
        self.config = config
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._headers = {"User-Agent": user_agent, "Accept": "application/json", **config.headers}
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(ssl=self.config.ssl_context, limit=64)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers)
        return self._session

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
        async with self.session.request(
            method, self.config.server + path, params=_params(params), data=data, headers=headers, timeout=t
        ) as resp:
            text = await resp.text()
            if resp.status >= 400:
                raise _error(resp.status, text)
            return dict(json.loads(text)) if text else {}

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
    ) -> Obj:
        """Patch an object by name. With ``uid``, the patch applies only to that very object: a
        namespace/name reused by a new object makes it fail (422: the UID is immutable) instead of
        changing the new one."""
        if uid is not None:
            patch = with_uid_precondition(patch, uid, patch_type)
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
            async for line in resp.content:
                if not line.strip():
                    continue
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


def with_uid_precondition(patch: Any, uid: str, patch_type: str) -> Any:
    """`patch` made to fail unless the object's UID is `uid` (pure).

    Merge and strategic patches carry ``metadata.uid``: the API server refuses to change a UID,
    so the patch fails on any other object. A JSON patch gets a ``test`` operation first.
    """
    if patch_type == "json":
        return [{"op": "test", "path": "/metadata/uid", "value": uid}, *patch]
    if patch_type not in ("merge", "strategic"):
        raise ValueError(f"a UID precondition cannot be put on a {patch_type} patch")
    out = dict(patch)
    out["metadata"] = {**(patch.get("metadata") or {}), "uid": uid}
    return out


def _error(status: int, text: str) -> ApiError:
    try:
        body = json.loads(text)
        return ApiError(status, body.get("reason", ""), body.get("message", text), body)
    except (ValueError, AttributeError):
        return ApiError(status, "", text[:500])
