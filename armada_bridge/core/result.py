"""What a scheduling round decides."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Placement:
    cluster: str
    node: str
    pool: str


@dataclass
class QueueReport:
    """Per-queue figures of one pool after the round (shares are unweighted DRF costs)."""

    pool: str
    queue: str
    weight: float
    fair_share: float
    adjusted_fair_share: float
    uncapped_adjusted_fair_share: float
    actual_share: float
    demand_share: float
    running: int = 0
    queued: int = 0
    scheduled: int = 0
    preempted: int = 0
    evicted: int = 0


class Waiting(Mapping[str, str]):
    """Why each queued job waits, as of the end of a round: a read-only view of the scheduler's
    reasons that the scheduler turns into a copy of its own before it next changes them (only if
    the view is still referenced then), so a round does not copy the reasons of every waiting job."""

    __slots__ = ("__weakref__", "_data")

    def __init__(self, data: dict[str, str] | None = None) -> None:
        self._data: dict[str, str] = {} if data is None else data

    def detach(self) -> None:
        """Stop sharing: keep a copy of the reasons as they are now."""
        self._data = dict(self._data)

    def __getitem__(self, job_id: str) -> str:
        return self._data[job_id]

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"Waiting({self._data!r})"


@dataclass
class RoundResult:
    time: float
    #: newly scheduled job id -> where it goes.
    scheduled: dict[str, Placement] = field(default_factory=dict)
    #: job id -> why it was preempted. Preempted jobs leave the scheduler's state.
    preempted: dict[str, str] = field(default_factory=dict)
    #: pool -> queue -> report (active queues only).
    shares: dict[str, dict[str, QueueReport]] = field(default_factory=dict)
    #: every job left waiting -> human-readable reason.
    waiting: Waiting = field(default_factory=Waiting)

    def queue_shares(self, pool: str | None = None) -> dict[str, QueueReport]:
        """Reports of one pool (the only pool, when there is exactly one)."""
        if pool is None:
            if not self.shares:
                return {}
            pool = sorted(self.shares)[0]
        return self.shares.get(pool, {})
