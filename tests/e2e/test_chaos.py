"""The chaos soak in its short form (bench/chaos.py has the long one): two minutes of faults, longer
if needed until every kind of fault has come once, while three queues submit, and not one invariant
broken."""

from __future__ import annotations

from armada_bridge.dev.environment import Environment
from bench.chaos import run


def test_two_minutes_of_faults_break_no_invariant(dev_env: Environment) -> None:
    report = run(dev_env, minutes=2, seed=20261130, mean_fault_gap=15, every_kind=True)
    kinds = {" ".join(f.split()[:2]) for f in report.faults}
    for kind in ("kill extender", "kill vkubelet", "pause front"):
        assert kind in kinds, report.faults
    assert any(k.startswith("pause remote-") for k in kinds), report.faults
    assert report.pods_created > 100
    assert report.violations == [], "\n".join(report.violations)
    assert report.converge_seconds is not None
