"""Round and queue constraints: rate limits (token buckets), round budget, queue resource limits."""

from __future__ import annotations

import math
from collections.abc import Mapping

from armada_bridge.core.quantities import Resources


class TokenBucket:
    """Token bucket in scheduler time; ``burst <= 0`` means unlimited."""

    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last: float | None = None

    @property
    def unlimited(self) -> bool:
        return self.burst <= 0

    def available(self, now: float) -> float:
        if self.unlimited:
            return math.inf
        if self.last is not None and now > self.last:
            if math.isinf(self.rate):
                self.tokens = float(self.burst)
            else:
                self.tokens = min(float(self.burst), self.tokens + self.rate * (now - self.last))
        self.last = now
        return self.tokens

    def take(self, n: int) -> None:
        if not self.unlimited:
            self.tokens -= n


Limits = tuple[tuple[str, float], ...]


def limits(fractions: Mapping[str, float], total: Mapping[str, int]) -> Limits:
    """(resource, most that may be held) for each limited resource, in name order."""
    return tuple((name, fractions[name] * total.get(name, 0)) for name in sorted(fractions))


def cap_demand(
    demand: Mapping[str, int], total: Mapping[str, int], fractions: Mapping[str, float]
) -> Resources:
    """Demand capped by per-queue limit fractions (Armada's constrained demand)."""
    out = dict(demand)
    for name, frac in fractions.items():
        if name in out:
            out[name] = min(out[name], int(frac * total.get(name, 0)))
    return out
