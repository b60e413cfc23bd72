"""The benchmarks' code, run small on the real environment: it must run to the end and report
figures for both sides. No timing is asserted (figures live in docs/performance.md)."""

from __future__ import annotations

import argparse
import asyncio

import pytest
from kubernetes import client as k8s

from bench import admission_policies, memory, pipeline
from devenv.processes.environment import Environment
from tests.framework.bridge import Api

# Alone in the environment: the benchmarks measure the bridge's throughput and processes, and one deletes the bridge's admission policies for a while.
pytestmark = pytest.mark.exclusive


def test_pipeline_benchmark_runs_small(dev_env: Environment, namespace: str) -> None:
    args = argparse.Namespace(
        pods=60,
        gang_share=0.5,
        gang_min=4,
        gang_max=8,
        cpu="50m",
        queue=namespace,  # the test namespace's queue: the benchmark's namespace is labelled for it
        seed=3,
        timeout=300,
        no_token=False,
        idle_seconds=0,  # raw CPU per pod: nothing subtracted
    )
    r = asyncio.run(pipeline.main_async(args))
    assert r["pods"] == 60 and r["gangs"] > 0
    for side in ("direct", "bridge"):
        assert {"wall_s", "pods_per_s", "pod_p50_s", "pod_p99_s", "gang_p50_s", "gang_p99_s"} <= set(r[side])
    assert sum(r["by_cluster"].values()) == 60 and "?" not in r["by_cluster"], r["by_cluster"]
    # Every pod was seen at every stage of its way (where the time goes, per step).
    assert [s["step"] for s in r["bridge"]["stages"]] == [
        "created -> decided",
        "decided -> bound",
        "bound -> remote created",
        "remote created -> remote running",
        "remote running -> running",
    ], r["bridge"]["stages"]
    assert [s["step"] for s in r["direct"]["stages"]] == ["created -> bound", "bound -> running"]
    # CPU per pod by part of the environment: each side names the same parts, and the bridge's
    # own processes were found and did work for its pods (raw figures: no rest subtracted).
    parts = {"front", "remote-1", "remote-2", "extender", "vkubelet", "benchmark", "machine", "other"}
    assert parts <= set(r["direct"]["cpu_ms_per_pod"]) == set(r["bridge"]["cpu_ms_per_pod"])
    assert r["bridge"]["cpu_ms_per_pod"]["extender"] > 0 and r["bridge"]["cpu_ms_per_pod"]["vkubelet"] > 0, r
    assert r["cpu_per_pod_ratio"] > 0
    # The per-pod profile: CPU by process and the API servers' writes by verb and resource; every
    # pod was created once on its side (raw counts: a retried create counts again).
    profile = r["profile"]
    assert {"front kube-apiserver", "remotes kube-apiserver", "remotes etcd"} <= set(
        profile["bridge"]["cpu_ms"]
    )
    assert profile["direct"]["writes"]["remotes POST pods"] >= 1, profile["direct"]["writes"]
    assert profile["bridge"]["writes"]["front POST pods"] >= 1, profile["bridge"]["writes"]
    assert profile["bridge"]["writes"]["front POST pods/binding"] >= 1, profile["bridge"]["writes"]


def test_memory_benchmark_runs_small(dev_env: Environment, namespace: str) -> None:
    args = argparse.Namespace(
        pods=40, step=20, cpu="10m", token=False, queue=namespace, timeout=300, plot=None
    )
    r = asyncio.run(memory.main_async(args))
    assert [row["pods"] for row in r["rows"]] == [0, 20, 40]
    names = set(r["peak_mb"])
    assert "vkubelet" in names and "extender" in names, names
    # RSS read for every process at every step, and the peak is at least each reading.
    for row in r["rows"]:
        assert all(0 < row[n] <= r["peak_mb"][n] + 1 for n in names), row
    assert set(r["cpu_seconds_per_1000_pods"]) == names
    assert all(v > 0 for v in r["cpu_seconds_per_1000_pods"].values()), r["cpu_seconds_per_1000_pods"]


def test_admission_policies_benchmark_runs_small_and_puts_the_policies_back(cluster_api: Api) -> None:
    front = k8s.AdmissionregistrationV1Api(cluster_api("front"))
    r = asyncio.run(admission_policies.main_async(argparse.Namespace(writes=40, rounds=2)))
    assert len(r["cpu_ms_per_write"]["with policies"]) == len(r["cpu_ms_per_write"]["without"]) == 2
    assert r["median_with_policies_ms"] > 0 and r["median_without_ms"] > 0, r
    # The tenant's writes went through in both cases, and the policies hold again afterwards.
    names = {p.metadata.name for p in front.list_validating_admission_policy().items}
    assert {"armada-bridge-decisions", "armada-bridge-virtual-nodes"} <= names, names
