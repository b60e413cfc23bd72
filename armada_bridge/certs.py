"""Self-signed serving certificates made with the openssl CLI (the kubelet API, the dev webhook)."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path


def self_signed(directory: Path, stem: str, subject: str, hosts: list[str]) -> tuple[Path, Path]:
    """`<stem>.crt` and `<stem>.key` in `directory`: a self-signed certificate (it is its own CA,
    so it can also be a webhook's caBundle) for `hosts`; kept and reused while `hosts` are the same."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found: install it, or give a certificate and key")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, stamp = directory / f"{stem}.crt", directory / f"{stem}.key", directory / f"{stem}.hosts"
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
            "-days", "365", "-subj", subject,
            "-addext", f"subjectAltName={wanted}", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    key.chmod(0o600)
    stamp.write_text(wanted)
    return cert, key
