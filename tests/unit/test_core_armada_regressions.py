"""Preemption as Armada does it, checked on Armada's own simulator scenarios (issue 11).

Armada's simulator, built from its source at commit 207cc9e, and ``armada-bridge simulate`` agree
on these scenarios; the expected outcomes below are Armada's.

1. ``tinyCluster`` + ``small-long_big-long/preemptible``, default scheduling config
   (protectedFractionOfFairShare 1.0, no round budget): B's two 32-cpu jobs arrive at 30 min on a
   full ``cpu`` pool. A's evicted jobs are rescheduled first (A is the cheaper queue), so B finds
   no room in ``cpu`` and both its jobs land on the ``gpu`` pool's node: nothing is preempted, and
   the run ends by itself. (The old rule let B take back the rescheduled jobs and A take the room
   back next cycle, forever.)
2. ``cpu_1_1_2`` + ``small-short_big-long/preemptible``, basic scheduling config (2.5 % round
   budget): B's whole-node jobs may only take the room of the evicted jobs that would be
   rescheduled last, i.e. A's most recently started, and A's 6-minute jobs keep those spread over
   both nodes, so no node ever frees up by preemption: B starts when A's backlog drains, exactly as
   without preemption. (We used to evict about 30 of A's jobs the moment B arrived.)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from armada_bridge.core.builders import job, node
from armada_bridge.core.model import JobState, PriorityClass, Queue, SchedulingConfig
from armada_bridge.core.scheduler import Scheduler
from extender.config import load_scheduling_config
from extender.simulator.engine import Simulation
from extender.simulator.loader import load_clusters, load_workload

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "extender" / "simulator" / "testdata"


def simulate(
    clusters: str, workload: str, config: str, until: float
) -> tuple[Simulation, list[dict[str, Any]]]:
    records: list[dict[str, Any]] = []
    sim = Simulation(
        load_clusters(str(DATA / "clusters" / clusters)),
        load_workload(str(DATA / "workloads" / workload)),
        load_scheduling_config(str(DATA / "configs" / config), []),
        until=until,
        sink=records.append,
    )
    sim.run()
    return sim, records


def test_tiny_cluster_big_jobs_go_to_the_gpu_pool_without_preemption() -> None:
    # 720,000 s is only a safety net: the run must end by itself long before.
    sim, records = simulate(
        "tinyCluster.yaml", "small-long_big-long/preemptible.yaml", "defaultSchedulingConfig.yaml", 720_000
    )
    cycles = [r for r in records if r["type"] == "cycle"]
    jobs = [r for r in records if r["type"] == "job"]
    assert cycles[-1]["time"] < 4 * 3600  # every job done, nothing left to schedule
    assert not sim.stuck
    assert sum(q["preempted"] for c in cycles for q in c["queues"].values()) == 0
    assert Counter(j["state"] for j in jobs) == {"SUCCEEDED": 66}
    big = [j for j in jobs if j["queue"] == "B"]
    assert [(j["node"], j["scheduled"]) for j in big] == [("pool2-0-0-0-0", 1800)] * 2
    # A keeps the cpu pool's node it had: 32 jobs there, 32 on the gpu node.
    assert Counter(j["node"] for j in jobs if j["queue"] == "A") == {"pool1-0-0-0-0": 32, "pool2-0-0-0-0": 32}


def test_short_jobs_keep_a_big_queue_out_as_in_armada() -> None:
    _sim, records = simulate(
        "cpu_1_1_2.yaml", "small-short_big-long/preemptible.yaml", "basicSchedulingConfig.yaml", 720_000
    )
    cycles = [r for r in records if r["type"] == "cycle"]
    jobs = [r for r in records if r["type"] == "job"]
    assert sum(q["preempted"] for c in cycles for q in c["queues"].values()) == 0
    assert Counter(j["state"] for j in jobs) == {"SUCCEEDED": 642}
    last_small = max(j["scheduled"] for j in jobs if j["queue"] == "A")
    big = sorted(j["scheduled"] for j in jobs if j["queue"] == "B")
    # B waits for A's backlog: its first job starts once A's last job has started and a node drained.
    assert big[0] > last_small > 1800
    # The same scenario without preemption gives B the same start.
    _sim, plain = simulate(
        "cpu_1_1_2.yaml", "small-short_big-long/non-preemptible.yaml", "basicSchedulingConfig.yaml", 720_000
    )
    assert sorted(j["scheduled"] for j in plain if j["type"] == "job" and j["queue"] == "B") == big


# ------------------------------------------------------------------ the rules, on the core alone

PCS = {"pre": PriorityClass("pre", 1000, True)}
CONFIG = SchedulingConfig(
    priority_classes=PCS, default_priority_class="pre", protected_fraction_of_fair_share=1.0
)
ONE = {"cpu": "1", "memory": "4Gi"}
WHOLE = {"cpu": "32", "memory": "128Gi"}


def scheduler(nodes: dict[str, str]) -> Scheduler:
    """``nodes``: node name -> pool, each node 32 cpu / 128Gi."""
    s = Scheduler(CONFIG)
    for name, pool in nodes.items():
        s.upsert_node(node(name, f"c-{name}", {"cpu": 32, "memory": "128Gi"}, pool=pool))
    for q in ("A", "B"):
        s.upsert_queue(Queue(q))
    return s


def test_a_rescheduled_job_is_never_taken_back() -> None:
    """The ping-pong of issue 11 on one node: B's whole-node job may not undo A's rescheduling."""
    s = scheduler({"n0": "cpu"})
    s.add_jobs(job(f"a{i}", "A", ONE, submit_time=i) for i in range(32))
    s.schedule_round(0)
    s.add_job(job("b0", "B", WHOLE, submit_time=100))
    for t in range(1, 6):
        result = s.schedule_round(float(t))
        assert result.preempted == {}
        assert result.queue_shares()["A"].evicted == 32  # A is above its share: evicted, put back
        assert s.state_of("b0") is JobState.QUEUED
    assert all(s.state_of(f"a{i}") is JobState.RUNNING for i in range(32))


def test_victims_are_the_jobs_rescheduled_last() -> None:
    """B's 16-cpu job takes the room of A's 16 most recently started jobs, on their node."""
    s = scheduler({"n0": "cpu"})
    for i in range(32):
        s.add_job(job(f"a{i}", "A", ONE, submit_time=i))
        s.schedule_round(float(i))  # one start per round: a31 is the newest
    s.add_job(job("b0", "B", {"cpu": "16", "memory": "64Gi"}, submit_time=100))
    result = s.schedule_round(100)
    assert set(result.scheduled) == {"b0"}
    assert set(result.preempted) == {f"a{i}" for i in range(16, 32)}


def test_newest_jobs_spread_over_two_nodes_free_neither() -> None:
    """A's 32 newest jobs are split over two nodes: neither node can be freed for B's whole-node
    job without taking jobs that are rescheduled earlier, so nothing is preempted (Armada)."""
    s = scheduler({"n0": "cpu", "n1": "cpu"})
    # Oldest first: 16 on each node, then 16 more on each (alternating).
    for i in range(64):
        s.add_job(job(f"a{i}", "A", ONE, submit_time=i))
        s.mark_running(f"a{i}", "n0" if i % 2 == 0 else "n1")
    s.add_job(job("b0", "B", WHOLE, submit_time=100))
    result = s.schedule_round(100)
    assert result.preempted == {}
    assert s.state_of("b0") is JobState.QUEUED
    # With the 32 newest all on n1, B gets n1 and exactly those go.
    t = Scheduler(CONFIG)
    for name in ("n0", "n1"):
        t.upsert_node(node(name, f"c-{name}", {"cpu": 32, "memory": "128Gi"}, pool="cpu"))
    for q in ("A", "B"):
        t.upsert_queue(Queue(q))
    for i in range(64):
        t.add_job(job(f"a{i}", "A", ONE, submit_time=i))
        t.mark_running(f"a{i}", "n0" if i < 32 else "n1")
    t.add_job(job("b0", "B", WHOLE, submit_time=100))
    result = t.schedule_round(100)
    assert set(result.scheduled) == {"b0"}
    assert set(result.preempted) == {f"a{i}" for i in range(32, 64)}


def test_placement_without_preemption_in_any_pool_comes_first() -> None:
    """B could take half of pool a's node from A, but pool b has a free node: it goes there."""
    s = scheduler({"n-a": "a", "n-b": "b"})
    s.add_jobs(job(f"a{i}", "A", ONE, submit_time=i, pools=("a",)) for i in range(32))
    s.schedule_round(0)
    s.add_job(job("b0", "B", {"cpu": "16", "memory": "64Gi"}, submit_time=100))
    result = s.schedule_round(1)
    assert result.preempted == {}
    assert result.scheduled["b0"].pool == "b"
    # Pinned to pool a, the same job preempts there (the case the rule above leaves to Armada's).
    s.add_job(job("b1", "B", {"cpu": "16", "memory": "64Gi"}, submit_time=101, pools=("a",)))
    result = s.schedule_round(2)
    assert result.scheduled["b1"].pool == "a"
    assert len(result.preempted) == 16


def test_a_pool_the_queue_may_not_use_more_of_does_not_count() -> None:
    """Pool b has a free node, but B's limit (half of a pool's cpu) keeps it out of b: B preempts
    in pool a rather than waiting for a pool that will never take it."""
    s = Scheduler(CONFIG)
    s.upsert_node(node("n-a", "c-a", {"cpu": 32, "memory": "128Gi"}, pool="a"))
    s.upsert_node(node("n-b", "c-b", {"cpu": 16, "memory": "64Gi"}, pool="b"))
    s.upsert_queue(Queue("A"))
    s.upsert_queue(Queue("B", resource_limits={"cpu": 0.5}))
    s.add_jobs(job(f"a{i}", "A", ONE, submit_time=i, pools=("a",)) for i in range(32))
    s.schedule_round(0)
    s.add_job(job("b0", "B", {"cpu": "16", "memory": "64Gi"}, submit_time=100))
    result = s.schedule_round(1)
    assert result.scheduled["b0"].pool == "a"
    assert len(result.preempted) == 16
