"""``armada-bridge simulate``: run Armada simulator scenarios on the armada-bridge core.

    simulate --clusters C.yaml --workload W.yaml [--config S.yaml] [--until T]
             [--format jsonl|table] [--output FILE] [--cycle-period SECONDS]

Writes JSON lines (``{"type":"cycle",...}`` per scheduling cycle and pool, ``{"type":"job",...}``
per job when it ends, and for unfinished jobs at the end) or, with ``--format table``, a summary.
Bad input exits with status 2 and a message naming the file and key.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO

from armada_bridge.core.model import SchedulingConfig
from extender.config import InputError, load_scheduling_config
from extender.simulator.engine import Simulation
from extender.simulator.loader import load_clusters, load_workload
from extender.simulator.report import JsonlWriter, summary_table
from extender.simulator.spec import WorkloadSpec, parse_duration


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        raise InputError(f"simulate: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="armada-bridge simulate", description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--clusters", required=True, help="Armada simulator ClusterSpec YAML")
    p.add_argument(
        "--workload", "--workloads", dest="workload", required=True, help="Armada WorkloadSpec YAML"
    )
    p.add_argument("--config", help="Armada SchedulingConfig YAML (default: Armada's test config classes)")
    p.add_argument("--until", help="stop at this simulated time (seconds, or a duration such as 90m)")
    p.add_argument("--format", choices=("jsonl", "table"), default="jsonl")
    p.add_argument("--output", help="write here instead of stdout")
    p.add_argument("--cycle-period", default="10s", help="time between scheduling rounds (default 10s)")
    return p


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        until = parse_duration(args.until) if args.until is not None else None
        cycle = parse_duration(args.cycle_period)
        if cycle <= 0:
            raise InputError("simulate: --cycle-period must be positive")
        clusters = load_clusters(args.clusters)
        workload = load_workload(args.workload)
        warnings: list[str] = []
        config = load_scheduling_config(args.config, warnings)
        _check_priority_classes(workload, config, args.workload)
    except ValueError as exc:  # parse_duration
        print(f"error: simulate: {exc}", file=sys.stderr)
        return 2
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    out: IO[str]
    try:
        out = open(args.output, "w") if args.output else sys.stdout  # noqa: SIM115
    except OSError as exc:
        print(f"error: {args.output}: cannot write: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        sink = JsonlWriter(out) if args.format == "jsonl" else None
        sim = Simulation(clusters, workload, config, cycle_period=cycle, until=until, sink=sink)
        sim.run()
        if args.format == "table":
            out.write(
                summary_table(sim, f"{workload.name or args.workload} on {clusters.name or args.clusters}")
            )
        out.flush()
    except BrokenPipeError:
        # The reader went away (e.g. piped into head); nothing more to say.
        sys.stderr.close()
        return 0
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _check_priority_classes(workload: WorkloadSpec, config: SchedulingConfig, path: str) -> None:
    classes = config.priority_classes
    for qi, q in enumerate(workload.queues):
        for ti, t in enumerate(q.job_templates):
            if t.priority_class_name and t.priority_class_name not in classes:
                raise InputError(
                    f"{path}: queues[{qi}].jobTemplates[{ti}].priorityClassName: {t.priority_class_name!r} "
                    f"is not a priority class of the scheduling config (expected one of {sorted(classes)})"
                )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
