"""The chaos soak in its short form (`python -m bench.chaos` has the long one): two minutes of faults, longer
if needed until every kind of fault has come once, while three queues submit more than the remotes
hold, with the extender highly available (two replicas), front Services selecting some of their pods
(relays in play), and not one invariant broken (each one judged, not only tried)."""

from __future__ import annotations

import pytest

from bench.chaos.soak import run
from devenv.processes.environment import Environment

# Alone in the environment: it kills the bridge's and the clusters' processes.
pytestmark = pytest.mark.exclusive


@pytest.mark.timeout(1500)
def test_two_minutes_of_faults_break_no_invariant(dev_env: Environment) -> None:
    replicas = dev_env.extender_replicas()
    dev_env.up(extender_replicas=2)
    try:
        report = run(dev_env, minutes=2, seed=20261130, mean_fault_gap=8, every_kind=True)
    finally:
        dev_env.up(extender_replicas=replicas)
    faults = set(report.faults)
    for fault in (
        "kill extender",
        "kill every extender replica",
        "kill vkubelet",
        "pause front kube-scheduler",
        "kill front kube-scheduler",
    ):
        assert fault in faults, report.faults
    for prefix in ("pause remote-", "kill remote-"):
        assert any(f.startswith(prefix) for f in faults), report.faults
    assert any(f.endswith(" etcd") for f in faults) and any(f.endswith(" kube-apiserver") for f in faults)
    assert report.pods_created > 100
    # Relays were in play (the remotes are `Relay`): pods had one, and the web server answered through one.
    assert len(report.relayed_pods) >= 5 and report.fetches > 10, (len(report.relayed_pods), report.fetches)
    assert report.violations == [], "\n".join([*report.violations, report.diagnosis])
    assert report.converge_seconds is not None
    # Every invariant was judged, not only tried: one whose every check failed would prove nothing.
    for name, counts in report.tally.counts().items():
        assert counts["runs"] > 0, (name, counts)
    # The work asked for more than the remotes hold at the end (the fair-share check had work to judge).
    assert len(report.shares) == 3 and sum(s["demand"] for s in report.shares.values()) > sum(
        s["fair"] for s in report.shares.values()
    ), report.shares
