"""Writing what the scheduler knows back onto objects: Queue and PodGroup status."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from armada_bridge import keys
from armada_bridge.core import quantities as rs
from armada_bridge.core.result import RoundResult
from armada_bridge.core.scheduler import Scheduler
from armada_bridge.kube import Kube
from armada_bridge.kube.client import ApiError
from armada_bridge.kube.resources import QUEUES
from armada_bridge.kube.times import now as utc_now
from armada_bridge.kube.times import rfc3339
from armada_bridge.objects import Obj
from extender import protocols
from extender.describe import Describer
from extender.inputs import Inputs
from extender.metrics import Metrics
from extender.pod_info import PodInfo
from extender.protocols.base import GangProtocol, GangState, IntentError, StatusInputs


class StatusSource(Protocol):
    """What the status writer reads: the inputs, the core, the managed pods and their reasons."""

    front: Kube
    inputs: Inputs
    core: Scheduler
    metrics: Metrics
    describer: Describer
    last_result: RoundResult | None

    @property
    def managed(self) -> Mapping[str, PodInfo]: ...

    def reason_for(self, uid: str) -> str: ...


log = logging.getLogger(__name__)


def gang_counts(controller: StatusSource) -> tuple[dict[str, int], dict[str, int]]:
    """queue -> number of waiting / admitted units (a gang counts once; a lone pod is a unit)."""
    queued: dict[str, set[str]] = {}
    running: dict[str, set[str]] = {}
    for info in controller.managed.values():
        unit = info.gang.key if info.gang else info.uid
        target = running if info.placed else queued
        target.setdefault(info.queue, set()).add(f"{info.key.split('/')[0]}/{unit}")
    return {q: len(u) for q, u in queued.items()}, {q: len(u) for q, u in running.items()}


def oldest_waits(controller: StatusSource, now: float) -> dict[str, float]:
    """queue -> seconds its longest-waiting unit has waited (wall clock `now` less the creation of
    the unit's first pod); queues with nothing waiting are left out."""
    out: dict[str, float] = {}
    for info in controller.managed.values():
        created = info.job.submit_time
        if info.placed is None and created > 0:
            out[info.queue] = max(out.get(info.queue, 0.0), now - created, 0.0)
    return out


def queue_statuses(
    controller: StatusSource, queued: dict[str, int], running: dict[str, int]
) -> dict[str, Obj]:
    shares = controller.last_result.queue_shares() if controller.last_result else {}
    allocated: dict[str, rs.Resources] = {}
    for rec in controller.core.running_jobs():
        rs.add_into(allocated.setdefault(rec.queue, {}), rec.requests)
    out: dict[str, Obj] = {}
    for q in controller.inputs.queues.items():
        name = q["metadata"]["name"]
        report = shares.get(name)
        out[name] = {
            "fairShare": round(report.fair_share, 4) if report else 0.0,
            "adjustedFairShare": round(report.adjusted_fair_share, 4) if report else 0.0,
            "actualShare": round(report.actual_share, 4) if report else 0.0,
            "allocated": {
                k: rs.format_quantity(k, v) for k, v in sorted(allocated.get(name, {}).items()) if v
            },
            "queuedGangs": queued.get(name, 0),
            "runningGangs": running.get(name, 0),
        }
    return out


async def write_queue_statuses(controller: StatusSource) -> None:
    queued, running = gang_counts(controller)
    controller.metrics.observe_gangs(queued, running, oldest_waits(controller, time.time()))
    for name, status in queue_statuses(controller, queued, running).items():
        current = controller.inputs.queues.get(name)
        patch = merge_patch(current.get("status") or {}, status) if current is not None else None
        if current is None or not patch:
            continue
        try:
            await controller.front.patch(
                QUEUES, name, {"status": patch}, subresource="status", uid=current["metadata"]["uid"]
            )
        except ApiError as e:
            log.debug("queue %s status not written: %s", name, e)


def merge_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> Obj:
    """The JSON merge patch that makes `current` say what `wanted` says (pure; empty: nothing to
    do). Keys of `current` that `wanted` leaves out are kept at the top level, but inside a map
    that `wanted` gives they are removed (null), so a map always says what is true now: a queue
    whose pods are all gone shows nothing allocated, not what it held last."""
    patch: Obj = {}
    for k, v in wanted.items():
        have = current.get(k)
        if isinstance(v, dict):  # an absent map and an empty one say the same
            sub = _replace_map(have, v) if isinstance(have, dict) else v
            if sub:
                patch[k] = sub
        elif have != v:
            patch[k] = v
    return patch


def _replace_map(have: Obj, want: Obj) -> Obj:
    out: Obj = {k: None for k in have if k not in want}
    for k, v in want.items():
        if isinstance(v, dict) and isinstance(have.get(k), dict):
            sub = _replace_map(have[k], v)
            if sub:
                out[k] = sub
        elif have.get(k) != v:
            out[k] = v
    return out


def capacity_by_cluster(controller: StatusSource) -> dict[str, rs.Resources]:
    """What each remote cluster's schedulable nodes hold in all, as the core sees them."""
    out: dict[str, rs.Resources] = {}
    for entry in controller.core.nodedb.entries.values():
        if entry.schedulable:
            rs.add_into(out.setdefault(entry.cluster, {}), entry.node.allocatable)
    return out


def _members(controller: StatusSource) -> dict[tuple[str, str, str], list[Obj]]:
    """(protocol, namespace, PodGroup name) -> member pods."""
    out: dict[tuple[str, str, str], list[Obj]] = {}
    for pod in controller.inputs.pods.items():
        ns = pod["metadata"]["namespace"]
        for protocol, name in protocols.podgroup_names(pod).items():
            out.setdefault((protocol, ns, name), []).append(pod)
    return out


def _gang_state(controller: StatusSource, members: Sequence[Mapping[str, Any]]) -> tuple[GangState, str]:
    placed = [m for m in members if controller.describer.decision_of(m) is not None]
    if placed:
        running = all(
            (m.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed") for m in placed
        )
        return (GangState.RUNNING if running else GangState.ADMITTED), ""
    reason = controller.reason_for(members[0]["metadata"]["uid"]) if members else ""
    return GangState.WAITING, reason


def _queue(controller: StatusSource, name: str) -> tuple[bool, bool]:
    queue = controller.core.queues.get(name)
    return queue is not None, bool(queue and queue.cordoned)


async def write_podgroup_statuses(controller: StatusSource) -> None:
    """Every protocol's PodGroup status, as that protocol's scheduler writes it."""
    members = _members(controller)
    inputs = StatusInputs(
        now=rfc3339(utc_now()),
        gang_state=lambda m: _gang_state(controller, m),
        capacity_by_cluster=capacity_by_cluster(controller),
        queue=lambda name: _queue(controller, name),
        namespace_queue=lambda ns: controller.inputs.namespace_labels(ns).get(keys.QUEUE_LABEL),
    )
    for p in protocols.WITH_PODGROUPS:
        if p.status is None:
            continue
        for pg in controller.inputs.podgroups[p.name].items():
            md = pg["metadata"]
            try:
                status = p.status(inputs, pg, members.get((p.name, md["namespace"], md["name"]), []))
            except (IntentError, ValueError, TypeError) as e:
                # A PodGroup that makes no sense gets no status; its pods wait and say why.
                log.info("%s %s/%s: no status written: %s", p.name, md["namespace"], md["name"], e)
                continue
            await _write_status(controller, p, pg, status)


async def _write_status(
    controller: StatusSource, protocol: GangProtocol, obj: Mapping[str, Any], status: Mapping[str, Any]
) -> None:
    patch = merge_patch(obj.get("status") or {}, status)
    if not patch:
        return
    md = obj["metadata"]
    sub = "status" if protocol.status_subresource else None
    assert protocol.resource is not None
    try:
        await controller.front.patch(
            protocol.resource, md["name"], {"status": patch}, md["namespace"], subresource=sub, uid=md["uid"]
        )
    except ApiError as e:
        log.debug("%s %s/%s status not written: %s", protocol.resource.kind, md["namespace"], md["name"], e)
