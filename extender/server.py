"""HTTP endpoints: kube-scheduler extender verbs, the pod admission webhook, health and metrics,
and the read-only dashboard (extender/dashboard/).

The extender's answer for a pod depends only on the pod as the scheduler sends it (the decision
annotations the controller wrote) and on in-memory caches, so every call is a lookup: no scheduling
work on the request path, and no API call but the binding /bind makes for the scheduler.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import aiohttp
from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from armada_bridge.kube import PODS, ApiError, Kube
from armada_bridge.kube.auth import Auth, authenticated
from armada_bridge.kube.names import DNS_LABEL, DNS_LABEL_MAX, DNS_SUBDOMAIN, DNS_SUBDOMAIN_MAX
from armada_bridge.objects import Obj
from extender import admission, binding
from extender.actions import job_group_annotations
from extender.dashboard.routes import PREFIX as DASHBOARD
from extender.dashboard.routes import Dashboard
from extender.describe import Describer
from extender.inputs import Inputs
from extender.metrics import Metrics

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024 * 1024  # a full node list of a large cluster still fits


class _Meta(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str = Field(min_length=1)
    namespace: str = ""
    uid: str = ""
    annotations: dict[str, str] | None = None
    labels: dict[str, str] | None = None


class _Pod(BaseModel):
    model_config = ConfigDict(extra="allow")
    metadata: _Meta


class _NodeMeta(BaseModel):
    model_config = ConfigDict(extra="allow")
    metadata: _Meta


class _NodeList(BaseModel):
    model_config = ConfigDict(extra="allow")
    items: list[_NodeMeta] = Field(default_factory=list)


class ExtenderArgs(BaseModel):
    """kube-scheduler's ExtenderArgs (Go field names, no json tags: `Pod`, `Nodes`, `NodeNames`)."""

    model_config = ConfigDict(extra="ignore")
    Pod: _Pod
    Nodes: _NodeList | None = None
    NodeNames: list[str] | None = None


class ExtenderBindingArgs(BaseModel):
    """kube-scheduler's ExtenderBindingArgs (Go field names): bind this pod to this node."""

    model_config = ConfigDict(extra="ignore")
    PodName: str = Field(max_length=DNS_SUBDOMAIN_MAX, pattern=DNS_SUBDOMAIN)
    PodNamespace: str = Field(max_length=DNS_LABEL_MAX, pattern=DNS_LABEL)
    PodUID: str = Field(min_length=1, max_length=128)
    Node: str = Field(max_length=DNS_SUBDOMAIN_MAX, pattern=DNS_SUBDOMAIN)


_M = TypeVar("_M", bound=BaseModel)


class BadRequest(Exception):
    pass


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _json(request: web.Request) -> Any:
    if request.content_type not in ("application/json", ""):
        raise BadRequest(f"expected Content-Type application/json, got {request.content_type}")
    try:
        return await request.json(loads=json.loads)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequest(f"body is not valid JSON: {e}") from None
    except RecursionError:
        raise BadRequest("body is nested too deeply") from None


def _parsed(model: type[_M], body: Any) -> _M:
    try:
        return model.model_validate(body)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadRequest(f"not an {model.__name__} object: {where}: {first['msg']}") from None


def _args(body: Any) -> ExtenderArgs:
    args = _parsed(ExtenderArgs, body)
    if args.NodeNames is None and args.Nodes is None:
        raise BadRequest("ExtenderArgs needs NodeNames (nodeCacheCapable) or Nodes")
    return args


class Scheduling(Protocol):
    """What the HTTP endpoints use of the extender's loop."""

    front: Kube
    metrics: Metrics
    inputs: Inputs
    describer: Describer

    def look_at(self, pod: Obj) -> None: ...

    def reason_for(self, uid: str) -> str: ...

    def describe_state(self) -> dict[str, Any]: ...


class Api:
    def __init__(
        self,
        controller: Scheduling,
        *,
        scheduler_name: str | None = None,
        dashboard: Dashboard | None = None,
    ) -> None:
        self.c = controller
        self.scheduler_name = scheduler_name
        self.dashboard = dashboard

    # ------------------------------------------------------------------ helpers
    def _managed(self, pod: Mapping[str, Any]) -> bool:
        return self.c.describer.queue_of(pod) is not None

    def decide(self, pod: dict[str, Any], names: list[str]) -> tuple[list[str], dict[str, str]]:
        """(nodes that pass, node -> why not) for one pod and the candidate node names."""
        virtual = self.c.inputs.virtual_nodes()
        if not self._managed(pod):
            why = "armada-bridge: virtual nodes run only pods with a queue"
            return [n for n in names if n not in virtual], {n: why for n in names if n in virtual}
        decision = self.c.describer.decision_of(pod)
        if decision is not None:
            cluster = decision.cluster
            target = [n for n, c in virtual.items() if c == cluster]
            passing = [n for n in names if n in target]
            why = f"armada-bridge admitted this pod to remote cluster {cluster}"
            failed = {n: why for n in names if n not in passing}
            return passing, failed
        uid = pod["metadata"].get("uid") or ""
        self.c.look_at(pod)
        why = f"armada-bridge: {self.c.reason_for(uid)}"
        return [], {n: why for n in names}

    async def bind_refusal(self, args: ExtenderBindingArgs) -> str | None:
        """Why the scheduler may not bind this pod to this node (None: it may). A virtual node takes
        only a pod the core admitted to its cluster; a pod not cached yet passed /filter with its
        decision, which the vkubelet verifies again. Where the cached pod shows no such decision it
        is read again: the scheduler may have seen the decision's write before this cache did (then
        refusing would cost the pod a scheduler backoff of a second or more)."""
        cluster = self.c.inputs.virtual_nodes().get(args.Node)
        if cluster is None:
            return None
        pod: Obj | None = self.c.inputs.pods.get(args.PodName, args.PodNamespace)
        if pod is None or pod["metadata"].get("uid") != args.PodUID or self._admitted_to(pod, cluster):
            return None
        try:
            pod = await self.c.front.get_or_none(PODS, args.PodName, args.PodNamespace)
        except (ApiError, aiohttp.ClientError, TimeoutError) as e:
            return f"armada-bridge: reading pod {args.PodNamespace}/{args.PodName}: {e}"
        if pod is not None and pod["metadata"].get("uid") == args.PodUID and self._admitted_to(pod, cluster):
            return None
        return (
            f"armada-bridge: pod {args.PodNamespace}/{args.PodName} is not admitted to remote cluster "
            f"{cluster} (node {args.Node})"
        )

    def _admitted_to(self, pod: Obj, cluster: str) -> bool:
        decision = self.c.describer.decision_of(pod)
        return decision is not None and decision.cluster == cluster

    # ------------------------------------------------------------------ routes
    async def bind(self, request: web.Request) -> web.Response:
        """kube-scheduler's bind, made by the extender with its own client (not the scheduler's
        rate-limited one): the pod is bound, or the answer says why not and the scheduler forgets
        its assumption (extender/binding.py)."""
        args = _parsed(ExtenderBindingArgs, await _json(request))
        why = await self.bind_refusal(args)
        if why is None:
            why = await binding.bind(self.c.front, args.PodNamespace, args.PodName, args.PodUID, args.Node)
        self.c.metrics.binds.labels(result="bound" if why is None else "refused").inc()
        if why is not None:
            log.info("bind %s/%s to %s refused: %s", args.PodNamespace, args.PodName, args.Node, why)
        return web.json_response({"Error": why or ""})

    async def filter(self, request: web.Request) -> web.Response:
        args = _args(await _json(request))
        pod = args.Pod.model_dump(mode="json")
        if args.NodeNames is not None:
            passing, failed = self.decide(pod, args.NodeNames)
            return web.json_response(
                {"NodeNames": passing, "FailedNodes": {}, "FailedAndUnresolvableNodes": failed, "Error": ""}
            )
        assert args.Nodes is not None
        nodes = {n.metadata.name: n.model_dump(mode="json") for n in args.Nodes.items}
        passing, failed = self.decide(pod, list(nodes))
        return web.json_response(
            {
                "Nodes": {"metadata": {}, "items": [nodes[n] for n in passing]},
                "FailedNodes": {},
                "FailedAndUnresolvableNodes": failed,
                "Error": "",
            }
        )

    async def mutate(self, request: web.Request) -> web.Response:
        review = await _json(request)
        try:
            pod = admission.pod_of(review)
            extra: dict[str, str] = {}
            labels: dict[str, str] = {}
            queue = refused = None
            if pod is not None:
                podgroups, namespace_labels = await self.c.inputs.read_through(pod)
                labels, inherited = await self.c.describer.inherited(pod, podgroups)
                extra = {**await job_group_annotations(self.c.front, pod), **inherited}
                meta = dict(pod["metadata"])
                meta["annotations"] = {**(meta.get("annotations") or {}), **extra}
                meta["labels"] = {**(meta.get("labels") or {}), **labels}
                pod = {**pod, "metadata": meta}
                queue = self.c.describer.queue_of(pod, podgroups, namespace_labels)
                if queue is not None:
                    refused = self.c.describer.queue_refusal(queue, meta["namespace"], namespace_labels)
            answer = admission.admission_response(
                review,
                managed=queue is not None,
                refused=refused,
                scheduler_name=self.scheduler_name,
                extra_annotations=extra,
                extra_labels=labels,
            )
        except admission.AdmissionError as e:
            self.c.metrics.webhook_errors.inc()
            raise BadRequest(str(e)) from None
        return web.json_response(answer)

    async def state(self, _request: web.Request) -> web.Response:
        """What the scheduler thinks, for `armada-bridge queues|gangs|why` and for debugging."""
        return web.json_response(self.c.describe_state())

    async def healthz(self, _request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(self, _request: web.Request) -> web.Response:
        waiting = [i.name for i in self.c.inputs.informers if not i.synced.is_set()]
        if waiting:
            return web.Response(status=503, text=f"informers not synced: {', '.join(waiting)}")
        return web.Response(text="ok")

    async def metrics(self, _request: web.Request) -> web.Response:
        body = generate_latest(self.c.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _instrument(api: Api, name: str, handler: Handler) -> Handler:
    async def wrapped(request: web.Request) -> web.StreamResponse:
        t0 = time.perf_counter()
        try:
            return await handler(request)
        except BadRequest as e:
            api.c.metrics.request_errors.labels(endpoint=name, code="400").inc()
            return _error(400, str(e))
        except web.HTTPException as e:
            api.c.metrics.request_errors.labels(endpoint=name, code=str(e.status)).inc()
            return _error(e.status, e.reason)
        except Exception:  # aiohttp answers 500; counted, so an alert on errors sees bugs too
            api.c.metrics.request_errors.labels(endpoint=name, code="500").inc()
            raise
        finally:
            api.c.metrics.request_seconds.labels(endpoint=name).observe(time.perf_counter() - t0)

    return wrapped


#: On the secure port, what only authenticated and authorized callers may do, and the verb a
#: SubjectAccessReview asks for on that non-resource URL (grant it with a ClusterRole:
#: manifests/extender/rbac.yaml gives the scheduler /filter and /bind).
PROTECTED = {"/filter": "post", "/bind": "post", "/state": "get", "/metrics": "get"}
#: ... and every path under these prefixes (the dashboard: its page, static files and JSON; grant
#: `get` on the non-resource URLs `/dashboard` and `/dashboard/*`).
PROTECTED_PREFIXES = {DASHBOARD: "get"}


def protected_verb(path: str) -> str | None:
    """The verb a SubjectAccessReview asks for on `path`; None: open (/mutate, health)."""
    if path in PROTECTED:
        return PROTECTED[path]
    for prefix, verb in PROTECTED_PREFIXES.items():
        if path == prefix or path.startswith(prefix + "/"):
            return verb
    return None


def _guard(auth: Auth) -> Middleware:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        verb = protected_verb(request.path)
        if verb is None:  # /mutate (the API server presents no client identity), health
            return await handler(request)
        user = await authenticated(auth, request)
        if isinstance(user, web.Response):
            return user
        allowed, _ = await auth.authorize_path(user, verb, request.path)
        if not allowed:
            return web.Response(
                status=403, text=f"Forbidden (user={user.name}, verb={verb}, path={request.path})\n"
            )
        return await handler(request)

    return guard


def make_app(api: Api, auth: Auth | None = None) -> web.Application:
    """The routes; with `auth` (the secure port), /filter, /bind, /state, /metrics and the
    dashboard only for callers the front cluster authenticates and authorizes (see
    :func:`protected_verb`)."""
    app = web.Application(client_max_size=MAX_BODY, middlewares=[_guard(auth)] if auth else [])
    post: dict[str, Handler] = {"/filter": api.filter, "/bind": api.bind, "/mutate": api.mutate}
    get: dict[str, Handler] = {
        "/healthz": api.healthz,
        "/readyz": api.readyz,
        "/metrics": api.metrics,
        "/state": api.state,
    }
    for path, h in post.items():
        app.router.add_post(path, _instrument(api, path.strip("/"), h))
    for path, h in get.items():
        app.router.add_get(path, _instrument(api, path.strip("/"), h))
    if api.dashboard is not None:
        api.dashboard.add_routes(app, lambda name, h: _instrument(api, name, h))
    return app
