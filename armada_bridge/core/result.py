"""What a scheduling round decides."""

from __future__ import annotations

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
    waiting: dict[str, str] = field(default_factory=dict)

    def queue_shares(self, pool: str | None = None) -> dict[str, QueueReport]:
        """Reports of one pool (the only pool, when there is exactly one)."""
        if pool is None:
            if not self.shares:
                return {}
            pool = sorted(self.shares)[0]
        return self.shares.get(pool, {})
