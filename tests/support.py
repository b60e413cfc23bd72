"""Small helpers shared by the integration and end-to-end tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.25) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


async def wait_for_async(
    what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.1
) -> T:
    """:func:`wait_for` inside an event loop: `probe` (not a coroutine) is called between sleeps
    that let the loop's tasks (informers, workers) run."""
    deadline = time.monotonic() + timeout
    while not (last := probe()):
        assert time.monotonic() <= deadline, (
            f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
        )
        await asyncio.sleep(interval)
    return last
