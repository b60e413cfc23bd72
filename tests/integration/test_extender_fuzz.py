"""Malformed and hostile requests to every extender endpoint: a 4xx with a clear message, nothing changed.

The extender runs in-process against the real front cluster; a seeded generator mutates valid
requests (drops keys, swaps types, nests deeply, sends garbage bytes) and every answer is checked.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from armada_bridge.contract.decisions import ensure_key
from armada_bridge.kube import PODS, Kube, load_config
from armada_bridge.kube.resources import CORE_EVENTS, VOLCANO_PODGROUPS
from devenv.names import FRONT
from devenv.processes.environment import Environment
from extender.controller import Controller, Settings
from extender.metrics import Metrics
from extender.server import Api, make_app
from tests.framework.pods import admission_review

SEED = 20261130
CASES = 300
FAKE_NAMESPACE = "default"  # where the fake pod says it is


def valid_pod() -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "namespace": FAKE_NAMESPACE,
            "uid": "u-1",
            "labels": {"armadaproject.io/queue": "default"},
        },
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]},
    }


def valid_args() -> dict[str, Any]:
    return {"Pod": valid_pod(), "NodeNames": ["remote-1", "front-node-0"], "Nodes": None}


def valid_bind() -> dict[str, Any]:
    # No such pod: bound nowhere, answered with the API server's 404 as the bind's error.
    return {"PodName": "p", "PodNamespace": FAKE_NAMESPACE, "PodUID": "u-1", "Node": "front-node-0"}


def valid_review() -> dict[str, Any]:
    return admission_review(valid_pod(), namespace=FAKE_NAMESPACE, uid="r-1")


JUNK: list[Any] = [None, 0, -1, 1e308, "", "x" * 10_000, [], {}, [1, "a"], {"k": None}, True, "\u0000", "💥"]


def mutate(doc: Any, rng: random.Random, depth: int = 0) -> Any:
    """One random structural mutation somewhere in `doc`."""
    if isinstance(doc, dict) and doc and depth < 6 and rng.random() < 0.7:
        key = rng.choice(sorted(doc))
        out = dict(doc)
        roll = rng.random()
        if roll < 0.3:
            del out[key]
        elif roll < 0.6:
            out[key] = rng.choice(JUNK)
        else:
            out[key] = mutate(doc[key], rng, depth + 1)
        return out
    if isinstance(doc, list) and doc and rng.random() < 0.5:
        out_list = list(doc)
        out_list[rng.randrange(len(out_list))] = rng.choice(JUNK)
        return out_list
    return rng.choice(JUNK)


def garbage(rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    if kind == 1:
        return b"[" * 100_000  # deeply nested
    if kind == 2:
        return b'{"Pod": ' + b'{"a":' * 5000 + b"1" + b"}" * 5001
    return json.dumps(rng.choice(JUNK)).encode()


@pytest.fixture
async def client(dev_env: Environment) -> AsyncIterator[TestClient[Any, Any]]:
    front = Kube(load_config(dev_env.kubeconfig(FRONT)))
    controller = Controller(front, Settings(identity="fuzz"), Metrics(), await ensure_key(front))
    informers = asyncio.create_task(controller.inputs.run())
    await controller.inputs.wait_synced()
    async with TestClient(TestServer(make_app(Api(controller)))) as c:
        yield c
    informers.cancel()
    await asyncio.gather(informers, return_exceptions=True)
    await front.close()


async def _state(dev_env: Environment) -> tuple[str, ...]:
    async with Kube(load_config(dev_env.kubeconfig(FRONT))) as kube:
        lists = [await kube.list(r, FAKE_NAMESPACE) for r in (PODS, CORE_EVENTS, VOLCANO_PODGROUPS)]
    # Other processes may write in the meantime (other tests' pods named p go with their namespaces):
    # compare only what names this test's fake objects, in their namespace.
    return tuple(
        sorted(
            i["metadata"]["name"]
            for lst in lists
            for i in lst["items"]
            if i["metadata"]["name"] in ("p", "p.fuzz")
        )
    )


async def test_every_endpoint_rejects_malformed_input_clearly(
    client: TestClient[Any, Any], dev_env: Environment
) -> None:
    rng = random.Random(SEED)
    before = await _state(dev_env)
    bases = {"/filter": valid_args, "/bind": valid_bind, "/mutate": valid_review}
    seen = 0
    for path, base in bases.items():
        ok = await client.post(path, json=base())
        assert ok.status == 200, (path, await ok.text())
        for i in range(CASES):
            if i % 5 == 0:
                body, headers = garbage(rng), {"Content-Type": "application/json"}
            else:
                body, headers = (
                    json.dumps(mutate(copy.deepcopy(base()), rng)).encode(),
                    {"Content-Type": "application/json"},
                )
            r = await client.post(path, data=body, headers=headers)
            text = await r.text()
            assert r.status < 500, (path, body[:300], r.status, text[:300])
            if r.status >= 400:
                seen += 1
                assert r.status < 500 and json.loads(text)["error"], (path, text)
            else:
                answer = json.loads(text)
                if path == "/mutate":
                    assert answer["response"]["uid"], answer  # a well-formed review answered as such
                if path == "/bind":
                    assert answer["Error"], answer  # no such pod: never bound
        wrong_type = await client.post(path, data=b"{}", headers={"Content-Type": "text/plain"})
        assert wrong_type.status == 400 and "Content-Type" in (await wrong_type.json())["error"]
    assert seen > CASES  # most mutations are malformed; all of those got a 4xx
    for path in ("/healthz", "/readyz", "/metrics"):
        assert (await client.post(path, data=b"x")).status == 405
    assert (await client.get("/nope")).status == 404
    assert await _state(dev_env) == before
