"""Shared by the benchmarks: create pods with bounded concurrency and time each to Running."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterable
from typing import Any

from armada_bridge.kube import NAMESPACES, PODS, SERVICEACCOUNTS, Kube

CONCURRENCY = 16


async def watch_running(
    kube: Kube, ns: str, running: dict[str, float], want: int, done: asyncio.Event
) -> None:
    while not done.is_set():
        try:
            async for kind, obj in kube.watch(PODS, ns, timeout_seconds=120):
                if kind == "BOOKMARK":
                    continue
                name = obj["metadata"]["name"]
                if obj.get("status", {}).get("phase") == "Running" and name not in running:
                    running[name] = time.monotonic()
                    if len(running) >= want:
                        done.set()
                        return
        except Exception as e:  # a dropped watch: resume (pods already Running are re-sent as ADDED)
            print(f"watch restarted: {e}", file=sys.stderr)


async def batch(
    targets: list[tuple[Kube, str, dict[str, Any]]], watchers: list[Kube], ns: str
) -> list[float]:
    """Create the pods (bounded concurrency) and return each one's seconds from create to Running."""
    created, running = await batch_times(targets, watchers, ns)
    return [running[n] - created[n] for n in created]


async def batch_times(
    targets: list[tuple[Kube, str, dict[str, Any]]], watchers: list[Kube], ns: str, timeout: float = 600
) -> tuple[dict[str, float], dict[str, float]]:
    """Create the pods (bounded concurrency); (name -> when created, name -> when seen Running)."""
    running: dict[str, float] = {}
    created: dict[str, float] = {}
    done = asyncio.Event()
    tasks = [asyncio.create_task(watch_running(k, ns, running, len(targets), done)) for k in watchers]
    await asyncio.sleep(0.5)  # watches established
    sem = asyncio.Semaphore(CONCURRENCY)

    async def create(kube: Kube, body: dict[str, Any]) -> None:
        async with sem:
            created[body["metadata"]["name"]] = time.monotonic()
            await kube.create(PODS, body, ns)

    await asyncio.gather(*(create(k, b) for k, _, b in targets))
    await asyncio.wait_for(done.wait(), timeout)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return created, running


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def compare(direct: list[float], via: list[float], name: str) -> dict[str, float]:
    """p50/p99 of the baseline (`direct`) and of `via` (keys `<name>_p50_s`...), and their ratios."""
    out = {"direct_p50_s": pct(direct, 0.5), "direct_p99_s": pct(direct, 0.99)}
    out |= {f"{name}_p50_s": pct(via, 0.5), f"{name}_p99_s": pct(via, 0.99)}
    out |= {"p50_ratio": pct(via, 0.5) / pct(direct, 0.5), "p99_ratio": pct(via, 0.99) / pct(direct, 0.99)}
    return out


async def cleanup(kubes: Iterable[Kube], namespaces: Iterable[str]) -> None:
    """Delete the benchmark's namespaces everywhere and close the clients (errors only reported)."""
    kubes = list(kubes)
    for ns in namespaces:
        for k in kubes:
            try:
                await k.delete(NAMESPACES, ns)
            except Exception as e:
                print(f"cleanup {ns}: {e}", file=sys.stderr)
    for k in kubes:
        await k.close()


async def create_namespace(kube: Kube, ns: str, timeout: float = 60) -> None:
    """Create `ns` and wait for its `default` ServiceAccount (pods are refused until it exists)."""
    await kube.create(NAMESPACES, {"metadata": {"name": ns}})
    deadline = time.monotonic() + timeout
    while await kube.get_or_none(SERVICEACCOUNTS, "default", ns) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {ns}: no default ServiceAccount after {timeout:.0f}s")
        await asyncio.sleep(0.1)
