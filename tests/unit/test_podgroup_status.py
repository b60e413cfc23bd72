"""PodGroup status as Volcano / scheduler-plugins would write it (extender/protocols/)."""

from __future__ import annotations

from typing import Any

import pytest

from armada_bridge.core.quantities import parse_resources
from extender.protocols import coscheduling, volcano, workload
from extender.protocols.base import GangState, MemberCounts
from extender.protocols.coscheduling import CoschedulingPhase, occupied_by
from extender.protocols.volcano import VOLCANO_SCHEDULED_REASON, VolcanoPhase
from tests.framework.pods import pod

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:01:00Z"


def member(phase: str = "Pending", node: str | None = None, owner: str = "job") -> dict[str, Any]:
    return pod(
        namespace="ns",
        owners=[{"kind": "PyTorchJob", "name": owner, "controller": True}],
        cpu=None,
        spec={"nodeName": node} if node else {},
        phase=phase,
    )


def pods(*specs: tuple[str, bool]) -> list[dict[str, Any]]:
    return [member(phase, "remote-1" if bound else None) for phase, bound in specs]


# ------------------------------------------------------------------------------------- counts
def test_member_counts() -> None:
    counts = MemberCounts.of(
        pods(("Pending", False), ("Pending", True), ("Running", True), ("Succeeded", True), ("Failed", True))
    )
    assert counts == MemberCounts(total=5, scheduled=4, running=1, succeeded=1, failed=1)
    assert counts.completed == 2


# ------------------------------------------------------------------------------------- Volcano
def test_volcano_pending_before_admission() -> None:
    status = volcano.status_of(GangState.WAITING, [], min_member=3, now=T0, message="queue over fair share")
    assert status["phase"] == "Pending"
    (cond,) = status["conditions"]
    assert cond["type"] == "Unschedulable" and cond["status"] == "True"
    assert cond["reason"] == "NotEnoughTasks"  # no pod exists yet
    assert cond["message"].startswith(
        "3/0 tasks in gang unschedulable: pod group is not ready, 3 minAvailable"
    )
    assert cond["message"].endswith("; queue over fair share")
    assert cond["lastTransitionTime"] == T0
    assert "running" not in status  # omitempty


def test_volcano_not_enough_resources_when_all_members_exist() -> None:
    status = volcano.status_of(
        GangState.WAITING, pods(("Pending", False), ("Pending", False)), min_member=2, now=T0
    )
    assert status["conditions"][0]["reason"] == "NotEnoughResources"


def test_volcano_admitted_gang_is_inqueue_before_its_pods_exist() -> None:
    """training-operator creates pods only once its PodGroup is Inqueue."""
    status = volcano.status_of(GangState.ADMITTED, [], min_member=4, now=T0)
    assert status["phase"] == "Inqueue"
    (cond,) = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("Scheduled", "True", VOLCANO_SCHEDULED_REASON)


def test_volcano_running_unknown_completed() -> None:
    bound = pods(("Running", True), ("Running", True), ("Pending", True))
    status = volcano.status_of(GangState.RUNNING, bound, min_member=3, now=T0)
    assert status["phase"] == "Running" and status["running"] == 2
    # some run while the rest can no longer be placed (e.g. a member was lost): Unknown
    assert volcano.status_of(
        GangState.WAITING, pods(("Running", True), ("Pending", False)), min_member=2, now=T0
    )["phase"] == ("Unknown")
    done = pods(("Succeeded", True), ("Succeeded", True), ("Failed", True))
    status = volcano.status_of(GangState.RUNNING, done, min_member=3, now=T0)
    assert status["phase"] == "Completed" and status["succeeded"] == 2 and status["failed"] == 1


def test_volcano_inqueue_is_sticky() -> None:
    assert (
        volcano.phase_of(GangState.WAITING, MemberCounts(), min_member=2, previous_phase="Inqueue")
        == VolcanoPhase.INQUEUE
    )
    assert (
        volcano.phase_of(GangState.WAITING, MemberCounts(), min_member=2, previous_phase="Pending")
        == VolcanoPhase.PENDING
    )


def test_volcano_spark_reservation_running_once_driver_bound() -> None:
    assert (
        volcano.status_of(GangState.RUNNING, pods(("Running", True)), min_member=1, now=T0)["phase"]
        == "Running"
    )


def test_volcano_status_is_stable_and_conditions_flip() -> None:
    waiting = volcano.status_of(GangState.WAITING, [], min_member=2, now=T0)
    again = volcano.status_of(GangState.WAITING, [], min_member=2, now=T1, previous=waiting)
    assert again == waiting  # unchanged: same lastTransitionTime, nothing to write
    admitted = volcano.status_of(GangState.ADMITTED, [], min_member=2, now=T1, previous=waiting)
    by_type = {c["type"]: c for c in admitted["conditions"]}
    assert by_type["Scheduled"]["status"] == "True" and by_type["Scheduled"]["lastTransitionTime"] == T1
    assert by_type["Unschedulable"]["status"] == "False"
    assert volcano.status_of(GangState.ADMITTED, [], min_member=2, now="later", previous=admitted) == admitted


def test_volcano_keeps_foreign_conditions_and_transition_id() -> None:
    previous = {
        "phase": "Pending",
        "conditions": [
            {"type": "Other", "status": "True"},
            {
                "type": "Scheduled",
                "status": "True",
                "reason": VOLCANO_SCHEDULED_REASON,
                "transitionID": "t-1",
                "lastTransitionTime": T0,
            },
        ],
    }
    status = volcano.status_of(GangState.ADMITTED, [], min_member=1, now=T1, previous=previous)
    assert {"type": "Other", "status": "True"} in status["conditions"]
    scheduled = next(c for c in status["conditions"] if c["type"] == "Scheduled")
    assert scheduled["transitionID"] == "t-1" and scheduled["lastTransitionTime"] == T0


# ------------------------------------------------------------------------------------- enqueue decision
FREE = {
    "remote-1": parse_resources({"cpu": "8", "memory": "32Gi"}),
    "remote-2": parse_resources({"cpu": "64", "memory": "8Gi"}),
}


def test_enqueue_when_min_resources_fit_one_cluster() -> None:
    d = volcano.should_enqueue(
        queue_exists=True,
        queue_name="q",
        min_resources=parse_resources({"cpu": "6", "memory": "16Gi"}),
        room_by_domain=FREE,
    )
    assert d.inqueue and "remote-1" in d.message


def test_no_enqueue_when_only_the_sum_of_clusters_fits() -> None:
    d = volcano.should_enqueue(
        queue_exists=True,
        queue_name="q",
        min_resources=parse_resources({"cpu": "16", "memory": "16Gi"}),
        room_by_domain=FREE,
    )
    assert not d.inqueue and d.reason == "NotEnoughResources" and "cpu=16" in d.message


def test_enqueue_without_min_resources() -> None:
    assert volcano.should_enqueue(
        queue_exists=True, queue_name="q", min_resources=None, room_by_domain={}
    ).inqueue


@pytest.mark.parametrize(
    ("kw", "reason"),
    [
        ({"queue_exists": False}, "QueueNotFound"),
        ({"queue_cordoned": True}, "QueueCordoned"),
        ({"queue_headroom": parse_resources({"cpu": "1"})}, "NotEnoughResources"),
    ],
)
def test_no_enqueue(kw: dict[str, Any], reason: str) -> None:
    args: dict[str, Any] = {
        "queue_exists": True,
        "queue_name": "q",
        "min_resources": parse_resources({"cpu": "2"}),
        "room_by_domain": FREE,
    }
    args.update(kw)
    d = volcano.should_enqueue(**args)
    assert not d.inqueue and d.reason == reason and d.message


# ------------------------------------------------------------------------------------- Coscheduling
def test_coscheduling_lifecycle() -> None:
    s = coscheduling.status_of(GangState.WAITING, [], min_member=2, now=T0)
    assert s == {"phase": "Pending"}
    s = coscheduling.status_of(GangState.WAITING, pods(("Pending", False)), min_member=2, now=T0, previous=s)
    assert s["phase"] == "Pending"
    two = [member(), member()]
    s = coscheduling.status_of(GangState.ADMITTED, two, min_member=2, now=T1, previous=s)
    assert s["phase"] == "Scheduling"
    assert s["occupiedBy"] == "ns/job"
    assert s["scheduleStartTime"] == T1
    s = coscheduling.status_of(
        GangState.RUNNING, pods(("Running", True), ("Running", True)), min_member=2, now="t2", previous=s
    )
    assert s["phase"] == "Running" and s["running"] == 2 and s["scheduleStartTime"] == T1
    s = coscheduling.status_of(
        GangState.RUNNING, pods(("Succeeded", True), ("Succeeded", True)), min_member=2, now="t3", previous=s
    )
    assert s["phase"] == "Finished" and s["succeeded"] == 2
    # final
    assert (
        coscheduling.status_of(GangState.WAITING, [], min_member=2, now="t4", previous=s)["phase"]
        == "Finished"
    )


def test_coscheduling_failed_and_back_to_pending() -> None:
    running = {"phase": "Running"}
    s = coscheduling.status_of(
        GangState.RUNNING, pods(("Failed", True), ("Running", True)), min_member=2, now=T0, previous=running
    )
    assert s["phase"] == CoschedulingPhase.FAILED and s["failed"] == 1
    s = coscheduling.status_of(
        GangState.RUNNING, pods(("Running", True)), min_member=2, now=T0, previous=running
    )
    assert s["phase"] == "Pending"  # a member disappeared


def test_coscheduling_first_call_reaches_fixed_point() -> None:
    s = coscheduling.status_of(
        GangState.RUNNING, pods(("Running", True), ("Running", True)), min_member=2, now=T0
    )
    assert s["phase"] == "Running"
    assert (
        coscheduling.status_of(
            GangState.RUNNING, pods(("Running", True), ("Running", True)), min_member=2, now=T1, previous=s
        )
        == s
    )


def test_occupied_by() -> None:
    p = member()
    p["metadata"]["ownerReferences"].append({"name": "a-owner"})
    assert occupied_by(p) == "ns/a-owner,ns/job"
    assert occupied_by({"metadata": {}}) == ""


# ------------------------------------------------------------------------------------- native
def test_native_conditions() -> None:
    (c,) = workload.conditions(GangState.WAITING, now=T0, message="no room")
    assert (c["type"], c["status"], c["reason"], c["message"]) == (
        "PodGroupInitiallyScheduled",
        "False",
        "Unschedulable",
        "no room",
    )
    (c,) = workload.conditions(GangState.ADMITTED, now=T1, previous={"conditions": [c]})
    assert (c["status"], c["reason"], c["lastTransitionTime"], c["message"]) == ("True", "Scheduled", T1, "")
    # terminal: once True it stays True
    (c2,) = workload.conditions(GangState.WAITING, now="t2", previous={"conditions": [c]})
    assert c2 == c
