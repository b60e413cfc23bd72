"""The dev environment's process supervision, with real processes."""

from __future__ import annotations

import secrets
from pathlib import Path

from devenv.components import Component, Supervisor


def test_a_component_just_started_is_seen_running_by_its_pid(tmp_path: Path) -> None:
    # For a moment after exec, /proc/<pid>/cmdline is empty (caught in about one read in twenty
    # made right after Popen on this machine): a pid read then looked gone, and dev up could fail
    # "exited at start" with an empty log.
    supervisor = Supervisor(tmp_path)
    # A command line of this test's own: `ensure` stops any process running the same command, and
    # a plain `sleep 300` may well be someone else's on this host.
    unique = secrets.randbelow(10**6)
    try:
        for i in range(40):
            c = Component(name=f"sleeper-{i}", argv=["sleep", f"{300 + i}.{unique:06d}"], follows_code=False)
            pid, started = supervisor.ensure(c)
            assert started
            assert supervisor.pid(c.name) == pid, f"start {i}: pid not seen"
            supervisor.wait_ready(c, timeout=5)
            supervisor.stop(c.name)
            assert supervisor.pid(c.name) is None
    finally:
        supervisor.stop_all()


def test_a_component_that_fails_at_start_is_reported_with_its_log(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path)
    c = Component(name="failing", argv=["sh", "-c", "echo no such flag >&2; exit 2"], follows_code=False)
    supervisor.ensure(c)
    try:
        supervisor.wait_ready(c, timeout=5)
    except RuntimeError as e:
        assert "failing exited at start" in str(e) and "no such flag" in str(e)
    else:
        raise AssertionError("a process that exited was taken as ready")
