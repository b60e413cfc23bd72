"""The room the tests against the shared environment hold (tests/framework/room.py): ordinary tests
together, an exclusive one alone, and no newcomer slipping in while an exclusive one waits."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

from tests.framework import room


def _gate_taken(state_dir: Path) -> bool:
    with open(state_dir / room.GATE, "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def _until(what: str, check: object, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_ordinary_tests_share_the_room(tmp_path: Path) -> None:
    inside = threading.Barrier(3, timeout=10)

    def test() -> None:
        with room.held(tmp_path, exclusive=False):
            inside.wait()  # all three in at once, or the barrier breaks

    threads = [threading.Thread(target=test) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not inside.broken


def test_an_exclusive_test_waits_for_the_room_to_empty_and_keeps_newcomers_out(tmp_path: Path) -> None:
    entered: list[str] = []
    leave = {name: threading.Event() for name in ("early", "alone", "late")}

    def test(name: str, exclusive: bool) -> threading.Thread:
        def run() -> None:
            with room.held(tmp_path, exclusive=exclusive):
                entered.append(name)
                leave[name].wait(10)

        t = threading.Thread(target=run)
        t.start()
        return t

    early = test("early", False)
    _until("the first test holds the room", lambda: entered == ["early"])
    alone = test("alone", True)
    _until("the exclusive test waits at the gate", lambda: _gate_taken(tmp_path))
    late = test("late", False)
    time.sleep(0.3)
    assert entered == ["early"], "nobody joins the room while an exclusive test waits for it"
    leave["early"].set()
    _until("the exclusive test has the room", lambda: entered == ["early", "alone"])
    time.sleep(0.3)
    assert entered == ["early", "alone"], "the exclusive test has the room alone"
    leave["alone"].set()
    leave["late"].set()
    for t in (early, alone, late):
        t.join(10)
    assert entered == ["early", "alone", "late"]
