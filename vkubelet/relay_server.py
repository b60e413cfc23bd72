"""The vkubelet's relay endpoint: where relay pods (vkubelet/relay_pods.py) hand over connections.

A relay opens a TCP connection and sends an HTTP CONNECT for `<front pod UID>:<port>` with Basic
proxy credentials (user `relay`, password the relay's token). The endpoint checks that a relay of
that front pod exists with that token and listens on that port, opens the port of the remote pod
through the remote API server (vkubelet/portforward.py), answers 200 and carries the bytes both
ways; any refusal is an HTTP error status and the connection's end. Plain TCP: it is reached only
over the front cluster's own network, by relays, which carry pod traffic that is plain already.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass

from armada_bridge.kube import Kube
from vkubelet import portforward
from vkubelet.metrics import METRICS
from vkubelet.relay_pods import RELAY_USER

log = logging.getLogger(__name__)

MAX_HEAD = 8 * 1024
HEAD_TIMEOUT = 10.0


@dataclass(frozen=True)
class RelayTarget:
    """What a front pod's relay may reach: the remote pod, through `remote`."""

    remote: Kube
    namespace: str
    pod: str
    token: str  # the relay's
    ports: frozenset[int]  # the relay's


class BadRequest(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason = status, reason


def parse_connect(head: bytes) -> tuple[str, int, str]:
    """(front pod UID, port, token) of a relay's CONNECT request head; BadRequest else."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or parts[0] != "CONNECT" or not parts[2].startswith("HTTP/1."):
        raise BadRequest(405, "Method Not Allowed", "only CONNECT is served here")
    uid, _, port = parts[1].rpartition(":")
    if not uid or not port.isdigit() or not 0 < int(port) < 65536:
        raise BadRequest(400, "Bad Request", f"not <pod UID>:<port>: {parts[1][:80]!r}")
    token = ""
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "proxy-authorization":
            scheme, _, credentials = value.strip().partition(" ")
            if scheme.lower() == "basic":
                try:
                    user, _, token = base64.b64decode(credentials, validate=True).decode().partition(":")
                except (binascii.Error, UnicodeDecodeError):
                    user = ""
                if user != RELAY_USER:
                    token = ""
    if not token:
        raise BadRequest(407, "Proxy Authentication Required", "no relay credentials")
    return uid, int(port), token


def authorize(target: RelayTarget | None, port: int, token: str) -> None:
    """BadRequest unless the front pod has a relay with this token, listening on `port`."""
    if target is None or not hmac.compare_digest(target.token.encode(), token.encode()):
        raise BadRequest(403, "Forbidden", "no relay of that pod with these credentials")
    if port not in target.ports:
        raise BadRequest(403, "Forbidden", f"the relay does not carry port {port}")


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str, message: str = "") -> None:
    body = f"{message}\n" if message else ""
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\n\r\n{body}".encode(
            "latin-1", "replace"
        )
    )
    await writer.drain()


class RelayServer:
    def __init__(self, lookup: Callable[[str], RelayTarget | None]) -> None:
        self.lookup = lookup

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            try:
                async with asyncio.timeout(HEAD_TIMEOUT):
                    head = await reader.readuntil(b"\r\n\r\n")
                uid, port, token = parse_connect(head[:-4])
                target = self.lookup(uid)
                authorize(target, port, token)
                assert target is not None
                ws = await portforward.open_port(target.remote, target.namespace, target.pod, port)
            except BadRequest as e:
                METRICS.relay_connections.labels(str(e.status)).inc()
                log.info("relay connection from %s refused: %s", peer, e)
                await _answer(writer, e.status, e.reason, str(e))
                return
            except portforward.PortForwardError as e:
                METRICS.relay_connections.labels("502").inc()
                log.info("relay connection from %s to %s:%d: %s", peer, uid, port, e)
                await _answer(writer, 502, "Bad Gateway", str(e))
                return
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
                return
            METRICS.relay_connections.labels("200").inc()
            await _answer(writer, 200, "Connection established")
            with METRICS.relay_open.track_inprogress():
                error = await portforward.splice(ws, reader, writer)
            if error:
                log.info(
                    "relay connection to %s/%s:%d: remote said %s", target.namespace, target.pod, port, error
                )
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def start(self, host: str, port: int) -> asyncio.Server:
        return await asyncio.start_server(self.handle, host, port, limit=MAX_HEAD)
