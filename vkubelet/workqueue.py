"""A keyed work queue (client-go's workqueue, in small): a key is never processed twice at once,
a key added while it is processed is processed again after, failures retry with backoff."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


class WorkQueue:
    def __init__(self, name: str, *, base_delay: float = 0.2, max_delay: float = 30.0) -> None:
        self.name = name
        self._queue: asyncio.Queue[str] = asyncio.Queue()
        self._pending: set[str] = set()  # queued, not yet taken
        self._active: set[str] = set()  # being processed
        self._again: set[str] = set()  # added while active
        self._failures: dict[str, int] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self.base_delay = base_delay
        self.max_delay = max_delay

    def __len__(self) -> int:
        return len(self._pending)

    def add(self, key: str) -> None:
        if key in self._active:
            self._again.add(key)
        elif key not in self._pending:
            self._pending.add(key)
            self._queue.put_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        if key in self._timers:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self._timers.pop(key, None)
            self.add(key)

        self._timers[key] = loop.call_later(delay, fire)

    def retry(self, key: str) -> float:
        n = self._failures.get(key, 0)
        self._failures[key] = n + 1
        delay = min(self.base_delay * 2**n, self.max_delay)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def run(self, worker: Callable[[str], Awaitable[None]], workers: int) -> None:
        async def loop() -> None:
            while True:
                key = await self._queue.get()
                self._pending.discard(key)
                self._active.add(key)
                try:
                    await worker(key)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("%s: processing %s failed", self.name, key)
                    self.retry(key)
                finally:
                    self._active.discard(key)
                    if key in self._again:
                        self._again.discard(key)
                        self.add(key)

        try:
            await asyncio.gather(*(loop() for _ in range(workers)))
        finally:
            for t in self._timers.values():
                t.cancel()
