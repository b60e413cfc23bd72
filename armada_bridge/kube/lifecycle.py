"""One process lifecycle for the bridge's components: signals, leader election, the tasks every
replica runs, the work only the leader does, and an orderly shutdown."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from armada_bridge.kube.leader import LeaderElector

log = logging.getLogger(__name__)


def hostport(value: str) -> tuple[str, int]:
    """A command line's HOST:PORT (an argparse type)."""
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


async def wait_set(event: asyncio.Event, timeout: float) -> bool:
    """Wait until `event` is set or `timeout` seconds pass (False). Not asyncio.wait_for: on Python
    3.11 it returns instead of raising when cancelled just as the event is set, and a loop around it
    then outlives its cancellation (a component that never stops on SIGTERM)."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True


async def run_together(coros: Iterable[Coroutine[Any, Any, Any]]) -> None:
    """Run the coroutines as tasks until one ends (its error raised); the others are cancelled."""
    tasks = [asyncio.create_task(c) for c in coros]
    try:
        await asyncio.gather(*tasks)
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def run_until_stopped(
    *,
    lead: Callable[[], Coroutine[Any, Any, None]],
    elector: LeaderElector | None = None,
    always: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    on_leader: Callable[[], None] | None = None,
    cleanup: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
) -> int:
    """Run until SIGTERM/SIGINT (exit code 0), or until something ends that should not: a task
    fails, or leadership is lost (exit code 1: a fresh process rebuilds its state from the
    clusters). ``lead`` runs once this replica leads (at once without an elector); ``always``
    on every replica; ``cleanup`` in order, after everything stopped and the lease is released."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    async def leading() -> None:
        if elector is not None:
            await elector.is_leader.wait()
        if on_leader is not None:
            on_leader()
        await lead()

    stopper = asyncio.create_task(stop.wait(), name="signals")
    tasks = [stopper, asyncio.create_task(leading(), name="lead")]
    tasks += [asyncio.create_task(f(), name=getattr(f, "__qualname__", "task")) for f in always]
    if elector is not None:
        tasks.append(asyncio.create_task(elector.run(), name="leader-election"))
    code = 0
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for t in done:
            if t is stopper:
                continue
            code = 1
            error = t.exception()
            if error is not None:
                log.error("stopping: %s ended with %s: %s", t.get_name(), type(error).__name__, error)
            else:
                log.error("stopping: %s ended", t.get_name())
        if elector is not None and elector.lost.is_set():
            log.error("lost leadership: exiting so a fresh process rebuilds its state")
            code = 1
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if elector is not None:
            await elector.release()
        for c in cleanup:
            await c()
    return code
