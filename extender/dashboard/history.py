"""Each queue's shares and counts over the last hour, sampled from the Queue statuses the leader
writes (so every replica keeps the same history). Bounded: samples older than the window go, and
a queue with none left goes with them. Pure."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from extender.overview import QueueRow

WINDOW_SECONDS = 3600.0
SAMPLE_SECONDS = 5.0


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the epoch
    fair_share: float
    adjusted_fair_share: float
    actual_share: float
    queued: int
    running: int


class ShareHistory:
    def __init__(self, window: float = WINDOW_SECONDS, interval: float = SAMPLE_SECONDS) -> None:
        self.window = window
        self.interval = interval
        # A hard bound as well, whatever the clock does: one window of samples, and a little more.
        self.max_samples = int(window / interval) + 2
        self._series: dict[str, deque[Sample]] = {}

    def record(self, t: float, queues: Iterable[QueueRow]) -> None:
        """One sample of every queue at time `t`, then everything older than the window dropped."""
        for q in queues:
            series = self._series.setdefault(q.name, deque(maxlen=self.max_samples))
            if series and t < series[-1].t:  # the clock went back: start this queue again
                series.clear()
            series.append(Sample(t, q.fair_share, q.adjusted_fair_share, q.actual_share, q.queued, q.running))
        self.prune(t)

    def prune(self, now: float) -> None:
        oldest = now - self.window
        for name in list(self._series):
            series = self._series[name]
            while series and series[0].t < oldest:
                series.popleft()
            if not series:
                del self._series[name]

    def series(self, name: str) -> list[Sample]:
        return list(self._series.get(name, ()))

    def queues(self) -> list[str]:
        return sorted(self._series)

    def __len__(self) -> int:
        return sum(len(s) for s in self._series.values())
