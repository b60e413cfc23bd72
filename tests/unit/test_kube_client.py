"""The Kubernetes client and informer against a small aiohttp server that misbehaves on purpose:
retries with backoff (Retry-After honoured), no retry of creates, paginated lists, a rotated
token picked up, informers that resume their watch instead of listing again, and relist on 410."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from armada_bridge.kube.client import ApiError, Kube, KubeConfig, RetryPolicy
from armada_bridge.kube.informer import Informer
from armada_bridge.kube.resources import PODS
from armada_bridge.kube.shapes import IDENTITY
from tests.framework.pods import pod

FAST = RetryPolicy(attempts=4, base_seconds=0.01, max_seconds=0.05)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def server(routes: dict[tuple[str, str], Handler]) -> AsyncIterator[str]:
    app = web.Application()
    for (method, path), handler in routes.items():
        app.router.add_route(method, path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _pod(name: str, rv: str) -> dict[str, Any]:
    """A pod as the API server sends it: its resourceVersion `rv`, managedFields."""
    p = pod(name, namespace="ns", cpu=None)
    p["metadata"] |= {"resourceVersion": rv, "managedFields": [{"manager": "x"}]}
    return p


def test_idempotent_requests_are_retried_and_retry_after_is_honoured() -> None:
    calls: list[str] = []

    async def flaky(request: web.Request) -> web.Response:
        calls.append(request.method)
        if len(calls) == 1:
            return web.Response(status=429, headers={"Retry-After": "0"}, text="{}")
        if len(calls) == 2:
            return web.Response(status=503, text="{}")
        return web.json_response(_pod("p", "1"))

    async def scenario() -> None:
        async with (
            server({("GET", "/api/v1/namespaces/ns/pods/p"): flaky}) as url,
            Kube(KubeConfig(url), retry=FAST) as kube,
        ):
            got = await kube.get(PODS, "p", "ns")
        assert got["metadata"]["name"] == "p" and calls == ["GET"] * 3

    asyncio.run(scenario())


def test_errors_that_persist_and_creates_are_not_retried_forever() -> None:
    calls: list[str] = []

    async def down(request: web.Request) -> web.Response:
        calls.append(request.method)
        return web.json_response({"reason": "InternalError", "message": "etcd down"}, status=500)

    async def scenario() -> None:
        async with (
            server(
                {("GET", "/api/v1/namespaces/ns/pods/p"): down, ("POST", "/api/v1/namespaces/ns/pods"): down}
            ) as url,
            Kube(KubeConfig(url), retry=FAST) as kube,
        ):
            with pytest.raises(ApiError) as got:
                await kube.get(PODS, "p", "ns")
            assert got.value.status == 500 and calls == ["GET"] * 4
            calls.clear()
            with pytest.raises(ApiError):
                await kube.create(PODS, _pod("p", ""), "ns")
            assert calls == ["POST"]  # a create may have happened: never repeated blindly

    asyncio.run(scenario())


def test_lists_follow_continue_tokens() -> None:
    async def paged(request: web.Request) -> web.Response:
        token = request.query.get("continue")
        assert request.query["limit"] == "2"
        if not token:
            return web.json_response(
                {
                    "metadata": {"resourceVersion": "10", "continue": "t1"},
                    "items": [_pod("a", "1"), _pod("b", "2")],
                }
            )
        return web.json_response({"metadata": {"resourceVersion": "10"}, "items": [_pod("c", "3")]})

    async def scenario() -> None:
        async with server({("GET", "/api/v1/pods"): paged}) as url, Kube(KubeConfig(url), retry=FAST) as kube:
            listed = await kube.list_all(PODS, page=2)
        assert [i["metadata"]["name"] for i in listed["items"]] == ["a", "b", "c"]
        assert listed["metadata"]["resourceVersion"] == "10"

    asyncio.run(scenario())


def test_a_rotated_token_file_is_read_again(tmp_path: Path) -> None:
    seen: list[str] = []

    async def echo(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization", ""))
        return web.json_response(_pod("p", "1"))

    token = tmp_path / "token"
    token.write_text("first")

    async def scenario() -> None:
        async with (
            server({("GET", "/api/v1/namespaces/ns/pods/p"): echo}) as url,
            Kube(KubeConfig(url, token_file=str(token)), retry=FAST) as kube,
        ):
            await kube.get(PODS, "p", "ns")
            token.write_text("second")
            import os

            os.utime(token, (1, 1))  # a different mtime, whatever the clock's resolution
            await kube.get(PODS, "p", "ns")
        assert seen == ["Bearer first", "Bearer second"]

    asyncio.run(scenario())


def test_informer_resumes_its_watch_and_lists_again_only_on_gone() -> None:
    lists: list[str] = []
    watches: list[str] = []

    async def listing(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            rv = request.query.get("resourceVersion", "")
            watches.append(rv)
            resp = web.StreamResponse()
            await resp.prepare(request)
            if len(watches) == 1:  # one change, then the connection breaks
                await resp.write(json.dumps({"type": "MODIFIED", "object": _pod("a", "5")}).encode() + b"\n")
                assert request.transport is not None
                request.transport.abort()
                return resp
            if len(watches) == 2:  # resumed from 5: too old now
                gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}}
                await resp.write(json.dumps(gone).encode() + b"\n")
                return resp
            await asyncio.sleep(0.2)
            return resp
        lists.append(request.query.get("resourceVersion", ""))
        return web.json_response(
            {"metadata": {"resourceVersion": str(4 + 3 * len(lists))}, "items": [_pod("a", "4")]}
        )

    async def scenario() -> None:
        async with (
            server({("GET", "/api/v1/pods"): listing}) as url,
            Kube(KubeConfig(url), retry=FAST) as kube,
        ):
            informer = Informer(kube, PODS)
            task = asyncio.create_task(informer.run())
            for _ in range(400):
                if len(watches) >= 3:
                    break
                await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            cached = informer.get("a", "ns")
        assert watches[:3] == ["7", "5", "10"], watches  # resumed from what it saw; relisted on 410
        assert len(lists) == 2
        assert cached is not None and "managedFields" not in cached["metadata"]

    asyncio.run(scenario())


def test_object_names_are_single_path_segments() -> None:
    """A hostile name (from a pod's spec, say) can never reach another object or namespace."""
    from armada_bridge.kube import SECRETS

    assert SECRETS.path("team-a", "db") == "/api/v1/namespaces/team-a/secrets/db"
    assert SECRETS.path("team-a", "a b?c") == "/api/v1/namespaces/team-a/secrets/a%20b%3Fc"
    for bad in ("..", ".", "../../kube-system/secrets/admin", "x/y"):
        with pytest.raises(ValueError):
            SECRETS.path("team-a", bad)
        with pytest.raises(ValueError):
            SECRETS.path(bad, "db")


def test_a_watch_event_of_megabytes_is_read_whole() -> None:
    """A pod of ten thousand containers is one watch line of megabytes (aiohttp's own line reader
    gives up at 512 KiB, which stopped the extender's informers for good)."""
    big = _pod("big", "2")
    big["spec"] = {"containers": [{"name": f"c{i}", "image": "busybox" * 20} for i in range(10_000)]}
    line = json.dumps({"type": "ADDED", "object": big}).encode() + b"\n"
    assert len(line) > 1_500_000

    async def watch(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse()
        await resp.prepare(request)
        for i in range(0, len(line), 65536):  # in pieces, as the network gives it
            await resp.write(line[i : i + 65536])
        await resp.write(b"\n" + json.dumps({"type": "DELETED", "object": _pod("x", "3")}).encode() + b"\n")
        return resp

    async def scenario() -> list[tuple[str, str]]:
        async with server({("GET", "/api/v1/pods"): watch}) as url, Kube(KubeConfig(url), retry=FAST) as kube:
            return [(kind, obj["metadata"]["name"]) async for kind, obj in kube.watch(PODS)]

    assert asyncio.run(scenario()) == [("ADDED", "big"), ("DELETED", "x")]


@pytest.mark.parametrize("form", ["packed", "identity"])
def test_a_relist_tells_handlers_whole_objects_whatever_the_cache_keeps(form: str) -> None:
    """A relist reads page by page and tells the handlers what changed with whole objects, whether
    the cache keeps them packed or keeps only their identity; a packed cache hands out copies."""
    lists: list[int] = []

    def placed(name: str, rv: str) -> dict[str, Any]:
        return {**_pod(name, rv), "spec": {"nodeName": f"node-{name}"}}

    async def listing(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true":
            resp = web.StreamResponse()
            await resp.prepare(request)
            if len(lists) == 1:  # the first watch is told it is too old: list again
                gone = {"type": "ERROR", "object": {"code": 410, "reason": "Expired", "message": "too old"}}
                await resp.write(json.dumps(gone).encode() + b"\n")
            else:
                await asyncio.sleep(0.2)
            return resp
        token = request.query.get("continue")
        if not token:
            lists.append(1)
        first, second = [placed("a", "1"), placed("b", "2")], [placed("a", "7"), placed("c", "8")]
        snapshot = (first, second)[len(lists) - 1]
        page = snapshot[1:] if token else snapshot[:1]
        more = {} if token else {"continue": "next"}
        return web.json_response(
            {"metadata": {"resourceVersion": str(5 * len(lists)), **more}, "items": page}
        )

    async def scenario() -> None:
        told: list[tuple[str, str, str]] = []
        async with (
            server({("GET", "/api/v1/pods"): listing}) as url,
            Kube(KubeConfig(url), retry=FAST) as kube,
        ):
            informer = (
                Informer(kube, PODS, packed=True) if form == "packed" else Informer(kube, PODS, keep=IDENTITY)
            )
            informer.add_handler(
                lambda kind, obj: told.append(
                    (kind, obj["metadata"]["name"], obj.get("spec", {}).get("nodeName", "?"))
                )
            )
            task = asyncio.create_task(informer.run())
            for _ in range(400):
                if len(lists) >= 2 and len(told) >= 5:
                    break
                await asyncio.sleep(0.02)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        assert told == [
            ("ADDED", "a", "node-a"),
            ("ADDED", "b", "node-b"),
            ("MODIFIED", "a", "node-a"),
            ("ADDED", "c", "node-c"),
            # a deleted object is told as the cache last kept it
            ("DELETED", "b", "node-b") if form == "packed" else ("DELETED", "b", "?"),
        ]
        assert sorted(informer.cache) == ["ns/a", "ns/c"]
        a = informer.get("a", "ns")
        assert a is not None and a["metadata"]["resourceVersion"] == "7"
        if form == "packed":
            assert a["spec"] == {"nodeName": "node-a"} and "managedFields" not in a["metadata"]
            a["spec"]["nodeName"] = "changed"
            assert informer.get("a", "ns") == {**a, "spec": {"nodeName": "node-a"}}
        else:
            assert a == {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "a", "namespace": "ns", "uid": "uid-a", "resourceVersion": "7"},
            }

    asyncio.run(scenario())
