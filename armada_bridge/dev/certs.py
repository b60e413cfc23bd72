"""Development TLS material made with the openssl CLI: a local CA and serving certificates.

In a real cluster these come from cert-manager or the CSR API; the dev environment makes its own,
once, under the state directory.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ServingCert:
    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.strip()}")


def ensure_serving_cert(
    directory: Path, common_name: str, ips: tuple[str, ...] = ("127.0.0.1",)
) -> ServingCert:
    """A CA and a certificate for `ips` and localhost under `directory`; made once, reused after."""
    directory.mkdir(parents=True, exist_ok=True)
    out = ServingCert(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    if out.ca.is_file() and out.cert.is_file() and out.key.is_file():
        return out
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
             "-subj", f"/CN={common_name}-ca", cwd=directory)  # fmt: skip
    _openssl(
        "req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", f"/CN={common_name}", cwd=directory
    )
    sans = ",".join([*(f"IP:{ip}" for ip in ips), "DNS:localhost"])
    (directory / "san.ext").write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "tls.crt", "-days", "3650", "-extfile", "san.ext", cwd=directory)  # fmt: skip
    return out
