"""Run every shipped Armada simulator scenario through `simulate` and check the outcome makes sense."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.simulator.cli import main

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "extender" / "simulator" / "testdata"
BASIC = DATA / "configs" / "basicSchedulingConfig.yaml"
CLUSTERS = sorted(p.name for p in (DATA / "clusters").glob("*.yaml"))
WORKLOADS = sorted(str(p.relative_to(DATA / "workloads")) for p in (DATA / "workloads").rglob("*.yaml"))


def run(
    tmp_path: Path, clusters: str, workload: str, *extra: str
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    out = tmp_path / "out.jsonl"
    args = ["--clusters", str(DATA / "clusters" / clusters), "--workload", str(DATA / "workloads" / workload)]
    assert main([*args, "--output", str(out), *extra]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    cycles = [r for r in records if r["type"] == "cycle"]
    jobs = [r for r in records if r["type"] == "job"]
    return cycles, jobs


def test_scenario_files_are_all_covered() -> None:
    assert CLUSTERS == [
        "cpu_1_1_10.yaml",
        "cpu_1_1_100.yaml",
        "cpu_1_1_2.yaml",
        "cpu_1_3_100.yaml",
        "tinyCluster.yaml",
    ]
    assert len(WORKLOADS) == 14


@pytest.mark.parametrize("clusters", CLUSTERS)
def test_basic_workload_on_every_cluster(tmp_path: Path, clusters: str) -> None:
    cycles, jobs = run(tmp_path, clusters, "basicWorkload.yaml", "--config", str(BASIC))
    assert [j["state"] for j in jobs] == ["SUCCEEDED"] * 10
    for j in jobs:
        assert j["finished"] == j["scheduled"] + 300  # 5m runtime, no tail
    # maximumResourceFractionToSchedule 0.025 spreads the ten jobs over several cycles on small pools.
    assert cycles[0]["time"] == 0
    assert all(set(c["queues"]) <= {"A"} for c in cycles)


def test_basic_workload_with_failures(tmp_path: Path) -> None:
    _cycles, jobs = run(tmp_path, "cpu_1_1_10.yaml", "basicWorkloadWithFailures.yaml", "--config", str(BASIC))
    assert len(jobs) == 10
    assert {j["state"] for j in jobs} <= {"SUCCEEDED", "FAILED"}


@pytest.mark.parametrize("family", ["small-long_big-long", "small-short_big-long"])
@pytest.mark.parametrize("variant", ["non-preemptible", "preemptible", "only-small", "only-big"])
def test_small_big_families_on_two_nodes(tmp_path: Path, family: str, variant: str) -> None:
    cycles, jobs = run(tmp_path, "cpu_1_1_2.yaml", f"{family}/{variant}.yaml", "--config", str(BASIC))
    states: dict[str, int] = {}
    for j in jobs:
        states[str(j["state"])] = states.get(str(j["state"]), 0) + 1
    small = 64 if family == "small-long_big-long" else 640
    succeeded_small = sum(1 for j in jobs if j["queue"] == "A" and j["state"] == "SUCCEEDED")
    succeeded_big = sum(1 for j in jobs if j["queue"] == "B" and j["state"] == "SUCCEEDED")
    assert succeeded_small == (0 if variant == "only-big" else small)
    assert succeeded_big == (0 if variant == "only-small" else 2)
    if variant == "preemptible" and family == "small-long_big-long":
        # B's big jobs arrive at 30m on a full pool and take their fair share by preemption.
        assert states["PREEMPTED"] > 0
        first_big = min(j["scheduled"] for j in jobs if j["queue"] == "B" and j["state"] == "SUCCEEDED")
        assert first_big < 1800 + 120
    elif variant == "preemptible":
        # A's evicted jobs go back on their own nodes first, and B may only take the room of the
        # 32 most recently started ones, which A's short jobs keep spreading over both nodes: as in
        # Armada, no node ever frees up by preemption (see test_core_armada_regressions.py).
        assert "PREEMPTED" not in states
    else:
        assert "PREEMPTED" not in states
    if variant == "non-preemptible" and family == "small-long_big-long":
        # B waits for A's hour-long jobs to drain a whole node.
        first_big = min(j["scheduled"] for j in jobs if j["queue"] == "B")
        assert first_big >= 3600
    for c in cycles:
        for q in c["queues"].values():
            assert 0.0 <= q["actual_share"] <= 1.0 + 1e-9
            assert q["adjusted_fair_share"] <= 1.0 + 1e-9
    # Never more than the two nodes' worth of jobs at once.
    assert max(sum(q["running"] for q in c["queues"].values()) for c in cycles) <= 64


@pytest.mark.parametrize("variant", ["non-preemptible", "only-small", "only-big"])
def test_small_big_on_a_hundred_nodes(tmp_path: Path, variant: str) -> None:
    _cycles, jobs = run(tmp_path, "cpu_1_1_100.yaml", f"small_big/{variant}.yaml", "--config", str(BASIC))
    assert jobs and all(j["state"] == "SUCCEEDED" for j in jobs)


def test_small_big_preemptible_prefix(tmp_path: Path) -> None:
    """38,400 small jobs: run the first 31 simulated minutes (the big queue arrives at 30m)."""
    cycles, jobs = run(
        tmp_path, "cpu_1_3_100.yaml", "small_big/preemptible.yaml", "--config", str(BASIC), "--until", "31m"
    )
    last = cycles[-1]
    assert last["time"] == 1860
    big = last["queues"]["big"]
    assert big["running"] == 10  # ten full nodes for the big queue, by preemption
    assert any(j["state"] == "PREEMPTED" and j["queue"] == "small" for j in jobs)


def test_default_config_and_legacy_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _c, jobs = run(tmp_path, "cpu_1_1_10.yaml", "small-long_big-long/preemptible.yaml")
    assert {j["state"] for j in jobs} == {"SUCCEEDED"}
    _c, jobs = run(
        tmp_path,
        "cpu_1_1_2.yaml",
        "small-long_big-long/preemptible.yaml",
        "--config",
        str(DATA / "configs" / "defaultSchedulingConfig.yaml"),
    )
    assert "'preemption' is an obsolete SchedulingConfig key" in capsys.readouterr().err
    assert any(j["state"] == "PREEMPTED" for j in jobs)


def test_tiny_cluster_has_two_pools(tmp_path: Path) -> None:
    """Pools are scheduled in name order: the first big job (32 cpu, 1Ti) fills the cpu pool's
    only node, the second goes to the gpu pool's 128-cpu node."""
    cycles, jobs = run(tmp_path, "tinyCluster.yaml", "small-short_big-long/only-big.yaml")
    assert sorted(str(j["cluster"]) for j in jobs) == ["pool1-0-0", "pool2-0-0"]
    assert {j["state"] for j in jobs} == {"SUCCEEDED"}
    assert {j["scheduled"] for j in jobs} == {1800}
    assert {c["pool"] for c in cycles} == {"cpu", "gpu"}


def test_unschedulable_workload_stops_instead_of_cycling_forever(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "queues:\n  - name: A\n    jobTemplates:\n      - number: 1\n"
        "        requirements: {resourceRequirements: {requests: {cpu: 64}}}\n"
    )
    out = tmp_path / "o.jsonl"
    clusters = str(DATA / "clusters" / "cpu_1_1_2.yaml")
    assert main(["--clusters", clusters, "--workload", str(workload), "--output", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["state"] for r in records if r["type"] == "job"] == ["QUEUED"]
