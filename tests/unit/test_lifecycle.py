"""The process lifecycle's waiting: a loop waiting on an event stops when cancelled."""

from __future__ import annotations

import asyncio

from armada_bridge.kube.lifecycle import wait_set


async def test_wait_set_says_whether_the_event_came() -> None:
    event = asyncio.Event()
    assert await wait_set(event, 0.01) is False
    event.set()
    assert await wait_set(event, 0.01) is True


async def test_a_loop_on_wait_set_stops_when_cancelled_as_its_event_is_set() -> None:
    """The agent's and controller's loops: cancelled at the moment their event is set (a burst of
    changes during SIGTERM), they end; around asyncio.wait_for (Python 3.11) they went on forever."""
    escaped = 0
    for _ in range(50):
        event = asyncio.Event()
        rounds = 0

        async def loop(event: asyncio.Event = event) -> None:
            nonlocal rounds
            while rounds < 1000:
                await wait_set(event, 10)
                event.clear()
                rounds += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(loop())
        await asyncio.sleep(0)
        event.set()
        await asyncio.sleep(0)  # the wait inside has completed, the loop not yet resumed
        task.cancel()

        async def keep_setting(event: asyncio.Event = event) -> None:
            while True:
                event.set()
                await asyncio.sleep(0)

        setter = asyncio.create_task(keep_setting())
        (result,) = await asyncio.gather(task, return_exceptions=True)
        setter.cancel()
        if not isinstance(result, asyncio.CancelledError):
            escaped += 1
    assert escaped == 0
