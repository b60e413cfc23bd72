"""Finding the processes of ours: every one names our state directory on its command line."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def processes() -> dict[int, str]:
    """pid -> command line of every live process."""
    out: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if raw:
            out[int(entry.name)] = raw.replace(b"\0", b" ").decode(errors="replace")
    return out


def process_cmdline(pid: int) -> list[str] | None:
    """The argument vector of a live process (None when it is gone)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")[:-1] if raw else None


def pids_under(directory: Path) -> list[int]:
    """Live processes (other than this one) whose command line names a path inside `directory`."""
    marker = str(directory) + "/"
    me = os.getpid()
    return [pid for pid, cmd in processes().items() if marker in cmd and pid != me]


def alive(pid: int) -> bool:
    """True until the process has fully exited and so closed its sockets.

    A multi-threaded process shows its leader as a zombie while other threads are still exiting
    (and still hold its files), so a zombie counts as gone only once it has no other thread.
    """
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z" or len(os.listdir(f"/proc/{pid}/task")) > 1
    except OSError:
        return False


def kill_and_wait(pids: list[int], timeout: float = 15) -> list[int]:
    """SIGKILL `pids` and wait until they are gone; return the ones still alive after `timeout`."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    remaining = [p for p in pids if alive(p)]
    while remaining and time.monotonic() < deadline:
        time.sleep(0.05)
        remaining = [p for p in remaining if alive(p)]
    return remaining
