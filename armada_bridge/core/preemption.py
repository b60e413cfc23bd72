"""Choosing what a round may preempt.

* **Fair-share preemption** (Armada's PreemptingQueueScheduler): at the start of a round every
  running job of a preemptible priority class is *evicted* unless its queue is at or below
  ``protectedFractionOfFairShare`` of ``max(adjusted fair share, fair share)``. Evicted jobs go
  back to the head of their queue and may only be rescheduled onto their own node; whatever is
  not rescheduled is preempted. Gangs are evicted whole. Unlike Armada, nothing is evicted when no
  active queue with queued jobs is below its adjusted fair share: such a round could only
  reschedule the same jobs, so it would cost work and improve nothing.
* **Urgency preemption** (NodeDb): a job that fits nowhere may displace jobs of lower
  priority-class priority; see :func:`victim_policy`.

Armada's order is kept throughout: evicted gangs are offered their own nodes again first (within
a queue: higher priority class, lower job priority, longest running first), and a new job that
needs room takes it from the evicted jobs that would be rescheduled last.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Set

from armada_bridge.core import quantities as rs
from armada_bridge.core.fairness import QueueShare
from armada_bridge.core.gang import VictimPolicy
from armada_bridge.core.model import SchedulingConfig
from armada_bridge.core.state import JobRecord

EPSILON = 1e-9


def protected(config: SchedulingConfig, share: QueueShare, actual: float) -> bool:
    """Is the queue at or below its protected fraction of fair share?"""
    target = (
        share.uncapped_adjusted_fair_share
        if config.protect_uncapped_adjusted_fair_share
        else share.adjusted_fair_share
    )
    target = max(target, share.fair_share)
    if target <= 0:
        return False
    return actual / target <= config.protected_fraction_of_fair_share + EPSILON


def select_evictions(
    config: SchedulingConfig,
    shares: Mapping[str, QueueShare],
    actual: Mapping[str, float],
    wants_more: Set[str],
    running: Mapping[str, Set[str]],
    jobs: Mapping[str, JobRecord],
    gang_members: Mapping[str, Set[str]],
) -> dict[str, list[list[JobRecord]]]:
    """Queue -> evicted gangs (each a list of running job records), in rescheduling order.

    ``wants_more`` are the queues with queued jobs in the pool; ``running`` the ids of each queue's
    running jobs of a preemptible class in the pool; ``gang_members`` the member ids of each gang key.
    """
    if not config.enable_fair_share_preemption:
        return {}
    beneficiaries = [
        q for q in wants_more if q in shares and actual.get(q, 0.0) < shares[q].adjusted_fair_share - EPSILON
    ]
    if not beneficiaries:
        return {}
    out: dict[str, list[list[JobRecord]]] = {}
    for q in sorted(running):
        ids = running[q]
        if not ids or q not in shares or protected(config, shares[q], actual.get(q, 0.0)):
            continue
        if not any(b != q for b in beneficiaries):
            continue  # evicting a queue's jobs for its own queued jobs changes nothing
        gangs: dict[str, list[JobRecord]] = {}
        for job_id in ids:
            rec = jobs[job_id]
            if not rec.pc.preemptible:
                continue
            key = rec.gang_key
            if key in gangs:
                continue
            members = (
                [jobs[m] for m in sorted(gang_members.get(key, ())) if m in ids] if rec.job.is_gang else [rec]
            )
            gangs[key] = members or [rec]
        if gangs:
            ordered = sorted(
                gangs.values(), key=lambda g: min((-r.pc.priority, r.job.priority, r.bound) for r in g)
            )
            out[q] = ordered
    return out


def reschedule_order(
    evictions: Mapping[str, list[list[JobRecord]]],
    alloc: Mapping[str, rs.Resources],
    weights: Mapping[str, float],
    cost: Callable[[rs.Resources], float],
) -> dict[str, int]:
    """Job id -> position in the order evicted jobs would be rescheduled if nothing new came.

    This is Armada's ``addEvictedJobsToNodeDb``: the queues' evicted gangs (each queue's list
    already in rescheduling order) are merged as the scheduling pass takes them: higher priority
    class first, then the lowest weighted cost *including* the gang, then queue name, each
    queue's allocation (``alloc``: after eviction) growing as its gangs are taken.
    """
    order: dict[str, int] = {}
    tally = {q: dict(alloc.get(q, {})) for q in evictions}
    heads = {q: 0 for q, gangs in evictions.items() if gangs}

    def key(q: str) -> tuple[int, float, str]:
        gang = evictions[q][heads[q]]
        proposed = rs.add(tally[q], rs.total(r.requests for r in gang))
        return (-min(r.pc.priority for r in gang), cost(proposed) / weights[q], q)

    heap = [key(q) for q in heads]
    heapq.heapify(heap)
    while heap:
        q = heapq.heappop(heap)[2]
        for rec in evictions[q][heads[q]]:
            order[rec.id] = len(order)
            rs.add_into(tally[q], rec.requests)
        heads[q] += 1
        if heads[q] < len(evictions[q]):
            heapq.heappush(heap, key(q))
    return order


def victim_policy(config: SchedulingConfig, evicted: Mapping[str, int]) -> VictimPolicy:
    """Which bound jobs a new job may displace, and how much that costs (lower is preferred).

    * **Fair share** (Armada's ``selectNodeForJobWithFairPreemption``): jobs evicted this round
      and not rescheduled yet, of at most the new job's priority. Their room is reserved for them
      only until a job ordered before them needs it. ``evicted`` maps them to their position in
      the rescheduling order (:func:`reschedule_order`); those that would be rescheduled *last*
      are taken first, and the node whose needed victims come latest in that order wins.
      A job already rescheduled this round is never taken back: that is what makes fair-share
      preemption converge (see ``docs/scheduling-core.md``, "Why preemption cannot cycle").
    * **Urgency**: any job of strictly lower priority, when urgency preemption is on.
    """
    urgency = config.enable_urgency_preemption
    last = len(evicted)

    def policy(job_id: str, bound_priority: int, priority: int) -> int | None:
        index = evicted.get(job_id)
        if index is not None and bound_priority <= priority:
            # Far below any urgency victim; later in the rescheduling order = cheaper.
            return (last - index) - (1 << 40)
        if urgency and bound_priority < priority:
            return 2 * bound_priority
        return None

    return policy
