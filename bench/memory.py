"""Benchmark: the extender's and the vkubelet's resident memory against the number of managed pods
running across the remote clusters. Not a test: prints figures.

    .venv/bin/armada-bridge dev up --workers 10 --nodes 500
    .venv/bin/python bench/memory.py [--pods 20000] [--step 2000] [--plot docs/img/memory.png] [--json]
    .venv/bin/python bench/memory.py --replot before.json after.json --plot docs/img/memory.png

Managed single pods (queue `default`, `--cpu` each, no ServiceAccount token unless `--token`) are
created in the front in steps of `--step`, each step in a namespace of its own; once a step's pods
are all Running (mirrored from their remote clusters), the RSS of every extender replica and of the
vkubelet is read from /proc (and, for the run, the CPU time each used). The baseline, same run:
each process's RSS before the first pod.
Issue 28's bound at 20,000 pods: extender < 400 MB, vkubelet < 300 MB (issue 12's: extender < 500 MB).
The pods stay until the end (the curve is of pods alive), then their namespaces are deleted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge import keys
from armada_bridge.kube import NODES, Kube, load_config
from bench.pods import (
    QUEUE,
    batch_times,
    bench_pod,
    cleanup,
    cpu_seconds,
    create_namespace,
    free_slots,
    memory_kib,
    processes,
    run_cli,
)
from devenv.names import FRONT
from devenv.processes.environment import Environment

MB = 1e6
GOALS_MB = {"extender": 400, "vkubelet": 300}  # issue 28 (issue 12: extender 500)


def sample(pids: dict[str, int]) -> dict[str, float]:
    """Component name -> RSS now, MB."""
    return {name: memory_kib(pid)["VmRSS"] * 1024 / MB for name, pid in pids.items()}


def pod(name: str, cpu: str, token: bool, queue: str) -> dict[str, Any]:
    labels = {"bench": "memory", keys.QUEUE_LABEL: queue}
    return bench_pod(name, cpu=cpu, memory="16Mi", labels=labels, automountServiceAccountToken=token)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    remotes = [c for c in env.cluster_names() if c != FRONT]
    kubes = {c: Kube(load_config(env.kubeconfig(c))) for c in (FRONT, *remotes)}
    front = kubes[FRONT]
    run_id = uuid.uuid4().hex[:6]
    namespaces: list[str] = []
    pids = processes(env)
    rows = [{"pods": 0, "seconds": 0.0, **sample(pids)}]
    cpu0 = {name: cpu_seconds(pid) for name, pid in pids.items()}
    try:
        slots = await free_slots(kubes[c] for c in remotes)
        nodes = sum([len((await kubes[c].list(NODES))["items"]) for c in remotes])
        if slots < args.pods:
            raise SystemExit(
                f"the {len(remotes)} remotes have {slots} free pod slots for {args.pods} pods: "
                f"`armada-bridge dev up --workers W --nodes N` with W*N*110 above it"
            )
        print(
            f"{len(remotes)} remotes of {nodes} nodes, {slots} free pod slots; idle {rows[0]}",
            file=sys.stderr,
        )
        made = 0
        while made < args.pods:
            n = min(args.step, args.pods - made)
            ns = f"bench-mem-{run_id}-{len(namespaces)}"
            await create_namespace(front, ns, queue=args.queue)
            namespaces.append(ns)
            start = time.monotonic()
            targets = [(front, "", pod(f"m-{made + i}", args.cpu, args.token, args.queue)) for i in range(n)]
            await batch_times(targets, [front], ns, timeout=args.timeout)
            made += n
            if processes(env) != pids:
                raise SystemExit("an extender replica or the vkubelet restarted during the run")
            rows.append({"pods": made, "seconds": time.monotonic() - start, **sample(pids)})
            print(f"{made} pods Running: {rows[-1]}", file=sys.stderr)
        peak = {name: memory_kib(pid)["VmHWM"] * 1024 / MB for name, pid in pids.items()}
        cpu = {name: cpu_seconds(pid) - cpu0[name] for name, pid in pids.items()}
    finally:
        await cleanup(kubes.values(), namespaces)
    if args.plot:
        plot({"": rows}, args.plot)
    return {
        "pods": args.pods,
        "remotes": len(remotes),
        "remote_nodes": nodes,
        "rows": rows,
        "peak_mb": peak,
        "growth_per_1000_pods_mb": {
            name: (rows[-1][name] - rows[0][name]) / (rows[-1]["pods"] / 1000) for name in pids
        },
        "cpu_seconds_per_1000_pods": {name: cpu[name] / (rows[-1]["pods"] / 1000) for name in pids},
        "cores": os.cpu_count(),
        "load_average_1m": os.getloadavg()[0],
    }


def plot(runs: dict[str, list[dict[str, Any]]], path: Path) -> None:
    """RSS against pods of each run (label -> its rows; "" for this run alone), each process a
    colour, each run a line style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    colours: dict[str, str] = {}
    for i, (run, rows) in enumerate(runs.items()):
        pods = [r["pods"] for r in rows]
        for name in [k for k in rows[0] if k not in ("pods", "seconds")]:
            colour = colours.setdefault(name, f"C{len(colours)}")
            label = f"{name} ({run})" if run else name
            ax.plot(
                pods,
                [r[name] for r in rows],
                marker="o",
                linestyle=("-", "--", ":")[i % 3],
                color=colour,
                label=label,
            )
    for name, goal in GOALS_MB.items():
        ax.axhline(goal, linestyle="--", linewidth=0.8, color="grey")
        ax.annotate(f"{name} bound", (0, goal), textcoords="offset points", xytext=(2, 2), fontsize=8)
    ax.set_xlabel("managed pods Running")
    ax.set_ylabel("RSS (MB)")
    ax.set_title("armada-bridge memory against pods")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=20000)
    p.add_argument("--step", type=int, default=2000, help="pods per step (RSS is read after each)")
    p.add_argument("--cpu", default="10m", help="each pod's CPU request")
    p.add_argument("--token", action="store_true", help="pods that mount a ServiceAccount token")
    p.add_argument("--queue", default=QUEUE, help=f"the pods' queue (label {keys.QUEUE_LABEL})")
    p.add_argument("--timeout", type=float, default=1800, help="seconds for a step's pods to run")
    p.add_argument("--plot", type=Path, help="write a PNG of RSS against pods here")
    p.add_argument(
        "--replot",
        type=Path,
        nargs="+",
        metavar="RUN.json",
        help="no run: plot runs saved with --json (each labelled by its file name) into --plot",
    )
    known, _ = p.parse_known_args()
    if known.replot:
        if known.plot is None:
            raise SystemExit("--replot needs --plot")
        plot({f.stem: json.loads(f.read_text())["rows"] for f in known.replot}, known.plot)
        return
    r = run_cli(p, main_async)
    if r is None:
        return
    print(
        f"{r['pods']} managed pods over {r['remotes']} remote clusters of {r['remote_nodes']} nodes "
        f"({r['cores']} cores, load average {r['load_average_1m']:.1f})"
    )
    names = list(r["peak_mb"])
    print("  pods    " + "".join(f"{n:>14}" for n in names))
    for row in r["rows"]:
        print(f"  {row['pods']:<8}" + "".join(f"{row[n]:>11.0f} MB" for n in names))
    for n in names:
        goal = GOALS_MB["extender" if n.startswith("extender") else "vkubelet"]
        base = r["rows"][0][n]
        print(
            f"  {n}: {base:.0f} MB idle -> {r['rows'][-1][n]:.0f} MB ({r['rows'][-1][n] / base:.2f}x), "
            f"peak {r['peak_mb'][n]:.0f} MB, {r['growth_per_1000_pods_mb'][n]:.1f} MB per 1,000 pods; "
            f"goal < {goal} MB: {'met' if r['peak_mb'][n] < goal else 'not met'}; "
            f"{r['cpu_seconds_per_1000_pods'][n]:.1f} CPU s per 1,000 pods"
        )


if __name__ == "__main__":
    main()
