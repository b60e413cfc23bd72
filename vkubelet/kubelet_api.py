"""The kubelet API of the virtual nodes (TLS): `kubectl logs` on front pods, proxied to the remote pod;
`kubectl exec|attach|port-forward|cp`, relayed to the remote pod (vkubelet/streams.py).

Callers are authenticated as the kubelet does it: a client certificate signed by the front
cluster's client CA, or a bearer token checked with a TokenReview; anonymous requests get 401.
They are then authorized with a SubjectAccessReview on the node's subresource (containerLogs:
nodes/proxy with verb get; exec, attach, portForward and run: nodes/proxy with verb create for POST
and get for GET, like the kubelet); a denied request gets 403. End users are authorized on
pods/exec|attach|portforward by the front apiserver before it calls here.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Callable
from typing import Protocol

import aiohttp
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from armada_bridge.kube import PODS, ApiError, Kube
from armada_bridge.kube.auth import Auth, User, authenticated
from vkubelet import streams
from vkubelet.metrics import METRICS

log = logging.getLogger(__name__)

#: a namespace or pod name as Kubernetes allows them (DNS subdomain), checked before any look-up.
_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")
LOG_PARAMS = ("follow", "tailLines", "sinceSeconds", "sinceTime", "limitBytes", "timestamps", "previous")


class Agents(Protocol):
    def remote_for(self, node_name: str, front_uid: str) -> Kube | None: ...


def _forbidden(user: User, verb: str, node: str, sub: str) -> web.Response:
    return web.Response(
        status=403,
        text=f"Forbidden (user={user.name}, verb={verb}, resource=nodes, subresource={sub}, node={node})\n",
    )


class KubeletApi:
    def __init__(self, front: Kube, agents: Agents, ready: Callable[[], bool]) -> None:
        self.front = front
        self.agents = agents
        self.ready = ready
        self.auth = Auth(front)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/containerLogs/{namespace}/{pod}/{container}", self.container_logs)
        for kind in streams.SUBRESOURCES:
            with_container = kind != "portForward"
            tail = "/{container}" if with_container else ""
            for path in (
                f"/{kind}/{{namespace}}/{{pod}}{tail}",
                f"/{kind}/{{namespace}}/{{pod}}/{{uid}}{tail}",
            ):
                app.router.add_route("GET", path, self.stream)
                app.router.add_route("POST", path, self.stream)
        app.router.add_get("/metrics", self.metrics)
        app.router.add_get("/healthz", self.healthz)
        app.router.add_get("/readyz", self.readyz)
        return app

    async def healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(self, _: web.Request) -> web.Response:
        ok = self.ready()
        return web.Response(status=200 if ok else 503, text="ok\n" if ok else "syncing\n")

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus metrics, for callers allowed `get nodes/metrics` (as on a kubelet)."""
        user = await self._authenticated(request)
        if isinstance(user, web.Response):
            return user
        allowed, _ = await self.auth.authorize_node(user, "get", "", "metrics")
        if not allowed:
            return _forbidden(user, "get", "", "metrics")
        return web.Response(
            body=generate_latest(METRICS.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def _authenticated(self, request: web.Request) -> User | web.Response:
        return await authenticated(self.auth, request)

    async def container_logs(self, request: web.Request) -> web.StreamResponse:
        user = await self._authenticated(request)
        if isinstance(user, web.Response):
            return user
        ns, name, container = (request.match_info[k] for k in ("namespace", "pod", "container"))
        if not (_NAME.fullmatch(ns) and _NAME.fullmatch(name)):
            return web.Response(status=400, text="invalid namespace or pod name\n")
        pod = await self.front.get_or_none(PODS, name, ns)
        if pod is None:
            return web.Response(status=404, text=f"pod {ns}/{name} not found\n")
        node = (pod.get("spec") or {}).get("nodeName") or ""
        allowed, _ = await self.auth.authorize_node(user, "get", node, "proxy")
        if not allowed:
            return _forbidden(user, "get", node, "proxy")
        remote = self.agents.remote_for(node, pod["metadata"]["uid"])
        if remote is None:
            return web.Response(status=404, text=f"pod {ns}/{name} has no remote pod on node {node}\n")
        params = {k: request.query[k] for k in LOG_PARAMS if k in request.query}
        params["container"] = container
        return await self._proxy(request, remote, f"/api/v1/namespaces/{ns}/pods/{name}/log", params)

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """exec, attach, portForward (and run, as exec): authorized like the kubelet, then relayed."""
        user = await self._authenticated(request)
        if isinstance(user, web.Response):
            return user
        kind = request.path.split("/")[1]
        ns, name = request.match_info["namespace"], request.match_info["pod"]
        if not (_NAME.fullmatch(ns) and _NAME.fullmatch(name)):
            return web.Response(status=400, text="invalid namespace or pod name\n")
        container = request.match_info.get("container")
        pod = await self.front.get_or_none(PODS, name, ns)
        if pod is None or request.match_info.get("uid", pod["metadata"]["uid"]) != pod["metadata"]["uid"]:
            return web.Response(status=404, text=f"pod {ns}/{name} not found\n")
        node = (pod.get("spec") or {}).get("nodeName") or ""
        verb = "create" if request.method == "POST" else "get"
        allowed, _ = await self.auth.authorize_node(user, verb, node, "proxy")
        if not allowed:
            return _forbidden(user, verb, node, "proxy")
        remote = self.agents.remote_for(node, pod["metadata"]["uid"])
        if remote is None:
            return web.Response(status=404, text=f"pod {ns}/{name} has no remote pod on node {node}\n")
        log.info("%s %s/%s%s for %s", kind, ns, name, f" ({container})" if container else "", user.name)
        if kind == "run" and not streams.is_upgrade(request.headers):
            # As the kubelet reads it: one `cmd` parameter, split on white space.
            command = request.query.get("cmd", "").split() or request.query.getall("command", [])
            try:
                output = await streams.run(remote, ns, name, container or "", command)
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                return web.Response(status=502, text=f"remote exec failed: {e}\n")
            return web.Response(body=output, content_type="text/plain")
        return await streams.relay(request, remote.config, kind, ns, name, container)

    async def _proxy(
        self, request: web.Request, remote: Kube, path: str, params: dict[str, str]
    ) -> web.StreamResponse:
        stream = remote.stream(path, params)
        try:
            first = await anext(stream, b"")
        except ApiError as e:
            return web.Response(status=e.status, text=f"{e.message}\n")
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/plain"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        try:
            if first:
                await resp.write(first)
            async for chunk in stream:
                await resp.write(chunk)
        except (ConnectionResetError, ApiError, OSError) as e:
            log.debug("log stream ended: %s", e)
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        with contextlib.suppress(ConnectionResetError, OSError):
            await resp.write_eof()
        return resp
