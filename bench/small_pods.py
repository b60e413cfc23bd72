"""Benchmark: many small managed pods applied at once, against the same pods created directly in
the remote clusters (the baseline, measured in the same run).

    .venv/bin/python bench/small_pods.py [--pods 600] [--json]

Through the bridge a pod goes front API -> admission webhook -> front kube-scheduler -> extender
(core round, decision written) -> bind to a virtual node -> vkubelet -> remote pod -> Running
mirrored back. 600 pods of 50m CPU are more than one remote node (110 pod slots) or one remote
cluster (440) holds, so they only all run if pod slots are counted. Uses the running
`armada-bridge dev up` environment (front, remote-1, remote-2). Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge import keys
from armada_bridge.dev.environment import Environment
from armada_bridge.kube import NAMESPACES, PODS, Kube, load_config
from bench.pods import batch, cleanup, compare, create_namespace

REMOTES = ("remote-1", "remote-2")


def small_pod(name: str, queue: str | None) -> dict[str, Any]:
    labels = {"bench": "small"}
    if queue:
        labels[keys.QUEUE_LABEL] = queue
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}},
                }
            ],
            "terminationGracePeriodSeconds": 0,
        },
    }


async def delete_namespace(kubes: dict[str, Kube], ns: str) -> None:
    """Delete `ns` everywhere and wait until it is gone (its pods no longer hold slots)."""
    for k in kubes.values():
        await k.delete(NAMESPACES, ns)
    deadline = time.monotonic() + 300
    for k in kubes.values():
        while await k.get_or_none(NAMESPACES, ns) is not None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespace {ns} still there after 300s")
            await asyncio.sleep(0.5)


async def timed(coro: Any) -> tuple[list[float], float]:
    t0 = time.monotonic()
    latencies = await coro
    return latencies, time.monotonic() - t0


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    kubes = {n: Kube(load_config(env.kubeconfig(n))) for n in ("front", *REMOTES)}
    ns_direct, ns_bridge = f"bench-direct-{uuid.uuid4().hex[:6]}", f"bench-bridge-{uuid.uuid4().hex[:6]}"
    try:
        for k in kubes.values():
            await create_namespace(k, ns_direct)
        r1, r2 = kubes["remote-1"], kubes["remote-2"]
        print(f"baseline: {args.pods} pods directly in {', '.join(REMOTES)} ...", file=sys.stderr)
        direct, direct_wall = await timed(
            batch(
                [((r1 if i % 2 else r2), "", small_pod(f"p-{i}", None)) for i in range(args.pods)],
                [r1, r2],
                ns_direct,
            )
        )
        await delete_namespace(kubes, ns_direct)
        await create_namespace(kubes["front"], ns_bridge)
        print(f"bridge: {args.pods} managed pods in the front cluster ...", file=sys.stderr)
        front = kubes["front"]
        via, via_wall = await timed(
            batch(
                [(front, "", small_pod(f"p-{i}", args.queue)) for i in range(args.pods)], [front], ns_bridge
            )
        )
        listed = await front.list(PODS, ns_bridge)
        spread = Counter(
            (p["metadata"].get("annotations") or {}).get(keys.ASSIGNED_CLUSTER, "?") for p in listed["items"]
        )
        nodes = Counter(
            (p["metadata"].get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE, "?")
            for p in listed["items"]
        )
    finally:
        await cleanup(kubes.values(), (ns_direct, ns_bridge))
    return {
        "pods": args.pods,
        "direct_wall_s": direct_wall,
        "bridge_wall_s": via_wall,
        "wall_ratio": via_wall / direct_wall,
        "direct_pods_per_s": args.pods / direct_wall,
        "bridge_pods_per_s": args.pods / via_wall,
        **compare(direct, via, "bridge"),
        "by_cluster": dict(sorted(spread.items())),
        "remote_nodes_used": len(nodes),
        "load_average_1m": os.getloadavg()[0],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=600)
    p.add_argument("--queue", default="default", help=f"the pods' queue (label {keys.QUEUE_LABEL})")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    r = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(r, indent=2))
        return
    print(f"{r['pods']} pods of 50m CPU (load average {r['load_average_1m']:.1f})")
    print(
        f"  directly in the remotes : all Running in {r['direct_wall_s']:.1f}s ({r['direct_pods_per_s']:.0f} pods/s)"
        f"  p50 {r['direct_p50_s']:.2f}s  p99 {r['direct_p99_s']:.2f}s"
    )
    print(
        f"  through the bridge      : all Running in {r['bridge_wall_s']:.1f}s ({r['bridge_pods_per_s']:.0f} pods/s)"
        f"  p50 {r['bridge_p50_s']:.2f}s  p99 {r['bridge_p99_s']:.2f}s"
    )
    print(
        f"  ratio bridge/direct     : wall {r['wall_ratio']:.2f}x  p50 {r['p50_ratio']:.2f}x  p99 {r['p99_ratio']:.2f}x"
    )
    print(f"  spread                  : {r['by_cluster']} over {r['remote_nodes_used']} remote nodes")


if __name__ == "__main__":
    main()
