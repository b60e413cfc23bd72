"""The stall rule: a gang one member short for long enough is admitted with what is present.

Breaks the late-member deadlock (mpi-operator#608: the MPI launcher is created only once the
workers run, yet the PodGroup's minMember counts it). A gang exactly one member short for
``seconds``, whose minResources reserve room for the whole group, is relaxed to the members
present: the reservation holds room for the missing one, which joins the gang's cluster when it
comes. Gangs short by more, or without minResources, keep waiting: all or nothing. Pure: the
caller says what is present and when.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Waiting:
    """A gang none of whose members is placed yet."""

    present: int
    min_member: int
    reserves_room: bool  # minResources given: room for the whole group is reserved when admitted


@dataclass
class StallRule(Generic[K]):
    seconds: float
    #: gang -> (members present, since when).
    seen: dict[K, tuple[int, float]] = field(default_factory=dict)
    #: gang -> the member count it was relaxed to (kept while the gang waits or runs short).
    relaxed: dict[K, int] = field(default_factory=dict)

    def observe(self, waiting: Mapping[K, Waiting], now: float) -> list[K]:
        """Record what waits now; the gangs to relax from now on (each once)."""
        for k in list(self.seen):
            if k not in waiting:
                del self.seen[k]
        out: list[K] = []
        for k, w in waiting.items():
            seen = self.seen.get(k)
            if seen is None or seen[0] != w.present:
                self.seen[k] = (w.present, now)
                continue
            if (
                k in self.relaxed
                or not w.reserves_room
                or w.present != w.min_member - 1
                or now - seen[1] < self.seconds
            ):
                continue
            self.relaxed[k] = w.present
            out.append(k)
        return out

    def prune(self, alive: set[K]) -> None:
        """Forget relaxed gangs of which no member is left."""
        for k in [k for k in self.relaxed if k not in alive]:
            del self.relaxed[k]

    def stalled_for(self, k: K, now: float) -> float:
        seen = self.seen.get(k)
        return now - seen[1] if seen else 0.0
