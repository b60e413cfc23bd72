"""The scheduling core at the scale of many remote clusters (not a test): how long a round takes,
how much memory the extender's state needs, and where one process stops keeping up.

    .venv/bin/python bench/scale_out.py [--clusters 10] [--nodes-per-cluster 5000]
                                        [--jobs 100000,300000,1000000] [--queues 200]

One front, ``clusters`` remote clusters of ``nodes-per-cluster`` nodes of 32 cpu / 256Gi, and for
each job count (each in a fresh process, so that its peak memory is its own): that many 1-cpu/4Gi
jobs queued in ``queues`` queues, then
* load: the jobs added to the scheduler (what the extender does as it learns of pods);
* full round: one round places what fits (all of it here: the clusters hold 32 jobs per node);
* incremental round: 100 new jobs on that state;
* memory: the process's peak RSS, and per job beyond the nodes-only baseline.
This is the core alone: the Kubernetes side (informers, the writes of decisions) is measured by
the end-to-end benchmarks; bench/results/performance-history.md ("Beyond one machine") puts both together.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core_scale import NEW, loadavg, make_jobs, make_scheduler, timed


def rss_mb() -> float:
    """Peak resident set of this process so far (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(jobs: int, nodes: int, per_cluster: int, queues: int) -> dict[str, float]:
    t0 = time.perf_counter()
    s = make_scheduler(nodes, queues, per_cluster)
    nodes_s = time.perf_counter() - t0
    base = rss_mb()
    queued = make_jobs("job-", jobs, queues)
    load_wall, _, _ = timed(lambda: s.add_jobs(queued))
    full_wall, full_cpu, full = timed(lambda: s.schedule_round(0.0))
    placed = len(full.scheduled)
    del full
    s.add_jobs(make_jobs("late-", NEW, queues, start=1e7))
    inc_wall, inc_cpu, _ = timed(lambda: s.schedule_round(1.0))
    peak = rss_mb()
    return {
        "jobs": jobs,
        "nodes": nodes,
        "placed": placed,
        "nodes_s": nodes_s,
        "load": load_wall,
        "full": full_wall,
        "full_cpu": full_cpu,
        "incremental": inc_wall,
        "incremental_cpu": inc_cpu,
        "rss_nodes_mb": base,
        "rss_peak_mb": peak,
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--clusters", type=int, default=10)
    p.add_argument("--nodes-per-cluster", type=int, default=5000)
    p.add_argument("--jobs", default="100000,300000,1000000", help="queued job counts, comma-separated")
    p.add_argument("--queues", type=int, default=200)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    nodes = args.clusters * args.nodes_per_cluster
    if args.worker:
        print(json.dumps(measure(int(args.worker), nodes, args.nodes_per_cluster, args.queues)))
        return 0
    print(
        f"scale out: {args.clusters} clusters of {args.nodes_per_cluster:,} nodes (32 cpu/256Gi), "
        f"{args.queues} queues, 1-cpu/4Gi jobs (python {sys.version.split()[0]}); load average {loadavg()}"
    )
    print(
        f"  {'jobs':>10} {'placed':>10} {'nodes in':>9} {'load':>8} {'full round':>11} {'cpu':>8} "
        f"{'per job':>8} {'incremental':>12} {'cpu':>8} {'RSS nodes':>10} {'RSS peak':>9} {'per job':>8}"
    )
    for jobs in (int(x) for x in args.jobs.split(",")):
        out = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), *argv, "--worker", str(jobs)],
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            print(f"  {jobs:>10,} failed (exit {out.returncode}): {out.stderr.strip().splitlines()[-1:]}")
            break
        r = json.loads(out.stdout.strip().splitlines()[-1])
        per_job_kb = (r["rss_peak_mb"] - r["rss_nodes_mb"]) * 1024 / jobs
        print(
            f"  {jobs:>10,} {int(r['placed']):>10,} {r['nodes_s']:>7.1f} s {r['load']:>6.1f} s "
            f"{r['full']:>9.2f} s {r['full_cpu']:>6.2f} s {r['full'] / max(r['placed'], 1) * 1e6:>5.1f} us "
            f"{r['incremental'] * 1000:>9.1f} ms {r['incremental_cpu'] * 1000:>5.1f} ms {r['rss_nodes_mb']:>7.0f} MB {r['rss_peak_mb']:>6.0f} MB "
            f"{per_job_kb:>5.2f} kB",
            flush=True,
        )
    print(f"  load average after: {loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
