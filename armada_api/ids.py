"""Job ids as Armada makes them: ULIDs in lower case (so that a pod named after one is a valid DNS
name). Pure, but for the clock and randomness of :func:`new_job_id`."""

from __future__ import annotations

import hashlib
import os
import time

#: Crockford's base32, in lower case (Armada: util.StringFromUlid).
ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
LENGTH = 26


def encode(value: int) -> str:
    """A 128-bit value as 26 base32 characters."""
    out = []
    for _ in range(LENGTH):
        out.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def new_job_id(now: float | None = None, entropy: bytes | None = None) -> str:
    """A ULID: 48 bits of milliseconds since the epoch, 80 random bits."""
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    rand = int.from_bytes(entropy if entropy is not None else os.urandom(10), "big") & ((1 << 80) - 1)
    return encode((millis << 80) | rand)


def job_id_for_client_id(queue: str, namespace: str, client_id: str) -> str:
    """The job id a client id always gets in a queue and namespace: submitting it again names the
    same pod, so the second submission finds the first instead of creating a twin."""
    digest = hashlib.sha256("\0".join((queue, namespace, client_id)).encode()).digest()
    return encode(int.from_bytes(digest[:16], "big"))


def is_job_id(value: str) -> bool:
    return len(value) == LENGTH and all(c in ALPHABET for c in value)
