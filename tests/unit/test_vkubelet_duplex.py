"""The relay's two-way copy (vkubelet/duplex.py) on real loopback connections: what a peer sent just
before it reset the connection still reaches the other side.

The case of `kubectl exec -i ... -- sh -c 'read l; echo got:$l; exit 4'`: the command exits after
one line while its input still flows; the remote API server sends the last output and the exit
status, then closes a connection that still holds unread input, which resets it. The relay must
hand those last bytes to the front all the same (before duplex, it dropped them a few times in a
hundred and kubectl exited 0 with no output).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import struct
from pathlib import Path

from armada_bridge import certs
from vkubelet import duplex

INPUT = b"".join(b"line %d of the input\n" % i for i in range(20000))
LAST = b"got:line 0 of the input\n" + b"\x03exit status 4"
ROUNDS = 100


async def _round(server_ctx: ssl.SSLContext, client_ctx: ssl.SSLContext) -> bytes:
    """One exec-like session through a relay; what the client received."""

    async def remote(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Read one line of the input, answer, and reset the connection (SO_LINGER 0), its receive
        # queue still full of input, as a closing peer's kernel does.
        await reader.readline()
        writer.write(LAST)
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        far = await duplex.open_connection("127.0.0.1", remote_port, ssl_context=client_ctx)
        await duplex.splice((reader, writer), far, 64 * 1024)

    remote_server = await asyncio.start_server(remote, "127.0.0.1", 0, ssl=server_ctx)
    remote_port = remote_server.sockets[0].getsockname()[1]
    relay_server = await asyncio.start_server(relay, "127.0.0.1", 0)
    relay_port = relay_server.sockets[0].getsockname()[1]
    try:
        reader, writer = await duplex.open_connection("127.0.0.1", relay_port)

        async def send() -> None:
            with contextlib.suppress(ConnectionError):
                for i in range(0, len(INPUT), 4096):
                    writer.write(INPUT[i : i + 4096])
                    await writer.drain()

        sender = asyncio.create_task(send())
        got = b""
        async with asyncio.timeout(30):
            while data := await reader.read(65536):
                got += data
        sender.cancel()
        writer.close()
        return got
    finally:
        relay_server.close()
        remote_server.close()


def test_a_peer_that_resets_while_input_still_flows_still_delivers_its_last_bytes(tmp_path: Path) -> None:
    cert, key = certs.self_signed(tmp_path, "remote", "/CN=remote", ["127.0.0.1"])
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    client_ctx = ssl.create_default_context(cafile=str(cert))

    async def rounds() -> list[bytes]:
        return [await _round(server_ctx, client_ctx) for _ in range(ROUNDS)]

    received = asyncio.run(rounds())
    lost = [r for r in received if r != LAST]
    assert not lost, f"{len(lost)} of {ROUNDS} sessions lost the last bytes: {lost[:3]!r}"
