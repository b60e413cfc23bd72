"""Colocation: jobs that share a key (the pods of one controller) run in one cluster, fixed when
the first of them is bound, as a gang's domain is; free again once none of them runs."""

from __future__ import annotations

import pytest

from armada_bridge.core.builders import gang, job, node
from armada_bridge.core.model import Queue
from armada_bridge.core.scheduler import Scheduler, SchedulerError

pytestmark = pytest.mark.unit

SMALL = {"cpu": "2", "memory": "8Gi"}


def two_clusters(per_cluster: dict[str, str] | None = None) -> Scheduler:
    s = Scheduler()
    s.upsert_queue(Queue("q"))
    for cluster in ("remote-1", "remote-2"):
        s.upsert_node(node(f"{cluster}-n0", cluster, per_cluster or SMALL))
    return s


def cluster_of(s: Scheduler, job_id: str) -> str | None:
    p = s.placement_of(job_id)
    return p.cluster if p else None


def test_colocated_jobs_of_one_round_land_in_one_cluster() -> None:
    # Best fit alone would spread them (each cluster holds two); colocated, all four fit nowhere
    # together, so the two that fit where the first went run and the others wait, saying why.
    s = two_clusters()
    for i in range(4):
        s.add_job(job(f"j{i}", "q", {"cpu": "1", "memory": "1Gi"}, submit_time=i, colocation="root-a"))
    result = s.schedule_round(0)
    clusters = {cluster_of(s, j) for j in result.scheduled}
    assert len(result.scheduled) == 2 and len(clusters) == 1
    (where,) = clusters
    waiting = [f"j{i}" for i in range(4) if f"j{i}" not in result.scheduled]
    for j in waiting:
        assert s.reason_of(j) is not None and f"kept in cluster {where}" in s.reason_of(j)  # type: ignore[operator]


def test_without_colocation_the_same_jobs_spread() -> None:
    s = two_clusters()
    for i in range(4):
        s.add_job(job(f"j{i}", "q", {"cpu": "1", "memory": "1Gi"}, submit_time=i))
    result = s.schedule_round(0)
    assert len(result.scheduled) == 4
    assert {cluster_of(s, j) for j in result.scheduled} == {"remote-1", "remote-2"}


def test_a_later_job_follows_where_the_first_runs_and_is_free_once_none_runs() -> None:
    s = two_clusters({"cpu": "4", "memory": "16Gi"})
    s.add_job(job("first", "q", {"cpu": "3", "memory": "1Gi"}, colocation="root-a"))
    s.schedule_round(0)
    where = cluster_of(s, "first")
    other = "remote-2" if where == "remote-1" else "remote-1"
    # Room for "late" only in the other cluster: it must wait, kept where "first" runs.
    s.add_job(job("late", "q", {"cpu": "2", "memory": "1Gi"}, submit_time=1, colocation="root-a"))
    s.schedule_round(1)
    assert cluster_of(s, "late") is None
    assert f"kept in cluster {where}" in (s.reason_of("late") or "")
    # Once "first" is gone, nothing of root-a runs: "late" may go anywhere.
    s.remove_job("first")
    s.schedule_round(2)
    assert cluster_of(s, "late") in (where, other)
    assert "root-a" in s.colocations and s.colocations["root-a"].running == 1


def test_a_gang_and_a_single_of_one_colocation_share_the_gang_cluster() -> None:
    s = two_clusters({"cpu": "8", "memory": "32Gi"})
    for j in gang("g", "q", 3, {"cpu": "2", "memory": "1Gi"}, colocation="root-b"):
        s.add_job(j)
    s.schedule_round(0)
    where = {cluster_of(s, f"g-{i}") for i in range(3)}
    assert len(where) == 1 and None not in where
    s.add_job(job("launcher", "q", {"cpu": "1", "memory": "1Gi"}, submit_time=5, colocation="root-b"))
    s.schedule_round(1)
    assert {cluster_of(s, "launcher")} == where


def test_colocation_of_a_running_job_cannot_change() -> None:
    s = two_clusters()
    s.add_job(job("a", "q", colocation="root-a"))
    s.schedule_round(0)
    with pytest.raises(SchedulerError):
        s.update_job(job("a", "q", colocation="root-z"))
