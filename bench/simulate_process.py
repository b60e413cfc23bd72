"""Benchmark: `armada-bridge simulate` as a whole process, and where its time goes (issue 12,
item 6: the round is only part of it).

    .venv/bin/python bench/simulate_process.py [--clusters C.yaml] [--workload W.yaml] [--repeat 3]

Default input: `cpu_1_1_100` (1 pool, 100 nodes) with `small_big/preemptible` (38,727 jobs
submitted over time, the 32,000-job shape). Measured in the same run: the interpreter starting
(`python -c pass`, the baseline), importing the simulator, the whole command (output to
/dev/null), and in this process the phases: loading the inputs, the scheduling rounds
(`Scheduler.schedule_round`), and the rest of the simulation (submissions, completions, the
JSONL report). Median of `--repeat` runs. Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge.core.scheduler import Scheduler
from extender.config import load_scheduling_config
from extender.simulator.engine import Simulation
from extender.simulator.loader import load_clusters, load_workload
from extender.simulator.report import JsonlWriter

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "extender" / "simulator" / "testdata"


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def phases(clusters: str, workload: str) -> dict[str, float]:
    t0 = time.perf_counter()
    c, w = load_clusters(clusters), load_workload(workload)
    config = load_scheduling_config(None, [])
    t1 = time.perf_counter()
    in_rounds = 0.0
    original: Callable[..., Any] = Scheduler.schedule_round

    def timed(self: Scheduler, *args: Any, **kwargs: Any) -> Any:
        nonlocal in_rounds
        t = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            in_rounds += time.perf_counter() - t

    Scheduler.schedule_round = timed  # type: ignore[method-assign]
    try:
        Simulation(c, w, config, cycle_period=10.0, until=None, sink=JsonlWriter(io.StringIO())).run()
    finally:
        Scheduler.schedule_round = original  # type: ignore[method-assign]
    t2 = time.perf_counter()
    return {"load": t1 - t0, "rounds": in_rounds, "rest of the run": t2 - t1 - in_rounds}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clusters", default=str(DATA / "clusters" / "cpu_1_1_100.yaml"))
    p.add_argument("--workload", default=str(DATA / "workloads" / "small_big" / "preemptible.yaml"))
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    py = sys.executable
    cli = str(Path(py).parent / "armada-bridge")
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for name, value in (
            ("interpreter (python -c pass)", wall([py, "-c", "pass"])),
            ("import the simulator", wall([py, "-c", "import extender.simulator.cli"])),
            (
                "whole command",
                wall([cli, "simulate", "--clusters", args.clusters, "--workload", args.workload]),
            ),
            *phases(args.clusters, args.workload).items(),
        ):
            runs.setdefault(name, []).append(value)
    base = statistics.median(runs["interpreter (python -c pass)"])
    print(
        f"armada-bridge simulate {Path(args.clusters).stem} {Path(args.workload).parent.name}/"
        f"{Path(args.workload).stem}: median of {args.repeat} ({os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f})"
    )
    for name, values in runs.items():
        m = statistics.median(values)
        print(f"  {name:<30} {m * 1000:8.0f} ms  {m / base:6.1f}x interpreter start")


if __name__ == "__main__":
    main()
