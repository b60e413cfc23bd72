"""Fair-share preemption (evict, reschedule, preempt the rest) and urgency preemption."""

from __future__ import annotations

from collections import Counter

import pytest

from armada_bridge.core.builders import gang, job, node
from armada_bridge.core.model import JobState, PriorityClass, Queue, SchedulingConfig
from armada_bridge.core.scheduler import Scheduler

pytestmark = pytest.mark.unit

# Armada's testfixtures.TestPriorityClasses: priority-0..2 preemptible, priority-3 not.
PCS = {
    "priority-0": PriorityClass("priority-0", 0, True),
    "priority-1": PriorityClass("priority-1", 1, True),
    "priority-2": PriorityClass("priority-2", 2, True),
    "priority-3": PriorityClass("priority-3", 3, False),
}


def config(**kw: object) -> SchedulingConfig:
    base: dict[str, object] = {
        "priority_classes": PCS,
        "default_priority_class": "priority-3",
        "protected_fraction_of_fair_share": 0.0,
    }
    base.update(kw)
    return SchedulingConfig(**base)  # type: ignore[arg-type]


def cluster(n: int, cfg: SchedulingConfig | None = None) -> Scheduler:
    s = Scheduler(cfg or config())
    for i in range(n):
        s.upsert_node(node(f"n{i}"))
    for q in ("A", "B", "C"):
        s.upsert_queue(Queue(q))
    return s


FULL = {"cpu": "32", "memory": "256Gi"}


def test_fair_share_preemption_armada_simulator_case() -> None:
    """simulator_test.go "Preemption": A holds both nodes, B submits one full-node job."""
    s = cluster(2)
    s.add_job(job("a0", "A", FULL, priority_class="priority-0"))
    s.add_job(job("a1", "A", FULL, priority_class="priority-0", submit_time=1))
    assert len(s.schedule_round(0).scheduled) == 2
    s.add_job(job("b0", "B", FULL, priority_class="priority-0", submit_time=30))
    result = s.schedule_round(30)
    assert set(result.scheduled) == {"b0"}
    assert list(result.preempted) == ["a1"]  # the later-scheduled job goes
    assert "preempted to restore fair share" in result.preempted["a1"]
    assert s.state_of("a1") is JobState.GONE
    assert s.state_of("a0") is JobState.RUNNING
    report = result.queue_shares()["A"]
    assert (report.evicted, report.preempted, report.running) == (2, 1, 1)


def test_state_rebuilt_after_a_restart_keeps_the_latest_bound_last() -> None:
    """The same case, the core rebuilt (an extender restart or failover) from pods it learns in any
    order: their bind times, not the order it learns them in, say which is rescheduled last and
    so preempted (a1 was bound at 1, a0 at 0)."""
    s = cluster(2)
    s.add_job(job("a1", "A", FULL, priority_class="priority-0", submit_time=1))
    s.add_job(job("a0", "A", FULL, priority_class="priority-0"))
    s.mark_running("a1", "n1", bound_at=1.0)
    s.mark_running("a0", "n0", bound_at=0.0)
    s.add_job(job("b0", "B", FULL, priority_class="priority-0", submit_time=30))
    result = s.schedule_round(30)
    assert set(result.scheduled) == {"b0"}
    assert list(result.preempted) == ["a1"]
    assert s.state_of("a0") is JobState.RUNNING


def test_reschedule_keeps_what_fits_and_preempts_the_rest() -> None:
    s = cluster(2)
    for i in range(64):
        s.add_job(job(f"A-{i}", "A", priority_class="priority-0", submit_time=i))
    s.schedule_round(0)
    for i in range(40):
        s.add_job(job(f"B-{i}", "B", priority_class="priority-0", submit_time=100 + i))
    result = s.schedule_round(1)
    running = Counter(r.queue for r in s.running_jobs())
    assert running == {"A": 32, "B": 32}
    assert len(result.preempted) == 32
    assert all(p.startswith("A-") for p in result.preempted)
    # Survivors stayed on their own nodes.
    assert all(s.placement_of(r.id) is not None for r in s.running_jobs())


@pytest.mark.parametrize(
    ("fraction", "preempted"),
    [
        # A holds 1.0 against a fair share of 0.5: 2.0 of its share, which is protected.
        pytest.param(2.0, set(), id="2.0 protects twice the fair share"),
        pytest.param(1.0, {"a1"}, id="the default 1.0 still preempts above the fair share"),
    ],
)
def test_protected_fraction_of_fair_share(fraction: float, preempted: set[str]) -> None:
    s = cluster(2, config(protected_fraction_of_fair_share=fraction))
    s.add_job(job("a0", "A", FULL, priority_class="priority-0"))
    s.add_job(job("a1", "A", FULL, priority_class="priority-0", submit_time=1))
    s.schedule_round(0)
    s.add_job(job("b0", "B", FULL, priority_class="priority-0"))
    result = s.schedule_round(1)
    assert set(result.preempted) == preempted
    assert bool(result.scheduled) == bool(preempted)  # b0 runs only where a1 made room


def test_non_preemptible_jobs_are_never_evicted() -> None:
    s = cluster(1)
    s.add_job(job("a0", "A", FULL, priority_class="priority-3"))
    s.schedule_round(0)
    s.add_job(job("b0", "B", FULL, priority_class="priority-3"))
    result = s.schedule_round(1)
    assert not result.preempted
    assert "no node fits this job" in result.waiting["b0"]


def test_no_preemption_without_a_queue_below_its_share() -> None:
    s = cluster(2)
    for i in range(64):
        s.add_job(job(f"A-{i}", "A", priority_class="priority-0", submit_time=i))
    s.schedule_round(0)
    result = s.schedule_round(1)
    assert not result.preempted
    assert result.queue_shares()["A"].evicted == 0


def test_no_preemption_for_a_queue_at_its_share() -> None:
    s = cluster(1)
    for i in range(16):
        s.add_job(job(f"A-{i}", "A", priority_class="priority-0", submit_time=i))
        s.add_job(job(f"B-{i}", "B", priority_class="priority-0", submit_time=i))
    s.schedule_round(0)
    s.add_job(job("B-more", "B", priority_class="priority-0", submit_time=99))
    result = s.schedule_round(1)
    assert not result.preempted
    assert result.waiting["B-more"].startswith("queue B at its fair share")


def test_fair_share_eviction_takes_gangs_whole() -> None:
    s = cluster(2)
    s.add_jobs(gang("ga", "A", 2, FULL, priority_class="priority-0"))
    s.schedule_round(0)
    s.add_job(job("b0", "B", FULL, priority_class="priority-0"))
    result = s.schedule_round(1)
    # The gang cannot be rescheduled half: both members go, B gets a node.
    assert set(result.preempted) == {"ga-0", "ga-1"}
    assert set(result.scheduled) == {"b0"}


def test_urgency_preemption_by_priority() -> None:
    s = cluster(1)
    s.add_job(job("low", "A", FULL, priority_class="priority-1"))
    s.schedule_round(0)
    s.add_job(job("high", "A", FULL, priority_class="priority-3"))
    result = s.schedule_round(1)
    assert set(result.scheduled) == {"high"}
    assert result.preempted == {
        "low": "preempted by job high of queue A (priority class priority-3, priority 3)"
    }


def test_urgency_preemption_never_displaces_equal_or_higher_priority() -> None:
    s = cluster(1)
    s.add_job(job("first", "A", FULL, priority_class="priority-2"))
    s.schedule_round(0)
    s.add_job(job("same", "A", FULL, priority_class="priority-2", submit_time=1))
    s.add_job(job("lower", "A", FULL, priority_class="priority-1", submit_time=1))
    result = s.schedule_round(1)
    assert not result.preempted and not result.scheduled


def test_urgency_prefers_lowest_priority_victims() -> None:
    s = cluster(2)
    s.add_job(job("p0", "A", FULL, priority_class="priority-0"))
    s.add_job(job("p2", "A", FULL, priority_class="priority-2", submit_time=1))
    s.schedule_round(0)
    s.add_job(job("p3", "B", FULL, priority_class="priority-3"))
    result = s.schedule_round(1)
    assert set(result.preempted) == {"p0"}


def test_preempted_gang_job_armada_case() -> None:
    """simulator_test.go "Preempted Gang Job": a PC3 job preempts a whole PC2 gang of 8."""
    s = cluster(8)
    s.add_jobs(gang("g", "A", 8, FULL, priority_class="priority-2"))
    assert len(s.schedule_round(0).scheduled) == 8
    s.add_job(job("vip", "A", FULL, priority_class="priority-3"))
    result = s.schedule_round(1)
    assert set(result.scheduled) == {"vip"}
    assert set(result.preempted) == {f"g-{i}" for i in range(8)}
    assert s.gangs.get("A/g") is None


def test_preempted_jobs_can_be_resubmitted() -> None:
    s = cluster(1)
    s.add_job(job("low", "A", FULL, priority_class="priority-0"))
    s.schedule_round(0)
    s.add_job(job("high", "B", FULL, priority_class="priority-3"))
    assert "low" in s.schedule_round(1).preempted
    s.add_job(job("low", "A", FULL, priority_class="priority-0"))
    assert s.schedule_round(2).waiting["low"].startswith("no node fits this job")


def test_urgency_can_be_disabled() -> None:
    s = cluster(1, config(enable_urgency_preemption=False))
    s.add_job(job("low", "A", FULL, priority_class="priority-0"))
    s.schedule_round(0)
    s.add_job(job("high", "A", FULL, priority_class="priority-3"))
    assert not s.schedule_round(1).preempted


def test_gang_takes_the_room_of_a_fully_evicted_queue_whole_gangs_only() -> None:
    """A queue holding the whole pool with preemptible gangs is evicted entirely at the start of
    the round; a gang of another queue that reaches the front of the ordering first may take the
    room of evicted gangs (regression: the gang's whole cost was compared with one victim's)."""
    from armada_bridge.core.model import Job, Node, Queue, SchedulingConfig
    from armada_bridge.core.quantities import parse_resources
    from armada_bridge.core.scheduler import Scheduler

    s = Scheduler(SchedulingConfig())
    for c in ("c1", "c2"):
        for i in range(4):
            s.upsert_node(Node(f"{c}/n{i}", c, parse_resources({"cpu": "32", "memory": "128Gi"})))
    s.upsert_queue(Queue("zeta"))
    s.upsert_queue(Queue("alpha"))  # sorts first: it is ordered before zeta's evicted gangs
    for g in range(8):
        for i in range(4):
            req = parse_resources({"cpu": "8", "memory": "1Gi"})
            s.add_job(
                Job(
                    f"z{g}-{i}",
                    "zeta",
                    req,
                    priority_class="armada-preemptible",
                    gang_id=f"z{g}",
                    gang_cardinality=4,
                )
            )
    assert len(s.schedule_round(1.0).scheduled) == 32
    for i in range(4):
        s.add_job(
            Job(
                f"a-{i}",
                "alpha",
                parse_resources({"cpu": "8", "memory": "1Gi"}),
                gang_id="a",
                gang_cardinality=4,
            )
        )
    r = s.schedule_round(2.0)
    assert sorted(r.scheduled) == [f"a-{i}" for i in range(4)]
    assert len({p.cluster for p in r.scheduled.values()}) == 1
    gangs = {job.split("-")[0] for job in r.preempted}
    assert len(gangs) == 1 and len(r.preempted) == 4, r.preempted


def test_a_reservation_gang_gets_room_by_fair_share_preemption() -> None:
    """A gang whose PodGroup reserves room for the whole group (minResources) counts what this
    round's evictions free, not only what is free: queue B is below its fair share and A holds
    both nodes, so B's gang is admitted by preempting A (it used to wait for good)."""
    s = cluster(2)
    for i in range(8):
        s.add_job(
            job(f"a{i}", "A", {"cpu": "8", "memory": "64Gi"}, priority_class="priority-0", submit_time=i)
        )
    assert len(s.schedule_round(0).scheduled) == 8
    for j in gang(
        "mpi",
        "B",
        2,
        {"cpu": "8", "memory": "64Gi"},
        priority_class="priority-0",
        gang_min_resources={"cpu": "24", "memory": "192Gi"},
        submit_time=30,
    ):
        s.add_job(j)
    result = s.schedule_round(30)
    assert {"mpi-0", "mpi-1"} <= set(result.scheduled), s.reason_of("mpi-0")
    assert result.preempted  # A gave room back
    assert len({s.placement_of(f"mpi-{i}").cluster for i in range(2)}) == 1  # type: ignore[union-attr]
