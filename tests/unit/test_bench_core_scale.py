"""bench/core_scale.py, run tiny: every (jobs, nodes) pair measured, and every job placed that fits."""

from __future__ import annotations

from bench.core_scale import measure


def test_core_scale_measures_a_tiny_pair() -> None:
    r = measure(jobs=300, nodes=5, queues=7)
    assert r["placed"] == 5 * 32  # 1-cpu jobs on 32-cpu nodes: the rest waits
    assert r["full"] > 0 and r["incremental"] > 0 and r["sort"] > 0


def test_core_scale_in_gangs_places_whole_gangs_only() -> None:
    r = measure(jobs=300, nodes=5, queues=7, gang_size=3)
    assert r["placed"] == 5 * 32 - 5 * 32 % 3  # whole gangs of 3 only; the rest of the gangs wait
