"""Benchmark: from binding to front Running through the vkubelet, against the same pods created
directly in the remote clusters (the baseline, measured in the same run); and the vkubelet's memory.

    .venv/bin/python bench/vkubelet_latency.py [--pods 200] [--no-token] [--json]

Uses the running `armada-bridge dev up` environment (front, remote-1, remote-2) and its vkubelet,
which it restarts first so the peak memory belongs to this run. Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey, ensure_key
from armada_bridge.kube import PODS, Kube, load_config
from bench.pods import (
    CREATED,
    RUNNING,
    batch_times,
    bench_pod,
    cleanup,
    compare,
    create_namespace,
    is_running,
    memory_kib,
    print_stages,
    run_cli,
    stage_table,
)
from devenv import binaries
from devenv.bridge import bridge, vkubelet_setup
from devenv.processes.environment import Environment

REMOTE_CREATED, REMOTE_BOUND, REMOTE_RUNNING = "remote created", "remote bound", "remote running"
VKUBELET_STAGES = (CREATED, REMOTE_CREATED, REMOTE_BOUND, REMOTE_RUNNING, RUNNING)
DIRECT_STAGES = (CREATED, REMOTE_BOUND, RUNNING)


HOLD_SCHEDULER = "armada-bridge-bench-hold"  # nobody runs it: the bench binds the pods itself


def pod(name: str, node: str | None, token: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"automountServiceAccountToken": token}
    if node:
        spec["nodeName"] = node
        spec["tolerations"] = [
            {"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
        ]
    return bench_pod(name, cpu="10m", memory="16Mi", labels={"bench": "vk"}, **spec)


def bound_as_admitted(key: DecisionKey) -> Callable[[Kube, dict[str, Any], str], Awaitable[None]]:
    """Create a front pod as the extender and the front scheduler leave it: held, the extender's
    signed decision for the cluster of its spec.nodeName written, then bound there. The vkubelet's
    time starts at the binding (it runs nothing without such a decision)."""

    async def create(front: Kube, body: dict[str, Any], ns: str) -> None:
        body = copy.deepcopy(body)
        cluster = body["spec"].pop("nodeName")
        body["spec"]["schedulerName"] = HOLD_SCHEDULER
        created = await front.create(PODS, body, ns)
        name, uid = created["metadata"]["name"], created["metadata"]["uid"]
        patch = {"metadata": {"annotations": key.annotations(uid, cluster, "")}}
        await front.patch(PODS, name, patch, ns, uid=uid)
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": cluster},
        }
        await front.request("POST", PODS.path(ns, name, "binding"), body=binding)

    return create


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    bins = binaries.expected()
    bridge.install_crds(bins, env.kubeconfig("front"))
    pid = env.supervisor.pid(vkubelet_setup.COMPONENT)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        while env.supervisor.pid(vkubelet_setup.COMPONENT) is not None:
            time.sleep(0.1)
    vkubelet_setup.setup(env, bins)
    pid = env.supervisor.pid(vkubelet_setup.COMPONENT)
    assert pid is not None
    kubes = {n: Kube(load_config(env.kubeconfig(n))) for n in ("front", "remote-1", "remote-2")}
    await asyncio.sleep(6)  # nodes Ready, informers synced
    idle = memory_kib(pid)
    ns_base, ns_vk = f"bench-direct-{uuid.uuid4().hex[:6]}", f"bench-vk-{uuid.uuid4().hex[:6]}"
    try:
        for k in kubes.values():
            for ns in (ns_base, ns_vk):
                await create_namespace(k, ns)
        r1, r2 = kubes["remote-1"], kubes["remote-2"]
        bound = {REMOTE_BOUND: lambda p: bool(p["spec"].get("nodeName"))}
        direct_times = await batch_times(
            [((r1 if i % 2 else r2), "", pod(f"p-{i}", None, not args.no_token)) for i in range(args.pods)],
            [r1, r2],
            ns_base,
            stages=[(r1, bound), (r2, bound)],
        )
        front = kubes["front"]
        remote_stages = {REMOTE_CREATED: lambda _: True, **bound, REMOTE_RUNNING: is_running}
        via_times = await batch_times(
            [
                (front, "", pod(f"p-{i}", "remote-1" if i % 2 else "remote-2", not args.no_token))
                for i in range(args.pods)
            ],
            [front],
            ns_vk,
            stages=[(r1, remote_stages), (r2, remote_stages)],
            create_pod=bound_as_admitted(await ensure_key(front)),
        )
        direct, via = direct_times.between(CREATED, RUNNING), via_times.between(CREATED, RUNNING)
        peak = memory_kib(pid)
    finally:
        await cleanup(kubes.values(), (ns_base, ns_vk))
    return {
        "pods": args.pods,
        **compare(direct, via, "vkubelet"),
        "vkubelet_mean_s": statistics.mean(via),
        "direct_mean_s": statistics.mean(direct),
        "vkubelet_idle_rss_mib": idle["VmRSS"] / 1024,
        "vkubelet_peak_rss_mib": peak["VmHWM"] / 1024,
        "peak_to_idle_ratio": peak["VmHWM"] / idle["VmRSS"],
        "load_average_1m": os.getloadavg()[0],
        "stages": {
            "direct": stage_table(direct_times, DIRECT_STAGES),
            "vkubelet": stage_table(via_times, VKUBELET_STAGES),
        },
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=200)
    p.add_argument(
        "--no-token",
        action="store_true",
        help="pods that mount no ServiceAccount token (through the bridge: no front API token to request)",
    )
    r = run_cli(p, main_async)
    if r is None:
        return
    print(
        f"{r['pods']} pods, half on each of remote-1 and remote-2 (load average {r['load_average_1m']:.1f})"
    )
    print(f"  direct in the remote clusters : p50 {r['direct_p50_s']:.3f}s  p99 {r['direct_p99_s']:.3f}s")
    print(f"  through the vkubelet (front)  : p50 {r['vkubelet_p50_s']:.3f}s  p99 {r['vkubelet_p99_s']:.3f}s")
    print(f"  ratio vkubelet/direct         : p50 {r['p50_ratio']:.2f}x  p99 {r['p99_ratio']:.2f}x")
    print(
        f"  vkubelet memory               : idle {r['vkubelet_idle_rss_mib']:.1f} MiB, "
        f"peak {r['vkubelet_peak_rss_mib']:.1f} MiB ({r['peak_to_idle_ratio']:.2f}x idle)"
    )
    print_stages(r["stages"])


if __name__ == "__main__":
    main()
