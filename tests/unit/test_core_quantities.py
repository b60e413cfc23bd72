"""Kubernetes quantities and resource vectors."""

from __future__ import annotations

import pytest

from armada_bridge.core.quantities import (
    QuantityError,
    fits,
    for_people,
    format_resources,
    parse_quantity,
    parse_resources,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("500m", 500),
        ("1", 1000),
        ("2.5", 2500),
        ("4Gi", 4 * 2**30 * 1000),
        ("1e3", 1_000_000),
        ("1k", 1_000_000),
        ("128Mi", 128 * 2**20 * 1000),
        ("0.1", 100),
        ("100n", 1),  # rounded up, as Kubernetes does
        (3, 3000),
        (0.5, 500),
    ],
)
def test_parse_quantity(text: str | int | float, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize("bad", ["", "abc", "1.2.3", "4GB", "-1", "1 Gi"])
def test_parse_quantity_rejects(bad: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_parse_resources_drops_zero_and_keeps_extended() -> None:
    res = parse_resources({"cpu": "2", "memory": "0", "nvidia.com/gpu": 1, "example.com/foo": "3"})
    assert res == {"cpu": 2000, "nvidia.com/gpu": 1000, "example.com/foo": 3000}


def test_fits_treats_missing_as_zero() -> None:
    assert fits({"cpu": 1000}, {"cpu": 1000, "memory": 5})
    assert not fits({"nvidia.com/gpu": 1000}, {"cpu": 32000})
    assert fits({}, {})


def test_format_resources() -> None:
    assert format_resources(parse_resources({"cpu": "12", "memory": "40Gi"})) == "cpu=12, memory=40Gi"
    assert format_resources(parse_resources({"cpu": "500m"})) == "cpu=500m"


def test_for_people_rounds_and_leaves_zeros_out() -> None:
    status = {
        "cpu": "129",
        "ephemeral-storage": "4665894153441",
        "hugepages-1Gi": "0",
        "memory": "547013152Ki",
        "nvidia.com/gpu": "8",
        "pods": "470",
    }
    assert for_people(parse_resources(status)) == {
        "cpu": "129",
        "memory": "521.7Gi",
        "ephemeral-storage": "4.2Ti",
        "nvidia.com/gpu": "8",
        "pods": "470",
    }
