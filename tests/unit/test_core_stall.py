"""The stall rule (armada_bridge/core/stall.py): a gang one member short, with room reserved for
all, is relaxed after the stall time, once; others keep waiting."""

from __future__ import annotations

import pytest

from armada_bridge.core.stall import StallRule, Waiting

pytestmark = pytest.mark.unit


def test_one_short_with_reservation_is_relaxed_after_the_stall_time_once() -> None:
    rule: StallRule[str] = StallRule(30)
    short = {"mpi": Waiting(present=4, min_member=5, reserves_room=True)}
    assert rule.observe(short, now=0) == []
    assert rule.observe(short, now=29) == []
    assert rule.observe(short, now=31) == ["mpi"]
    assert rule.relaxed == {"mpi": 4}
    assert rule.observe(short, now=100) == []  # once


def test_a_new_member_restarts_the_clock() -> None:
    rule: StallRule[str] = StallRule(30)
    rule.observe({"g": Waiting(3, 5, True)}, now=0)
    assert rule.observe({"g": Waiting(4, 5, True)}, now=20) == []
    assert rule.observe({"g": Waiting(4, 5, True)}, now=45) == []
    assert rule.observe({"g": Waiting(4, 5, True)}, now=51) == ["g"]


@pytest.mark.parametrize(
    "waiting",
    [
        Waiting(present=3, min_member=5, reserves_room=True),  # two short: all or nothing
        Waiting(present=4, min_member=5, reserves_room=False),  # no room reserved for the late one
        Waiting(present=5, min_member=5, reserves_room=True),  # whole: the core decides
    ],
)
def test_others_keep_waiting(waiting: Waiting) -> None:
    rule: StallRule[str] = StallRule(30)
    rule.observe({"g": waiting}, now=0)
    assert rule.observe({"g": waiting}, now=1000) == []


def test_gone_gangs_are_forgotten() -> None:
    rule: StallRule[str] = StallRule(10)
    rule.observe({"g": Waiting(1, 2, True)}, now=0)
    assert rule.observe({"g": Waiting(1, 2, True)}, now=11) == ["g"]
    rule.observe({}, now=12)
    assert rule.seen == {}
    rule.prune({"other"})
    assert rule.relaxed == {}
