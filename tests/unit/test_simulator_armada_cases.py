"""Armada's TestSimulator cases (internal/scheduler/simulator/simulator_test.go) through `simulate`.

Armada checks the exact event sequence; here the same scenarios are written as simulator YAML and
the job records are checked for the same story: who is leased, who is preempted, in what order.
Nodes are 32 cpu / 256Gi, full-node jobs ask for all of it; the default configuration defines
Armada's test priority classes priority-0..3 with protectedFractionOfFairShare 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.simulator.cli import main

pytestmark = pytest.mark.unit

NODE = '{number: %d, totalResources: {resources: {cpu: "32", memory: "256Gi"}}}'
FULL = 'requirements: {resourceRequirements: {requests: {cpu: "32", memory: "256Gi"}}}'


def simulate(tmp_path: Path, clusters: str, workload: str) -> list[dict[str, object]]:
    c = tmp_path / "clusters.yaml"
    w = tmp_path / "workload.yaml"
    c.write_text(clusters)
    w.write_text(workload)
    out = tmp_path / "out.jsonl"
    assert main(["--clusters", str(c), "--workload", str(w), "--output", str(out)]) == 0
    return [r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "job"]


def cluster(name: str, nodes: int) -> str:
    return f"  - name: {name}\n    pool: TestPool\n    nodeTemplates: [{NODE % nodes}]\n"


def template(n: int, pc: str, submit: str = "0s", gang: int = 0) -> str:
    extra = f", gangCardinality: {gang}" if gang else ""
    return (
        f"      - {{number: {n}, priorityClassName: {pc}, earliestSubmitTime: {submit}, "
        f"runtimeDistribution: {{minimum: 1m}}{extra}, {FULL}}}\n"
    )


def test_preemption(tmp_path: Path) -> None:
    jobs = simulate(
        tmp_path,
        "clusters:\n" + cluster("TestCluster", 2),
        "queues:\n  - name: A\n    jobTemplates:\n"
        + template(2, "priority-0")
        + "  - name: B\n    jobTemplates:\n"
        + template(1, "priority-0", "30s"),
    )
    preempted = [j for j in jobs if j["state"] == "PREEMPTED"]
    assert [(j["queue"], j["finished"]) for j in preempted] == [("A", 30)]
    b = next(j for j in jobs if j["queue"] == "B")
    assert b["scheduled"] == 30 and b["state"] == "SUCCEEDED"
    a = [j for j in jobs if j["queue"] == "A" and j["state"] == "SUCCEEDED"]
    # The surviving A job finishes first, then the resubmitted one runs.
    assert sorted(j["scheduled"] for j in a) == [0, 60]


def test_no_preemption_cascade(tmp_path: Path) -> None:
    jobs = simulate(
        tmp_path,
        "clusters:\n" + cluster("TestCluster1", 1) + cluster("TestCluster2", 1) + cluster("TestCluster3", 1),
        "queues:\n  - name: B\n    jobTemplates:\n"
        + template(1, "priority-0")
        + "  - name: C\n    jobTemplates:\n"
        + template(2, "priority-0")
        + "  - name: A\n    jobTemplates:\n"
        + template(1, "priority-0", "30s"),
    )
    preempted = [j for j in jobs if j["state"] == "PREEMPTED"]
    assert [j["queue"] for j in preempted] == ["C"]  # one of C's two jobs, and nothing of B's
    a = next(j for j in jobs if j["queue"] == "A")
    assert a["scheduled"] == 30
    assert sum(1 for j in jobs if j["state"] == "SUCCEEDED") == 4


def test_gang_job(tmp_path: Path) -> None:
    jobs = simulate(
        tmp_path,
        "clusters:\n" + cluster("Cluster1", 8) + cluster("Cluster2", 1),
        "queues:\n  - name: A\n    jobTemplates:\n" + template(16, "priority-3", gang=8),
    )
    assert {j["cluster"] for j in jobs} == {"Cluster1"}  # Cluster2 is too small for a gang of 8
    starts = sorted(j["scheduled"] for j in jobs)
    assert starts[:8] == [0] * 8
    assert len(set(starts[8:])) == 1 and starts[8] >= 60  # the second gang after the first
    assert all(j["state"] == "SUCCEEDED" for j in jobs)


def test_preempted_gang_job(tmp_path: Path) -> None:
    jobs = simulate(
        tmp_path,
        "clusters:\n" + cluster("Cluster1", 8),
        "queues:\n  - name: A\n    jobTemplates:\n"
        + template(8, "priority-2", gang=8)
        + "  - name: B\n    jobTemplates:\n"
        + template(1, "priority-3", "30s"),
    )
    preempted = [j for j in jobs if j["state"] == "PREEMPTED"]
    assert len(preempted) == 8 and {j["finished"] for j in preempted} == {30}
    b = next(j for j in jobs if j["queue"] == "B")
    assert b["scheduled"] == 30
    again = [j for j in jobs if j["queue"] == "A" and j["state"] == "SUCCEEDED"]
    assert len(again) == 8 and min(j["scheduled"] for j in again) >= 90  # after B finished


def test_two_jobs_in_parallel_and_in_sequence(tmp_path: Path) -> None:
    parallel = simulate(
        tmp_path,
        "clusters:\n" + cluster("C", 2),
        "queues:\n  - name: A\n    jobTemplates:\n" + template(2, "priority-3"),
    )
    assert [j["scheduled"] for j in parallel] == [0, 0]
    sequence = simulate(
        tmp_path,
        "clusters:\n" + cluster("C", 1),
        "queues:\n  - name: A\n    jobTemplates:\n" + template(2, "priority-3"),
    )
    assert sorted(j["scheduled"] for j in sequence) == [0, 60]
