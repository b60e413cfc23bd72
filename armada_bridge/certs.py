"""Self-signed serving certificates made with the openssl CLI (the kubelet API, the dev webhook)."""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path

VALID_DAYS = 365
#: a kept certificate is made anew once it has less than this left.
RENEW_WITHIN_DAYS = 30


def expires_within(cert: Path, days: float) -> bool:
    """True when `cert` (PEM) expires within `days` (or cannot be read)."""
    openssl = shutil.which("openssl")
    if openssl is None or not cert.is_file():
        return True
    r = subprocess.run(
        [openssl, "x509", "-checkend", str(int(days * 86400)), "-noout", "-in", str(cert)],
        capture_output=True,
        check=False,
    )
    return r.returncode != 0


def _current(cert: Path, key: Path, stamp: Path, wanted: str) -> bool:
    """The certificate and key exist, were made for `wanted` (kept in `stamp`), and are not due for
    renewal."""
    return (
        cert.is_file()
        and key.is_file()
        and stamp.is_file()
        and stamp.read_text() == wanted
        and not expires_within(cert, RENEW_WITHIN_DAYS)
    )


def self_signed(directory: Path, stem: str, subject: str, hosts: list[str]) -> tuple[Path, Path]:
    """`<stem>.crt` and `<stem>.key` in `directory`: a self-signed certificate (it is its own CA,
    so it can also be a webhook's caBundle) for `hosts`, valid :data:`VALID_DAYS`; kept and reused
    while `hosts` are the same and it has more than :data:`RENEW_WITHIN_DAYS` left, made anew
    otherwise."""
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
    if _current(cert, key, stamp, wanted):
        return cert, key
    subprocess.run(
        [
            openssl, "req", "-x509", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-days", str(VALID_DAYS), "-subj", subject,
            "-addext", f"subjectAltName={wanted}", "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    key.chmod(0o600)
    stamp.write_text(wanted)
    return cert, key


def ca_and_serving(directory: Path, ca_names: list[str], hosts: list[str]) -> dict[str, Path]:
    """A CA and a serving certificate it signs, RSA keys in PKCS#1 (what operators with their own
    certificate rotators accept): files `ca.crt`, `ca.key`, `tls.crt`, `tls.key` in `directory`.
    The CA also carries `ca_names` as DNS names (rotators verify their CA for such a name). Kept
    and reused while the names are the same."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found: install it")
    directory.mkdir(parents=True, exist_ok=True)
    files = {n: directory / n for n in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    stamp = directory / "names"
    wanted = ",".join(sorted(ca_names)) + ";" + ",".join(sorted(hosts))
    if all(p.is_file() for p in files.values()) and stamp.is_file() and stamp.read_text() == wanted:
        return files
    sans = ",".join(f"IP:{h}" if is_ip(h) else f"DNS:{h}" for h in sorted(set(hosts)))
    ca_sans = ",".join(f"DNS:{n}" for n in sorted(set(ca_names)))
    csr = directory / "tls.csr"
    ext = directory / "tls.ext"
    ext.write_text(f"subjectAltName={sans}\nextendedKeyUsage=serverAuth\n")
    steps = [
        [openssl, "genrsa", "-traditional", "-out", str(files["ca.key"]), "2048"],
        [openssl, "req", "-x509", "-new", "-key", str(files["ca.key"]), "-days", "3650",
         "-subj", "/O=armada-bridge/CN=armada-bridge-dev-operators-ca",
         "-addext", f"subjectAltName={ca_sans}", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,digitalSignature,keyEncipherment",
         "-out", str(files["ca.crt"])],
        [openssl, "genrsa", "-traditional", "-out", str(files["tls.key"]), "2048"],
        [openssl, "req", "-new", "-key", str(files["tls.key"]), "-subj", "/CN=armada-bridge-dev-operators",
         "-out", str(csr)],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(files["ca.crt"]), "-CAkey", str(files["ca.key"]),
         "-CAcreateserial", "-days", "3650", "-extfile", str(ext), "-out", str(files["tls.crt"])],
    ]  # fmt: skip
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True)
    for key in (files["ca.key"], files["tls.key"]):
        key.chmod(0o600)
    stamp.write_text(wanted)
    return files


def certificate_authority(directory: Path, stem: str, subject: str) -> tuple[Path, Path]:
    """`<stem>.crt` and `<stem>.key` in `directory`: a CA (RSA 2048, the key in PKCS#1, as kubeadm
    makes its own), valid :data:`VALID_DAYS`; kept while it has more than
    :data:`RENEW_WITHIN_DAYS` left. Made before a cluster exists, it lets what the cluster is
    created with (say, a kube-scheduler's client certificate) be signed by the cluster's CA."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found: install it")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key = directory / f"{stem}.crt", directory / f"{stem}.key"
    if cert.is_file() and key.is_file() and not expires_within(cert, RENEW_WITHIN_DAYS):
        return cert, key
    steps = [
        [openssl, "genrsa", "-traditional", "-out", str(key), "2048"],
        [openssl, "req", "-x509", "-new", "-key", str(key), "-days", str(VALID_DAYS), "-subj", subject,
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature,keyEncipherment",
         "-out", str(cert)],
    ]  # fmt: skip
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True)
    key.chmod(0o600)
    return cert, key


def client_certificate(directory: Path, stem: str, subject: str, ca: tuple[Path, Path]) -> tuple[Path, Path]:
    """`<stem>.crt` and `<stem>.key` in `directory`: a client certificate for `subject` (CN the user,
    O its groups, as kube-apiserver reads them) signed by `ca` (its certificate and key), valid
    :data:`VALID_DAYS`; kept while `ca` and `subject` are the same and it has more than
    :data:`RENEW_WITHIN_DAYS` left."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise RuntimeError("openssl not found: install it")
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, stamp = directory / f"{stem}.crt", directory / f"{stem}.key", directory / f"{stem}.subject"
    ca_cert, ca_key = ca
    wanted = f"{subject}\n{ca_cert.read_text()}"
    if _current(cert, key, stamp, wanted):
        return cert, key
    csr, ext = directory / f"{stem}.csr", directory / f"{stem}.ext"
    ext.write_text("extendedKeyUsage=clientAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
    steps = [
        [openssl, "genrsa", "-traditional", "-out", str(key), "2048"],
        [openssl, "req", "-new", "-key", str(key), "-subj", subject, "-out", str(csr)],
        [openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca_cert), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", str(VALID_DAYS), "-extfile", str(ext), "-out", str(cert)],
    ]  # fmt: skip
    for argv in steps:
        subprocess.run(argv, check=True, capture_output=True)
    key.chmod(0o600)
    stamp.write_text(wanted)
    return cert, key


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
