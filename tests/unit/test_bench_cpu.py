"""bench/cpu.py's ceilings: where CPU per pod bounds the bridge's throughput."""

from __future__ import annotations

import pytest

from bench.cpu import MACHINE, ceilings


def test_ceilings_from_cpu_per_pod() -> None:
    direct = {MACHINE: 15.0, "remote-1": 6.0, "remote-2": 6.0, "front": 0.2, "benchmark": 1.0}
    bridge = {
        MACHINE: 60.0,
        "front": 22.0,
        "remote-1": 11.0,
        "remote-2": 7.0,
        "extender": 6.0,
        "vkubelet": 4.0,
        "benchmark": 2.0,
    }
    c = ceilings(direct, bridge, ("remote-1", "remote-2"))
    assert c["shared_machine"] == pytest.approx(0.25)
    assert c["remotes_ratio"] == pytest.approx(1.5)  # 18 against 12 ms
    assert c["remotes_alone"] == pytest.approx(2 / 3)
    assert c["front_side_ratio"] == pytest.approx(32 / 15)  # front 22 + extender 6 + vkubelet 4


def test_a_group_missing_on_a_side_counts_nothing() -> None:
    c = ceilings({MACHINE: 10.0, "remote-1": 8.0}, {MACHINE: 20.0, "remote-1": 8.0}, ("remote-1", "remote-2"))
    assert c["remotes_ratio"] == pytest.approx(1.0)
    assert c["front_side_ratio"] == 0.0
