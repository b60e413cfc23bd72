"""bench/chaos.py's fair-share judge: the soak's queues share what the bridge's other queues leave."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from bench.chaos import fair_shares, unit

pytestmark = pytest.mark.unit


def _pods(name: str, queue: str, size: int, cpu: str, placed: bool) -> list[k8s.V1Pod]:
    out = []
    for body in unit(name, queue, size, cpu):
        md = body["metadata"]
        if placed:
            md["annotations"][keys.ASSIGNED_CLUSTER] = "remote-1"
        out.append(
            k8s.V1Pod(
                metadata=k8s.V1ObjectMeta(
                    name=md["name"], uid=md["name"], labels=md["labels"], annotations=md["annotations"]
                ),
                spec=k8s.V1PodSpec(
                    priority_class_name=body["spec"]["priorityClassName"],
                    containers=[
                        k8s.V1Container(
                            name="main", resources=k8s.V1ResourceRequirements(requests={"cpu": cpu})
                        )
                    ],
                ),
                status=k8s.V1PodStatus(phase="Running" if placed else "Pending"),
            )
        )
    return out


def _load() -> list[k8s.V1Pod]:
    """Each queue asks 120 CPU (more than a third of 256): 60 placed, 60 waiting singles."""
    pods = []
    for q in ("chaos-a", "chaos-b", "chaos-c"):
        pods += [p for i in range(60) for p in _pods(f"{q}-run{i}", q, 1, "1", placed=True)]
        pods += [p for i in range(60) for p in _pods(f"{q}-wait{i}", q, 1, "1", placed=False)]
    return pods


def test_shares_split_the_whole_capacity_when_the_soak_is_alone() -> None:
    shares = fair_shares(_load(), {}, capacity=256.0)
    assert sorted(shares) == ["chaos-a", "chaos-b", "chaos-c"]
    for s in shares.values():
        assert s["fair"] == pytest.approx(256 / 3)
        assert s["demand"] == 120 and s["allocated"] == 60 and s["smallest_waiting"] == 1


def test_other_queues_keep_what_they_hold_within_their_share() -> None:
    """The demo's gang (32 CPU, queue default, all placed) is not the soak's room: without it the
    judge would ask each soak queue for 85.3 CPU of the 74.7 there is."""
    shares = fair_shares(_load(), {}, capacity=256.0, others={"default": (32.0, 32.0)})
    assert "default" not in shares
    for s in shares.values():
        assert s["fair"] == pytest.approx((256 - 32) / 3)
        assert s["room"] == pytest.approx(256 - 32 - 180)  # free room only: no soak queue above its share


def test_an_other_queue_asking_more_than_its_share_gets_only_its_share() -> None:
    shares = fair_shares(_load(), {}, capacity=256.0, others={"big": (500.0, 10.0)})
    for s in shares.values():
        assert s["fair"] == pytest.approx(256 / 4)
