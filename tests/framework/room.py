"""Who may use the shared environment at once: every test against it holds the room, shared by
default; a test marked `exclusive` (it stops or reconfigures what every test uses, or needs the
remotes' capacity to itself) holds it alone. Test processes (pytest-xdist's workers, or two runs
side by side) agree through two file locks in the environment's state directory:

- the room: shared by ordinary tests, exclusive for an `exclusive` one;
- the gate before it, which a waiting exclusive test holds, so that no ordinary test enters while
  it waits for the room to empty (else a stream of short tests would keep it out for good).

A process that dies lets go of its locks with it (flock)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

GATE = "tests-gate.lock"
ROOM = "tests-room.lock"


@contextmanager
def held(state_dir: Path, exclusive: bool) -> Iterator[None]:
    """Hold the room (alone when `exclusive`) for the block."""
    state_dir.mkdir(parents=True, exist_ok=True)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    with open(state_dir / ROOM, "a") as room:
        with open(state_dir / GATE, "a") as gate:
            fcntl.flock(gate, mode)
            try:
                fcntl.flock(room, mode)
            finally:
                fcntl.flock(gate, fcntl.LOCK_UN)
        try:
            yield
        finally:
            fcntl.flock(room, fcntl.LOCK_UN)


@contextmanager
def one_at_a_time(path: Path) -> Iterator[None]:
    """Hold the lock file `path` alone for the block (say, one test process starting the
    environment while the others wait for it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield
