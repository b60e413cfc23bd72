"""bench/cpu.py's ceilings: where CPU per pod bounds the bridge's throughput."""

from __future__ import annotations

import pytest

from bench.cpu import EXTENDER, MACHINE, Sample, by_process, ceilings, process_key


def test_ceilings_from_cpu_per_pod() -> None:
    direct = {MACHINE: 15.0, "remote-1": 6.0, "remote-2": 6.0, "front": 0.2, "benchmark": 1.0}
    bridge = {
        MACHINE: 60.0,
        "front": 22.0,
        "remote-1": 11.0,
        "remote-2": 7.0,
        "extender": 6.0,
        "vkubelet": 4.0,
        "benchmark": 2.0,
    }
    c = ceilings(direct, bridge, ("remote-1", "remote-2"))
    assert c["shared_machine"] == pytest.approx(0.25)
    assert c["remotes_ratio"] == pytest.approx(1.5)  # 18 against 12 ms
    assert c["remotes_alone"] == pytest.approx(2 / 3)
    assert c["front_side_ratio"] == pytest.approx(32 / 15)  # front 22 + extender 6 + vkubelet 4


def test_a_group_missing_on_a_side_counts_nothing() -> None:
    c = ceilings({MACHINE: 10.0, "remote-1": 8.0}, {MACHINE: 20.0, "remote-1": 8.0}, ("remote-1", "remote-2"))
    assert c["remotes_ratio"] == pytest.approx(1.0)
    assert c["front_side_ratio"] == 0.0


def test_by_process_keeps_the_front_apart_and_sums_the_remotes() -> None:
    names = {
        1: "kube-apiserver",
        2: "kube-apiserver",
        3: "kube-apiserver",
        4: "etcd",
        5: EXTENDER,
        6: EXTENDER,
    }
    before = Sample(
        {"front": {1: 10.0, 4: 1.0}, "remote-1": {2: 5.0}, "remote-2": {3: 5.0}, EXTENDER: {5: 2.0}},
        names,
        machine=100.0,
        at=0.0,
    )
    after = Sample(  # extender replica 6 started meanwhile: it counts whole
        {"front": {1: 14.0, 4: 1.5}, "remote-1": {2: 6.0}, "remote-2": {3: 7.0}, EXTENDER: {5: 3.0, 6: 0.5}},
        names,
        machine=120.0,
        at=10.0,
    )
    out = by_process(before, after)
    assert out == {
        "front kube-apiserver": 4.0,
        "front etcd": 0.5,
        "remotes kube-apiserver": 3.0,
        EXTENDER: pytest.approx(1.5),
    }
    assert process_key("remote-7", "kwok") == "remotes kwok"
    less = by_process(before, after, idle={"front kube-apiserver": 0.1})
    assert less["front kube-apiserver"] == pytest.approx(3.0)
