"""Kubernetes object names (pure): the DNS label and DNS subdomain forms, as patterns (for
pydantic fields) and as checks with their lengths."""

from __future__ import annotations

import re

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # namespaces and most names: at most 63 characters
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"  # pods, nodes, most objects: at most 253
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253

_LABEL = re.compile(DNS_LABEL)
_SUBDOMAIN = re.compile(DNS_SUBDOMAIN)


def is_dns_label(name: str) -> bool:
    return len(name) <= DNS_LABEL_MAX and bool(_LABEL.match(name))


def is_dns_subdomain(name: str) -> bool:
    return len(name) <= DNS_SUBDOMAIN_MAX and bool(_SUBDOMAIN.match(name))
