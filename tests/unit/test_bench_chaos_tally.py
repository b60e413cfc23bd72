"""bench/chaos's tally of its invariants: each one's runs and errors are counted and printed, and
an invariant that never ran (every check of it failed) is a violation, so the soak exits 1."""

from __future__ import annotations

import json

import pytest

from bench.chaos.report import CONVERGED, INVARIANTS, ONE_REMOTE_POD, REMOTE_GC, NotAnswered, Report, output

pytestmark = pytest.mark.unit


def _fails() -> None:
    raise NotAnswered("remote-1 did not answer")


def test_runs_and_errors_are_counted() -> None:
    r = Report(seed=1)
    assert r.tally.run(ONE_REMOTE_POD, lambda: None) is None
    assert r.tally.run(CONVERGED, lambda: ["a problem"]) == ["a problem"]
    assert r.tally.run(ONE_REMOTE_POD, _fails) is None
    counts = r.tally.counts()
    assert counts[ONE_REMOTE_POD] == {
        "runs": 1,
        "errors": 1,
        "last_error": "NotAnswered: remote-1 did not answer",
    }
    assert counts[CONVERGED] == {"runs": 1, "errors": 0, "last_error": None}
    assert counts[REMOTE_GC] == {"runs": 0, "errors": 0, "last_error": None}
    assert list(counts) == list(INVARIANTS)


def test_an_invariant_that_never_ran_is_a_violation() -> None:
    r = Report(seed=1)
    for name in INVARIANTS:
        if name != REMOTE_GC:
            r.tally.run(name, lambda: None)
    for _ in range(3):
        r.tally.run(REMOTE_GC, _fails)
    r.judge()
    assert r.violations == [
        f"invariant {REMOTE_GC!r} never ran (3 errors, the last: NotAnswered: remote-1 did not answer)"
    ]


def test_every_invariant_ran_no_violation() -> None:
    r = Report(seed=1)
    for name in INVARIANTS:
        r.tally.run(name, _fails)  # an error now and then is no violation once it also ran
        r.tally.run(name, lambda: None)
    r.judge()
    assert r.violations == []


def test_runs_and_errors_in_both_outputs() -> None:
    r = Report(seed=7)
    r.tally.run(ONE_REMOTE_POD, lambda: None)
    r.tally.run(ONE_REMOTE_POD, lambda: None)
    r.tally.run(REMOTE_GC, _fails)
    r.judge()
    got = json.loads(output(r, 2, as_json=True))
    assert got["invariants"][ONE_REMOTE_POD] == {"runs": 2, "errors": 0, "last_error": None}
    assert got["invariants"][REMOTE_GC]["runs"] == 0 and got["invariants"][REMOTE_GC]["errors"] == 1
    assert any("never ran" in v for v in got["violations"])
    text = output(r, 2, as_json=False)
    assert f"    {ONE_REMOTE_POD}: 2 runs, 0 errors" in text.splitlines()
    assert f"    {REMOTE_GC}: 0 runs, 1 errors (the last: NotAnswered: remote-1 did not answer)" in text
    assert f"violations: {len(INVARIANTS) - 1}" in text  # every invariant but one never ran
