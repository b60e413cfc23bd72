"""Resource quantities and vectors.

Every quantity is held as an ``int`` number of *milli-units* (``"500m"`` cpu -> 500, ``"1"`` -> 1000,
``"4Gi"`` memory -> 4 * 2**30 * 1000). Integers keep sums exact and comparisons cheap. A resource
vector is a plain ``dict[str, int]``: sparse, so any extended resource (``nvidia.com/gpu``,
``example.com/foo``) works without registration; a missing key means zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

Resources = dict[str, int]

MILLI = 1000

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


class QuantityError(ValueError):
    """A string is not a Kubernetes resource quantity."""


def parse_quantity(value: str | int | float) -> int:
    """Parse a Kubernetes quantity ("500m", "4Gi", "1e3", 2, 0.5) into milli-units (rounded up)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return value * MILLI
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return math.ceil(Decimal(repr(value)) * MILLI)
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity (examples: 500m, 2, 4Gi, 1e3)")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex already guards this
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from exc
    factor = Decimal(_BINARY[suffix]) if suffix in _BINARY else _DECIMAL[suffix]
    milli = amount * factor * MILLI
    if milli < 0:
        raise QuantityError(f"{value!r} is negative")
    return math.ceil(milli)


def parse_resources(values: Mapping[str, str | int | float]) -> Resources:
    """Parse a mapping of resource name to quantity; zero entries are dropped."""
    out: Resources = {}
    for name, raw in values.items():
        qty = parse_quantity(raw)
        if qty:
            out[str(name)] = qty
    return out


def add(a: Mapping[str, int], b: Mapping[str, int]) -> Resources:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0) + v
    return out


def add_into(acc: Resources, b: Mapping[str, int]) -> None:
    for k, v in b.items():
        acc[k] = acc.get(k, 0) + v


def sub_into(acc: Resources, b: Mapping[str, int]) -> None:
    for k, v in b.items():
        acc[k] = acc.get(k, 0) - v


def total(vectors: Iterable[Mapping[str, int]]) -> Resources:
    out: Resources = {}
    for v in vectors:
        add_into(out, v)
    return out


def fits(request: Mapping[str, int], free: Mapping[str, int]) -> bool:
    """True if every requested quantity is available in ``free``."""
    # A loop, not all(...): called for every placement, and a generator costs more than the test.
    for k, v in request.items():  # noqa: SIM110
        if v > free.get(k, 0):
            return False
    return True


def scale(vector: Mapping[str, int], factor: int) -> Resources:
    return {k: v * factor for k, v in vector.items()}


def _format_one(name: str, milli: int) -> str:
    if name == "cpu":
        if milli % MILLI == 0:
            return str(milli // MILLI)
        return f"{milli}m"
    units = milli / MILLI
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        for suffix, factor in (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units >= factor:
                val = units / factor
                return f"{val:.0f}{suffix}" if abs(val - round(val)) < 0.05 else f"{val:.1f}{suffix}"
        return f"{units:.0f}"
    if milli % MILLI == 0:
        return str(milli // MILLI)
    return f"{milli}m"


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def format_quantity(name: str, milli: int) -> str:
    """Milli-units back to an exact Kubernetes quantity (``1500m``, ``16``, ``8Gi``), for objects
    the bridge writes; :func:`format_resources` rounds for people instead."""
    if milli % MILLI:
        return f"{milli}m"
    units = milli // MILLI
    if units and (name in ("memory", "ephemeral-storage") or name.startswith("hugepages-")):
        for suffix, factor in _BINARY_SUFFIXES:
            if units % factor == 0:
                return f"{units // factor}{suffix}"
    return str(units)


def _shown_first(name: str) -> tuple[bool, bool, str]:
    """The order people read resources in: cpu, memory, then alphabetical."""
    return (name != "cpu", name != "memory", name)


def for_people(vector: Mapping[str, int]) -> dict[str, str]:
    """Each non-zero quantity rounded for people (``cpu: 129``, ``memory: 522Gi``, ``ephemeral-storage:
    4.2Ti``), in :func:`_shown_first` order."""
    return {
        k: _format_one(k, vector[k]) for k in sorted((k for k, v in vector.items() if v), key=_shown_first)
    }


def format_resources(vector: Mapping[str, int], names: Iterable[str] | None = None) -> str:
    """Human-readable ``cpu=12, memory=40Gi`` (cpu and memory first, then alphabetical)."""
    keys = list(names) if names is not None else sorted(vector, key=_shown_first)
    return ", ".join(f"{k}={_format_one(k, vector.get(k, 0))}" for k in keys)
