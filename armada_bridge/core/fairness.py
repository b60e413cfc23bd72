"""Dominant-resource fairness and fair shares, as Armada computes them.

* ``cost(alloc) = max(0, max_r(multiplier_r * alloc_r / total_r))`` over the configured resources
  (``fairness/fairness.go``); a zero total contributes 0. Weighted cost divides by the queue weight.
* ``fair_share = weight / sum(weights of active queues)``.
* ``adjusted_fair_share`` (Armada's DemandCappedAdjustedFairShare) is water-filling: each
  iteration gives every uncapped queue ``weight/total_weight * unallocated``, caps it at the cost
  of its (constrained) demand and re-shares the surplus; at most ``max_iterations`` iterations,
  stopping once less than 1% is unallocated (``context/scheduling.go`` UpdateFairShares).
* ``uncapped_adjusted_fair_share`` is the share a queue would get with unlimited demand: a capped
  queue keeps collecting its weighted part of the surplus that *other* queues release later.
  This reproduces every case of Armada's ``TestCalculateFairShares``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


class DominantResourceFairness:
    """Cost of an allocation relative to a pool's total resources."""

    __slots__ = ("_terms", "total")

    def __init__(self, total: Mapping[str, int], multipliers: Mapping[str, float]) -> None:
        self.total = dict(total)
        # (resource, multiplier / total) for every considered resource with a non-zero total.
        self._terms: tuple[tuple[str, float], ...] = tuple(
            (name, (mult if mult > 0 else 1.0) / self.total[name])
            for name, mult in sorted(multipliers.items())
            if self.total.get(name, 0) > 0
        )

    def cost(self, allocation: Mapping[str, int]) -> float:
        best = 0.0
        for name, factor in self._terms:
            v = allocation.get(name, 0) * factor
            if v > best:
                best = v
        return best

    def cost_with(self, allocation: Mapping[str, int], extra: Mapping[str, int]) -> float:
        """Cost of ``allocation + extra`` without building the sum."""
        best = 0.0
        for name, factor in self._terms:
            v = (allocation.get(name, 0) + extra.get(name, 0)) * factor
            if v > best:
                best = v
        return best

    @property
    def is_empty(self) -> bool:
        return not self._terms


@dataclass
class QueueShare:
    name: str
    weight: float
    fair_share: float = 0.0
    adjusted_fair_share: float = 0.0
    uncapped_adjusted_fair_share: float = 0.0
    demand_share: float = 0.0


def compute_fair_shares(
    weights: Mapping[str, float],
    demand_shares: Mapping[str, float],
    max_iterations: int = 10,
) -> dict[str, QueueShare]:
    """Fair shares of the active queues.

    ``demand_shares[q]`` is the unweighted DRF cost of q's constrained demand (1.0 when the pool
    has no resources, as in Armada).
    """
    names = sorted(weights)
    weight_sum = sum(weights[n] for n in names)
    infos = {
        n: QueueShare(
            name=n,
            weight=weights[n],
            fair_share=(weights[n] / weight_sum) if weight_sum > 0 else 0.0,
            demand_share=demand_shares.get(n, 0.0),
        )
        for n in names
    }
    live_weight = {n: weights[n] for n in names}
    capped_at: dict[str, int] = {}
    uncapped = {n: 0.0 for n in names}
    # Surplus released in the previous iteration, by the queue that released it.
    released: dict[str, float] = {}
    unallocated = 1.0
    i = 0
    while i < max_iterations and unallocated > 0.01:
        total_weight = sum(live_weight.values())
        for n in names:
            w = live_weight[n]
            if w > 0:
                share = w / total_weight * unallocated
                infos[n].adjusted_fair_share += share
                uncapped[n] += share
            elif n in capped_at:
                # A capped queue with unlimited demand would take part in this re-share too, except
                # for the surplus it released itself.
                own = released.get(n, 0.0)
                denom = total_weight + weights[n]
                if denom > 0:
                    uncapped[n] += weights[n] / denom * (unallocated - own)
        unallocated = 0.0
        released = {}
        for n in names:
            q = infos[n]
            excess = q.adjusted_fair_share - q.demand_share
            if excess > 0:
                q.adjusted_fair_share = q.demand_share
                if n not in capped_at:
                    capped_at[n] = i
                live_weight[n] = 0.0
                unallocated += excess
                released[n] = excess
        i += 1
    for n in names:
        infos[n].uncapped_adjusted_fair_share = max(uncapped[n], infos[n].adjusted_fair_share)
    return infos
