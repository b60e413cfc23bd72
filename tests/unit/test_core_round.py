"""One scheduling round: Armada's published allocations, gangs, constraints and waiting reasons."""

from __future__ import annotations

from collections import Counter

import pytest

from armada_bridge.core.builders import gang, job, node
from armada_bridge.core.model import (
    CLUSTER_LABEL,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    PriorityClass,
    Queue,
    SchedulingConfig,
    Taint,
    Toleration,
)
from armada_bridge.core.result import RoundResult
from armada_bridge.core.scheduler import Scheduler

pytestmark = pytest.mark.unit


def fill(s: Scheduler, queue: str, n: int, resources: dict[str, str] | None = None, **kw: object) -> None:
    s.upsert_queue(s.queues.get(queue) or Queue(queue))
    for i in range(n):
        s.add_job(job(f"{queue}-{i}", queue, resources, submit_time=float(i), **kw))  # type: ignore[arg-type]


def per_queue(result: RoundResult) -> dict[str, int]:
    return dict(Counter(j.rsplit("-", 1)[0] for j in result.scheduled))


def scheduler_with_nodes(
    n: int, cluster: str = "remote-1", config: SchedulingConfig | None = None
) -> Scheduler:
    s = Scheduler(config)
    for i in range(n):
        s.upsert_node(node(f"{cluster}-n{i}", cluster))
    return s


# --------------------------------------------------------------- Armada's published allocations
def test_two_equal_queues_on_one_node_get_16_16() -> None:
    s = scheduler_with_nodes(1)
    fill(s, "A", 100)
    fill(s, "B", 100)
    assert per_queue(s.schedule_round(0)) == {"A": 16, "B": 16}


def test_three_equal_queues_get_11_11_10() -> None:
    s = scheduler_with_nodes(1)
    for q in "ABC":
        fill(s, q, 100)
    assert per_queue(s.schedule_round(0)) == {"A": 11, "B": 11, "C": 10}


def test_priority_factors_1_and_2_on_three_nodes_get_64_32() -> None:
    s = scheduler_with_nodes(3)
    s.upsert_queue(Queue("A", priority_factor=1))
    s.upsert_queue(Queue("B", priority_factor=2))
    fill(s, "A", 200)
    fill(s, "B", 200)
    result = s.schedule_round(0)
    assert per_queue(result) == {"A": 64, "B": 32}
    shares = result.queue_shares()
    assert shares["A"].fair_share == pytest.approx(2 / 3)
    assert shares["B"].actual_share == pytest.approx(1 / 3)


def test_single_queue_takes_everything_and_queue_reports() -> None:
    s = scheduler_with_nodes(2)
    fill(s, "A", 70)
    result = s.schedule_round(0)
    assert len(result.scheduled) == 64
    report = result.queue_shares()["A"]
    assert (report.running, report.scheduled, report.queued) == (64, 64, 6)
    assert report.actual_share == pytest.approx(1.0)
    assert set(result.waiting) == {f"A-{i}" for i in range(64, 70)}


def test_best_fit_packs_nodes_before_spreading() -> None:
    s = scheduler_with_nodes(3)
    fill(s, "A", 40)
    result = s.schedule_round(0)
    nodes = Counter(p.node for p in result.scheduled.values())
    assert sorted(nodes.values()) == [8, 32]


def test_inactive_queue_gets_no_share() -> None:
    s = scheduler_with_nodes(1)
    s.upsert_queue(Queue("idle"))
    fill(s, "A", 10)
    result = s.schedule_round(0)
    assert set(result.queue_shares()) == {"A"}
    assert result.queue_shares()["A"].fair_share == 1.0


def test_higher_priority_class_goes_first() -> None:
    pcs = {
        "low": PriorityClass("low", 0, True),
        "high": PriorityClass("high", 10, False),
    }
    s = scheduler_with_nodes(1, config=SchedulingConfig(priority_classes=pcs, default_priority_class="low"))
    fill(s, "A", 40, priority_class="low")
    s.upsert_queue(Queue("B"))
    for i in range(20):
        s.add_job(job(f"B-{i}", "B", priority_class="high", submit_time=100.0 + i))
    # B's high-priority jobs come first, then A fills the rest.
    assert per_queue(s.schedule_round(0)) == {"B": 20, "A": 12}


def test_job_priority_then_submit_time_within_a_queue() -> None:
    s = scheduler_with_nodes(1)
    s.upsert_queue(Queue("A"))
    s.add_job(job("late", "A", {"cpu": "32"}, submit_time=5))
    s.add_job(job("early", "A", {"cpu": "32"}, submit_time=1))
    s.add_job(job("urgent", "A", {"cpu": "32"}, submit_time=9, priority=-1))
    assert set(s.schedule_round(0).scheduled) == {"urgent"}
    s.remove_job("urgent")
    assert set(s.schedule_round(1).scheduled) == {"early"}


# ------------------------------------------------------------------------- node constraints
def test_taints_and_tolerations() -> None:
    s = Scheduler()
    s.upsert_node(node("gpu", taints=(Taint("nvidia.com/gpu", "true", "NoSchedule"),)))
    s.upsert_queue(Queue("A"))
    s.add_job(job("plain", "A"))
    s.add_job(job("tolerant", "A", tolerations=(Toleration("nvidia.com/gpu", "Exists"),)))
    result = s.schedule_round(0)
    assert set(result.scheduled) == {"tolerant"}
    assert "untolerated taint nvidia.com/gpu=true:NoSchedule" in result.waiting["plain"]


def test_prefer_no_schedule_taint_does_not_block() -> None:
    s = Scheduler()
    s.upsert_node(node("n", taints=(Taint("soft", "x", "PreferNoSchedule"),)))
    fill(s, "A", 1)
    assert set(s.schedule_round(0).scheduled) == {"A-0"}


def test_node_selector_and_required_affinity() -> None:
    s = Scheduler()
    s.upsert_node(node("a", labels={"zone": "a", "gen": "3"}))
    s.upsert_node(node("b", labels={"zone": "b", "gen": "5"}))
    s.upsert_queue(Queue("A"))
    s.add_job(job("sel", "A", node_selector={"zone": "b"}))
    newer = NodeSelectorTerm((NodeSelectorRequirement("gen", "Gt", ("4",)),))
    s.add_job(job("aff", "A", affinity=(newer,)))
    not_ab = NodeSelectorTerm((NodeSelectorRequirement("zone", "NotIn", ("a", "b")),))
    s.add_job(job("none", "A", affinity=(not_ab,)))
    result = s.schedule_round(0)
    assert result.scheduled["sel"].node == "b"
    assert result.scheduled["aff"].node == "b"
    assert "required node affinity not matched" in result.waiting["none"]


def test_a_job_that_fits_nowhere_is_told_the_closest_mismatch() -> None:
    """It asks for a node type whose only nodes carry a taint it does not tolerate: it is told the
    taint, whatever order the nodes come in, not that the other nodes are of another type."""
    gpu = node("m-gpu", labels={"type": "gpu"}, taints=(Taint("nvidia.com/gpu", "true", "NoSchedule"),))
    for nodes in ([node("a-cpu", labels={"type": "cpu"}), gpu], [gpu, node("z-cpu", labels={"type": "cpu"})]):
        s = Scheduler()
        for n in nodes:
            s.upsert_node(n)
        s.upsert_queue(Queue("A"))
        s.add_job(job("wants-gpu", "A", node_selector={"type": "gpu"}))
        said = s.schedule_round(0).waiting["wants-gpu"]
        assert "untolerated taint nvidia.com/gpu=true:NoSchedule" in said, said


def test_selector_on_cluster_label_pins_cluster() -> None:
    s = Scheduler()
    s.upsert_node(node("x", "remote-1"))
    s.upsert_node(node("y", "remote-2"))
    fill(s, "A", 1, node_selector={CLUSTER_LABEL: "remote-2"})
    assert s.schedule_round(0).scheduled["A-0"].cluster == "remote-2"


def test_allocatable_is_respected_per_node_not_per_cluster() -> None:
    s = scheduler_with_nodes(2)
    fill(s, "A", 1, {"cpu": "40"})
    result = s.schedule_round(0)
    assert not result.scheduled
    assert "no node fits this job (cpu=40)" in result.waiting["A-0"]
    assert "with cpu=32, memory=256Gi" in result.waiting["A-0"]


def test_unschedulable_node_is_skipped() -> None:
    s = Scheduler()
    s.upsert_node(node("cordoned", unschedulable=True))
    fill(s, "A", 1)
    result = s.schedule_round(0)
    assert not result.scheduled
    assert result.waiting["A-0"] == "no schedulable nodes"


def test_extended_resources() -> None:
    s = Scheduler()
    s.upsert_node(node("cpu-only"))
    s.upsert_node(node("gpu", resources={"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}))
    fill(s, "A", 3, {"cpu": "1", "nvidia.com/gpu": "4"})
    result = s.schedule_round(0)
    assert {p.node for p in result.scheduled.values()} == {"gpu"}
    assert len(result.scheduled) == 2


# ------------------------------------------------------------------------------------ gangs
def test_gang_all_or_nothing_in_one_cluster() -> None:
    s = Scheduler()
    for c in ("remote-1", "remote-2"):
        for i in range(2):
            s.upsert_node(node(f"{c}-n{i}", c))
    s.upsert_queue(Queue("A"))
    # 3 x 32 cpu fits neither cluster (2 nodes each) although the sum of all clusters would.
    s.add_jobs(gang("big", "A", 3, {"cpu": "32"}))
    s.add_jobs(gang("ok", "A", 2, {"cpu": "32"}))
    result = s.schedule_round(0)
    assert set(result.scheduled) == {"ok-0", "ok-1"}
    assert len({p.cluster for p in result.scheduled.values()}) == 1
    assert "no remote cluster fits this gang of 3 (cpu=96 in total)" in result.waiting["big-0"]
    assert "largest free is cpu=64" in result.waiting["big-0"]


def test_a_gang_whose_cluster_room_is_split_over_nodes_is_told_the_largest_free_node() -> None:
    s = Scheduler()
    for i in range(4):
        s.upsert_node(node(f"remote-1-n{i}", "remote-1", resources={"cpu": "2", "memory": "8Gi"}))
    s.upsert_queue(Queue("A"))
    # 8 CPUs free in the cluster, 2 on each node: a gang of 2 x 3 CPUs fits the sum, no node.
    s.add_jobs(gang("split", "A", 2, {"cpu": "3"}))
    reason = s.schedule_round(0).waiting["split-0"]
    assert "largest free is cpu=8, memory=32Gi in cluster remote-1" in reason
    assert reason.endswith("largest free node is remote-1-n3 with cpu=2, memory=8Gi")


def test_gang_waits_until_all_members_present() -> None:
    s = scheduler_with_nodes(4)
    s.upsert_queue(Queue("A"))
    s.add_jobs(gang("g", "A", 4, present=3))
    result = s.schedule_round(0)
    assert not result.scheduled
    assert result.waiting == {f"g-{i}": "gang 3/4 present" for i in range(3)}
    s.add_job(job("g-3", "A", gang_id="g", gang_cardinality=4))
    assert len(s.schedule_round(1).scheduled) == 4


def test_gang_uniformity_label_picks_one_value() -> None:
    s = Scheduler()
    for i in range(4):
        s.upsert_node(node(f"n{i}", labels={"rack": "r1" if i < 2 else "r2"}))
    s.upsert_node(node("n-other", resources={"cpu": "8", "memory": "64Gi"}, labels={"rack": "r1"}))
    s.upsert_queue(Queue("A"))
    s.add_jobs(gang("g", "A", 2, {"cpu": "20"}, gang_node_uniformity_label="rack"))
    s.add_jobs(gang("h", "A", 2, {"cpu": "20"}, gang_node_uniformity_label="rack"))
    result = s.schedule_round(0)
    assert len(result.scheduled) == 4
    for g in ("g", "h"):
        racks = {s.nodedb.entries[result.scheduled[f"{g}-{i}"].node].labels["rack"] for i in range(2)}
        assert len(racks) == 1
    # First value in sorted order is taken when it fits without preemption.
    assert s.nodedb.entries[result.scheduled["g-0"].node].labels["rack"] == "r1"


def test_gang_uniformity_label_must_be_indexed_when_indexing_is_configured() -> None:
    s = scheduler_with_nodes(2, config=SchedulingConfig(indexed_node_labels=frozenset({"rack"})))
    s.upsert_queue(Queue("A"))
    s.add_jobs(gang("g", "A", 2, gang_node_uniformity_label="zone"))
    assert s.schedule_round(0).waiting["g-0"] == "uniformity label zone is not indexed"


def test_gang_with_label_nobody_has() -> None:
    s = scheduler_with_nodes(2)
    s.upsert_queue(Queue("A"))
    s.add_jobs(gang("g", "A", 2, gang_node_uniformity_label="zone"))
    assert s.schedule_round(0).waiting["g-0"] == "no nodes with uniformity label zone"


def test_late_gang_member_joins_its_gangs_cluster() -> None:
    """MPI launcher / Spark executors arriving after the gang was admitted stay in its cluster."""
    s = Scheduler()
    s.upsert_node(node("a", "remote-1", {"cpu": "8", "memory": "16Gi"}))
    s.upsert_node(node("b", "remote-2", {"cpu": "64", "memory": "256Gi"}))
    s.upsert_queue(Queue("A"))
    s.add_jobs(gang("mpi", "A", 2, {"cpu": "2"}))
    first = s.schedule_round(0)
    assert {p.cluster for p in first.scheduled.values()} == {"remote-1"}
    s.add_job(job("mpi-launcher", "A", {"cpu": "1"}, gang_id="mpi", gang_cardinality=2))
    assert s.schedule_round(1).scheduled["mpi-launcher"].cluster == "remote-1"


def test_capacity_reservation_gang_needs_room_for_the_whole_application() -> None:
    """Spark style: minMember 1 plus minResources for the whole application, in one cluster."""
    s = Scheduler()
    for i in range(2):
        s.upsert_node(node(f"small-{i}", "remote-1", {"cpu": "8", "memory": "32Gi"}))
    for i in range(3):
        s.upsert_node(node(f"big-{i}", "remote-2", {"cpu": "16", "memory": "64Gi"}))
    s.upsert_queue(Queue("A"))
    s.add_job(job("driver", "A", {"cpu": "1"}, gang_id="spark", gang_min_resources={"cpu": "40"}))
    result = s.schedule_round(0)
    assert result.scheduled["driver"].cluster == "remote-2"
    for i in range(3):
        s.add_job(job(f"exec-{i}", "A", {"cpu": "12"}, gang_id="spark"))
    later = s.schedule_round(1)
    assert {p.cluster for p in later.scheduled.values()} == {"remote-2"}
    s2 = Scheduler()
    s2.upsert_node(node("small", "remote-1", {"cpu": "8", "memory": "32Gi"}))
    s2.upsert_queue(Queue("A"))
    s2.add_job(job("driver", "A", {"cpu": "1"}, gang_id="spark", gang_min_resources={"cpu": "40"}))
    reason = s2.schedule_round(0).waiting["driver"]
    assert reason.startswith("no remote cluster can reserve this gang's minimum resources (cpu=40")


# ------------------------------------------------------------------------ queue constraints
def test_cordoned_queue_schedules_nothing_new() -> None:
    s = scheduler_with_nodes(1)
    s.upsert_queue(Queue("A", cordoned=True))
    fill(s, "A", 3)
    fill(s, "B", 3)
    result = s.schedule_round(0)
    assert per_queue(result) == {"B": 3}
    assert result.waiting["A-2"] == "queue A is cordoned"


def test_queue_resource_limit() -> None:
    s = scheduler_with_nodes(1)
    s.upsert_queue(Queue("A", resource_limits={"cpu": 0.25}))
    fill(s, "A", 20)
    result = s.schedule_round(0)
    assert len(result.scheduled) == 8
    assert "queue A would exceed its limit of 0.25 of the pool's cpu" in result.waiting["A-8"]
    # Demand is capped by the limit (cpu 8 of 32); memory is not limited: 80Gi of 256Gi.
    assert result.queue_shares()["A"].adjusted_fair_share == pytest.approx(80 / 256)


def test_priority_class_limit_per_queue() -> None:
    pcs = {"capped": PriorityClass("capped", 0, False, {"cpu": 0.5})}
    s = scheduler_with_nodes(
        1, config=SchedulingConfig(priority_classes=pcs, default_priority_class="capped")
    )
    fill(s, "A", 20)
    assert len(s.schedule_round(0).scheduled) == 16
    # A queue may override its class's limit.
    s2 = scheduler_with_nodes(
        1, config=SchedulingConfig(priority_classes=pcs, default_priority_class="capped")
    )
    s2.upsert_queue(Queue("A", resource_limits_by_priority_class={"capped": {"cpu": 0.25}}))
    fill(s2, "A", 20)
    assert len(s2.schedule_round(0).scheduled) == 8


def test_round_budget_overshoots_by_one_gang() -> None:
    cfg = SchedulingConfig(maximum_resource_fraction_to_schedule={"cpu": 0.025})
    s = scheduler_with_nodes(2, config=cfg)  # 64 cpu -> budget 1.6 cpu
    fill(s, "A", 10)
    result = s.schedule_round(0)
    assert len(result.scheduled) == 2
    assert result.waiting["A-9"].startswith("round budget exhausted")
    assert len(s.schedule_round(1).scheduled) == 2


def test_max_queue_lookback() -> None:
    s = scheduler_with_nodes(2, config=SchedulingConfig(max_queue_lookback=3))
    s.upsert_queue(Queue("A"))
    for i in range(3):
        s.add_job(job(f"A-huge-{i}", "A", {"cpu": "40"}, submit_time=i))
    s.add_job(job("A-small", "A", submit_time=10))
    result = s.schedule_round(0)
    assert not result.scheduled
    assert "maxQueueLookback=3" in result.waiting["A-small"]


def test_burst_limits() -> None:
    cfg = SchedulingConfig(maximum_scheduling_burst=5, maximum_scheduling_rate=1.0)
    s = scheduler_with_nodes(1, config=cfg)
    fill(s, "A", 10)
    s.add_jobs(gang("g", "A", 6))
    first = s.schedule_round(0)
    assert len(first.scheduled) == 5
    assert first.waiting["g-0"] == "gang of 6 exceeds maximumSchedulingBurst=5"
    # One token per second refills the bucket.
    assert len(s.schedule_round(2).scheduled) == 2


def test_per_queue_burst() -> None:
    cfg = SchedulingConfig(maximum_per_queue_scheduling_burst=3, maximum_per_queue_scheduling_rate=0.0)
    s = scheduler_with_nodes(1, config=cfg)
    fill(s, "A", 10)
    fill(s, "B", 10)
    result = s.schedule_round(0)
    assert per_queue(result) == {"A": 3, "B": 3}
    assert "rate limit" in result.waiting["A-5"]


def test_unknown_queue() -> None:
    s = scheduler_with_nodes(1)
    s.add_job(job("orphan", "nope"))
    assert s.schedule_round(0).waiting["orphan"] == "queue nope does not exist"


def test_pools_are_scheduled_separately() -> None:
    s = Scheduler()
    s.upsert_node(node("cpu-n", "remote-1", pool="cpu"))
    s.upsert_node(node("gpu-n", "remote-2", {"cpu": "8", "nvidia.com/gpu": "8"}, pool="gpu"))
    s.upsert_queue(Queue("A"))
    s.add_job(job("g", "A", {"cpu": "1", "nvidia.com/gpu": "1"}, pools=("gpu",)))
    s.add_job(job("c", "A", {"cpu": "1"}, pools=("cpu",)))
    result = s.schedule_round(0)
    assert result.scheduled["g"].pool == "gpu"
    assert result.scheduled["c"].pool == "cpu"
    assert set(result.shares) == {"cpu", "gpu"}


def test_waiting_reason_for_queue_above_fair_share() -> None:
    s = scheduler_with_nodes(1)
    fill(s, "A", 20)
    fill(s, "C", 12)
    assert per_queue(s.schedule_round(0)) == {"A": 20, "C": 12}
    for i in range(20, 30):
        s.add_job(job(f"A-{i}", "A", submit_time=float(i)))
    fill(s, "B", 10)
    result = s.schedule_round(1)
    assert not result.scheduled  # nothing is preemptible
    assert result.waiting["A-25"].startswith("queue A above its fair share (actual 0.625")
    assert result.waiting["A-25"].endswith(
        "largest free node is remote-1-n0 in cluster remote-1 with cpu=0, memory=128Gi"
    )
    assert result.waiting["B-0"].startswith("no node fits this job")


def test_deterministic() -> None:
    def build() -> RoundResult:
        s = Scheduler()
        for c in ("r1", "r2"):
            for i in range(3):
                s.upsert_node(node(f"{c}-{i}", c, labels={"rack": f"k{i % 2}"}))
        for q in ("A", "B", "C"):
            s.upsert_queue(Queue(q, priority_factor=1 + (q == "C")))
            for i in range(30):
                s.add_job(job(f"{q}-{i}", q, {"cpu": str(1 + i % 3)}, submit_time=i % 5))
        s.add_jobs(gang("g", "A", 3, {"cpu": "10"}, gang_node_uniformity_label="rack"))
        return s.schedule_round(0)

    first, second = build(), build()
    assert first.scheduled == second.scheduled
    assert first.waiting == second.waiting


def test_capacity_reservation_counts_in_queue_order() -> None:
    """A reservation gang is ordered by the cost of its whole reservation, not just its driver."""
    s = scheduler_with_nodes(1)
    s.upsert_queue(Queue("A"))
    s.upsert_queue(Queue("B"))
    s.add_job(job("spark-driver", "A", {"cpu": "1"}, gang_id="app", gang_min_resources={"cpu": "24"}))
    s.add_job(job("b-0", "B", {"cpu": "2"}))
    result = s.schedule_round(0)
    # B's head (2 cpu) is cheaper than A's reservation (24 cpu), so B goes first; both fit.
    assert list(result.scheduled) == ["b-0", "spark-driver"]


def test_a_job_over_its_queue_limit_does_not_block_the_smaller_ones_behind_it() -> None:
    """A per-queue limit is not terminal for the queue (Armada's IsTerminalQueueUnschedulableReason):
    one job too big for the limit waits, the jobs after it that fit are scheduled."""
    s = scheduler_with_nodes(2)
    s.upsert_queue(Queue("A", resource_limits={"cpu": 0.5}))
    s.add_job(job("huge", "A", {"cpu": "100000", "memory": "1Gi"}, submit_time=0))
    for i in range(3):
        s.add_job(job(f"small-{i}", "A", {"cpu": "1", "memory": "1Gi"}, submit_time=1 + i))
    result = s.schedule_round(0)
    assert set(result.scheduled) == {"small-0", "small-1", "small-2"}
    assert "limit" in (s.reason_of("huge") or "")
