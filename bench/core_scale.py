"""How the armada-bridge core's rounds grow with queued jobs and nodes, up to Armada production
scale (not a test).

    .venv/bin/python bench/core_scale.py [--jobs 1000,10000,100000] [--nodes 1000,10000]
                                         [--queues 200] [--plot docs/img/core-scale.png]

For every (jobs, nodes) pair: a fresh scheduler with `nodes` nodes of 32 cpu / 256Gi (in clusters
of 1,000 nodes) and `queues` queues gets `jobs` queued 1-cpu / 4Gi jobs, then
* full round: one round places what fits (the rest waits, its reasons recorded);
* incremental round: 100 new jobs arrive on that state; one round.
The baseline, measured in the same run for each pair, is sorting the queued jobs by Armada's queue
order: a trivial lower bound on any round over them. With `--plot` (needs the `bench` extra,
matplotlib), a PNG of both rounds against jobs, one line per node count.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge.core.builders import job, node
from armada_bridge.core.model import Job, Queue, SchedulingConfig
from armada_bridge.core.scheduler import Scheduler

NODES_PER_CLUSTER = 1000
NEW = 100
T = TypeVar("T")


def make_jobs(prefix: str, count: int, queues: int, start: float = 0.0) -> list[Job]:
    return [
        job(f"{prefix}{i}", f"queue-{i % queues:03d}", {"cpu": "1", "memory": "4Gi"}, submit_time=start + i)
        for i in range(count)
    ]


def make_scheduler(nodes: int, queues: int) -> Scheduler:
    s = Scheduler(SchedulingConfig())
    for n in range(nodes):
        s.upsert_node(
            node(f"node-{n:05d}", f"remote-{n // NODES_PER_CLUSTER}", {"cpu": "32", "memory": "256Gi"})
        )
    for q in range(queues):
        s.upsert_queue(Queue(f"queue-{q:03d}"))
    return s


def timed(fn: Callable[[], T]) -> tuple[float, float, T]:
    """(wall, CPU seconds, result), garbage collection off while it runs."""
    gc.collect()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, time.process_time() - c0, out
    finally:
        gc.enable()


def measure(jobs: int, nodes: int, queues: int) -> dict[str, float]:
    queued = make_jobs("job-", jobs, queues)
    sort_wall, _, _ = timed(lambda: sorted(queued, key=lambda j: (0, j.priority, j.submit_time, j.id)))
    s = make_scheduler(nodes, queues)
    s.add_jobs(queued)
    full_wall, full_cpu, full = timed(lambda: s.schedule_round(0.0))
    s.add_jobs(make_jobs("late-", NEW, queues, start=1e7))
    inc_wall, inc_cpu, _ = timed(lambda: s.schedule_round(1.0))
    return {
        "jobs": jobs,
        "nodes": nodes,
        "placed": len(full.scheduled),
        "sort": sort_wall,
        "full": full_wall,
        "full_cpu": full_cpu,
        "incremental": inc_wall,
        "incremental_cpu": inc_cpu,
    }


def plot(rows: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for title, key, ax in (
        ("full round", "full", axes[0]),
        (f"incremental round ({NEW} new jobs)", "incremental", axes[1]),
    ):
        for nodes in sorted({r["nodes"] for r in rows}):
            pts = sorted((r["jobs"], r[key]) for r in rows if r["nodes"] == nodes)
            ax.plot(
                [p[0] for p in pts], [p[1] * 1000 for p in pts], marker="o", label=f"{int(nodes):,} nodes"
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("queued jobs")
        ax.set_ylabel("wall time (ms)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--jobs", default="1000,10000,100000", help="queued job counts, comma-separated")
    p.add_argument("--nodes", default="1000,10000", help="node counts, comma-separated")
    p.add_argument("--queues", type=int, default=200)
    p.add_argument("--plot", type=Path, help="write a PNG of the rounds against jobs here")
    args = p.parse_args(argv)
    job_counts = [int(x) for x in args.jobs.split(",")]
    node_counts = [int(x) for x in args.nodes.split(",")]
    print(
        f"core scale: {args.queues} queues, nodes of 32 cpu/256Gi in clusters of {NODES_PER_CLUSTER}, "
        f"1-cpu/4Gi jobs (python {sys.version.split()[0]})"
    )
    print(
        f"  {'jobs':>8} {'nodes':>7} {'placed':>8} {'sort (base)':>12} {'full round':>11} {'x sort':>7} "
        f"{'cpu':>9} {'incremental':>12} {'x full':>7}"
    )
    rows = []
    for nodes in node_counts:
        for jobs in job_counts:
            r = measure(jobs, nodes, args.queues)
            rows.append(r)
            print(
                f"  {jobs:>8,} {nodes:>7,} {int(r['placed']):>8,} {r['sort'] * 1000:>9.1f} ms "
                f"{r['full'] * 1000:>8.0f} ms {r['full'] / r['sort']:>7.1f} {r['full_cpu'] * 1000:>6.0f} ms "
                f"{r['incremental'] * 1000:>9.1f} ms {r['incremental'] / r['full']:>7.4f}",
                flush=True,
            )
    if args.plot:
        plot(rows, args.plot)
        print(f"  plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
