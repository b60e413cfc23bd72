"""Extender filter latency with many pending pods (a benchmark, not a test).

Creates N pending managed pods in the running `armada-bridge dev` front cluster (their queue is
cordoned, so they stay pending), lets the extender see them, then calls its /filter endpoint for
pods picked at random, as kube-scheduler does, and reports p50/p99. Baseline, measured in the same
run against the same process: GET /healthz (the HTTP round trip alone).

    .venv/bin/python bench/extender_filter.py [--pods 10000] [--requests 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import time
from typing import Any

import aiohttp

from armada_bridge import keys
from armada_bridge.kube import NAMESPACES, NODES, PODS, Kube, load_config
from armada_bridge.kube.resources import QUEUES
from devenv.names import FRONT
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment

NAMESPACE = "bench-extender-filter"
QUEUE = "bench-cordoned"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def create_pods(kube: Kube, indexes: range, concurrency: int = 64) -> None:
    sem = asyncio.Semaphore(concurrency)
    done = 0
    t0 = time.monotonic()

    async def one(i: int) -> None:
        nonlocal done
        body = busybox_pod(f"p-{i}", cpu="1", labels={keys.QUEUE_LABEL: QUEUE})
        async with sem:
            await kube.create(PODS, body, NAMESPACE)
        done += 1
        if done % 1000 == 0:
            print(
                f"  created {done}/{len(indexes)} pods ({done / (time.monotonic() - t0):.0f}/s)", flush=True
            )

    await asyncio.gather(*(one(i) for i in indexes))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10_000)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--keep", action="store_true", help="keep the pods afterwards")
    args = ap.parse_args()
    env = Environment()
    url = f"http://127.0.0.1:{env.port('extender')}"
    async with Kube(load_config(env.kubeconfig(FRONT))) as kube:
        if await kube.get_or_none(QUEUES, QUEUE) is None:
            queue = {
                "metadata": {"name": QUEUE},
                "spec": {"priorityFactor": 1, "cordoned": True, "namespaceSelector": {}},
            }
            await kube.create(QUEUES, {"apiVersion": keys.API_VERSION, "kind": "Queue", **queue})
        if await kube.get_or_none(NAMESPACES, NAMESPACE) is None:
            await kube.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
        existing = len((await kube.list(PODS, NAMESPACE))["items"])
        if existing < args.pods:
            print(f"creating {args.pods - existing} pending pods in {NAMESPACE} ...", flush=True)
            await create_pods(kube, range(existing, args.pods))
        pods: list[dict[str, Any]] = (await kube.list(PODS, NAMESPACE))["items"]
        nodes = [n["metadata"]["name"] for n in (await kube.list(NODES))["items"]]
        print(
            f"{len(pods)} pending pods, {len(nodes)} front nodes; letting the extender catch up ...",
            flush=True,
        )
        await asyncio.sleep(10)
        rng = random.Random(1)
        bodies = [
            json.dumps({"Pod": rng.choice(pods), "NodeNames": nodes}).encode() for _ in range(args.requests)
        ]
        async with aiohttp.ClientSession() as http:

            async def timed(method: str, path: str, data: bytes | None = None) -> float:
                t = time.perf_counter()
                async with http.request(
                    method, url + path, data=data, headers={"Content-Type": "application/json"}
                ) as r:
                    await r.read()
                    assert r.status == 200, (path, r.status)
                return (time.perf_counter() - t) * 1000

            for _ in range(50):  # warm up
                await timed("GET", "/healthz")
            base, filt = [], []
            for body in bodies:  # interleaved, so both see the same machine load
                base.append(await timed("GET", "/healthz"))
                filt.append(await timed("POST", "/filter", body))
        sample = json.loads(bodies[0])
        async with aiohttp.ClientSession() as http, http.post(url + "/filter", json=sample) as r:
            answer = await r.json()
        print(
            f"one answer: NodeNames={answer['NodeNames']} reason={next(iter(answer['FailedAndUnresolvableNodes'].values()), '')!r}"
        )
        print(
            f"\nfilter with {len(pods)} pending pods, {args.requests} requests, {len(bodies[0])} bytes each"
        )
        print(f"  baseline GET /healthz : p50 {pct(base, 0.5):.2f} ms  p99 {pct(base, 0.99):.2f} ms")
        print(
            f"  POST /filter          : p50 {pct(filt, 0.5):.2f} ms  p99 {pct(filt, 0.99):.2f} ms  mean {statistics.mean(filt):.2f} ms"
        )
        print(
            f"  ratio filter/baseline : p50 {pct(filt, 0.5) / pct(base, 0.5):.1f}x  p99 {pct(filt, 0.99) / pct(base, 0.99):.1f}x"
        )
        if not args.keep:
            await kube.delete(NAMESPACES, NAMESPACE)
            await kube.delete(QUEUES, QUEUE)


if __name__ == "__main__":
    asyncio.run(main())
