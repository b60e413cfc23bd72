"""The soak's invariants, the tally of their checks and the report a run prints."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

ONE_REMOTE_POD = "one remote pod per front pod"
GANG_WHOLE = "gangs whole, in one cluster"
REMOTE_GC = "no remote pod outlives its front pod"
FRONT_TRUTH = "no front pod Running without its remote pod"
NO_REMOTE_ADDRESS = "no front pod shows a remote pod's address"
SERVED = "a pod a front Service selects is reached at its front address"
CONVERGED = "converged"
CHECKED_ALONG = (ONE_REMOTE_POD, GANG_WHOLE, REMOTE_GC, FRONT_TRUTH, NO_REMOTE_ADDRESS, SERVED)
INVARIANTS = (*CHECKED_ALONG, CONVERGED)
T = TypeVar("T")


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class NotAnswered(Exception):
    """A remote cluster did not answer: an invariant over every cluster was judged only in part."""


@dataclass
class Tally:
    """How many times each invariant was judged (runs) and could not be (errors: an API answer lost
    to a fault, a remote cluster that did not answer, a check that broke). Pure. An invariant that
    never ran is a violation: a check that never ran proves nothing."""

    names: tuple[str, ...] = INVARIANTS
    runs: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    last_error: dict[str, str] = field(default_factory=dict)

    def run(self, name: str, check: Callable[[], T]) -> T | None:
        """`check()`, counted: its result, or None when it raised (an error, judged again next time)."""
        try:
            result = check()
        except Exception as e:
            self.failed(name, e)
            return None
        self.runs[name] += 1
        return result

    def failed(self, name: str, e: BaseException) -> None:
        self.errors[name] += 1
        error = f"{type(e).__name__}: {e}"[:300]
        if self.last_error.get(name) != error:
            log(f"check {name!r}: {error}")
        self.last_error[name] = error

    def counts(self) -> dict[str, dict[str, Any]]:
        return {
            n: {"runs": self.runs[n], "errors": self.errors[n], "last_error": self.last_error.get(n)}
            for n in self.names
        }

    def never_ran(self) -> list[str]:
        return [
            f"invariant {n!r} never ran ({self.errors[n]} errors, the last: {self.last_error.get(n)})"
            for n in self.names
            if not self.runs[n]
        ]


@dataclass
class Report:
    seed: int
    faults: Counter[str] = field(default_factory=Counter)
    pods_created: int = 0
    gangs_created: int = 0
    jobs_created: int = 0
    operator_objects: Counter[str] = field(default_factory=Counter)
    #: front pods that had a relay (their address in the front), and fetches through one that answered
    relayed_pods: set[str] = field(default_factory=set)
    fetches: int = 0
    shares: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: when a queue was below its fair share: what `armada-bridge queues` and `why` said then
    diagnosis: str = ""
    violations: list[str] = field(default_factory=list)
    converge_seconds: float | None = None
    tally: Tally = field(default_factory=Tally)

    def violation(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)
            print(f"[chaos] VIOLATION {what}", file=sys.stderr, flush=True)

    def judge(self) -> None:
        """The end of the soak: an invariant that never ran is a violation too."""
        for what in self.tally.never_ran():
            self.violation(what)


def output(r: Report, minutes: float, *, as_json: bool) -> str:
    """What a run prints: JSON, or lines for people; both with each invariant's runs and errors."""
    out = {
        "seed": r.seed,
        "minutes": minutes,
        "faults": dict(sorted(r.faults.items())),
        "pods_created": r.pods_created,
        "gangs_created": r.gangs_created,
        "jobs_created": r.jobs_created,
        "operator_objects": dict(r.operator_objects),
        "relayed_pods": len(r.relayed_pods),
        "fetches_through_a_relay": r.fetches,
        "shares_at_end": r.shares,
        "invariants": r.tally.counts(),
        "violations": r.violations,
        "converge_seconds": r.converge_seconds,
        # what the bridge itself said when a queue was found below its share (queues, why)
        "diagnosis": r.diagnosis,
    }
    if as_json:
        return json.dumps(out, indent=2)
    lines = [
        f"seed {r.seed}: {minutes} min, faults {out['faults']}",
        f"  pods created {r.pods_created} ({r.gangs_created} gangs, {r.jobs_created} Jobs, "
        f"operator objects {dict(r.operator_objects)}), converged in {r.converge_seconds}",
        f"  {len(r.relayed_pods)} pods had a relay; {r.fetches} fetches through one answered",
    ]
    for q, sh in r.shares.items():
        lines.append(
            f"  {q}: asks {sh['demand']:.1f} CPU, fair share {sh['fair']:.1f}, holds {sh['allocated']:.1f}"
        )
    lines.append("  invariants:")
    for name, c in r.tally.counts().items():
        last = f" (the last: {c['last_error']})" if c["last_error"] else ""
        lines.append(f"    {name}: {c['runs']} runs, {c['errors']} errors{last}")
    lines.append(f"  violations: {len(r.violations)}")
    lines += [f"    {v}" for v in r.violations]
    if r.diagnosis:
        lines.append(f"  the bridge's view then:\n{r.diagnosis}")
    return "\n".join(lines)
