"""Finding the processes of ours: every one names our state directory on its command line."""

from __future__ import annotations

import os
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


def pids_under(directory: Path) -> list[int]:
    """Live processes (other than this one) whose command line names a path inside `directory`."""
    marker = str(directory) + "/"
    me = os.getpid()
    return [pid for pid, cmd in processes().items() if marker in cmd and pid != me]
