"""TLS for the kubelet API: the serving certificate and the client CA that authenticates callers."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from pathlib import Path

from armada_bridge import certs

log = logging.getLogger(__name__)

RENEW_CHECK_SECONDS = 6 * 3600


def self_signed(cert_dir: Path, node_name: str, hosts: list[str]) -> tuple[Path, Path]:
    """The kubelet API's self-signed serving certificate for `hosts` (kept in `cert_dir`).

    The API server does not check kubelet serving certificates unless started with
    --kubelet-certificate-authority; give --tls-cert-file/--tls-private-key-file where it does."""
    return certs.self_signed(cert_dir, "kubelet", f"/O=system:nodes/CN=system:node:{node_name}", hosts)


async def keep_renewed(ctx: ssl.SSLContext, make: Callable[[], tuple[Path, Path]]) -> None:
    """A process that runs for months: `make` (which renews a certificate close to expiry) is run
    again every few hours and the context, used by every new connection, loads what it gives."""
    while True:
        await asyncio.sleep(RENEW_CHECK_SECONDS)
        try:
            cert, key = await asyncio.to_thread(make)
            ctx.load_cert_chain(str(cert), str(key))
        except (OSError, ssl.SSLError, RuntimeError) as e:
            log.warning("serving certificate not renewed: %s", e)
