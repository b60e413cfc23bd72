"""DRF cost and fair shares, checked against Armada's own test expectations."""

from __future__ import annotations

import pytest

from armada_bridge.core.fairness import DominantResourceFairness, compute_fair_shares
from armada_bridge.core.quantities import parse_resources

pytestmark = pytest.mark.unit


def test_drf_cost_is_dominant_share_with_multipliers() -> None:
    total = parse_resources({"cpu": 100, "memory": "1000Gi", "nvidia.com/gpu": 10})
    drf = DominantResourceFairness(total, {"cpu": 1, "memory": 1, "nvidia.com/gpu": 1})
    assert drf.cost(parse_resources({"cpu": 10, "memory": "500Gi"})) == pytest.approx(0.5)
    assert drf.cost(parse_resources({"nvidia.com/gpu": 2})) == pytest.approx(0.2)
    weighted = DominantResourceFairness(total, {"cpu": 1, "nvidia.com/gpu": 4})
    assert weighted.cost(parse_resources({"nvidia.com/gpu": 2, "cpu": 10})) == pytest.approx(0.8)
    # Memory is not considered here, so a memory-only allocation is free.
    assert weighted.cost(parse_resources({"memory": "999Gi"})) == 0.0


def test_drf_zero_total_contributes_nothing() -> None:
    drf = DominantResourceFairness(parse_resources({"cpu": 10}), {"cpu": 1, "nvidia.com/gpu": 1})
    assert drf.cost(parse_resources({"nvidia.com/gpu": 5, "cpu": 1})) == pytest.approx(0.1)
    assert DominantResourceFairness({}, {"cpu": 1}).is_empty


def _shares(
    weights: dict[str, float], demand_cpu: dict[str, int], total_cpu: int = 100
) -> dict[str, tuple[float, float, float]]:
    drf = DominantResourceFairness({"cpu": total_cpu * 1000}, {"cpu": 1})
    demand = {q: (drf.cost({"cpu": d * 1000}) if total_cpu else 1.0) for q, d in demand_cpu.items()}
    out = compute_fair_shares(weights, demand)
    return {q: (s.fair_share, s.adjusted_fair_share, s.uncapped_adjusted_fair_share) for q, s in out.items()}


# Cases of Armada's TestCalculateFairShares (internal/scheduler/scheduling/context/scheduling_test.go):
# (weights, demand in cpu on a 100-cpu pool, fair, demand-capped adjusted, uncapped adjusted).
ARMADA_CASES = {
    "one queue, demand exceeds capacity": ({"A": 1}, {"A": 1000}, {"A": (1.0, 1.0, 1.0)}),
    "one queue, demand less than capacity": ({"A": 1}, {"A": 1}, {"A": (1.0, 0.01, 1.0)}),
    "two queues, equal weights, demand exceeds capacity": (
        {"A": 1, "B": 1},
        {"A": 1000, "B": 1000},
        {"A": (0.5, 0.5, 0.5), "B": (0.5, 0.5, 0.5)},
    ),
    "two queues, equal weights, demand less than capacity for both queues": (
        {"A": 1, "B": 1},
        {"A": 1, "B": 1},
        {"A": (0.5, 0.01, 0.99), "B": (0.5, 0.01, 0.99)},
    ),
    "two queues, equal weights, demand less than capacity for one queue": (
        {"A": 1, "B": 1},
        {"A": 1, "B": 1000},
        {"A": (0.5, 0.01, 0.5), "B": (0.5, 0.99, 0.99)},
    ),
    "two queues, non equal weights, demand exceeds capacity for both queues": (
        {"A": 1, "B": 3},
        {"A": 1000, "B": 1000},
        {"A": (0.25, 0.25, 0.25), "B": (0.75, 0.75, 0.75)},
    ),
    "two queues, non equal weights, demand exceeds capacity for higher priority queue only": (
        {"A": 1, "B": 3},
        {"A": 1, "B": 1000},
        {"A": (0.25, 0.01, 0.25), "B": (0.75, 0.99, 0.99)},
    ),
    "two queues, non equal weights, demand exceeds capacity for lower priority queue only": (
        {"A": 1, "B": 3},
        {"A": 1000, "B": 1},
        {"A": (0.25, 0.99, 0.99), "B": (0.75, 0.01, 0.75)},
    ),
    "three queues, equal weights, adjusted fair share requires multiple iterations": (
        {"A": 1, "B": 1, "C": 1},
        {"A": 1, "B": 40, "C": 1000},
        {"A": (1 / 3, 0.01, 0.3808333333333333), "B": (1 / 3, 0.4, 0.495), "C": (1 / 3, 0.59, 0.59)},
    ),
    "no demand": (
        {"A": 1, "B": 1, "C": 1},
        {"A": 0, "B": 0, "C": 0},
        {"A": (1 / 3, 0.0, 1.0), "B": (1 / 3, 0.0, 1.0), "C": (1 / 3, 0.0, 1.0)},
    ),
}


@pytest.mark.parametrize("name", sorted(ARMADA_CASES))
def test_fair_shares_match_armada(name: str) -> None:
    weights, demand, expected = ARMADA_CASES[name]
    got = _shares(weights, demand)
    for q, (fair, adjusted, uncapped) in expected.items():
        assert got[q][0] == pytest.approx(fair), q
        assert got[q][1] == pytest.approx(adjusted), q
        assert got[q][2] == pytest.approx(uncapped), q


def test_no_capacity_gives_everyone_their_fair_share() -> None:
    # Armada: with a zero total every queue's demand share is 1.0.
    out = compute_fair_shares({"A": 1, "B": 1, "C": 1}, {"A": 1.0, "B": 1.0, "C": 1.0})
    for s in out.values():
        assert s.adjusted_fair_share == pytest.approx(1 / 3)
        assert s.uncapped_adjusted_fair_share == pytest.approx(1 / 3)


def test_weights_follow_priority_factor() -> None:
    out = compute_fair_shares({"A": 1.0, "B": 0.5}, {"A": 10.0, "B": 10.0})
    assert out["A"].fair_share == pytest.approx(2 / 3)
    assert out["B"].adjusted_fair_share == pytest.approx(1 / 3)
