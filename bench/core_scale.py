"""How the armada-bridge core's rounds grow with queued jobs and nodes, up to Armada production
scale (not a test).

    .venv/bin/python bench/core_scale.py [--jobs 1000,10000,100000] [--nodes 1000,10000]
                                         [--queues 200] [--plot docs/img/core-scale.png]
                                         [--gang-size 1] [--against COMMIT [--repeat 3]]

For every (jobs, nodes) pair: a fresh scheduler with `nodes` nodes of 32 cpu / 256Gi (in clusters
of 1,000 nodes) and `queues` queues gets `jobs` queued 1-cpu / 4Gi jobs (with `--gang-size N`, in
gangs of N: what does not fit is then a backlog of gangs, each a candidate of its own), then
* full round: one round places what fits (the rest waits, its reasons recorded);
* incremental round: 100 new jobs arrive on that state; one round.
The baseline, measured in the same run for each pair, is sorting the queued jobs by Armada's queue
order: a trivial lower bound on any round over them. With `--plot` (needs the `bench` extra,
matplotlib), a PNG of both rounds against jobs, one line per node count.

With `--against COMMIT`, the core of that commit (`git archive` of its `armada_bridge/` into a
temporary directory outside the repository) is measured side by side with this tree's: every
(jobs, nodes) pair runs `--repeat` times in each, each run in a fresh process, old and new
alternating (which goes first swaps every repetition), and the ratio new/old is printed per pair
(median, with the lowest and highest of the per-repetition ratios), for wall time and for CPU
time (steadier on a shared machine: time the process waits for a core is not counted). The load
average is printed before and after, as the machines these run on are shared.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

# The tree whose core is measured: this one, or (in a worker process of `--against`) an old one.
sys.path.insert(0, os.environ.get("CORE_SCALE_ROOT") or str(Path(__file__).resolve().parents[1]))

from armada_bridge.core.builders import job, node
from armada_bridge.core.model import Job, Queue, SchedulingConfig
from armada_bridge.core.scheduler import Scheduler

REPO = Path(__file__).resolve().parents[1]
NODES_PER_CLUSTER = 1000
NEW = 100
T = TypeVar("T")


def make_jobs(prefix: str, count: int, queues: int, start: float = 0.0, gang_size: int = 1) -> list[Job]:
    """`count` jobs, alone or in gangs of `gang_size` (each gang in one queue)."""
    return [
        job(
            f"{prefix}{i}",
            f"queue-{i // gang_size % queues:03d}",
            {"cpu": "1", "memory": "4Gi"},
            submit_time=start + i,
            gang_id=f"{prefix}g{i // gang_size}" if gang_size > 1 else None,
            gang_cardinality=gang_size,
        )
        for i in range(count - count % gang_size)
    ]


def make_scheduler(nodes: int, queues: int, per_cluster: int = NODES_PER_CLUSTER) -> Scheduler:
    s = Scheduler(SchedulingConfig())
    for n in range(nodes):
        s.upsert_node(node(f"node-{n:05d}", f"remote-{n // per_cluster}", {"cpu": "32", "memory": "256Gi"}))
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


def measure(jobs: int, nodes: int, queues: int, gang_size: int = 1) -> dict[str, float]:
    queued = make_jobs("job-", jobs, queues, gang_size=gang_size)
    sort_wall, _, _ = timed(lambda: sorted(queued, key=lambda j: (0, j.priority, j.submit_time, j.id)))
    s = make_scheduler(nodes, queues)
    s.add_jobs(queued)
    full_wall, full_cpu, full = timed(lambda: s.schedule_round(0.0))
    s.add_jobs(make_jobs("late-", NEW, queues, start=1e7, gang_size=gang_size))
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


def worker(spec: str) -> int:
    """One measurement in this process, as JSON on stdout (``--worker JOBS,NODES,QUEUES,GANG``)."""
    import armada_bridge

    jobs, nodes, queues, gang_size = (int(x) for x in spec.split(","))
    r = measure(jobs, nodes, queues, gang_size)
    r["core"] = str(Path(armada_bridge.__file__).resolve().parents[1])
    print(json.dumps(r))
    return 0


def run_worker(root: Path, jobs: int, nodes: int, queues: int, gang_size: int) -> dict[str, float]:
    env = {**os.environ, "CORE_SCALE_ROOT": str(root)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", f"{jobs},{nodes},{queues},{gang_size}"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    r = json.loads(out.strip().splitlines()[-1])
    if Path(r.pop("core")) != root.resolve():
        raise SystemExit(f"worker imported the core from {r['core']}, not {root}")
    return r


def export_tree(commit: str) -> Path:
    """``armada_bridge/`` of ``commit`` in a new temporary directory."""
    tmp = Path(tempfile.mkdtemp(prefix="core-scale-"))
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", commit, "armada_bridge"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
    return tmp


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def ratios(old: list[dict[str, float]], new: list[dict[str, float]], key: str) -> list[float]:
    """new / old of ``key`` per repetition (the runs of one repetition ran back to back)."""
    return [n[key] / o[key] for o, n in zip(old, new, strict=True)]


def against(
    commit: str, job_counts: list[int], node_counts: list[int], queues: int, repeat: int, gang_size: int
) -> None:
    rev = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", commit], check=True, capture_output=True, text=True
    ).stdout.strip()
    old_root = export_tree(commit)
    try:
        print(f"  old: {rev} (git archive in {old_root}); new: {REPO}")
        print(f"  load average before: {loadavg()}")
        print(
            f"  median of {repeat} runs each, every run in a fresh process, old and new alternating; "
            "ratio = new / old, wall (lowest-highest of the per-run ratios) and CPU"
        )
        print(
            f"  {'jobs':>8} {'nodes':>7} {'placed':>8} {'sort (base)':>12} {'full old':>9} {'full new':>9} "
            f"{'new/old':>8} {'(range)':>13} {'cpu old':>9} {'cpu new':>9} {'cpu n/o':>8} "
            f"{'incr old':>9} {'incr new':>9} {'new/old':>8} {'cpu n/o':>8}"
        )
        for nodes in node_counts:
            for jobs in job_counts:
                old: list[dict[str, float]] = []
                new: list[dict[str, float]] = []
                for rep in range(repeat):
                    sides = [(old_root, old), (REPO, new)]
                    for root, acc in sides if rep % 2 == 0 else sides[::-1]:
                        acc.append(run_worker(root, jobs, nodes, queues, gang_size))
                if [r["placed"] for r in old] != [r["placed"] for r in new]:
                    raise SystemExit(f"old and new placed different numbers of jobs: {old} {new}")
                full = ratios(old, new, "full")

                def med(rows: list[dict[str, float]], key: str) -> float:
                    return statistics.median(r[key] for r in rows) * 1000

                print(
                    f"  {jobs:>8,} {nodes:>7,} {int(new[0]['placed']):>8,} {med(old + new, 'sort'):>9.1f} ms "
                    f"{med(old, 'full'):>6.0f} ms {med(new, 'full'):>6.0f} ms {statistics.median(full):>8.3f} "
                    f"{f'({min(full):.3f}-{max(full):.3f})':>13} "
                    f"{med(old, 'full_cpu'):>6.0f} ms {med(new, 'full_cpu'):>6.0f} ms "
                    f"{statistics.median(ratios(old, new, 'full_cpu')):>8.3f} "
                    f"{med(old, 'incremental'):>6.1f} ms {med(new, 'incremental'):>6.1f} ms "
                    f"{statistics.median(ratios(old, new, 'incremental')):>8.3f} "
                    f"{statistics.median(ratios(old, new, 'incremental_cpu')):>8.3f}",
                    flush=True,
                )
        print(f"  load average after: {loadavg()}")
    finally:
        shutil.rmtree(old_root, ignore_errors=True)


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
    p.add_argument("--gang-size", type=int, default=1, help="jobs in gangs of this many members")
    p.add_argument("--plot", type=Path, help="write a PNG of the rounds against jobs here")
    p.add_argument("--against", metavar="COMMIT", help="measure that commit's core side by side")
    p.add_argument("--repeat", type=int, default=3, help="runs per pair and side with --against")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker(args.worker)
    job_counts = [int(x) for x in args.jobs.split(",")]
    node_counts = [int(x) for x in args.nodes.split(",")]
    print(
        f"core scale: {args.queues} queues, nodes of 32 cpu/256Gi in clusters of {NODES_PER_CLUSTER}, "
        f"1-cpu/4Gi jobs{f' in gangs of {args.gang_size}' if args.gang_size > 1 else ''} "
        f"(python {sys.version.split()[0]})"
    )
    if args.against:
        against(args.against, job_counts, node_counts, args.queues, args.repeat, args.gang_size)
        return 0
    print(f"  load average before: {loadavg()}")
    print(
        f"  {'jobs':>8} {'nodes':>7} {'placed':>8} {'sort (base)':>12} {'full round':>11} {'x sort':>7} "
        f"{'cpu':>9} {'incremental':>12} {'x full':>7}"
    )
    rows = []
    for nodes in node_counts:
        for jobs in job_counts:
            r = measure(jobs, nodes, args.queues, args.gang_size)
            rows.append(r)
            print(
                f"  {jobs:>8,} {nodes:>7,} {int(r['placed']):>8,} {r['sort'] * 1000:>9.1f} ms "
                f"{r['full'] * 1000:>8.0f} ms {r['full'] / r['sort']:>7.1f} {r['full_cpu'] * 1000:>6.0f} ms "
                f"{r['incremental'] * 1000:>9.1f} ms {r['incremental'] / r['full']:>7.4f}",
                flush=True,
            )
    print(f"  load average after: {loadavg()}")
    if args.plot:
        plot(rows, args.plot)
        print(f"  plot: {args.plot}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
