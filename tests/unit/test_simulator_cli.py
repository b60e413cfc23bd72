"""`simulate` input handling: formats, durations, and errors that name the file and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from extender.simulator.cli import main
from extender.simulator.spec import parse_duration

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[2] / "extender" / "simulator" / "testdata"
CLUSTERS = str(DATA / "clusters" / "cpu_1_1_2.yaml")
WORKLOAD = str(DATA / "workloads" / "basicWorkload.yaml")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("5m", 300),
        ("36s", 36),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("250ms", 0.25),
        (90, 90),
        ("0", 0),
        ("720000", 720000),
        ("1.5", 1.5),
    ],
)
def test_parse_duration(text: str | int, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["5 minutes", "m5", "-3s", "1d", "-60", "1e3", "nan"])
def test_parse_duration_rejects(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(bad)


def write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_table_format(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--clusters", CLUSTERS, "--workload", WORKLOAD, "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "Basic Workload on 1 cluster with 2 32-core nodes" in out
    assert "queue" in out and "succeeded" in out
    row = next(line for line in out.splitlines() if line.startswith("A "))
    assert row.split()[2:5] == ["10", "10", "0"]


@pytest.mark.parametrize("until", ["60s", "60", "1m"])
def test_jsonl_to_stdout_and_until(capsys: pytest.CaptureFixture[str], until: str) -> None:
    assert main(["--clusters", CLUSTERS, "--workload", WORKLOAD, "--until", until]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    cycles = [r for r in records if r["type"] == "cycle"]
    jobs = [r for r in records if r["type"] == "job"]
    assert cycles[-1]["time"] == 60
    assert {j["state"] for j in jobs} == {"RUNNING"}
    assert set(jobs[0]) == {
        "type",
        "id",
        "queue",
        "state",
        "cluster",
        "node",
        "submitted",
        "scheduled",
        "finished",
    }
    assert set(cycles[0]["queues"]["A"]) == {
        "fair_share",
        "adjusted_fair_share",
        "actual_share",
        "running",
        "scheduled",
        "preempted",
    }


def error_of(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = error_of(["--clusters", str(tmp_path / "nope.yaml"), "--workload", WORKLOAD], capsys)
    assert "nope.yaml: ClusterSpec file not found" in err


def test_bad_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "c.yaml", "name: [unclosed\n")
    assert "c.yaml: not valid YAML" in error_of(["--clusters", bad, "--workload", WORKLOAD], capsys)


def test_bad_quantity_names_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "c.yaml",
        "clusters:\n  - name: c\n    pool: p\n    nodeTemplates:\n      - number: 1\n"
        "        totalResources:\n          resources:\n            cpu: lots\n",
    )
    err = error_of(["--clusters", bad, "--workload", WORKLOAD], capsys)
    assert "c.yaml: invalid ClusterSpec:" in err
    assert "clusters[0].nodeTemplates[0].totalResources.resources: 'lots' is not a Kubernetes quantity" in err


def test_unknown_key_and_wrong_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "w.yaml",
        "queues:\n  - name: A\n    weight: heavy\n    jobTemplates:\n      - number: 3\n        gangCardinality: 2\n"
        "        runtimeDistributon: {minimum: 5m}\n",
    )
    err = error_of(["--clusters", CLUSTERS, "--workload", bad], capsys)
    assert "w.yaml: invalid WorkloadSpec:" in err
    assert "queues[0].weight: Input should be a valid number" in err
    assert "queues[0].jobTemplates[0].runtimeDistributon: unknown key" in err


def test_gang_cardinality_must_divide_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "w.yaml",
        "queues:\n  - name: A\n    jobTemplates:\n      - number: 3\n        gangCardinality: 2\n",
    )
    err = error_of(["--clusters", CLUSTERS, "--workload", bad], capsys)
    assert "queues[0].jobTemplates[0]: number (3) is not exactly divisible by gangCardinality (2)" in err


def test_bad_duration_in_workload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "w.yaml",
        "queues:\n  - name: A\n    jobTemplates:\n      - number: 1\n        earliestSubmitTime: soon\n",
    )
    err = error_of(["--clusters", CLUSTERS, "--workload", bad], capsys)
    assert "queues[0].jobTemplates[0].earliestSubmitTime: 'soon' is not a duration" in err


def test_unknown_priority_class(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(
        tmp_path,
        "w.yaml",
        "queues:\n  - name: A\n    jobTemplates:\n      - number: 1\n        priorityClassName: gold\n",
    )
    err = error_of(["--clusters", CLUSTERS, "--workload", bad], capsys)
    assert "queues[0].jobTemplates[0].priorityClassName: 'gold' is not a priority class" in err


def test_cluster_without_pool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "c.yaml", "clusters:\n  - name: c\n    nodeTemplates: []\n")
    assert "cluster c has no pool set" in error_of(["--clusters", bad, "--workload", WORKLOAD], capsys)


def test_bad_config(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write(tmp_path, "s.yaml", "maximumSchedulingRate: fast\nprotectedFractionOfFairShare: -1\n")
    err = error_of(["--clusters", CLUSTERS, "--workload", WORKLOAD, "--config", bad], capsys)
    assert "s.yaml: invalid SchedulingConfig:" in err
    assert "maximumSchedulingRate: expected a number or +Inf" in err
    assert "protectedFractionOfFairShare" in err


def test_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert "the following arguments are required: --workload" in error_of(["--clusters", CLUSTERS], capsys)
    assert "'soon' is not a duration" in error_of(
        ["--clusters", CLUSTERS, "--workload", WORKLOAD, "--until", "soon"], capsys
    )


def test_dependencies_and_repeats_and_gangs(tmp_path: Path) -> None:
    workload = write(
        tmp_path,
        "w.yaml",
        """
name: deps
randomSeed: 7
queues:
  - name: A
    jobTemplates:
      - id: first
        number: 2
        requirements: {resourceRequirements: {requests: {cpu: 1, memory: 1Gi}}}
        runtimeDistribution: {minimum: 1m}
      - id: second
        number: 4
        dependencies: [first]
        earliestSubmitTimeFromDependencyCompletion: 30s
        gangCardinality: 4
        requirements: {resourceRequirements: {requests: {cpu: 16, memory: 1Gi}}}
        runtimeDistribution: {minimum: 2m, tailMean: 1m}
      - id: again
        number: 1
        repeat: {numTimes: 3, period: 5m}
        requirements: {resourceRequirements: {requests: {cpu: 1}}}
        runtimeDistribution: {minimum: 1m}
""",
    )
    out = tmp_path / "o.jsonl"
    assert main(["--clusters", CLUSTERS, "--workload", workload, "--output", str(out)]) == 0
    jobs = {r["id"]: r for r in map(json.loads, out.read_text().splitlines()) if r["type"] == "job"}
    assert len(jobs) == 2 + 4 + 3
    second = [j for k, j in jobs.items() if k.startswith("second")]
    assert {j["submitted"] for j in second} == {60 + 30}
    # The gang of four 16-cpu jobs all start together and end together (no runtime tail for gangs).
    assert len({j["scheduled"] for j in second}) == 1
    assert len({j["finished"] for j in second}) == 1
    assert sorted(j["submitted"] for k, j in jobs.items() if k.startswith("again")) == [0, 300, 600]
