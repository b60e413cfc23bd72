"""One TCP connection to a port of a remote pod, through the remote API server's `pods/portforward`.

The WebSocket form of the port-forward protocol (`v4.channel.k8s.io`, one connection per
WebSocket), which kube-apiserver passes to the kubelet running the pod as it is and the kubelet's
streaming server (containerd's CRI) serves: a pair of channels per port, data (0) and error (1),
each message a channel byte and a payload; the first message of each channel carries the port (2
bytes, little endian). The kubelet dials the port on the pod's loopback, so only ports the pod
serves on localhost or on every address are reached. The protocol has no half-close: a client that
stops sending is not told to the pod, whose answer is still carried for LINGER_SECONDS.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp

from armada_bridge.kube import Kube
from vkubelet import duplex

log = logging.getLogger(__name__)

PROTOCOL = "v4.channel.k8s.io"
DATA = 0
ERROR = 1
PORT_PREFIX = 2  # bytes of the port at the start of each channel's first message
CHUNK = 64 * 1024
OPEN_TIMEOUT = 15.0
# After the client stops sending, how long the pod may still answer before the connection ends.
LINGER_SECONDS = 15.0


class PortForwardError(Exception):
    """The remote side refused or broke the connection (its message says why)."""


async def open_port(remote: Kube, namespace: str, pod: str, port: int) -> aiohttp.ClientWebSocketResponse:
    """A WebSocket carrying one connection to `port` of the remote pod."""
    url = f"{remote.config.server}/api/v1/namespaces/{namespace}/pods/{pod}/portforward"
    try:
        async with asyncio.timeout(OPEN_TIMEOUT):
            return await remote.session.ws_connect(
                url,
                params={"ports": str(port)},
                protocols=(PROTOCOL,),
                # The kubelet's route produces no JSON: the client's default Accept gets a 406.
                headers={"Accept": "*/*"},
                timeout=aiohttp.ClientWSTimeout(ws_receive=None, ws_close=5.0),
                autoping=True,
                max_msg_size=0,
                compress=0,
            )
    except aiohttp.WSServerHandshakeError as e:
        raise PortForwardError(f"remote API server answered {e.status}: {e.message}") from e
    except (aiohttp.ClientError, OSError, TimeoutError) as e:
        raise PortForwardError(f"remote API server not reached: {type(e).__name__}: {e}") from e


async def _to_pod(reader: asyncio.StreamReader, ws: aiohttp.ClientWebSocketResponse) -> None:
    while data := await reader.read(CHUNK):
        try:
            await ws.send_bytes(bytes([DATA]) + data)
        except (ConnectionError, OSError) as e:
            raise duplex.DestinationGone(str(e)) from e
    # No half-close in the protocol: the pod's answer may still come back for a while (a client that
    # closed altogether is found out at the next write to it).
    await asyncio.sleep(LINGER_SECONDS)


async def _from_pod(ws: aiohttp.ClientWebSocketResponse, writer: asyncio.StreamWriter) -> str:
    """Copy the pod's bytes to `writer` until the WebSocket ends; what the error channel said."""
    prefixed = {DATA, ERROR}  # channels whose first message (the port) is still to come
    error = b""
    async for msg in ws:
        if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
            continue
        channel, payload = msg.data[0], msg.data[1:]
        if channel in prefixed:
            prefixed.discard(channel)
            payload = payload[PORT_PREFIX:]
        if channel == DATA and payload:
            await duplex.write(writer, payload)
        elif channel == ERROR:
            error += payload
    return error.decode(errors="replace").strip()


async def splice(
    ws: aiohttp.ClientWebSocketResponse, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> str:
    """Carry bytes both ways between a client connection and the pod's port until either ends
    (duplex.both_ways says when the other copy still runs); then close both. Returns what the
    remote side reported on its error channel ("" for none)."""
    try:
        _, error = await duplex.both_ways(_to_pod(reader, ws), _from_pod(ws, writer))
    finally:
        await ws.close()
        writer.close()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await writer.wait_closed()
    return error if isinstance(error, str) else ""
