"""Listening ports of the local environment, chosen by us."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

from devenv.base import ClusterError

LOOPBACK = "127.0.0.1"


# Listening ports are drawn below the kernel's ephemeral range (32768-60999 by default), so no
# outgoing connection can take one between our choice and the component's bind.
PORT_RANGE = (20000, 32700)

# The ports each environment on this host has drawn, by its state directory: a port is free when
# drawn and bound by its component only later (seconds, for a cluster's), so environments started
# at once would otherwise draw the same. A user's file, removed with the last environment's ports.
RESERVED = Path(tempfile.gettempdir()) / f"armada-bridge-ports-{os.getuid()}.json"


@contextlib.contextmanager
def _reservations(path: Path) -> Iterator[dict[str, list[int]]]:
    """The reservations of environments still there, read and written back under a lock on their
    directory (held on the directory, so that the file can go when empty)."""
    lock = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            found = dict(json.loads(path.read_text()))
        except (OSError, ValueError):
            found = {}
        held = {holder: list(ports) for holder, ports in found.items() if Path(holder).exists()}
        yield held
        if held:
            path.write_text(json.dumps(held))
        else:
            path.unlink(missing_ok=True)
    finally:
        os.close(lock)


def free_ports(
    count: int, rng: random.Random | None = None, holder: Path | None = None, reserved: Path = RESERVED
) -> list[int]:
    """`count` distinct loopback ports that are free right now and that no environment of this
    host has drawn, at random from PORT_RANGE; with `holder` (an environment's state directory),
    drawn for it: no other draw takes them until `release(holder)` or its directory is gone.

    kwokctl would pick ports itself, but deterministically from 32767 down, so clusters created at
    the same time collide; we choose them instead and create clusters in parallel.
    """
    rng = rng or random.SystemRandom()
    with _reservations(reserved) as held:
        taken = {p for ports in held.values() for p in ports}
        ports: list[int] = []
        with contextlib.ExitStack() as stack:
            for _ in range(count * 50):
                if len(ports) == count:
                    break
                port = rng.randrange(*PORT_RANGE)
                if port in ports or port in taken:
                    continue
                s = stack.enter_context(socket.socket())
                try:
                    s.bind((LOOPBACK, port))
                except OSError:
                    continue
                ports.append(port)
        if len(ports) < count:
            raise ClusterError(f"could not find {count} free loopback ports in {PORT_RANGE}")
        if holder is not None:
            held[str(holder)] = sorted({*held.get(str(holder), []), *ports})
    return ports


def release(holder: Path, reserved: Path = RESERVED) -> None:
    """The ports drawn for `holder` are free for other environments again."""
    with _reservations(reserved) as held:
        held.pop(str(holder), None)
