"""Two copies, one each way, between two peers that may end at any moment (the streaming relays).

A peer that ends while bytes are still being written to it (a `kubectl exec -i` whose command exits
before its input is all sent) often ends with a reset, not a clean close. What it sent just before
is still owed to the other side: the command's last output and its exit status. So a copy that
stops because its destination went away does not cut the copy the other way, which reads from that
very peer: that one runs on to its end (bounded). And a reader fed by `Ending` hands out every byte
that arrived before the reset, then ends, where asyncio's own stream reader raises at once and
drops them; a connection from `open_connection` lets those bytes be read even when a write found the
reset first.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import Coroutine
from typing import Any

Stream = tuple[asyncio.StreamReader, asyncio.StreamWriter]

# How long the copy from a peer that went away may still run to deliver what the peer sent last.
FINISH_SECONDS = 10.0


class DestinationGone(Exception):
    """A copy stopped because what it wrote to went away."""


class Ending(asyncio.StreamReaderProtocol):
    """A stream protocol whose connection, however it is lost, ends its reader after the bytes
    already received (the writer's drain still fails on a lost connection)."""

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(None)


class _ResetReadLast(socket.socket):
    """A socket whose send into a reset connection reports nothing: the next read reports the
    reset, after the bytes that arrived before it. (asyncio closes a transport at its first failed
    send, dropping what the kernel still holds for it to read.)"""

    def send(self, data: Any, flags: int = 0) -> int:
        try:
            return super().send(data, flags)
        except (ConnectionResetError, BrokenPipeError):
            return len(data)


async def _connected(host: str, port: int) -> _ResetReadLast:
    loop = asyncio.get_running_loop()
    errors: list[OSError] = []
    for family, type_, proto, _, address in await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        sock = _ResetReadLast(family, type_, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, address)
            return sock
        except BaseException as e:
            sock.close()
            if not isinstance(e, OSError):
                raise
            errors.append(e)
    raise errors[-1] if errors else OSError(f"{host}: no address")


async def open_connection(
    host: str, port: int, *, ssl_context: ssl.SSLContext | None = None, limit: int = 2**16
) -> Stream:
    """asyncio.open_connection for a relay: an Ending reader on a _ResetReadLast socket."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit, loop=loop)
    transport, protocol = await loop.create_connection(
        lambda: Ending(reader, loop=loop),
        sock=await _connected(host, port),
        ssl=ssl_context,
        server_hostname=host if ssl_context else None,
    )
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def write(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write and drain; a destination that went away raises DestinationGone."""
    try:
        writer.write(data)
        await writer.drain()
    except (ConnectionError, OSError) as e:
        raise DestinationGone(str(e)) from e


async def copy(src: asyncio.StreamReader, dst: asyncio.StreamWriter, chunk: int) -> None:
    """Copy until `src` ends (or DestinationGone)."""
    while data := await src.read(chunk):
        await write(dst, data)


async def both_ways(there: Coroutine[Any, Any, object], back: Coroutine[Any, Any, object]) -> list[object]:
    """Run the two copies until either ends, then cancel the other, unless the first ended with
    DestinationGone: then the other reads from the peer that went away and gets FINISH_SECONDS to
    deliver what it sent last. Returns both outcomes (a result, or the exception that ended it)."""
    tasks = [asyncio.create_task(there), asyncio.create_task(back)]
    try:
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        if pending and any(not t.cancelled() and isinstance(t.exception(), DestinationGone) for t in done):
            await asyncio.wait(pending, timeout=FINISH_SECONDS)
    finally:
        for t in tasks:
            t.cancel()
        outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    return list(outcomes)


async def splice(a: Stream, b: Stream, chunk: int) -> None:
    """Copy both ways between two connections until either side ends (TLS has no half-close; see
    both_ways for when the other copy still runs), then close both."""
    try:
        await both_ways(copy(a[0], b[1], chunk), copy(b[0], a[1], chunk))
    finally:
        for _, w in (a, b):
            w.close()
        for _, w in (a, b):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await w.wait_closed()
