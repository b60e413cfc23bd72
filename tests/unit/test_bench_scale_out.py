"""bench/scale_out.py, run tiny: its figures are measured and every job that fits is placed."""

from __future__ import annotations

from bench.scale_out import measure


def test_scale_out_measures_a_tiny_front() -> None:
    r = measure(jobs=200, nodes=6, per_cluster=2, queues=5)
    assert r["placed"] == 6 * 32 and r["nodes"] == 6
    assert r["rss_peak_mb"] >= r["rss_nodes_mb"] > 0
    assert r["full"] > 0 and r["incremental"] > 0
