"""Benchmark of the whole pipeline: managed pods applied to the front cluster, from create to
Running in a remote cluster, against the same pods created directly in the remotes (the baseline,
measured in the same run). Not a test: prints figures.

    .venv/bin/python bench/pipeline.py [--pods 5000] [--gang-share 0.5] [--cpu 50m] [--no-token] [--json]

Through the bridge a pod goes front API -> admission webhook -> front kube-scheduler -> extender
(core round, decision written) -> bind to a virtual node -> vkubelet -> remote pod -> Running
mirrored back. The pods are a seeded mix of single pods and gangs of `--gang-min`..`--gang-max`
(Armada's gang annotations); the baseline creates the very same pods (a gang's in one cluster)
without the bridge. Reported, for both: throughput (pods over the wall time from the first create
to the last Running), per-pod latency (create -> Running) and per-gang latency (the gang's last
member created -> all members Running), p50 and p99, and the ratios bridge/direct; the CPU each
part of the environment spent per pod on each side (`bench/cpu.py`), and the ceilings it sets
(`cpu.ceilings`: on these cores, and were the front side on machines of its own); and a pod's
profile on each side: CPU by process and the API servers' writes by verb and resource
(`bench/writes.py`).

Uses the running `armada-bridge dev up` environment; its remote pod slots must hold `--pods` (110
per KWOK node: `dev up --nodes 25` holds 5,000). `--pods 600 --gang-share 0` is the small-pods
case: more than one remote node (110 slots) or one cluster of 4 nodes (440) holds, so they only
all run if pod slots are counted.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge import keys
from armada_bridge.kube import PODS, Kube, load_config
from bench import cpu, writes
from bench.pods import (
    BOUND,
    BRIDGE_STAGES,
    CREATED,
    QUEUE,
    RUNNING,
    Times,
    batch_times,
    bench_pod,
    bridge_stages,
    cleanup,
    create_namespace,
    delete_namespace,
    free_slots,
    is_bound,
    pct,
    print_stages,
    run_cli,
    stage_table,
    wait_for_earlier_runs,
)
from devenv.processes.environment import Environment

REMOTES = ("remote-1", "remote-2")
DIRECT_STAGES = (CREATED, BOUND, RUNNING)


Unit = tuple[str, int]  # name, pods (1: a single pod)


def units(pods: int, gang_share: float, gang_min: int, gang_max: int, seed: int) -> list[Unit]:
    """A seeded mix: about `gang_share` of the pods in gangs, the rest single, interleaved."""
    rng = random.Random(seed)
    out: list[Unit] = []
    left = pods
    while left > 0:
        if rng.random() < gang_share and left >= gang_min:
            size = min(rng.randint(gang_min, gang_max), left)
            out.append((f"g{len(out)}", size))
        else:
            size = 1
            out.append((f"s{len(out)}", 1))
        left -= size
    return out


def pod(unit: Unit, index: int, cpu: str, queue: str | None, token: bool = True) -> dict[str, Any]:
    name, size = unit
    labels = {"bench": "pipeline", "unit": name}
    annotations = {}
    if queue:
        labels[keys.QUEUE_LABEL] = queue
        if size > 1:
            annotations = {keys.GANG_ID: name, keys.GANG_CARDINALITY: str(size)}
    return bench_pod(
        f"{name}-{index}",
        cpu=cpu,
        memory="64Mi",
        labels=labels,
        annotations=annotations,
        automountServiceAccountToken=token,
    )


def figures(work: list[Unit], times: Times, order: tuple[str, ...]) -> dict[str, Any]:
    created, running = times.created, times.running
    per_pod = times.between(CREATED, RUNNING)
    per_gang = [
        max(running[f"{name}-{i}"] for i in range(size)) - max(created[f"{name}-{i}"] for i in range(size))
        for name, size in work
        if size > 1
    ]
    wall = max(running.values()) - min(created.values())
    out: dict[str, Any] = {
        "wall_s": wall,
        "pods_per_s": len(created) / wall,
        "pod_p50_s": pct(per_pod, 0.5),
        "pod_p99_s": pct(per_pod, 0.99),
    }
    if per_gang:
        out |= {"gang_p50_s": pct(per_gang, 0.5), "gang_p99_s": pct(per_gang, 0.99)}
    out["stages"] = stage_table(times, order)
    return out


def _profile(
    c0: cpu.Sample,
    c1: cpu.Sample,
    w0: writes.Sample,
    w1: writes.Sample,
    idle: cpu.Idle,
    idle_writes: dict[str, float],
    pods: int,
) -> dict[str, dict[str, float]]:
    """One side's cost per pod: CPU ms by process, API writes by verb and resource."""
    return {
        "cpu_ms": cpu.per_pod_ms(cpu.by_process(c0, c1, idle.processes), pods),
        "writes": {k: v / pods for k, v in writes.spent(w0, w1, idle_writes).items()},
    }


def profile_lines(profile: dict[str, dict[str, dict[str, float]]]) -> list[str]:
    """The per-pod profile as a table: a row per process and per write, direct against bridge,
    the bridge's costliest first (rows under 0.05 on both sides left out)."""
    lines = [f"    {'':<44}{'direct':>8}{'bridge':>8}"]
    for what, unit in (("cpu_ms", "CPU ms"), ("writes", "writes")):
        direct, bridge = profile["direct"][what], profile["bridge"][what]
        rows = sorted(set(direct) | set(bridge), key=lambda k: (k.endswith(writes.ALL), -bridge.get(k, 0.0)))
        for key in rows:
            d, b = direct.get(key, 0.0), bridge.get(key, 0.0)
            if max(abs(d), abs(b)) >= 0.05:
                lines.append(f"    {unit:<7} {key:<36}{d:>8.2f}{b:>8.2f}")
    return lines


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    kubes = {n: Kube(load_config(env.kubeconfig(n))) for n in ("front", *REMOTES)}
    work = units(args.pods, args.gang_share, args.gang_min, args.gang_max, args.seed)
    ns_direct, ns_bridge = f"bench-direct-{uuid.uuid4().hex[:6]}", f"bench-bridge-{uuid.uuid4().hex[:6]}"
    try:
        await wait_for_earlier_runs(kubes.values())
        slots = await free_slots([kubes[c] for c in REMOTES])
        if slots < args.pods:
            raise SystemExit(
                f"the remotes have {slots} free pod slots for {args.pods} pods: "
                f"`armada-bridge dev up --nodes {-(-args.pods // 200) + 1}` (110 slots per node, 2 remotes)"
            )
        idle, idle_writes = cpu.Idle({}, {}), {}
        if args.idle_seconds > 0:
            w0 = await writes.sample(kubes)
            idle = await cpu.idle_rates(env, args.idle_seconds)
            idle_writes = writes.rates(w0, await writes.sample(kubes))
        for k in kubes.values():
            await create_namespace(k, ns_direct)
        remote = [kubes[c] for c in REMOTES]
        gangs = sum(1 for _, size in work if size > 1)
        print(
            f"baseline: {args.pods} pods ({gangs} gangs) directly in {', '.join(REMOTES)} ...",
            file=sys.stderr,
        )
        c0, w0 = cpu.sample(env), await writes.sample(kubes)
        direct = await batch_times(
            [
                (remote[u % 2], "", pod(unit, i, args.cpu, None, not args.no_token))
                for u, unit in enumerate(work)
                for i in range(unit[1])
            ],
            remote,
            ns_direct,
            timeout=args.timeout,
            stages=[(k, {BOUND: is_bound}) for k in remote],
        )
        c1, w1 = cpu.sample(env), await writes.sample(kubes)
        cpu_direct = cpu.spent(c0, c1, idle.groups)
        profile = {"direct": _profile(c0, c1, w0, w1, idle, idle_writes, args.pods)}
        await delete_namespace(kubes, ns_direct)
        await create_namespace(kubes["front"], ns_bridge, queue=args.queue)
        print(f"bridge: the same {args.pods} pods, managed, in the front cluster ...", file=sys.stderr)
        front = kubes["front"]
        c0, w0 = cpu.sample(env), await writes.sample(kubes)
        via = await batch_times(
            [
                (front, "", pod(unit, i, args.cpu, args.queue, not args.no_token))
                for unit in work
                for i in range(unit[1])
            ],
            [front],
            ns_bridge,
            timeout=args.timeout,
            stages=bridge_stages(front, [kubes[c] for c in REMOTES]),
        )
        c1, w1 = cpu.sample(env), await writes.sample(kubes)
        cpu_bridge = cpu.spent(c0, c1, idle.groups)
        profile["bridge"] = _profile(c0, c1, w0, w1, idle, idle_writes, args.pods)
        listed = (await front.list(PODS, ns_bridge))["items"]
        spread = Counter(
            (p["metadata"].get("annotations") or {}).get(keys.ASSIGNED_CLUSTER, "?") for p in listed
        )
    finally:
        await cleanup(kubes.values(), (ns_direct, ns_bridge))
    d, b = figures(work, direct, DIRECT_STAGES), figures(work, via, BRIDGE_STAGES)
    d["cpu_ms_per_pod"] = cpu.per_pod_ms(cpu_direct, args.pods)
    b["cpu_ms_per_pod"] = cpu.per_pod_ms(cpu_bridge, args.pods)
    ratios = {f"{k}_ratio": b[k] / d[k] for k in d if k in b and isinstance(d[k], float) and d[k] > 0}
    ratios["cpu_per_pod_ratio"] = b["cpu_ms_per_pod"][cpu.MACHINE] / d["cpu_ms_per_pod"][cpu.MACHINE]
    ceilings = cpu.ceilings(d["cpu_ms_per_pod"], b["cpu_ms_per_pod"], REMOTES)
    return {
        "pods": args.pods,
        "gangs": gangs,
        "gang_sizes": f"{args.gang_min}-{args.gang_max}",
        "cpu": args.cpu,
        "direct": d,
        "bridge": b,
        **ratios,
        "ceilings": ceilings,
        "by_cluster": dict(sorted(spread.items())),
        "profile": profile,
        "idle_cores": idle.groups.get(cpu.MACHINE),  # None: not measured, nothing subtracted
        "load_average_1m": os.getloadavg()[0],
        "cores": os.cpu_count(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--gang-share", type=float, default=0.5, help="fraction of the pods that are in gangs")
    p.add_argument("--gang-min", type=int, default=4)
    p.add_argument("--gang-max", type=int, default=16)
    p.add_argument("--cpu", default="50m", help="each pod's CPU request")
    p.add_argument("--queue", default=QUEUE, help=f"the pods' queue (label {keys.QUEUE_LABEL})")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument(
        "--no-token",
        action="store_true",
        help="pods that mount no ServiceAccount token (through the bridge: no front API token to request)",
    )
    p.add_argument("--timeout", type=float, default=900, help="seconds for all pods of a side to run")
    p.add_argument(
        "--idle-seconds",
        type=float,
        default=10,
        help="how long to measure the environment's CPU use at rest first, to subtract from each side's "
        "(0: subtract nothing)",
    )
    r = run_cli(p, main_async)
    if r is None:
        return
    print(
        f"{r['pods']} pods of {r['cpu']} CPU, {r['gangs']} gangs of {r['gang_sizes']} "
        f"({r['cores']} cores, load average {r['load_average_1m']:.1f})"
    )
    for side, f in (("directly in the remotes", r["direct"]), ("through the bridge", r["bridge"])):
        gang = f" gang p50 {f['gang_p50_s']:.2f}s p99 {f['gang_p99_s']:.2f}s" if "gang_p50_s" in f else ""
        print(
            f"  {side:<24}: all Running in {f['wall_s']:.1f}s ({f['pods_per_s']:.0f} pods/s)  "
            f"pod p50 {f['pod_p50_s']:.2f}s p99 {f['pod_p99_s']:.2f}s{gang}"
        )
    ratios = "  ".join(f"{k.removesuffix('_ratio')} {v:.2f}x" for k, v in r.items() if k.endswith("_ratio"))
    print(f"  bridge / direct         : {ratios}")
    print(f"  spread                  : {r['by_cluster']}")
    rest = r["idle_cores"]
    less = "nothing subtracted" if rest is None else f"less the environment at rest, {rest:.2f} cores busy"
    print(f"  CPU per pod, ms ({less}):")
    print(f"    directly in the remotes : {cpu.cpu_line(r['direct']['cpu_ms_per_pod'])}")
    print(f"    through the bridge      : {cpu.cpu_line(r['bridge']['cpu_ms_per_pod'])}")
    print(f"  per pod, by process and by write ({less}):")
    print("\n".join(profile_lines(r["profile"])))
    c = r["ceilings"]
    print(
        f"  ceilings from CPU       : all clusters on these cores {c['shared_machine']:.2f}x direct; "
        f"the remotes spend {c['remotes_ratio']:.2f}x per pod (were the front on machines of its own: "
        f"{c['remotes_alone']:.2f}x); the front side spends {c['front_side_ratio']:.2f}x a direct pod's whole cost"
    )
    print_stages({side: r[side]["stages"] for side in ("direct", "bridge")})


if __name__ == "__main__":
    main()
