"""Self-signed serving certificates are reused while valid and made anew close to expiry."""

from __future__ import annotations

from pathlib import Path

import pytest

from armada_bridge import certs

pytestmark = pytest.mark.unit


def test_kept_while_valid_renewed_close_to_expiry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = certs.self_signed(tmp_path, "x", "/CN=x", ["127.0.0.1", "localhost"])
    first = cert.read_bytes()
    assert not certs.expires_within(cert, 30)
    assert certs.expires_within(cert, certs.VALID_DAYS + 1)
    certs.self_signed(tmp_path, "x", "/CN=x", ["localhost", "127.0.0.1"])
    assert cert.read_bytes() == first  # same hosts, far from expiry: kept
    # As if a year had gone by: less than the renewal margin left.
    monkeypatch.setattr(certs, "RENEW_WITHIN_DAYS", certs.VALID_DAYS + 1)
    certs.self_signed(tmp_path, "x", "/CN=x", ["127.0.0.1", "localhost"])
    assert cert.read_bytes() != first
    assert key.stat().st_mode & 0o077 == 0


def test_missing_certificate_counts_as_expiring(tmp_path: Path) -> None:
    assert certs.expires_within(tmp_path / "absent.crt", 1)


def test_client_certificate_is_signed_by_the_ca_for_its_subject(tmp_path: Path) -> None:
    import subprocess

    ca = certs.certificate_authority(tmp_path / "ca", "ca", "/CN=test-ca")
    cert, key = certs.client_certificate(tmp_path, "client", "/O=system:masters/CN=someone", ca)
    verify = subprocess.run(
        ["openssl", "verify", "-CAfile", str(ca[0]), str(cert)], capture_output=True, text=True, check=False
    )
    assert verify.returncode == 0, verify.stderr
    text = subprocess.run(
        ["openssl", "x509", "-noout", "-subject", "-ext", "extendedKeyUsage", "-in", str(cert)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "O = system:masters, CN = someone" in text and "TLS Web Client Authentication" in text
    assert key.stat().st_mode & 0o077 == 0 and ca[1].stat().st_mode & 0o077 == 0
    first = cert.read_bytes()
    assert certs.certificate_authority(tmp_path / "ca", "ca", "/CN=test-ca") == ca
    certs.client_certificate(tmp_path, "client", "/O=system:masters/CN=someone", ca)
    assert cert.read_bytes() == first  # same CA and subject: kept
    certs.client_certificate(tmp_path, "client", "/CN=someone-else", ca)
    assert cert.read_bytes() != first
