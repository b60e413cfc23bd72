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
