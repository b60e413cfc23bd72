"""TLS for the kubelet API: the serving certificate and the client CA that authenticates callers."""

from __future__ import annotations

import ipaddress
import shutil
import ssl
import subprocess
from pathlib import Path

from armada_bridge.kube import CONFIGMAPS, Kube

AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")


def self_signed(cert_dir: Path, node_name: str, hosts: list[str]) -> tuple[Path, Path]:
    """A self-signed serving certificate for `hosts` (kept in `cert_dir`, reused while hosts match).

    The API server does not check kubelet serving certificates unless started with
    --kubelet-certificate-authority; give --tls-cert-file/--tls-private-key-file where it does."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found: give --tls-cert-file and --tls-private-key-file")
    cert_dir.mkdir(parents=True, exist_ok=True)
    cert, key, stamp = cert_dir / "kubelet.crt", cert_dir / "kubelet.key", cert_dir / "kubelet.hosts"
    sans = []
    for h in sorted(set(hosts)):
        try:
            ipaddress.ip_address(h)
            sans.append(f"IP:{h}")
        except ValueError:
            sans.append(f"DNS:{h}")
    wanted = ",".join(sans)
    if cert.is_file() and key.is_file() and stamp.is_file() and stamp.read_text() == wanted:
        return cert, key
    subprocess.run(
        [
            openssl, "req", "-x509", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-days", "365", "-subj", f"/O=system:nodes/CN=system:node:{node_name}",
            "-addext", f"subjectAltName={wanted}", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    key.chmod(0o600)
    stamp.write_text(wanted)
    return cert, key


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
