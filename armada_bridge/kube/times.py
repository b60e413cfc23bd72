"""Timestamps as the Kubernetes API writes them."""

from __future__ import annotations

import datetime as dt


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def rfc3339(t: dt.datetime) -> str:
    """metav1.Time: seconds."""
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_time(t: dt.datetime) -> str:
    """metav1.MicroTime (Leases, events.k8s.io)."""
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
