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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set

from extender.core.fairness import QueueShare
from extender.core.gang import VictimPolicy
from extender.core.model import SchedulingConfig
from extender.core.state import JobRecord

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
                gangs.values(), key=lambda g: min((-r.pc.priority, r.job.priority, r.bound_seq) for r in g)
            )
            out[q] = ordered
    return out


def victim_policy(
    config: SchedulingConfig,
    evicted: Set[str],
    rescheduled: Set[str],
    jobs: Mapping[str, JobRecord],
    queue: str,
    fair_to_take: Callable[[JobRecord, bool], bool],
) -> VictimPolicy:
    """Which bound jobs a new job may displace, and how much that costs (lower is preferred).

    * Jobs evicted this round and not yet rescheduled: their room is reserved for them, but any
      job reaching the front of the queue ordering before them may take it (Armada binds evicted
      jobs at EvictedPriority, below every real priority).
    * Jobs evicted and already rescheduled, from another queue, of at most the new job's priority:
      the rescheduling is undone (Armada's fair-share step in the NodeDb).
    * Any job of strictly lower priority, when urgency preemption is on.

    The first two are fair-share moves: ``fair_to_take(victim, pending)`` must confirm that the
    taking queue does not end up costlier than the queue it takes from (no preemption that does
    not improve fairness).
    """
    urgency = config.enable_urgency_preemption

    def policy(job_id: str, bound_priority: int, priority: int) -> int | None:
        if job_id in evicted:
            if fair_to_take(jobs[job_id], True):
                return 2 * bound_priority - (1 << 40)
        elif (
            job_id in rescheduled
            and bound_priority <= priority
            and jobs[job_id].queue != queue
            and fair_to_take(jobs[job_id], False)
        ):
            return 2 * bound_priority - 1
        if urgency and bound_priority < priority:
            return 2 * bound_priority
        return None

    return policy
