"""Writing what the scheduler knows back onto objects: Queue and PodGroup status."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from armada_bridge import keys
from armada_bridge.core import quantities as rs
from armada_bridge.kube.client import ApiError, Obj
from armada_bridge.kube.resources import (
    COSCHEDULING_PODGROUPS,
    NATIVE_PODGROUPS,
    QUEUES,
    VOLCANO_PODGROUPS,
    Resource,
)
from armada_bridge.kube.times import now as utc_now
from armada_bridge.kube.times import rfc3339
from extender import intent
from extender import podgroup_status as pgs

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
                k: rs.format_quantity(k, v) for k, v in sorted(allocated.get(name, {}).items()) if v
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
        patch = merge_patch(current.get("status") or {}, status) if current is not None else None
        if current is None or not patch:
            continue
        try:
            await controller.front.patch(
                QUEUES, name, {"status": patch}, subresource="status", uid=current["metadata"]["uid"]
            )
        except ApiError as e:
            log.debug("queue %s status not written: %s", name, e)


def merge_patch(current: Obj, wanted: Obj) -> Obj:
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


def free_by_cluster(controller: Controller) -> dict[str, rs.Resources]:
    """Free resources per remote cluster as the core sees them (schedulable nodes only)."""
    out: dict[str, rs.Resources] = {}
    for entry in controller.core.nodedb.entries.values():
        if entry.schedulable:
            rs.add_into(out.setdefault(entry.cluster, {}), entry.free)
    return out


Members = dict[tuple[str, str], list[Obj]]


def _members(controller: Controller) -> tuple[Members, Members, Members]:
    """(namespace, PodGroup name) -> member pods, for the Volcano, coscheduling and native PodGroups."""
    volcano: Members = {}
    coscheduling: Members = {}
    native: Members = {}
    for pod in controller.pods.items():
        refs = intent.podgroup_refs(pod)
        ns = pod["metadata"]["namespace"]
        for name, index in (
            (refs.volcano, volcano),
            (refs.coscheduling, coscheduling),
            (refs.workload, native),
        ):
            if name:
                index.setdefault((ns, name), []).append(pod)
    return volcano, coscheduling, native


def _gang_state(controller: Controller, members: list[Obj]) -> tuple[pgs.GangState, str]:
    placed = [m for m in members if (m["metadata"].get("annotations") or {}).get(keys.ASSIGNED_CLUSTER)]
    if placed:
        running = all(
            (m.get("status") or {}).get("phase") in ("Running", "Succeeded", "Failed") for m in placed
        )
        return (pgs.GangState.RUNNING if running else pgs.GangState.ADMITTED), ""
    reason = controller.reason_for(members[0]["metadata"]["uid"]) if members else ""
    return pgs.GangState.WAITING, reason


async def write_podgroup_statuses(controller: Controller) -> None:
    """Volcano and scheduler-plugins PodGroup status, as those schedulers write it.

    A Volcano PodGroup goes Inqueue when its queue can take it and one cluster can hold its
    minResources, before its pods exist: training-operator creates pods only then.
    """
    volcano_members, cosched_members, native_members = _members(controller)
    now = rfc3339(utc_now())
    free = free_by_cluster(controller)
    for pg in controller.volcano_pgs.items():
        md, spec = pg["metadata"], pg.get("spec") or {}
        members = volcano_members.get((md["namespace"], md["name"]), [])
        state, reason = _gang_state(controller, members)
        previous = pg.get("status") or {}
        if state is pgs.GangState.WAITING and previous.get("phase") in (None, "", "Pending"):
            queue_name = spec.get("queue") or intent.VOLCANO_DEFAULT_QUEUE
            queue = controller.core.queues.get(queue_name)
            decision = pgs.volcano_should_enqueue(
                queue_exists=queue is not None,
                queue_name=queue_name,
                queue_cordoned=bool(queue and queue.cordoned),
                min_resources=intent.normalize_min_resources(spec.get("minResources"), "minResources"),
                free_by_domain=free,
            )
            if decision.inqueue:
                state = pgs.GangState.ADMITTED
            elif not members:
                reason = decision.message
        status = pgs.volcano_status(
            state,
            members,
            min_member=int(spec.get("minMember") or 1),
            now=now,
            message=reason,
            previous=previous,
        )
        await _write_status(controller, VOLCANO_PODGROUPS, pg, status)
    for pg in controller.coscheduling_pgs.items():
        md, spec = pg["metadata"], pg.get("spec") or {}
        members = cosched_members.get((md["namespace"], md["name"]), [])
        state, _ = _gang_state(controller, members)
        status = pgs.coscheduling_status(
            state, members, min_member=int(spec.get("minMember") or 1), now=now, previous=pg.get("status")
        )
        await _write_status(controller, COSCHEDULING_PODGROUPS, pg, status)
    for pg in controller.native_pgs.items():
        md = pg["metadata"]
        state, reason = _gang_state(controller, native_members.get((md["namespace"], md["name"]), []))
        previous = pg.get("status") or {}
        conditions = pgs.native_podgroup_conditions(state, now=now, message=reason, previous=previous)
        await _write_status(controller, NATIVE_PODGROUPS, pg, {**previous, "conditions": conditions})


async def _write_status(controller: Controller, resource: Resource, obj: Obj, status: Obj) -> None:
    patch = merge_patch(obj.get("status") or {}, status)
    if not patch:
        return
    md = obj["metadata"]
    # Volcano's PodGroup CRD has no status subresource (upstream ships it so): patch the object.
    sub = None if resource == VOLCANO_PODGROUPS else "status"
    try:
        await controller.front.patch(
            resource, md["name"], {"status": patch}, md["namespace"], subresource=sub, uid=md["uid"]
        )
    except ApiError as e:
        log.debug("%s %s/%s status not written: %s", resource.kind, md["namespace"], md["name"], e)
