"""Writers for simulation output: JSON lines, and a readable summary table."""

from __future__ import annotations

import json
import statistics
from typing import IO, Any

from extender.simulator.engine import Simulation


class JsonlWriter:
    def __init__(self, stream: IO[str]) -> None:
        self.stream = stream

    def __call__(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record, separators=(",", ":")) + "\n")


def _fmt_seconds(s: float) -> str:
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{s / 60:.1f}m"
    return f"{s / 3600:.2f}h"


def summary_table(sim: Simulation, title: str = "") -> str:
    """Per-queue outcome of a finished simulation."""
    rows: list[list[str]] = []
    header = [
        "queue",
        "weight",
        "submitted",
        "succeeded",
        "failed",
        "preempted",
        "unfinished",
        "mean wait",
        "p95 wait",
        "mean share",
        "mean adj. fair share",
    ]
    unfinished: dict[str, int] = {}
    for job in sim.jobs.values():
        if job.state in ("QUEUED", "RUNNING"):
            unfinished[job.queue] = unfinished.get(job.queue, 0) + 1
    weights = {q.name: q.weight for q in sim.workload.queues}
    for q in sim.queues:
        t = sim.totals[q]
        waits = sorted(t.waits)
        mean_wait = _fmt_seconds(statistics.fmean(waits)) if waits else "-"
        p95 = _fmt_seconds(waits[min(len(waits) - 1, int(0.95 * len(waits)))]) if waits else "-"
        share = f"{t.share_sum / t.share_cycles:.3f}" if t.share_cycles else "-"
        fair = f"{t.fair_sum / t.share_cycles:.3f}" if t.share_cycles else "-"
        rows.append(
            [
                q,
                f"{weights.get(q, 1.0):g}",
                str(t.submitted),
                str(t.succeeded),
                str(t.failed),
                str(t.preempted),
                str(unfinished.get(q, 0)),
                mean_wait,
                p95,
                share,
                fair,
            ]
        )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )

    nodes = len(sim.scheduler.nodedb.entries)
    clusters = len(sim.clusters.clusters)
    out = []
    if title:
        out.append(title)
    out.append(
        f"simulated {_fmt_seconds(sim.now)} in {sim.cycles} scheduling cycles of {sim.cycle_period:g}s; "
        f"{clusters} cluster(s), {nodes} node(s)"
    )
    if sim.stuck:
        waiting = sim.scheduler.waiting_reasons()
        reasons = sorted(set(waiting.values()))
        out.append(f"stopped: {len(waiting)} job(s) can never be scheduled: {'; '.join(reasons[:3])}")
    out.append(line(header))
    out.append(line(["-" * w for w in widths]))
    out.extend(line(r) for r in rows)
    return "\n".join(out) + "\n"
