"""Benchmark: how long a gang that can run waits to be Running, with a backlog of queued gangs.

    .venv/bin/python bench/gang_latency.py [--queued 1000] [--arriving 40] [--steps 6] [--json]

Two measurements through the whole front path (admission webhook, core round, the front
kube-scheduler and the extender, vkubelet), both with `--queued` gangs waiting, against a baseline
measured in the same run (the same gang's pods created directly in a remote cluster: create -> all
Running):
- **arrival**: gangs of `--size` whose members are created one after another (`--gap` seconds
  apart, so the gang is incomplete for a while), with room for them that the queued gangs cannot
  take (each blocker leaves a queued pod's CPU less 1m free on its node): from the last member
  created to all Running;
- **freeing**: the `--queued` gangs wait behind blockers that hold the remotes' CPU; one blocker is
  deleted per step (`--steps`): from the deletion to all members Running, for each gang that the
  freed room admits.
Front kube-scheduler backoff (it retries a pod it set aside only after 1-10 s, or on an event) and
the extender's round are what this exposes. Uses the running `armada-bridge dev up` environment
(the default topology is enough). Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge import keys
from armada_bridge.contract.capacity import open_to_all
from armada_bridge.contract.pods import pod_requests
from armada_bridge.core.quantities import parse_quantity
from armada_bridge.kube import NODES, PODS, Kube, load_config
from bench.pods import (
    BRIDGE_STAGES,
    CREATED,
    QUEUE,
    RUNNING,
    Predicate,
    Times,
    bench_pod,
    bridge_stages,
    cleanup,
    create_namespace,
    delete_namespace,
    is_running,
    pct,
    print_stages,
    run_cli,
    stage_table,
    wait_for_earlier_runs,
    watch_stages,
)
from devenv.processes.environment import Environment

REMOTES = ("remote-1", "remote-2")
PER_NODE = 32  # CPU of a dev remote node
Pod = dict[str, Any]


def pod(name: str, cpu: str, gang: tuple[str, int] | None, managed: bool) -> Pod:
    labels = {"bench": "gang-latency"}
    annotations = {}
    if managed:
        labels[keys.QUEUE_LABEL] = QUEUE
        if gang:
            annotations = {keys.GANG_ID: gang[0], keys.GANG_CARDINALITY: str(gang[1])}
    return bench_pod(name, cpu=cpu, memory="64Mi", labels=labels, annotations=annotations)


def members(gang: str, size: int) -> list[str]:
    return [f"{gang}-{i}" for i in range(size)]


class Watch:
    """Running times of the pods of one namespace, and when they met the predicates of `stages`
    (each watched in the namespace of that name of its cluster), watched until closed."""

    def __init__(
        self, kubes: list[Kube], ns: str, stages: Sequence[tuple[Kube, Mapping[str, Predicate]]] = ()
    ) -> None:
        self.times = Times()
        self.done = asyncio.Event()
        watches = [(k, {RUNNING: is_running}) for k in kubes] + list(stages)
        self.tasks = [
            asyncio.create_task(watch_stages(k, ns, s, self.times, self.done, 1 << 30)) for k, s in watches
        ]

    def last_at(self, stage: str, names: list[str]) -> float | None:
        """When the last of `names` was seen at `stage` (None: not all of them yet)."""
        seen = self.times.stages[stage]
        return max(seen[n] for n in names) if all(n in seen for n in names) else None

    def all_running(self, names: list[str]) -> float | None:
        return self.last_at(RUNNING, names)

    async def until(self, names: list[str], timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while (t := self.all_running(names)) is None:
            if time.monotonic() > deadline:
                missing = [n for n in names if n not in self.times.running]
                raise TimeoutError(f"{len(missing)} pods not Running after {timeout:.0f}s: {missing[:5]}")
            await asyncio.sleep(0.05)
        return t

    async def close(self) -> None:
        self.done.set()
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def arrive(
    kube: Kube, ns: str, gangs: list[str], size: int, gap: float, cpu: str, managed: bool, watch: Watch
) -> Times:
    """Create each gang member by member, `gap` apart (gangs concurrently). The gangs' times: when
    each gang's last member was created (CREATED) and reached each stage watched (RUNNING: all
    Running)."""
    out = Times()

    async def one(g: str) -> None:
        names = members(g, size)
        for i, name in enumerate(names):
            if i:
                await asyncio.sleep(gap)
            await kube.create(PODS, pod(name, cpu, (g, size), managed), ns)
        out.created[g] = time.monotonic()
        await watch.until(names, 300)
        await asyncio.sleep(0.5)  # the remote stages, seen by other watches, in too
        for stage in list(watch.times.stages):
            if (t := watch.last_at(stage, names)) is not None:
                out.stages[stage][g] = t

    await asyncio.gather(*(one(g) for g in gangs))
    return out


async def free_cpu(kubes: dict[str, Kube]) -> dict[str, int]:
    """Millicores free on each Ready remote node open to the bench's pods (allocatable less its live
    pods' requests)."""
    out = {}
    for c in REMOTES:
        used: dict[str, int] = defaultdict(int)
        for p in (await kubes[c].list(PODS, None))["items"]:
            if p["spec"].get("nodeName") and p["status"].get("phase") in ("Pending", "Running"):
                used[p["spec"]["nodeName"]] += pod_requests(p).get("cpu", 0)
        for n in (await kubes[c].list(NODES))["items"]:
            if open_to_all(n):
                name = n["metadata"]["name"]
                out[f"{c}/{name}"] = parse_quantity(n["status"]["allocatable"]["cpu"]) - used[name]
    return out


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    kubes = {n: Kube(load_config(env.kubeconfig(n))) for n in ("front", *REMOTES)}
    front, remote = kubes["front"], kubes[REMOTES[0]]
    tag = uuid.uuid4().hex[:6]
    ns_direct, ns_arrive, ns_free = f"bench-gl-direct-{tag}", f"bench-gl-arrive-{tag}", f"bench-gl-free-{tag}"
    try:
        await wait_for_earlier_runs(kubes.values())  # their pods would hold the room measured here
        await create_namespace(remote, ns_direct)
        for ns in (ns_arrive, ns_free):
            await create_namespace(front, ns, queue=QUEUE)
        arriving = [f"a{i}" for i in range(args.arriving)]
        print(f"baseline: {len(arriving)} gangs of {args.size} directly in {REMOTES[0]} ...", file=sys.stderr)
        w = Watch([remote], ns_direct)
        direct = (await arrive(remote, ns_direct, arriving, args.size, args.gap, args.cpu, False, w)).between(
            CREATED, RUNNING
        )
        await w.close()
        await delete_namespace({REMOTES[0]: remote}, ns_direct)  # its pods' room to the backlog's blockers

        # The backlog: blockers hold the remote nodes that are free (one each) but for `room`, too
        # little for a queued gang's pod and enough for the arriving gangs' pods; `queued` gangs wait
        # behind them (those that fit in room other work leaves on the remaining nodes run first and
        # are not counted).
        free = await free_cpu(kubes)
        whole = [n for n, m in free.items() if m >= PER_NODE * 1000]
        gang_cpu = PER_NODE * 1000 // (args.size * args.gangs_per_step)
        room = gang_cpu - 1
        need = args.arriving * args.size * parse_quantity(args.cpu)
        if need > room * len(whole):
            raise SystemExit(
                f"the arriving gangs need {need}m CPU; {len(whole)} free remote nodes leave {room}m each "
                f"beside the backlog: fewer --arriving or a smaller --cpu"
            )
        w = Watch([front], ns_free)
        blockers = [f"blocker-{i}" for i in range(len(whole))]
        for b in blockers:
            await front.create(PODS, pod(b, f"{PER_NODE * 1000 - room}m", None, True), ns_free)
        await w.until(blockers, 300)
        print(
            f"backlog: {args.queued} gangs of {args.size} x {gang_cpu}m CPU queued behind {len(blockers)} "
            f"blockers of {PER_NODE * 1000 - room}m CPU ...",
            file=sys.stderr,
        )
        queued = [f"q{i}" for i in range(args.queued)]
        sem = asyncio.Semaphore(16)

        async def make(name: str, g: str) -> None:
            async with sem:
                await front.create(PODS, pod(name, f"{gang_cpu}m", (g, args.size), True), ns_free)

        await asyncio.gather(*(make(n, g) for g in queued for n in members(g, args.size)))
        await asyncio.sleep(args.settle)  # every pod through a round at least once
        started = {g for g in queued if w.all_running(members(g, args.size))}
        waiting = len(queued) - len(started)

        print(f"arrival: the same gangs, managed, with {waiting} gangs queued ...", file=sys.stderr)
        wa = Watch([front], ns_arrive, bridge_stages(front, [kubes[c] for c in REMOTES]))
        arrived = await arrive(front, ns_arrive, arriving, args.size, args.gap, args.cpu, True, wa)
        arrival = arrived.between(CREATED, RUNNING)
        await wa.close()
        await delete_namespace(kubes, ns_arrive)

        freeing: list[float] = []
        for step in range(min(args.steps, len(blockers))):
            t0 = time.monotonic()
            await front.delete(PODS, blockers[step], ns_free, body={"gracePeriodSeconds": 0})
            # The freed room admits about gangs_per_step gangs (queue order: the oldest first).
            admitted: list[str] = []
            deadline = t0 + 120
            while len(admitted) < args.gangs_per_step and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                admitted = [g for g in queued if g not in started and w.all_running(members(g, args.size))]
            for g in admitted:
                started.add(g)
                t = w.all_running(members(g, args.size))
                assert t is not None
                freeing.append(t - t0)
            print(f"  step {step}: {len(admitted)} gangs Running", file=sys.stderr)
        await w.close()
    finally:
        await cleanup(kubes.values(), (ns_direct, ns_arrive, ns_free))
    out: dict[str, Any] = {
        "size": args.size,
        "queued": args.queued,
        "waiting": waiting,
        "direct_p50_s": pct(direct, 0.5),
        "direct_p99_s": pct(direct, 0.99),
        "arrival_p50_s": pct(arrival, 0.5),
        "arrival_p99_s": pct(arrival, 0.99),
        "arrival_stages": stage_table(arrived, BRIDGE_STAGES),
        "load_average_1m": os.getloadavg()[0],
        "cores": os.cpu_count(),
    }
    if freeing:
        out |= {
            "freeing_gangs": len(freeing),
            "freeing_p50_s": pct(freeing, 0.5),
            "freeing_p99_s": pct(freeing, 0.99),
        }
    out |= {
        f"{k.removesuffix('_s')}_ratio": out[k] / out[f"direct_{k.split('_')[1]}_s"]
        for k in list(out)
        if k.startswith(("arrival_p", "freeing_p")) and out[f"direct_{k.split('_')[1]}_s"] > 0
    }
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--queued", type=int, default=1000, help="gangs waiting behind the blockers")
    p.add_argument("--arriving", type=int, default=40, help="gangs created member by member")
    p.add_argument("--size", type=int, default=4, help="members of each gang")
    p.add_argument("--gap", type=float, default=0.5, help="seconds between a gang's members")
    p.add_argument("--cpu", default="50m", help="CPU of an arriving gang's pod")
    p.add_argument("--steps", type=int, default=6, help="blockers deleted, one at a time")
    p.add_argument("--gangs-per-step", type=int, default=4, help="gangs one blocker's room admits")
    p.add_argument("--settle", type=float, default=20, help="seconds the queued gangs wait before the steps")
    r = run_cli(p, main_async)
    if r is None:
        return
    print(
        f"gangs of {r['size']}, {r['queued']} queued, {r['waiting']} of them waiting through the arrival "
        f"({r['cores']} cores, load average {r['load_average_1m']:.1f})"
    )
    print(
        f"  direct in a remote (create last member -> all Running): p50 {r['direct_p50_s']:.2f}s p99 {r['direct_p99_s']:.2f}s"
    )
    print(
        f"  arrival (last member created -> all Running)          : p50 {r['arrival_p50_s']:.2f}s "
        f"p99 {r['arrival_p99_s']:.2f}s  ({r['arrival_p50_ratio']:.1f}x / {r['arrival_p99_ratio']:.1f}x direct)"
    )
    print_stages({"arriving gang (its last member at each stage)": r["arrival_stages"]})
    if "freeing_p50_s" in r:
        print(
            f"  freeing (blocker deleted -> gang all Running, {r['freeing_gangs']} gangs): "
            f"p50 {r['freeing_p50_s']:.2f}s p99 {r['freeing_p99_s']:.2f}s  "
            f"({r['freeing_p50_ratio']:.1f}x / {r['freeing_p99_ratio']:.1f}x direct)"
        )


if __name__ == "__main__":
    main()
