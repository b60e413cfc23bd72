"""Listening ports of the local environment, chosen by us."""

from __future__ import annotations

import contextlib
import random
import socket

from devenv.base import ClusterError

LOOPBACK = "127.0.0.1"


# Listening ports are drawn below the kernel's ephemeral range (32768-60999 by default), so no
# outgoing connection can take one between our choice and the component's bind.
PORT_RANGE = (20000, 32700)


def free_ports(count: int, rng: random.Random | None = None) -> list[int]:
    """`count` distinct loopback ports that are free right now, drawn at random from PORT_RANGE.

    kwokctl would pick ports itself, but deterministically from 32767 down, so clusters created at
    the same time collide; we choose them instead (at random, so two environments started at once
    do not pick the same) and create clusters in parallel.
    """
    rng = rng or random.SystemRandom()
    ports: list[int] = []
    with contextlib.ExitStack() as stack:
        for _ in range(count * 50):
            if len(ports) == count:
                return ports
            port = rng.randrange(*PORT_RANGE)
            if port in ports:
                continue
            s = stack.enter_context(socket.socket())
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            ports.append(port)
    raise ClusterError(f"could not find {count} free loopback ports in {PORT_RANGE}")
