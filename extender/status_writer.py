"""Writing what the scheduler knows back onto objects: Queue status (and PodGroup status)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from armada_bridge.kube.client import ApiError, Obj
from armada_bridge.kube.resources import QUEUES
from extender.core import resources as rs

if TYPE_CHECKING:
    from extender.controller import Controller

log = logging.getLogger(__name__)


def gang_counts(controller: Controller) -> tuple[dict[str, int], dict[str, int]]:
    """queue -> number of waiting / admitted units (a gang counts once; a lone pod is a unit)."""
    queued: dict[str, set[str]] = {}
    running: dict[str, set[str]] = {}
    for info in controller.managed.values():
        unit = info.gang.key if info.gang else info.uid
        target = running if info.placed else queued
        target.setdefault(info.queue, set()).add(f"{info.key.split('/')[0]}/{unit}")
    return {q: len(u) for q, u in queued.items()}, {q: len(u) for q, u in running.items()}


def queue_statuses(controller: Controller, queued: dict[str, int], running: dict[str, int]) -> dict[str, Obj]:
    shares = controller.last_result.queue_shares() if controller.last_result else {}
    allocated: dict[str, rs.Resources] = {}
    for rec in controller.core.running_jobs():
        rs.add_into(allocated.setdefault(rec.queue, {}), rec.requests)
    out: dict[str, Obj] = {}
    for q in controller.queues.items():
        name = q["metadata"]["name"]
        report = shares.get(name)
        out[name] = {
            "fairShare": round(report.fair_share, 4) if report else 0.0,
            "adjustedFairShare": round(report.adjusted_fair_share, 4) if report else 0.0,
            "actualShare": round(report.actual_share, 4) if report else 0.0,
            "allocated": {
                k: rs.format_resources({k: v}).split("=", 1)[1]
                for k, v in sorted(allocated.get(name, {}).items())
                if v
            },
            "queuedGangs": queued.get(name, 0),
            "runningGangs": running.get(name, 0),
        }
    return out


async def write_queue_statuses(controller: Controller) -> None:
    queued, running = gang_counts(controller)
    controller.metrics.observe_gangs(queued, running)
    for name, status in queue_statuses(controller, queued, running).items():
        current = controller.queues.get(name)
        if current is None or _same(current.get("status") or {}, status):
            continue
        try:
            await controller.front.patch(QUEUES, name, {"status": status}, subresource="status")
        except ApiError as e:
            log.debug("queue %s status not written: %s", name, e)


def _same(current: Obj, wanted: Obj) -> bool:
    return all(current.get(k) == v for k, v in wanted.items())
