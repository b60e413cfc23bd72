"""The writes each cluster's API server served during a benchmark's phase, by verb and resource
(its own counter `apiserver_request_total`, every response code), per pod: with CPU by process
(`bench/cpu.py`), where a managed pod's cost lies beside a direct pod's. The front's writes are
apart, the remote clusters' summed: `front POST pods/binding`, `remotes POST secrets`."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from armada_bridge.kube import Kube
from bench.cpu import REMOTES, less_rest
from devenv.names import FRONT

WRITE_VERBS = frozenset({"POST", "PUT", "PATCH", "DELETE", "APPLY"})
ALL = "all writes"


def write_counts(metrics_text: str) -> Counter[str]:
    """`POST pods/binding` -> requests so far, from an API server's /metrics (pure)."""
    out: Counter[str] = Counter()
    for family in text_string_to_metric_families(metrics_text):
        if family.name != "apiserver_request":
            continue
        for s in family.samples:
            labels = s.labels
            if s.name != "apiserver_request_total" or labels.get("verb") not in WRITE_VERBS:
                continue
            resource = labels.get("resource", "")
            if labels.get("group"):
                resource += "." + labels["group"]
            if labels.get("subresource"):
                resource += "/" + labels["subresource"]
            out[f"{labels['verb']} {resource}"] += int(s.value)
    return out


@dataclass(frozen=True)
class Sample:
    by_side: dict[str, Counter[str]]  # front / remotes -> write -> requests so far
    at: float  # time.monotonic()


async def sample(kubes: Mapping[str, Kube]) -> Sample:
    """Each cluster's counts now (the front's apart, the others summed)."""
    by_side: dict[str, Counter[str]] = {FRONT: Counter(), REMOTES: Counter()}
    for name, kube in kubes.items():
        async with kube.session.get(
            kube.config.server + "/metrics", timeout=aiohttp.ClientTimeout(total=60)
        ) as resp:
            resp.raise_for_status()
            by_side[FRONT if name == FRONT else REMOTES].update(write_counts(await resp.text()))
    return Sample(by_side, time.monotonic())


def spent(before: Sample, after: Sample, idle: Mapping[str, float] | None = None) -> dict[str, float]:
    """`front POST pods` -> requests between the samples, less `idle` (the same keys, per second)
    over the time between them; `front all writes` and `remotes all writes` the sides' sums."""
    out: dict[str, float] = {}
    for side, counts in after.by_side.items():
        for write, n in counts.items():
            out[f"{side} {write}"] = n - before.by_side[side].get(write, 0)
    out = less_rest(out, after.at - before.at, idle)
    for side in after.by_side:
        out[f"{side} {ALL}"] = sum(v for k, v in out.items() if k.startswith(f"{side} "))
    return out


def rates(before: Sample, after: Sample) -> dict[str, float]:
    """Writes per second between the samples (the environment at rest: leases, node status)."""
    return {k: v / (after.at - before.at) for k, v in spent(before, after).items() if not k.endswith(ALL)}
