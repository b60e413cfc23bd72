"""`kubectl exec|attach|port-forward|cp` on front pods: the kubelet API's streaming endpoints, relayed
to the remote cluster's `pods/exec|attach|portforward`.

kube-apiserver reaches a kubelet for these with an HTTP upgrade (SPDY/3.1 carrying the channel
protocols `v4.channel.k8s.io`…, or `portforward.k8s.io`; WebSocket only towards kubelets that declare
ExtendWebSocketsToKubelet, which a virtual node does not). The remote kube-apiserver accepts the very
same upgrade on the pod's subresource and proxies it, byte for byte, to the kubelet that runs the
remote pod. So the vkubelet does not speak SPDY itself: it authorizes the request, opens the matching
upgrade against the remote apiserver (same protocol offers), answers the front apiserver with the
remote answer, and then splices the two connections. TTY, stdin, resize, port streams and the exit
status travel untouched end to end, between the front apiserver and the remote kubelet.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import aiohttp
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy, MultiMapping

from armada_bridge.kube import Kube, KubeConfig
from vkubelet import duplex

log = logging.getLogger(__name__)

# Kubelet path segment -> pod subresource of the API.
SUBRESOURCES = {"exec": "exec", "attach": "attach", "portForward": "portforward", "run": "exec"}
# The kubelet's query parameters (as kube-apiserver sets them) -> the API's PodExecOptions fields.
_FLAGS = {"input": "stdin", "output": "stdout", "error": "stderr", "tty": "tty"}
# Request headers that carry the protocol negotiation; everything else stays with its hop.
_UPGRADE_REQUEST_HEADERS = (
    "Upgrade",
    "X-Stream-Protocol-Version",
    "Sec-WebSocket-Key",
    "Sec-WebSocket-Version",
    "Sec-WebSocket-Protocol",
)
_UPGRADE_RESPONSE_HEADERS = (
    "Upgrade",
    "X-Stream-Protocol-Version",
    "Sec-WebSocket-Accept",
    "Sec-WebSocket-Protocol",
)
MAX_HEAD = 64 * 1024
MAX_ERROR_BODY = 64 * 1024
CHUNK = 64 * 1024
CONNECT_TIMEOUT = 15.0


def _truthy(v: str) -> bool:
    return v.lower() in ("1", "true")


def api_query(kind: str, container: str | None, query: MultiMapping[str]) -> list[tuple[str, str]]:
    """The API's query for a kubelet streaming request (pure). Accepts the kubelet's names
    (input/output/error/tty, as kube-apiserver sends them) and the API's (stdin/stdout/...)."""
    out: list[tuple[str, str]] = []
    if kind == "portForward":
        # kube-apiserver names them `port` towards kubelets (WebSocket clients need them there;
        # SPDY ones say them in their streams), the API `ports`.
        out += [("ports", p) for name in ("port", "ports") for p in query.getall(name, [])]
        return out
    if container:
        out.append(("container", container))
    flags: dict[str, bool] = {}
    for k, v in query.items():
        name = _FLAGS.get(k, k if k in _FLAGS.values() else "")
        if name:
            flags[name] = flags.get(name, False) or _truthy(v)
    for name in ("stdin", "stdout", "stderr", "tty"):
        if flags.get(name):
            out.append((name, "true"))
    if kind in ("exec", "run"):
        commands = query.getall("command", []) or query.getall("cmd", [])
        out += [("command", c) for c in commands]
    return out


def is_upgrade(headers: Mapping[str, str]) -> bool:
    conn = {t.strip().lower() for t in headers.get("Connection", "").split(",")}
    return "upgrade" in conn and bool(headers.get("Upgrade"))


@dataclass(frozen=True)
class Head:
    status: int
    reason: str
    headers: CIMultiDict[str]


def parse_head(raw: bytes) -> Head:
    """An HTTP/1.1 response head (status line and headers, up to the blank line) (pure)."""
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP response: {lines[0][:80]!r}")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if sep:
            headers.add(name.strip(), value.strip())
    return Head(int(parts[1]), parts[2] if len(parts) > 2 else "", headers)


def request_head(
    method: str, host: str, path: str, query: Iterable[tuple[str, str]], headers: Iterable[tuple[str, str]]
) -> bytes:
    target = path + ("?" + urlencode(list(query)) if query else "")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines += ["Connection: Upgrade", "Content-Length: 0", "", ""]
    return "\r\n".join(lines).encode("latin-1")


async def _open(config: KubeConfig) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, str]:
    u = urlsplit(config.server)
    tls = u.scheme == "https"
    port = u.port or (443 if tls else 80)
    host = u.hostname or "localhost"
    ctx: ssl.SSLContext | None = None
    if tls:
        ctx = (
            config.ssl_context
            if isinstance(config.ssl_context, ssl.SSLContext)
            else ssl.create_default_context()
        )
    async with asyncio.timeout(CONNECT_TIMEOUT):  # not wait_for: see lifecycle.wait_set
        reader, writer = await duplex.open_connection(host, port, ssl_context=ctx, limit=MAX_HEAD)
    return reader, writer, u.netloc


class _Hijacked(duplex.Ending):
    """Our protocol on a taken-over connection; its end is still reported to aiohttp's protocol,
    so aiohttp forgets the connection."""

    def __init__(
        self, reader: asyncio.StreamReader, previous: asyncio.BaseProtocol, loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(reader, loop=loop)
        self._previous = previous

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._previous.connection_lost(exc)


def _hijack(request: web.Request) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Take the request's connection away from aiohttp's HTTP parser (aiohttp upgrades only to
    WebSocket): from here on, its bytes go to a stream reader of ours."""
    transport = request.transport
    if transport is None:
        raise ConnectionResetError("client went away")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=CHUNK, loop=loop)
    protocol = _Hijacked(reader, transport.get_protocol(), loop)
    transport.set_protocol(protocol)
    protocol.connection_made(transport)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def relay(
    request: web.Request, remote: KubeConfig, kind: str, namespace: str, pod: str, container: str | None
) -> web.StreamResponse:
    """Relay one upgraded streaming request to the remote apiserver's pod subresource."""
    headers: CIMultiDictProxy[str] = request.headers
    if not is_upgrade(headers):
        return web.Response(status=400, text="Upgrade request required\n")
    out_headers = [(k, v) for k in _UPGRADE_REQUEST_HEADERS for v in headers.getall(k, [])]
    out_headers += list(remote.headers.items())  # the remote identity (bearer token), if any
    out_headers.append(("User-Agent", "armada-bridge-vkubelet"))
    path = f"/api/v1/namespaces/{namespace}/pods/{pod}/{SUBRESOURCES[kind]}"
    try:
        r_reader, r_writer, netloc = await _open(remote)
    except (OSError, TimeoutError) as e:
        return web.Response(status=502, text=f"remote cluster unreachable: {e}\n")
    try:
        r_writer.write(
            request_head(request.method, netloc, path, api_query(kind, container, request.query), out_headers)
        )
        await r_writer.drain()
        async with asyncio.timeout(CONNECT_TIMEOUT):
            head = parse_head(await r_reader.readuntil(b"\r\n\r\n"))
    except (OSError, TimeoutError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as e:
        r_writer.close()
        return web.Response(status=502, text=f"remote cluster: {type(e).__name__}: {e}\n")
    if head.status != 101:
        body = await _error_body(r_reader, head)
        r_writer.close()
        return web.Response(
            status=head.status,
            body=body,
            content_type=(head.headers.get("Content-Type") or "text/plain").split(";")[0],
        )
    resp = web.StreamResponse(
        status=101,
        reason="Switching Protocols",
        headers=[("Connection", "Upgrade")]
        + [(k, v) for k in _UPGRADE_RESPONSE_HEADERS for v in head.headers.getall(k, [])],
    )
    resp.force_close()
    front = _hijack(request)
    await resp.prepare(request)
    log.debug("%s %s/%s: relaying (%s)", kind, namespace, pod, head.headers.get("X-Stream-Protocol-Version"))
    await duplex.splice(front, (r_reader, r_writer), CHUNK)
    return resp


async def _error_body(reader: asyncio.StreamReader, head: Head) -> bytes:
    length = head.headers.get("Content-Length")
    try:
        async with asyncio.timeout(10):
            if length and length.isdigit():
                return await reader.readexactly(min(int(length), MAX_ERROR_BODY))
            return await reader.read(MAX_ERROR_BODY)
    except (OSError, TimeoutError, asyncio.IncompleteReadError):
        return b""


async def run(remote: Kube, namespace: str, pod: str, container: str, command: list[str]) -> bytes:
    """The kubelet's `/run` (a command's output in one answer): an exec on the remote pod over
    WebSocket (v5.channel.k8s.io, which kube-apiserver translates for the remote kubelet: channel 1
    stdout, 2 stderr, 3 the final status)."""
    query = [("container", container), ("stdout", "true"), ("stderr", "true")]
    query += [("command", c) for c in command]
    url = f"{remote.config.server}/api/v1/namespaces/{namespace}/pods/{pod}/exec?{urlencode(query)}"
    out = bytearray()
    async with remote.session.ws_connect(
        url, protocols=("v5.channel.k8s.io", "v4.channel.k8s.io"), method="GET"
    ) as ws:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.BINARY or not msg.data:
                continue
            if msg.data[0] in (1, 2):
                out += msg.data[1:]
    return bytes(out)
