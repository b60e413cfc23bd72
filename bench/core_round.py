"""Benchmark of one scheduling round of the armada-bridge core (not a test).

    .venv/bin/python bench/core_round.py [--repeat N]

Shape of Armada's BenchmarkPreemptingQueueScheduler "1000 nodes ... 32000 jobs": 1,000 nodes of
32 cpu / 256Gi in 10 clusters, 100 queues, 32,000 queued jobs of 1 cpu / 4Gi. The machine is
shared and noisy, so every figure is also given as a ratio to a baseline measured in the same run:

* baseline: sorting the 32,000 jobs by Armada's queue order (a trivial lower bound on any round);
* full round: a fresh scheduler places all 32,000 jobs;
* incremental, churn: on the full cluster, 100 jobs finish and 100 new jobs arrive; one round;
* incremental, backlog: 32,000 jobs wait on a full cluster (already considered by an earlier
  round) and 100 new jobs arrive; one round;
* recompute: the same backlog snapshot loaded into a fresh scheduler (what a stateless core would
  have to do every time), then one round.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge.core.builders import job, node
from armada_bridge.core.model import Job, Queue, SchedulingConfig
from armada_bridge.core.scheduler import Scheduler

CLUSTERS = 10
NODES_PER_CLUSTER = 100
QUEUES = 100
JOBS = 32_000
NEW = 100

T = TypeVar("T")


def make_jobs(prefix: str, count: int, start: float = 0.0) -> list[Job]:
    return [
        job(f"{prefix}{i}", f"queue-{i % QUEUES:03d}", {"cpu": "1", "memory": "4Gi"}, submit_time=start + i)
        for i in range(count)
    ]


def make_scheduler() -> Scheduler:
    s = Scheduler(SchedulingConfig())
    for c in range(CLUSTERS):
        for n in range(NODES_PER_CLUSTER):
            s.upsert_node(node(f"remote-{c}-node-{n:03d}", f"remote-{c}"))
    for q in range(QUEUES):
        s.upsert_queue(Queue(f"queue-{q:03d}"))
    return s


#: CPU seconds of this process per measurement (less sensitive to other load than wall time).
CPU: dict[str, list[float]] = {}


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    gc.collect()
    gc.disable()
    try:
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = fn()
        wall = time.perf_counter() - t0
        CPU.setdefault("_last", []).append(time.process_time() - c0)
        return wall, out
    finally:
        gc.enable()


def _record(results: dict[str, list[float]], key: str, wall: float) -> None:
    results[key].append(wall)
    CPU.setdefault(key, []).append(CPU["_last"][-1])


def one_run(jobs: list[Job], results: dict[str, list[float]]) -> tuple[int, int]:
    dt, _ = timed(lambda: sorted(jobs, key=lambda j: (0, j.priority, j.submit_time, j.id)))
    _record(results, "sort", dt)

    s = make_scheduler()
    batch = make_jobs("job-", JOBS)
    dt, _ = timed(lambda: s.add_jobs(batch))
    _record(results, "load", dt)
    dt, full = timed(lambda: s.schedule_round(0.0))
    _record(results, "full", dt)

    # Churn: 100 finish, 100 arrive.
    for rec in sorted(s.running_jobs(), key=lambda r: r.id)[:NEW]:
        s.mark_finished(rec.id)
    s.add_jobs(make_jobs("churn-", NEW, start=1e6))
    dt, churn = timed(lambda: s.schedule_round(1.0))
    _record(results, "churn", dt)
    assert len(churn.scheduled) == NEW

    # Backlog: 32,000 more wait on the full cluster; a round considers them; then 100 arrive.
    s.add_jobs(make_jobs("backlog-", JOBS, start=2e6))
    s.schedule_round(2.0)
    s.add_jobs(make_jobs("late-", NEW, start=3e6))
    dt, backlog = timed(lambda: s.schedule_round(3.0))
    _record(results, "backlog", dt)

    snapshot = s.snapshot()
    dt, _ = timed(lambda: Scheduler.from_snapshot(SchedulingConfig(), *snapshot).schedule_round(3.0))
    _record(results, "recompute", dt)
    return len(full.scheduled), len(backlog.waiting)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    args = parser.parse_args(argv)

    jobs = make_jobs("job-", JOBS)
    results: dict[str, list[float]] = {
        k: [] for k in ("sort", "load", "full", "churn", "backlog", "recompute")
    }
    placed = waiting = 0
    for _ in range(args.repeat):
        placed, waiting = one_run(jobs, results)

    med = {k: statistics.median(v) for k, v in results.items()}
    print(
        f"core round benchmark: {CLUSTERS * NODES_PER_CLUSTER} nodes in {CLUSTERS} clusters, {QUEUES} queues, "
        f"{JOBS} jobs of 1 cpu/4Gi; median of {args.repeat} (python {sys.version.split()[0]})"
    )
    rows = [
        ("baseline: sort 32k jobs by queue order", "sort", "sort"),
        ("load 32k jobs into the scheduler", "load", "sort"),
        (f"full round: place {placed} jobs", "full", "sort"),
        (f"incremental round, churn: {NEW} finish + {NEW} new", "churn", "full"),
        (f"incremental round, backlog: {NEW} new on {waiting - NEW} waiting", "backlog", "full"),
        ("recompute: fresh scheduler from the backlog snapshot + round", "recompute", "backlog"),
    ]
    cpu = {k: statistics.median(v) for k, v in CPU.items() if k in results}
    print(f"  {'':<66} {'wall':>9}      {'cpu':>9}      ratio (wall)")
    for label, key, base in rows:
        ratio = med[key] / med[base] if med[base] > 0 else float("nan")
        print(f"  {label:<66} {med[key] * 1000:9.1f} ms {cpu[key] * 1000:9.1f} ms {ratio:8.3f} x {base}")
    print(f"  full round throughput: {placed / med['full']:,.0f} placements/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
