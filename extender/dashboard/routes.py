"""The dashboard's routes: its static page and JSON under /dashboard/api/, read from the
extender's informer caches with extender/overview.py (what `armada-bridge queues | clusters |
gangs | why` say), plus the share history this replica samples. Read-only: no route writes."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from aiohttp import web

from armada_bridge.kube import ApiError, Kube
from armada_bridge.kube.resources import CORE_EVENTS
from armada_bridge.kube.times import now as utc_now
from armada_bridge.kube.times import rfc3339
from extender import overview
from extender.dashboard.history import ShareHistory
from extender.inputs import Inputs

STATIC = Path(__file__).with_name("static")
PREFIX = "/dashboard"


class Source(Protocol):
    """What the dashboard reads of the extender: its caches, the front (Events), and the reasons
    the core gives for the pods it keeps waiting (known on the replica that runs the rounds)."""

    front: Kube
    inputs: Inputs

    def waiting_reasons(self) -> Mapping[str, str]: ...

    def leads(self) -> bool: ...


def _pod_json(v: overview.PodView) -> dict[str, Any]:
    gang = v.gang
    return {
        "namespace": v.namespace,
        "name": v.name,
        "phase": v.phase,
        "created": v.created,
        "queue": v.queue,
        "gang": {
            "key": gang.key,
            "protocol": gang.protocol,
            "size": gang.min_member,
            "reservation": bool(gang.min_resources),
        }
        if gang
        else None,
        "error": v.error,
        "cluster": v.cluster,
        "node": v.node,
        "boundTo": v.bound_to,
    }


class Dashboard:
    def __init__(self, source: Source, history: ShareHistory | None = None) -> None:
        self.source = source
        self.history = history or ShareHistory()

    # ------------------------------------------------------------------ reading
    def queue_rows(self) -> list[overview.QueueRow]:
        return overview.queue_rows(self.source.inputs.queues.items())

    def pod_views(self) -> list[overview.PodView]:
        inputs = self.source.inputs
        return [
            overview.read_pod(
                p, inputs.podgroups_of(p), inputs.namespace_labels(p["metadata"].get("namespace") or "")
            )
            for p in inputs.pods.items()
        ]

    def sample(self, t: float | None = None) -> None:
        if self.source.inputs.queues.synced.is_set():
            self.history.record(time.time() if t is None else t, self.queue_rows())

    async def sample_forever(self) -> None:
        """Every replica samples the Queue statuses (written by the leader) into its history."""
        while True:
            self.sample()
            await asyncio.sleep(self.history.interval)

    def _meta(self) -> dict[str, Any]:
        return {"now": rfc3339(utc_now()), "leader": self.source.leads()}

    # ------------------------------------------------------------------ routes
    async def index(self, _request: web.Request) -> web.StreamResponse:
        return web.FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def redirect(self, _request: web.Request) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": f"{PREFIX}/"})

    async def queues(self, _request: web.Request) -> web.Response:
        rows = []
        for q in self.queue_rows():
            series = self.history.series(q.name)
            rows.append(
                {
                    **dataclasses.asdict(q),
                    # [t, fair, adjusted, actual, queued, running], oldest first
                    "history": [
                        [s.t, s.fair_share, s.adjusted_fair_share, s.actual_share, s.queued, s.running]
                        for s in series
                    ],
                }
            )
        return web.json_response(
            {**self._meta(), "window": self.history.window, "interval": self.history.interval, "queues": rows}
        )

    async def units(self, request: web.Request) -> web.Response:
        q = request.query
        views = self.pod_views()
        every = overview.units(views, self.source.waiting_reasons())
        shown = overview.filter_units(
            every,
            queue=q.get("queue"),
            namespace=q.get("namespace"),
            state=q.get("state"),
            kind=q.get("kind"),
        )
        return web.json_response(
            {
                **self._meta(),
                "units": [dataclasses.asdict(u) for u in shown],
                "total": len(every),
                # what the filters can choose from
                "queues": sorted({u.queue for u in every} | {r.name for r in self.queue_rows()}),
                "namespaces": sorted({u.namespace for u in every}),
                "states": list(overview.STATES),
            }
        )

    async def clusters(self, _request: web.Request) -> web.Response:
        rows = overview.cluster_rows(self.source.inputs.remote_clusters.items(), self.pod_views())
        return web.json_response({**self._meta(), "clusters": [dataclasses.asdict(c) for c in rows]})

    async def story(self, request: web.Request) -> web.Response:
        """One pod (`?namespace=&pod=`) or gang (`?namespace=&gang=`): each member as `why` reads
        it, and their Events in time order."""
        ns, pod, gang = (request.query.get(k, "") for k in ("namespace", "pod", "gang"))
        if not ns or bool(pod) == bool(gang):
            raise web.HTTPBadRequest(reason="give namespace and one of pod, gang")
        inputs = self.source.inputs
        if pod:
            obj = inputs.pods.get(pod, ns)
            members = [obj] if obj is not None else []
        else:
            members = [
                p
                for p in inputs.pods.items()
                if p["metadata"].get("namespace") == ns
                and (v := overview.read_pod(p, inputs.podgroups_of(p), inputs.namespace_labels(ns))).gang
                is not None
                and v.gang.key == gang
            ]
        if not members:
            raise web.HTTPNotFound(reason=f"no pod {ns}/{pod}" if pod else f"no gang {gang} in {ns}")
        try:
            if pod:
                listed = await self.source.front.list(
                    CORE_EVENTS, ns, fieldSelector=f"involvedObject.name={pod},involvedObject.kind=Pod"
                )
            else:
                listed = await self.source.front.list(
                    CORE_EVENTS, ns, fieldSelector="involvedObject.kind=Pod"
                )
        except ApiError as e:
            raise web.HTTPBadGateway(reason=f"listing Events failed: {e}") from None
        events = listed.get("items") or []
        reasons = self.source.waiting_reasons()
        stories = []
        for m in sorted(members, key=lambda p: p["metadata"]["name"]):
            uid = m["metadata"].get("uid")
            view = overview.read_pod(m, inputs.podgroups_of(m), inputs.namespace_labels(ns))
            s = overview.story(
                m, view, [e for e in events if (e.get("involvedObject") or {}).get("uid") == uid]
            )
            stories.append(
                {
                    "pod": _pod_json(view),
                    "waiting": s.waiting,
                    "reason": reasons.get(view.uid),
                    "scheduler": list(s.scheduler),
                    "events": [dataclasses.asdict(e) for e in s.events],
                }
            )
        merged = overview.event_lines(
            e
            for e in events
            if (e.get("involvedObject") or {}).get("uid") in {m["metadata"].get("uid") for m in members}
        )
        return web.json_response(
            {
                **self._meta(),
                "namespace": ns,
                "pod": pod or None,
                "gang": gang or None,
                "members": stories,
                "events": [dataclasses.asdict(e) for e in merged],
            }
        )

    def add_routes(self, app: web.Application, wrap: Any = None) -> None:
        """The routes, each passed through `wrap(name, handler)` when given (metrics)."""
        routes = {
            PREFIX: self.redirect,
            f"{PREFIX}/": self.index,
            f"{PREFIX}/api/queues": self.queues,
            f"{PREFIX}/api/units": self.units,
            f"{PREFIX}/api/clusters": self.clusters,
            f"{PREFIX}/api/story": self.story,
        }
        for path, handler in routes.items():
            app.router.add_get(path, wrap(path.strip("/"), handler) if wrap else handler)
        app.router.add_static(f"{PREFIX}/static", STATIC, append_version=False)
