"""One scheduling round over one pool (Armada's PreemptingQueueScheduler + QueueScheduler).

1. Context: active queues (queued or running work in the pool), allocations, constrained demand,
   fair shares.
2. Fair-share eviction (:mod:`armada_bridge.core.preemption`).
3. Scheduling pass: a heap of per-queue iterators ordered as Armada's
   ``QueueCandidateGangIteratorPQ``: higher priority class of the head gang first, then the lowest
   weighted DRF cost *including the head gang* (progressive filling), then queue name. Within a
   queue, evicted gangs come first (longest running first), then queued jobs by
   priority class, job priority, submit time and id; a gang is yielded once all its members are
   present. Each candidate goes through the round and queue constraints, then placement
   (:mod:`armada_bridge.core.gang`); if it fits nowhere, and not in another pool either without
   preemption, it may take the room of evicted jobs not rescheduled yet (the ones Armada's order
   would reschedule last first), or urgency-preempt lower priorities.
4. Evicted jobs that were not rescheduled are preempted.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping
from typing import Protocol

from armada_bridge.core import quantities as rs
from armada_bridge.core.constraints import TokenBucket, cap_demand, limits
from armada_bridge.core.fairness import DominantResourceFairness, QueueShare, compute_fair_shares
from armada_bridge.core.gang import (
    Domain,
    Plan,
    VictimPolicy,
    better,
    domain_groups,
    gang_domains,
    plan_with_preemption,
    plan_without_preemption,
)
from armada_bridge.core.model import CLUSTER_LABEL, JobState, PriorityClass, Queue, SchedulingConfig
from armada_bridge.core.nodedb import NodeDb, NodeEntry
from armada_bridge.core.preemption import reschedule_order, select_evictions, victim_policy
from armada_bridge.core.result import Placement, QueueReport, RoundResult
from armada_bridge.core.state import Allocation, Colocation, GangRecord, JobRecord, QueueJobs

Candidate = tuple[list[JobRecord], bool]  # members, evicted
#: one limit to check before placing: (what the queue holds, resource, the most it may hold,
#: whether the limit is its priority class's).
LimitCheck = tuple[rs.Resources, str, float, bool]


class RoundContext(Protocol):
    """What a pool round reads and changes of the scheduler's state: the whole of it, named here
    (the Scheduler is one; a round is its part of Armada's round, kept in a module of its own)."""

    config: SchedulingConfig
    nodedb: NodeDb
    queues: dict[str, Queue]
    jobs: dict[str, JobRecord]
    gangs: dict[str, GangRecord]
    #: colocation key -> where its jobs run
    colocations: dict[str, Colocation]
    queue_jobs: dict[str, QueueJobs]
    #: what each queue holds, per pool and priority class (binds and preemptions update it)
    alloc: Allocation
    queued_count: dict[str, int]
    #: job id -> why it waits (the round writes the reasons of the jobs it looked at)
    reasons: dict[str, str]
    #: pool -> scheduling key -> (epochs, reason): shapes that fit nowhere
    unfeasible: dict[str, dict[int, tuple[tuple[int, int], str]]]
    global_bucket: TokenBucket
    #: bumped whenever capacity may have grown
    capacity_epoch: int
    #: the pool rounds run so far (a round's stamp on the jobs it examined)
    pool_rounds: int

    def queued_demand(self, queue: str, pool: str | None = None) -> rs.Resources: ...

    def queue_bucket(self, name: str) -> TokenBucket: ...

    def epochs(self) -> tuple[int, int]: ...

    def bind_to(self, rec: JobRecord, entry: NodeEntry, at: float) -> None: ...

    def drop(self, rec: JobRecord) -> None: ...


class QueueIterator:
    """Yields a queue's candidate gangs for one pool, evicted ones first."""

    def __init__(self, pr: PoolRound, queue: str, rank: int, evicted: list[list[JobRecord]]) -> None:
        self.pr = pr
        self.queue = queue
        #: the queue's place in name order (ties in the heap go to the first name).
        self.rank = rank
        #: the queue's allocation in this round (updated in place) and its weight.
        self.alloc = pr.alloc[queue]
        self.weight = pr.weights[queue]
        self.evicted = evicted
        qj = pr.s.queue_jobs.get(queue)
        self.qj = qj
        self.items = qj.ordered() if qj is not None else []
        #: where the scan of the queue's jobs is.
        self.pos = 0
        self.pending: dict[str, list[JobRecord]] = {}
        self.evicted_only = False
        self.stop_reason = ""
        self.current: Candidate | None = None
        # Constant while the pool round runs (read on every advance).
        self.stamp = pr.stamp
        self.pool = pr.pool
        self.lookback = pr.s.config.max_queue_lookback
        self.limit = self.lookback if self.lookback else len(self.items) + 1
        self._candidates = self._generate()
        self.advance()

    def stop_new(self, reason: str) -> None:
        if not self.evicted_only:
            self.evicted_only = True
            self.stop_reason = reason
            # Members of a gang seen so far wait for the same reason as the rest of the queue.
            reasons = self.pr.s.reasons
            for members in self.pending.values():
                for rec in members:
                    reasons[rec.id] = reason
            self.pending.clear()

    def advance(self) -> None:
        self.current = next(self._candidates, None)

    def _generate(self) -> Iterator[Candidate]:
        """The candidates in order; a generator, so that the scan's state stays in its frame
        between candidates (``pos`` is kept on the iterator for :meth:`mark_remaining`)."""
        for gang in self.evicted:
            yield (gang, True)
        if self.evicted_only:
            return
        pool = self.pool
        items = self.items
        n = len(items)
        round_no = self.stamp
        limit = self.limit
        pr = self.pr
        s = pr.s
        reasons = s.reasons
        qj = self.qj
        unfeasible = pr.unfeasible
        # Shapes found unfeasible while looking for the next candidate: their reason, per key.
        # The queue's cost does not change while skipping, so neither does the reason.
        skipped: dict[int, str] | None = None
        pos = 0
        examined = 0
        while pos < n:
            rec = items[pos]
            pos += 1
            if rec.state is not _QUEUED or rec.seen_round == round_no:
                continue
            pools = rec.pools
            if pools is not None and pool not in pools:
                continue
            if examined >= limit:
                self.pos = pos - 1
                self.stop_new(
                    f"not examined: queue {self.queue} reached maxQueueLookback={self.lookback} this round"
                )
                return
            examined += 1
            rec.seen_round = round_no
            if rec.is_gang:
                g = s.gangs[rec.gang_key]
                if g.domain is not None:
                    members = [rec]  # joins its admitted gang
                elif g.queued < g.cardinality:
                    reasons[rec.id] = f"gang {g.present}/{g.cardinality} present"
                    continue
                else:
                    members = self.pending.setdefault(rec.gang_key, [])
                    members.append(rec)
                    if len(members) < g.queued:
                        continue
                    del self.pending[rec.gang_key]
                    known = pr.known_gang_miss(self.queue, members)
                    if known is not None:
                        # What yielding it would decide: a gang of a shape that fits nowhere,
                        # seen at this node database version (its heap place would not change).
                        pr._wait(members, known)
                        continue
            else:
                skey = rec.skey
                known = skipped.get(skey) if skipped is not None else None
                if known is None:
                    cached = unfeasible.get(skey)
                    if cached is not None and cached[0] == pr.epochs:
                        known = pr.reason_for(self.queue, cached[1])
                        if skipped is None:
                            skipped = {}
                        skipped[skey] = known
                if known is not None:
                    # Skip the whole run of identical jobs at once; they share the reason.
                    start = pos - 1
                    end = qj.run_end(start) if qj is not None else pos
                    if end - start > limit - examined + 1:
                        end = start + limit - examined + 1
                    if qj is not None:
                        qj.give_reason(reasons, start, end, known)
                    else:
                        reasons[rec.id] = known
                    if end > pos:
                        examined += end - pos
                        pos = end
                    continue
                members = [rec]
            self.pos = pos
            yield (members, False)
            if self.evicted_only:
                return
            skipped = None
        self.pos = pos
        for members in self.pending.values():
            for rec in members:
                reasons[rec.id] = "gang members not all eligible for this pool"
        self.pending.clear()

    def mark_remaining(self, reason: str) -> None:
        """Give every job this iterator did not reach the reason it stopped for."""
        reasons = self.pr.s.reasons
        qj = self.qj
        if qj is not None and qj.pinned == 0 and len(qj.ids) == len(self.items):
            # Nothing after ``pos`` was examined; stale entries are popped at the end of the round.
            qj.give_reason(reasons, self.pos, len(qj.ids), reason)
            return
        if qj is not None:
            qj.touched()
        for rec in self.remaining():
            reasons[rec.id] = reason

    def remaining(self) -> Iterator[JobRecord]:
        round_no = self.pr.stamp
        pool = self.pr.pool
        for rec in self.items[self.pos :]:
            if rec.state is JobState.QUEUED and rec.seen_round != round_no:
                pools = rec.job.pools
                if pools is None or pool in pools:
                    yield rec


class PoolRound:
    def __init__(self, s: RoundContext, pool: str, now: float, result: RoundResult) -> None:
        self.s = s
        self.pool = pool
        self.now = now
        s.pool_rounds += 1
        #: marks the jobs this pool round has examined (JobRecord.seen_round).
        self.stamp = s.pool_rounds
        self.result = result
        self.config = s.config
        self.total = s.nodedb.pool_total(pool)
        self.drf = DominantResourceFairness(self.total, self.config.drf_resources)
        #: queue -> its allocation in the pool, in all and per priority class: the scheduler's own
        #: dicts (binds and preemptions update them), less the jobs evicted this round and not
        #: rescheduled yet (counted again when rescheduled, preempted or at the end of the round).
        self.alloc: dict[str, rs.Resources] = {}
        self.alloc_pc: dict[str, dict[str, rs.Resources]] = {}
        self.shares: dict[str, QueueShare] = {}
        self.weights: dict[str, float] = {}
        #: what this round has scheduled so far (kept only for a round budget).
        self.scheduled_new: rs.Resources = {}
        self.reports: dict[str, QueueReport] = {}
        #: jobs evicted this round and not rescheduled (or taken) yet -> their position in
        #: Armada's rescheduling order; the last ones are taken first.
        self.evicted: dict[str, int] = {}
        self.epochs = s.epochs()
        #: this pool's shapes that fit nowhere (RoundContext.unfeasible).
        self.unfeasible = s.unfeasible.setdefault(pool, {})
        self.round_stop = ""
        self._reason_memo: dict[tuple[str, int, str], str] = {}
        self._alloc_version: dict[str, int] = {}
        # Constant for the round: which checks can apply at all, and what repeats per job.
        self._global_limited = not s.global_bucket.unlimited
        self._queue_limited = self.config.maximum_per_queue_scheduling_burst > 0
        #: no round budget, burst or rate limit: what is checked before each gang is cordon only.
        self._unconstrained = not (
            self.config.maximum_resource_fraction_to_schedule
            or self.config.maximum_scheduling_burst > 0
            or self._global_limited
            or self._queue_limited
        )
        #: (queue, priority class) -> the queue's limits, then the class's, in this pool.
        self._limits: dict[tuple[str, str], list[LimitCheck]] = {}
        self._placements: dict[str, Placement] = {}
        #: scheduling key -> (node, node database version): the best fit of the last single job
        #: of that key placed in this round, right after its bind. While nothing else changed,
        #: the next job of the key fits there best too, if it fits at all: every node that did
        #: not fit still does not, and that node's free resources only went down.
        self._last_fit: dict[int, tuple[NodeEntry, int]] = {}
        #: gang shape (:meth:`_gang_shape`) -> (node database version, why): gangs of that shape
        #: fit nowhere while the node database is unchanged (a backlog of identical gangs costs one
        #: plan per round, not one each).
        self._gang_misses: dict[tuple[object, ...], tuple[int, str]] = {}
        #: (queue, priority class, gang shape) -> (node database version, reason): gangs passed
        #: over without being considered (:meth:`known_gang_miss`).
        self._passed_over: dict[tuple[str, str, tuple[object, ...]], tuple[int, str]] = {}
        self._whole_pool: list[Domain] = [(pool, None, None, None)]

    # ------------------------------------------------------------ context
    def _context(self) -> list[str]:
        s = self.s
        pool = self.pool
        active: list[str] = []
        wants_more: set[str] = set()
        demand_shares: dict[str, float] = {}
        running = s.alloc.running.get(pool, {})
        for name in sorted(s.queues):
            queue = s.queues[name]
            any_demand = s.queued_demand(name)
            pool_demand = s.queued_demand(name, pool)
            has_queued = any(v > 0 for v in any_demand.values()) or any(v > 0 for v in pool_demand.values())
            if not has_queued and s.queued_count.get(name, 0) > 0:
                has_queued = any(
                    r.state is JobState.QUEUED and (r.job.pools is None or pool in r.job.pools)
                    for r in s.queue_jobs.get(name, _EMPTY).items
                )
            if not has_queued and not running.get(name):
                continue
            active.append(name)
            if has_queued:
                wants_more.add(name)
            alloc, self.alloc_pc[name] = s.alloc.slots(pool, name)
            self.alloc[name] = alloc
            demand = rs.add(rs.add(alloc, any_demand), pool_demand)
            capped = cap_demand(demand, self.total, queue.resource_limits)
            demand_shares[name] = self.drf.cost(capped) if not self.drf.is_empty else 1.0
            self.weights[name] = queue.weight
        self.shares = compute_fair_shares(self.weights, demand_shares, self.config.fair_share_max_iterations)
        self._wants_more = wants_more
        return active

    # -------------------------------------------------------------- round
    def run(self) -> None:
        active = self._context()
        if not active:
            return
        for name in active:
            sh = self.shares[name]
            self.reports[name] = QueueReport(
                pool=self.pool,
                queue=name,
                weight=sh.weight,
                fair_share=sh.fair_share,
                adjusted_fair_share=sh.adjusted_fair_share,
                uncapped_adjusted_fair_share=sh.uncapped_adjusted_fair_share,
                actual_share=0.0,
                demand_share=sh.demand_share,
            )
        evictions = self._evict(active)
        # ``active`` is in name order.
        iterators = {
            name: QueueIterator(self, name, rank, evictions.get(name, [])) for rank, name in enumerate(active)
        }
        # (priority, cost, queue rank, iterator): ranks are unique, so iterators are never compared.
        heap = [e for e in map(self._heap_entry, iterators.values()) if e is not None]
        heapq.heapify(heap)
        while heap:
            it = heap[0][3]
            cand = it.current
            if cand is not None:
                self._consider(it, cand)
                it.current = next(it._candidates, None)
            entry = self._heap_entry(it)
            if entry is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, entry)  # the same queue, at its new place
        self._finish(iterators, evictions)

    def _heap_entry(self, it: QueueIterator) -> tuple[int, float, int, QueueIterator] | None:
        cand = it.current
        if cand is None:
            return None
        members, _evicted = cand
        head = members[0]
        req = head.requests if len(members) == 1 else rs.total(m.requests for m in members)
        g = self.s.gangs.get(head.gang_key) if head.is_gang else None
        if g is not None and g.min_resources and g.domain is None:
            req = {k: max(req.get(k, 0), g.min_resources.get(k, 0)) for k in set(req) | set(g.min_resources)}
        return (-head.pc.priority, self.drf.cost_with(it.alloc, req) / it.weight, it.rank, it)

    # ----------------------------------------------------------- eviction
    def _evict(self, active: list[str]) -> dict[str, list[list[JobRecord]]]:
        s = self.s
        actual = {q: self.drf.cost(self.alloc[q]) for q in active}
        running = {
            q: ids for q, ids in s.alloc.preemptible.get(self.pool, {}).items() if q in self.shares and ids
        }
        if not running:
            return {}
        gang_members = {k: g.members for k, g in s.gangs.items()}
        evictions = select_evictions(
            self.config, self.shares, actual, self._wants_more, running, s.jobs, gang_members
        )
        for queue, gangs in evictions.items():
            for gang in gangs:
                for rec in gang:
                    # The job stays bound: its room is kept for it unless a job ordered before it
                    # needs it (Armada's EvictedPriority).
                    rs.sub_into(self.alloc[queue], rec.requests)
                    rs.sub_into(self.alloc_pc[queue].setdefault(rec.pc.name, {}), rec.requests)
                    self.reports[queue].evicted += 1
        self.evicted = reschedule_order(evictions, self.alloc, self.weights, self.drf.cost)
        if self.evicted:
            s.capacity_epoch += 1
            self.epochs = s.epochs()
        return evictions

    # ------------------------------------------------------------ consider
    def _consider(self, it: QueueIterator, cand: Candidate) -> None:
        members, evicted = cand
        if evicted:
            self._reschedule(members)
            return
        s = self.s
        queue = s.queues[it.queue]
        if self.round_stop:
            it.stop_new(self.round_stop)
            self._wait(members, self.round_stop)
            return
        size = len(members)
        if self._unconstrained:
            if queue.cordoned:
                reason = f"queue {queue.name} is cordoned"
                it.stop_new(reason)
                self._wait(members, reason)
                return
            self._place(it, queue.name, members, None)
            return
        # Round budget: checked before each new gang, so a round may overshoot by one gang.
        limit = self.config.maximum_resource_fraction_to_schedule
        if limit:
            for name in sorted(limit):
                if self.scheduled_new.get(name, 0) > limit[name] * self.total.get(name, 0):
                    self.round_stop = (
                        f"round budget exhausted (maximumResourceFractionToSchedule {name}={limit[name]})"
                    )
                    it.stop_new(self.round_stop)
                    self._wait(members, self.round_stop)
                    return
        burst = self.config.maximum_scheduling_burst
        if burst > 0 and size > burst:
            self._wait(members, f"gang of {size} exceeds maximumSchedulingBurst={burst}")
            return
        if self._global_limited and s.global_bucket.available(self.now) < size:
            self.round_stop = "global scheduling rate limit reached (maximumSchedulingRate/Burst)"
            it.stop_new(self.round_stop)
            self._wait(members, self.round_stop)
            return
        if queue.cordoned:
            reason = f"queue {queue.name} is cordoned"
            it.stop_new(reason)
            self._wait(members, reason)
            return
        qburst = self.config.maximum_per_queue_scheduling_burst
        if qburst > 0 and size > qburst:
            self._wait(members, f"gang of {size} exceeds maximumPerQueueSchedulingBurst={qburst}")
            return
        bucket = s.queue_bucket(queue.name) if self._queue_limited else None
        if bucket is not None and bucket.available(self.now) < size:
            reason = (
                f"queue {queue.name} reached its scheduling rate limit (maximumPerQueueSchedulingRate/Burst)"
            )
            it.stop_new(reason)
            self._wait(members, reason)
            return
        self._place(it, queue.name, members, bucket)

    def _place(
        self, it: QueueIterator, queue: str, members: list[JobRecord], bucket: TokenBucket | None
    ) -> None:
        """Past the round's and queue's rate limits: the queue's resource limits, then placement."""
        s = self.s
        reason = self._queue_limit(queue, members)
        if reason:
            # Not terminal for the queue (as in Armada: only its rate limit and cordon are): a
            # smaller job behind this one may still fit under the limit.
            self._wait(members, reason)
            return
        # A colocated job's fit depends on where its colocation runs, not on its shape alone.
        head = members[0]
        single = len(members) == 1 and not head.is_gang and head.colocation is None
        # The node of the last job of this shape first: while it is valid, no verdict that the
        # shape fits nowhere is (a job of the shape was placed after any such verdict, and a plan
        # that fails, the only writer of verdicts, is only tried once the last fit is invalid).
        last = self._last_fit.get(head.skey) if single else None
        if last is not None and last[1] == s.nodedb.version and rs.fits(head.requests, last[0].free):
            assignments, victims = [(head, last[0])], _NO_VICTIMS
        else:
            # A verdict on a whole gang holds exactly while no node changed and no preemption is
            # looked at (the plan is then a function of the nodes and the shape alone).
            gang = None if single or self._may_preempt(head.pc.priority) else self._gang_shape(members)
            if single:
                cached = self.unfeasible.get(head.skey)
                if cached is not None and cached[0] == self.epochs:
                    self._wait(members, self.reason_for(queue, cached[1]))
                    return
            elif gang is not None:
                missed = self._gang_misses.get(gang)
                if missed is not None and missed[0] == s.nodedb.version:
                    self._wait(members, self.reason_for(queue, missed[1]))
                    return
            plan, why, cacheable = self._plan(queue, members)
            if plan is None:
                self._wait(members, self.reason_for(queue, why))
                if single and cacheable:
                    self.unfeasible[head.skey] = (self.epochs, why)
                elif gang is not None and cacheable:
                    self._gang_misses[gang] = (s.nodedb.version, why)
                return
            assignments, victims = plan.assignments, plan.victims
        self._commit(queue, assignments, victims)
        if single and not victims:
            self._last_fit[head.skey] = (assignments[0][1], s.nodedb.version)
        if self._global_limited:
            s.global_bucket.take(len(members))
        if bucket is not None:
            bucket.take(len(members))

    def known_gang_miss(self, queue: str, members: list[JobRecord]) -> str | None:
        """The reason a whole gang waits, when considering it would only find that its shape fits
        nowhere at this node database version, as :meth:`_consider` and :meth:`_place` would: no
        round limit or cordon stops its queue, no preemption may be looked at, and it is under the
        queue's limits. None: the gang is to be considered."""
        if not self._unconstrained:
            return None
        shape = self._gang_shape(members)
        if shape is None:
            return None
        head = members[0]
        version = self.s.nodedb.version
        # All of it holds for the next gang of the queue, shape and class while no node changes
        # (the queue's allocation and what may be preempted change only with the nodes).
        key = (queue, head.pc.name, shape)
        passed = self._passed_over.get(key)
        if passed is not None and passed[0] == version:
            return passed[1]
        missed = self._gang_misses.get(shape)
        if missed is None or missed[0] != version or self._may_preempt(head.pc.priority):
            return None
        if self.s.queues[queue].cordoned or self._queue_limit(queue, members):
            return None
        reason = self.reason_for(queue, missed[1])
        self._passed_over[key] = (version, reason)
        return reason

    def reason_for(self, queue: str, why: str) -> str:
        """A capacity reason, prefixed with the queue's fair-share position when that explains it."""
        key = (queue, self._alloc_version.get(queue, 0), why)
        out = self._reason_memo.get(key)
        if out is None:
            out = why
            share = self.shares[queue]
            actual = self.drf.cost(self.alloc[queue])
            adjusted = share.adjusted_fair_share
            if actual >= adjusted - 1e-9 and adjusted < share.demand_share:
                where = "above" if actual > adjusted + 1e-9 else "at"
                out = f"queue {queue} {where} its fair share (actual {actual:.3f}, adjusted fair share {adjusted:.3f}); {why}"
            self._reason_memo[key] = out
        return out

    def _wait(self, members: list[JobRecord], reason: str) -> None:
        reasons = self.s.reasons
        for rec in members:
            reasons[rec.id] = reason
        qj = self.s.queue_jobs.get(members[0].queue)
        if qj is not None:
            qj.touched()

    def _queue_limit(self, queue: str, members: list[JobRecord], pool: str | None = None) -> str:
        """Why ``members`` would take ``queue`` over a limit in this round's pool (or, as things
        stand, in ``pool``), or ""."""
        pc = members[0].pc
        if pool is None or pool == self.pool:
            checks = self._limits.get((queue, pc.name))
            if checks is None:
                # The round's allocations are updated in place: the checks read them as they go.
                by_pc = self.alloc_pc[queue]
                held_pc = by_pc.get(pc.name)
                if held_pc is None:
                    held_pc = by_pc[pc.name] = {}
                checks = self._checks(queue, pc, self.total, self.alloc[queue], held_pc)
                self._limits[(queue, pc.name)] = checks
        else:
            s = self.s
            held, held_pc = s.alloc.of(pool, queue), s.alloc.of_pc(pool, queue, pc.name)
            checks = self._checks(queue, pc, s.nodedb.pool_total(pool), held, held_pc)
        if not checks:
            return ""
        req = members[0].requests if len(members) == 1 else rs.total(m.requests for m in members)
        for have, res, most, by_class in checks:
            if have.get(res, 0) + req.get(res, 0) > most + 1e-9:
                q = self.s.queues[queue]
                if not by_class:
                    return f"queue {queue} would exceed its limit of {q.resource_limits[res]:g} of the pool's {res}"
                return (
                    f"queue {queue} would exceed its limit of {self._class_limits(q, pc)[res]:g} of the "
                    f"pool's {res} for priority class {pc.name}"
                )
        return ""

    def _checks(
        self, queue: str, pc: PriorityClass, total: rs.Resources, held: rs.Resources, held_pc: rs.Resources
    ) -> list[LimitCheck]:
        """The limits of ``queue`` in a pool of ``total``, in all (``held``) and of class ``pc``
        (``held_pc``), in the order they are checked."""
        q = self.s.queues[queue]
        return [(held, res, most, False) for res, most in limits(q.resource_limits, total)] + [
            (held_pc, res, most, True) for res, most in limits(self._class_limits(q, pc), total)
        ]

    @staticmethod
    def _class_limits(q: Queue, pc: PriorityClass) -> Mapping[str, float]:
        return q.resource_limits_by_priority_class.get(pc.name, pc.maximum_resource_fraction_per_queue)

    # ------------------------------------------------------------- placing
    def _domains(
        self, members: list[JobRecord], pool: str | None = None, policy: VictimPolicy | None = None
    ) -> tuple[list[Domain], str]:
        """Where ``members`` may land in ``pool`` (default: this round's pool), or why nowhere:
        their gang's domains, kept to the cluster of their colocation when it has one. With
        ``policy``, a gang's reservation may count the room of the jobs the policy lets it displace."""
        pool = pool or self.pool
        head = members[0]
        key = head.job.colocation
        if key is None and not head.is_gang and pool == self.pool:
            return self._whole_pool, ""
        domains, why = self._gang_domains(members, pool, policy)
        if key is None:
            return domains, why
        c = self.s.colocations.get(key)
        if c is None or not domains:
            return domains, why
        where = f"cluster {c.cluster}" + (f" of pool {c.pool}" if c.pool != pool else "")
        kept: list[Domain] = [
            (d[0], c.cluster, d[2], d[3]) for d in domains if d[0] == c.pool and d[1] in (None, c.cluster)
        ]
        if not kept:
            return [], f"kept in {where}, where the other jobs of {key} run"
        return kept, ""

    def _gang_domains(
        self, members: list[JobRecord], pool: str, policy: VictimPolicy | None
    ) -> tuple[list[Domain], str]:
        s = self.s
        rec = members[0]
        g = s.gangs.get(rec.gang_key) if rec.is_gang else None
        if g is None:
            return (self._whole_pool if pool == self.pool else [(pool, None, None, None)]), ""
        if g.domain is not None:
            gpool, cluster, key, value = g.domain
            if gpool != pool:
                return [], f"gang already admitted in pool {gpool}"
            return [(gpool, cluster, key, value)], ""
        label = g.uniformity_label or None
        indexed = self.config.indexed_node_labels
        if label is not None and label != CLUSTER_LABEL and indexed is not None and label not in indexed:
            return [], f"uniformity label {label} is not indexed"
        if label == CLUSTER_LABEL:
            label = None
        domains = gang_domains(s.nodedb, pool, label)
        if not domains:
            return [], f"no nodes with uniformity label {label}"
        if g.min_resources:
            need = rs.total(m.requests for m in members)
            need = {k: max(need.get(k, 0), g.min_resources.get(k, 0)) for k in rs.add(need, g.min_resources)}
            priority = rec.pc.priority

            def room(d: Domain) -> rs.Resources:
                free = self._domain_free(d)
                return free if policy is None else rs.add(free, self._reclaimable(d, policy, priority))

            domains = [d for d in domains if rs.fits(need, room(d))]
            if not domains:
                return [], (
                    f"no remote cluster can reserve this gang's minimum resources ({rs.format_resources(need)}): "
                    f"largest free is {self._largest_cluster_free()}"
                )
        return domains, ""

    def _reclaimable(self, d: Domain, policy: VictimPolicy, priority: int) -> rs.Resources:
        """What the jobs bound in domain ``d`` that ``policy`` lets a job of ``priority`` displace
        hold (jobs evicted this round, lower priorities under urgency preemption)."""
        label = (d[2], d[3]) if d[2] is not None and d[3] is not None else None
        out: rs.Resources = {}
        for group in domain_groups(self.s.nodedb, d):
            for entry in group.members:
                if label is not None and entry.labels.get(label[0]) != label[1]:
                    continue
                for job_id, (req, prio, _seq) in entry.bound.items():
                    if policy(job_id, prio, priority) is not None:
                        rs.add_into(out, req)
        return out

    def _domain_free(self, d: Domain) -> rs.Resources:
        label = (d[2], d[3]) if d[2] is not None and d[3] is not None else None
        assert d[1] is not None
        return self.s.nodedb.cluster_free(d[0], d[1], label)

    def _largest_cluster_free(self) -> str:
        nodedb = self.s.nodedb
        best: tuple[tuple[int, ...], str, rs.Resources] | None = None
        for cluster in nodedb.clusters(self.pool):
            free = nodedb.cluster_free(self.pool, cluster)
            k = tuple(free.get(r, 0) for r in nodedb.indexed)
            if best is None or k > best[0]:
                best = (k, cluster, free)
        if best is None:
            return "nothing"
        return f"{rs.format_resources(best[2], _shown(best[2]))} in cluster {best[1]}"

    def _plan(self, queue: str, members: list[JobRecord]) -> tuple[Plan | None, str, bool]:
        """A placement, or why there is none and whether that verdict may be cached per shape."""
        s = self.s
        domains, why = self._domains(members)
        for d in domains:
            plan = plan_without_preemption(s.nodedb, members, d)
            if plan is not None:
                return plan, "", True
        if self._may_preempt(members[0].pc.priority):
            # Placement without preemption in any pool comes before preemption in this one.
            elsewhere = self._fits_elsewhere(members)
            if elsewhere:
                return None, f"fits in pool {elsewhere} without preempting anything", False
            # A job evicted this round and not rescheduled yet holds its room only until a job
            # ordered before it needs the room: this gang reached the front of the ordering first.
            policy = victim_policy(self.config, self.evicted)
            if not domains:  # a reservation may fit once what preemption frees is counted
                domains, why = self._domains(members, policy=policy)
            best: Plan | None = None
            for d in domains:
                plan = plan_with_preemption(s.nodedb, members, d, policy)
                if plan is not None and better(plan, best):
                    best = plan
            if best is not None:
                return best, "", True
        if not domains:
            return None, why, True
        return None, self._no_fit_reason(members), True

    def _may_preempt(self, priority: int) -> bool:
        """Whether a job of ``priority`` that fits nowhere as things stand may take room from
        others: jobs evicted this round and not rescheduled yet, or (urgency preemption) jobs of
        lower priorities bound in the pool."""
        if self.evicted:
            return True
        return self.config.enable_urgency_preemption and self.s.nodedb.has_bound_below(self.pool, priority)

    def _gang_shape(self, members: list[JobRecord]) -> tuple[object, ...] | None:
        """What placing a whole gang depends on besides the nodes: its members' scheduling keys in
        order, its uniformity label and minimum resources. None for a member joining its admitted
        gang and for colocated members (their fit depends on where others run)."""
        head = members[0]
        g = self.s.gangs.get(head.gang_key) if head.is_gang else None
        if g is None or g.domain is not None or any(m.colocation is not None for m in members):
            return None
        least = tuple(sorted(g.min_resources.items())) if g.min_resources else ()
        return (tuple(m.skey for m in members), g.uniformity_label, least)

    def _fits_elsewhere(self, members: list[JobRecord]) -> str:
        """Another pool where ``members`` fit now without preempting anything, or "".

        Pools are scheduled one after another (in name order); a job that would have to preempt
        here but fits as it is in another pool waits for that pool instead.
        """
        nodedb = self.s.nodedb
        allowed = members[0].pools
        queue = members[0].queue
        for pool in nodedb.pools():
            if pool == self.pool or (allowed is not None and pool not in allowed):
                continue
            if self._queue_limit(queue, members, pool):
                continue  # room there, but not for this queue
            domains, _why = self._domains(members, pool)
            for d in domains:
                if plan_without_preemption(nodedb, members, d) is not None:
                    return pool
        return ""

    def _no_fit_reason(self, members: list[JobRecord]) -> str:
        nodedb = self.s.nodedb
        rec = members[0]
        key = rec.job.colocation
        c = self.s.colocations.get(key) if key is not None else None
        if c is not None:
            need = rs.total(m.requests for m in members)
            free = nodedb.cluster_free(c.pool, c.cluster)
            return (
                f"kept in cluster {c.cluster}, where the other jobs of {key} run: no node there fits "
                f"{rs.format_resources(need)} ({rs.format_resources(free, _shown(need))} free in the cluster)"
            )
        mismatch = nodedb.compatible_anywhere(rec.job, self.pool)
        if mismatch is not None:
            return f"no node in pool {self.pool} matches this job: {mismatch}"
        if len(members) == 1 and not rec.job.is_gang:
            node = nodedb.largest_free_node(self.pool)
            if node is None:
                return "no schedulable nodes"
            return (
                f"no node fits this job ({rs.format_resources(rec.requests)}): largest free node is "
                f"{node.name} in cluster {node.cluster} with {rs.format_resources(node.free, _shown(rec.requests))}"
            )
        total = rs.total(m.requests for m in members)
        reason = (
            f"no remote cluster fits this gang of {len(members)} ({rs.format_resources(total)} in total): "
            f"largest free is {self._largest_cluster_free()}"
        )
        # A cluster's free room may add up to the gang's total while split over nodes none of
        # which fits a member: the largest free node tells that apart.
        node = nodedb.largest_free_node(self.pool)
        if node is None:
            return reason
        return (
            f"{reason}; largest free node is {node.name} with {rs.format_resources(node.free, _shown(total))}"
        )

    def _commit(
        self, queue: str, assignments: list[tuple[JobRecord, NodeEntry]], displaced: Mapping[str, int]
    ) -> None:
        """Bind each job of ``assignments`` to its node, after preempting the ``displaced`` jobs
        (and their gangs)."""
        s = self.s
        report = self.reports[queue]
        if displaced:
            victims: set[str] = set()
            for job_id in displaced:
                rec = s.jobs.get(job_id)
                if rec is None:
                    continue
                victims.add(job_id)
                if rec.job.is_gang:
                    g = s.gangs.get(rec.gang_key)
                    if g is not None:
                        victims.update(m for m in g.members if s.jobs[m].state is JobState.RUNNING)
            preemptor = assignments[0][0]
            for job_id in sorted(victims):
                victim = s.jobs[job_id]
                if victim.pc.priority < preemptor.pc.priority:
                    reason = (
                        f"preempted by job {preemptor.id} of queue {queue} "
                        f"(priority class {preemptor.pc.name}, priority {preemptor.pc.priority})"
                    )
                else:
                    share = self.shares.get(victim.queue)
                    adjusted = f"{share.adjusted_fair_share:.3f}" if share is not None else "?"
                    reason = (
                        f"preempted to restore fair share: queue {victim.queue} was above "
                        f"{self.config.protected_fraction_of_fair_share:g} of its fair share (adjusted fair "
                        f"share {adjusted}); its room went to job {preemptor.id} of queue {queue}"
                    )
                self._preempt(victim, reason)
        self._alloc_version[queue] = self._alloc_version.get(queue, 0) + 1
        scheduled, placements = self.result.scheduled, self._placements
        budget = self.config.maximum_resource_fraction_to_schedule
        for rec, entry in assignments:
            s.bind_to(rec, entry, self.now)  # the queue's allocation (self.alloc) grows with it
            if budget:
                rs.add_into(self.scheduled_new, rec.requests)
            where = placements.get(entry.name)
            if where is None:
                where = placements[entry.name] = Placement(
                    cluster=entry.cluster, node=entry.name, pool=self.pool
                )
            scheduled[rec.id] = where
            report.scheduled += 1

    def _preempt(self, rec: JobRecord, reason: str) -> None:
        """Remove a running (or evicted) job from the state and report it."""
        s = self.s
        if rec.state is not JobState.RUNNING:
            return
        queue = rec.queue
        pool = rec.pool
        if rec.id in self.evicted:
            # Evicted and not rescheduled: counted again, so that dropping it uncounts it once.
            del self.evicted[rec.id]
            self._recount(rec)
        s.drop(rec)
        self.result.preempted[rec.id] = reason
        if pool == self.pool and queue in self.reports:
            self.reports[queue].preempted += 1

    def _reschedule(self, members: list[JobRecord]) -> None:
        """An evicted gang goes back onto its own nodes if nobody took its room, all or nothing."""
        if not all(rec.id in self.evicted and rec.state is JobState.RUNNING for rec in members):
            return
        for rec in members:
            self._recount(rec)
            del self.evicted[rec.id]

    def _recount(self, rec: JobRecord) -> None:
        """An evicted job counts in its queue's allocation again."""
        rs.add_into(self.alloc[rec.queue], rec.requests)
        rs.add_into(self.alloc_pc[rec.queue].setdefault(rec.pc.name, {}), rec.requests)

    # -------------------------------------------------------------- finish
    def _finish(
        self, iterators: dict[str, QueueIterator], evictions: dict[str, list[list[JobRecord]]]
    ) -> None:
        s = self.s
        # Every evicted gang was offered its room back; anything still pending kept it.
        for job_id in sorted(self.evicted):
            rec = s.jobs.get(job_id)
            if rec is not None and rec.state is JobState.RUNNING:
                self._recount(rec)
        self.evicted.clear()
        for it in iterators.values():
            if it.stop_reason:
                it.mark_remaining(it.stop_reason)
        # Reports.
        running = s.alloc.running.get(self.pool, {})
        for name, report in self.reports.items():
            report.actual_share = self.drf.cost(s.alloc.of(self.pool, name))
            report.running = len(running.get(name, ()))
            report.queued = s.queued_count.get(name, 0)
        self.result.shares[self.pool] = self.reports


_EMPTY = type("_Empty", (), {"items": []})()
_QUEUED = JobState.QUEUED
_NO_VICTIMS: dict[str, int] = {}


def _shown(vector: rs.Resources) -> list[str]:
    names: list[str] = ["cpu", "memory"]
    names += sorted(k for k in vector if k not in ("cpu", "memory"))
    return names
