"""TLS for the kubelet API: the serving certificate and the client CA that authenticates callers."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from pathlib import Path

from armada_bridge import certs
from armada_bridge.kube import CONFIGMAPS, Kube

log = logging.getLogger(__name__)

AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")
RENEW_CHECK_SECONDS = 6 * 3600


def self_signed(cert_dir: Path, node_name: str, hosts: list[str]) -> tuple[Path, Path]:
    """The kubelet API's self-signed serving certificate for `hosts` (kept in `cert_dir`).

    The API server does not check kubelet serving certificates unless started with
    --kubelet-certificate-authority; give --tls-cert-file/--tls-private-key-file where it does."""
    return certs.self_signed(cert_dir, "kubelet", f"/O=system:nodes/CN=system:node:{node_name}", hosts)


async def front_client_ca(front: Kube) -> str:
    """The front cluster's client CA bundle, as kube-apiserver publishes it for delegated authn."""
    ns, name = AUTH_CONFIGMAP
    cm = await front.get(CONFIGMAPS, name, ns)
    data = cm.get("data") or {}
    ca = data.get("client-ca-file", "")
    if not ca:
        raise RuntimeError(f"ConfigMap {ns}/{name} has no client-ca-file: give --client-ca-file")
    return str(ca)


def server_context(cert: Path, key: Path, client_ca_pem: str | None) -> ssl.SSLContext:
    """TLS server context; client certificates are optional but verified against the client CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca_pem:
        ctx.load_verify_locations(cadata=client_ca_pem)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


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
