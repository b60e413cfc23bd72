"""Queue objects as the core sees them."""

from __future__ import annotations

from armada_bridge.core.quantities import parse_resources
from extender.controller import queue_from_cr


def _queue(spec: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": "team-a"}, "spec": spec}


def test_priority_factor_cordon_and_fraction_limits() -> None:
    q = queue_from_cr(
        _queue({"priorityFactor": 2, "cordoned": True, "resourceLimits": {"cpu": {"fraction": 0.25}}}), {}
    )
    assert (q.name, q.priority_factor, q.weight, q.cordoned) == ("team-a", 2.0, 0.5, True)
    assert q.resource_limits == {"cpu": 0.25}


def test_absolute_limits_become_fractions_of_the_pool() -> None:
    total = parse_resources({"cpu": "256", "memory": "1Ti"})
    spec = {
        "resourceLimits": {
            "cpu": {"absolute": "64"},
            "memory": {"absolute": "2Ti"},
            "nvidia.com/gpu": {"absolute": 4},
        }
    }
    q = queue_from_cr(_queue(spec), total)
    assert q.resource_limits == {"cpu": 0.25, "memory": 1.0, "nvidia.com/gpu": 0.0}


def test_defaults_and_nonsense_are_not_limits() -> None:
    q = queue_from_cr(
        _queue({"resourceLimits": {"cpu": {"absolute": "lots"}, "memory": "1Gi"}}), {"cpu": 1000}
    )
    assert (q.priority_factor, q.cordoned, q.resource_limits) == (1.0, False, {})
