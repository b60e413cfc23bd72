"""The stateful scheduler the extender keeps: a snapshot maintained incrementally, rounds on demand.

Usage::

    s = Scheduler(SchedulingConfig())
    s.upsert_node(Node("n1", cluster="remote-1", allocatable=parse_resources({"cpu": "32", "memory": "256Gi"})))
    s.upsert_queue(Queue("team-a"))
    s.add_job(Job("pod-uid", "team-a", parse_resources({"cpu": "1", "memory": "4Gi"})))
    result = s.schedule_round(now=0.0)

Decisions of a round are applied to the state: scheduled jobs become RUNNING on their node,
preempted jobs leave the state (the caller deletes the pods; re-adding them queues them again).
They are provisional until the caller has written them: a binding it failed to write is undone
with :meth:`Scheduler.revert` (the job is queued again), a preemption it failed to write with
:meth:`Scheduler.restore` (the job runs on its node again), so no decision is lost or half-made.
No I/O, no clocks, no randomness: the same snapshot and calls give the same results.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable

from armada_bridge.core import quantities as rs
from armada_bridge.core.constraints import TokenBucket
from armada_bridge.core.model import Job, JobState, Node, Queue, SchedulingConfig
from armada_bridge.core.nodedb import NodeDb, NodeEntry
from armada_bridge.core.result import Placement, RoundResult, Waiting
from armada_bridge.core.round import PoolRound
from armada_bridge.core.state import (
    Allocation,
    Colocation,
    GangRecord,
    JobRecord,
    QueueJobs,
    Shapes,
    make_record,
)

_RUNNING = JobState.RUNNING  # an enum member read from its class costs a look-up each time


class SchedulerError(ValueError):
    """A call that does not fit the scheduler's state (unknown job, duplicate id, ...)."""


class Scheduler:
    def __init__(self, config: SchedulingConfig | None = None) -> None:
        self.config = config or SchedulingConfig()
        self.nodedb = NodeDb(self.config.indexed_resources)
        self.queues: dict[str, Queue] = {}
        self.jobs: dict[str, JobRecord] = {}
        self.gangs: dict[str, GangRecord] = {}
        #: colocation key -> where its jobs run (only while one of them is bound).
        self.colocations: dict[str, Colocation] = {}
        self.queue_jobs: dict[str, QueueJobs] = {}
        self.alloc = Allocation()
        #: queue -> demand of queued jobs eligible for any pool; (queue, pool) -> pinned ones.
        #: queue -> requests number (Shapes) -> queued jobs eligible for any pool that request so
        #: many; (queue, pool) -> the same for jobs pinned to pools (a bind changes one count).
        self.queued_requests: dict[str, dict[int, int]] = {}
        self.queued_requests_pool: dict[tuple[str, str], dict[int, int]] = {}
        self.queued_count: dict[str, int] = {}
        self.reasons: dict[str, str] = {}
        #: the last round's ``waiting``, while it still shares ``reasons`` (see :meth:`_unshare`).
        self._shared: weakref.ref[Waiting] | None = None
        self.round_no = 0
        self.clock = 0.0  # the last round's `now`
        self.pool_rounds = 0
        self._bind_seq = 0
        #: bumped whenever capacity may have grown (node added/changed, job left a node).
        self.capacity_epoch = 0
        #: bumped by every change made from outside a round (nodes, queues, jobs, placements).
        self.mutations = 0
        #: ``mutations`` after the last round, when that round decided nothing (see ``settled``).
        self._settled_at = -1
        #: bumped whenever a job that a higher priority class could displace is bound.
        self.low_bind_epoch = 0
        self._max_priority = max((pc.priority for pc in self.config.priority_classes.values()), default=0)
        #: scheduling keys and requests of the jobs ever seen, once each (as ``unfeasible`` keeps
        #: one verdict per key and pool).
        self.shapes = Shapes()
        #: pool -> scheduling key -> ((capacity_epoch, low_bind_epoch), reason): shapes that fit
        #: nowhere (per pool, so that a look-up per job hashes a small int, not a tuple).
        self.unfeasible: dict[str, dict[int, tuple[tuple[int, int], str]]] = {}
        self.global_bucket = TokenBucket(
            self.config.maximum_scheduling_rate, self.config.maximum_scheduling_burst
        )
        self.queue_buckets: dict[str, TokenBucket] = {}

    @classmethod
    def from_snapshot(
        cls,
        config: SchedulingConfig | None,
        nodes: Iterable[Node],
        queues: Iterable[Queue],
        jobs: Iterable[Job],
        bindings: Iterable[tuple[str, str]] = (),
    ) -> Scheduler:
        """Build a scheduler from a full snapshot (e.g. after a restart).

        ``bindings`` are (job id, node name) of running jobs, oldest first: the order is the
        order in which fair-share eviction reconsiders them.
        """
        s = cls(config)
        for n in nodes:
            s.upsert_node(n)
        for q in queues:
            s.upsert_queue(q)
        for j in jobs:
            s.add_job(j)
        for job_id, node_name in bindings:
            s.mark_running(job_id, node_name)
        return s

    def snapshot(self) -> tuple[list[Node], list[Queue], list[Job], list[tuple[str, str]]]:
        """Nodes, queues, jobs and bindings (oldest first), as :meth:`from_snapshot` takes them."""
        nodes = [e.node for _n, e in sorted(self.nodedb.entries.items())]
        queues = [self.queues[q] for q in sorted(self.queues)]
        recs = sorted(self.jobs.values(), key=lambda r: r.job.id)
        running = sorted((r for r in recs if r.state is JobState.RUNNING), key=lambda r: r.bound)
        return nodes, queues, [r.job for r in recs], [(r.id, r.node or "") for r in running]

    # ================================================================ nodes
    def upsert_node(self, node: Node) -> None:
        self.mutations += 1
        self.nodedb.upsert(node)
        self.capacity_epoch += 1

    def remove_node(self, name: str) -> list[str]:
        """Remove a node. Jobs bound to it are lost: they leave the state and are returned."""
        entry = self.nodedb.entries.get(name)
        if entry is None:
            return []
        self.mutations += 1
        lost = sorted(entry.bound)
        for job_id in lost:
            rec = self.jobs.get(job_id)
            if rec is not None:
                self.drop(rec)
        self.nodedb.remove(name)
        self.capacity_epoch += 1
        return lost

    # =============================================================== queues
    def upsert_queue(self, queue: Queue) -> None:
        self.mutations += 1
        self.queues[queue.name] = queue

    def remove_queue(self, name: str) -> None:
        self.mutations += 1
        self.queues.pop(name, None)

    # ================================================================= jobs
    def add_job(self, job: Job) -> None:
        if job.id in self.jobs:
            raise SchedulerError(f"job {job.id} already exists")
        if job.gang_cardinality < 1:
            raise SchedulerError(f"job {job.id}: gang cardinality must be >= 1")
        self.mutations += 1
        rec = make_record(job, self.config.priority_class_of(job), self.shapes)
        self.jobs[job.id] = rec
        if job.is_gang:
            g = self.gangs.get(rec.gang_key)
            if g is None:
                g = GangRecord(
                    key=rec.gang_key,
                    queue=job.queue,
                    cardinality=job.gang_cardinality,
                    uniformity_label=job.gang_node_uniformity_label,
                    min_resources=job.gang_min_resources,
                )
                self.gangs[rec.gang_key] = g
            g.members.add(job.id)
        self._enqueue(rec)

    def add_jobs(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            self.add_job(job)

    def update_job(self, job: Job) -> None:
        """Replace a queued job's spec (a running job keeps its binding and only changes metadata)."""
        rec = self._get(job.id)
        self.mutations += 1
        if rec.state is JobState.QUEUED:
            self.remove_job(job.id)
            self.add_job(job)
            return
        if (job.requests, job.queue, job.colocation) != (rec.job.requests, rec.job.queue, rec.job.colocation):
            raise SchedulerError(f"job {job.id} is running; its queue, requests and colocation cannot change")
        rec.job = job  # its requests are equal to the record's

    def remove_job(self, job_id: str) -> None:
        """Forget a job in any state (deleted, finished, failed); frees its node."""
        rec = self.jobs.get(job_id)
        if rec is None:
            return
        self.mutations += 1
        self.drop(rec)

    def mark_finished(self, job_id: str) -> None:
        self.remove_job(job_id)

    def mark_running(self, job_id: str, node: str, bound_at: float | None = None) -> None:
        """Record a binding made outside a round (e.g. state rebuilt after a restart), made at
        `bound_at` (wall time, as a round's `now`; unknown: the last round's)."""
        rec = self._get(job_id)
        entry = self.nodedb.entries.get(node)
        if entry is None:
            raise SchedulerError(f"job {job_id}: unknown node {node}")
        if rec.state is JobState.RUNNING:
            if rec.node == node:
                return
            self._unbind(rec)
            self._enqueue(rec)
        self.mutations += 1
        self.bind(rec, node, self.clock if bound_at is None else bound_at)

    def revert(self, job_id: str) -> None:
        """Undo a binding the caller could not write: the job is queued again, its room freed."""
        rec = self.jobs.get(job_id)
        if rec is None or rec.state is not JobState.RUNNING:
            return
        self.mutations += 1
        self._unbind(rec)
        self._enqueue(rec)

    def restore(self, job: Job, node: str, bound_at: float | None = None) -> None:
        """Undo a preemption the caller could not write: the job runs on ``node`` again."""
        if job.id not in self.jobs:
            self.add_job(job)
        self.mark_running(job.id, node, bound_at)

    def state_of(self, job_id: str) -> JobState:
        rec = self.jobs.get(job_id)
        return rec.state if rec is not None else JobState.GONE

    def placement_of(self, job_id: str) -> Placement | None:
        rec = self.jobs.get(job_id)
        if rec is None or rec.node is None or rec.cluster is None or rec.pool is None:
            return None
        return Placement(cluster=rec.cluster, node=rec.node, pool=rec.pool)

    def reason_of(self, job_id: str) -> str | None:
        return self.reasons.get(job_id)

    # =============================================================== rounds
    def schedule_round(self, now: float) -> RoundResult:
        self._unshare()
        self.round_no += 1
        self.clock = now
        result = RoundResult(time=now)
        pools = self.nodedb.pools()
        for qj in self.queue_jobs.values():
            qj.compact(force=True)  # removals since the last round
        for pool in pools:
            PoolRound(self, pool, now, result).run()
        if len(pools) > 1:  # jobs bound by one pool may have been given a bulk reason by a later pool
            for job_id in result.scheduled:
                self.reasons.pop(job_id, None)
        for name, qj in self.queue_jobs.items():
            qj.compact(force=True)  # the round's own leftovers, so the next round starts clean
            if name not in self.queues or not pools:
                reason = f"queue {name} does not exist" if name not in self.queues else "no schedulable nodes"
                qj.touched()
                for rec in qj.items:
                    if rec.state is JobState.QUEUED:
                        self.reasons[rec.id] = reason
        # Every queued job has a reason from the moment it is queued (see _enqueue), and rounds
        # update the ones they examine, so the dict is the complete picture; the result shares it
        # until the reasons next change.
        result.waiting = Waiting(self.reasons)
        self._shared = weakref.ref(result.waiting)
        decided = result.scheduled or result.preempted
        self._settled_at = -1 if decided or self._rate_limited() else self.mutations
        return result

    @property
    def settled(self) -> bool:
        """A round now would decide nothing: the last one decided nothing and nothing has changed
        since (no rate limit refills with time either). A caller woken by changes that did not
        reach the scheduler (a pod's status, a node's heartbeat) may skip the round."""
        return self._settled_at == self.mutations

    def _rate_limited(self) -> bool:
        return not self.global_bucket.unlimited or self.config.maximum_per_queue_scheduling_burst > 0

    def _unshare(self) -> None:
        """The reasons are about to change: the last round's result, if anyone still holds it,
        takes a copy of them as they were (a result nobody holds costs nothing)."""
        if self._shared is not None:
            waiting = self._shared()
            if waiting is not None:
                waiting.detach()
            self._shared = None

    def waiting_reasons(self) -> dict[str, str]:
        """Why each queued job is waiting, as of the last round (or since it was added)."""
        return dict(self.reasons)

    def _default_reason(self, rec: JobRecord) -> str:
        if rec.queue not in self.queues:
            return f"queue {rec.queue} does not exist"
        if not self.nodedb.groups:
            return "no schedulable nodes"
        pools = rec.job.pools
        if pools is not None and not any(p in self.nodedb.groups for p in pools):
            return f"no schedulable nodes in pools {', '.join(pools)}"
        return "not considered yet"

    # ========================================================== internals
    def _get(self, job_id: str) -> JobRecord:
        rec = self.jobs.get(job_id)
        if rec is None:
            raise SchedulerError(f"unknown job {job_id}")
        return rec

    def _enqueue(self, rec: JobRecord) -> None:
        self._unshare()
        rec.state = JobState.QUEUED
        rec.node = rec.cluster = rec.pool = None
        q = rec.queue
        qj = self.queue_jobs.get(q)
        if qj is None:
            qj = self.queue_jobs[q] = QueueJobs()
        qj.add(rec)
        self._count_queued(rec, +1)
        if rec.id not in self.reasons:
            self.reasons[rec.id] = self._default_reason(rec)
        g = self.gangs.get(rec.gang_key)
        if g is not None:
            g.queued += 1

    def _count_queued(self, rec: JobRecord, sign: int) -> None:
        q = rec.queue
        self.queued_count[q] = self.queued_count.get(q, 0) + sign
        pools = rec.pools
        n = rec.rno
        if pools is None:
            counts = self.queued_requests.get(q)
            if counts is None:
                counts = self.queued_requests[q] = {}
            counts[n] = counts.get(n, 0) + sign
            return
        for p in pools:
            counts = self.queued_requests_pool.setdefault((q, p), {})
            counts[n] = counts.get(n, 0) + sign

    def queued_demand(self, queue: str, pool: str | None = None) -> rs.Resources:
        """What the queued jobs of ``queue`` request: those eligible for any pool, or (with
        ``pool``) those pinned to pools that include ``pool``."""
        counts = (
            self.queued_requests.get(queue) if pool is None else self.queued_requests_pool.get((queue, pool))
        )
        return self.shapes.total(counts) if counts else {}

    def _dequeue(self, rec: JobRecord) -> None:
        self._count_queued(rec, -1)
        qj = self.queue_jobs.get(rec.queue)
        if qj is not None:
            qj.left(rec)
        if rec.is_gang:
            g = self.gangs.get(rec.gang_key)
            if g is not None:
                g.queued -= 1

    def bind(self, rec: JobRecord, node_name: str, at: float) -> None:
        """Queued -> running on ``node_name`` (nodes, allocations, gang domain), bound at `at`."""
        self.bind_to(rec, self.nodedb.entries[node_name], at)

    def bind_to(self, rec: JobRecord, entry: NodeEntry, at: float) -> None:
        """:meth:`bind`, to a node the caller has found."""
        node_name = entry.name
        if self._shared is not None:
            self._unshare()
        self._dequeue(rec)
        self._bind_seq += 1
        seq = self._bind_seq
        self.nodedb.bind(rec.id, rec.requests, rec.pc.priority, entry, seq)
        rec.state = _RUNNING
        rec.node, rec.cluster, rec.pool = node_name, entry.cluster, entry.pool
        rec.bound = (at, seq)
        self.alloc.add(rec, entry.pool)
        self.reasons.pop(rec.id, None)
        if rec.pc.priority < self._max_priority:
            self.low_bind_epoch += 1
        g = self.gangs.get(rec.gang_key) if rec.is_gang else None
        if g is not None:
            g.running += 1
            if g.domain is None:
                label = g.uniformity_label
                g.domain = (entry.pool, entry.cluster, label, entry.labels.get(label) if label else None)
        key = rec.colocation
        if key is not None:
            c = self.colocations.setdefault(key, Colocation(entry.pool, entry.cluster))
            c.running += 1

    def _unbind(self, rec: JobRecord) -> None:
        if rec.state is not JobState.RUNNING or rec.pool is None or rec.node is None:
            return
        self.nodedb.unbind(rec.id, rec.node)
        self.alloc.remove(rec, rec.pool)
        self.capacity_epoch += 1
        g = self.gangs.get(rec.gang_key)
        if g is not None:
            g.running -= 1
            if g.running == 0:
                g.domain = None
        key = rec.job.colocation
        if key is not None and key in self.colocations:
            self.colocations[key].running -= 1
            if self.colocations[key].running <= 0:
                del self.colocations[key]

    def drop(self, rec: JobRecord) -> None:
        """The job leaves the state (unbound or dequeued, out of its gang)."""
        self._unshare()
        if rec.state is JobState.RUNNING:
            self._unbind(rec)
        elif rec.state is JobState.QUEUED:
            self._dequeue(rec)
        rec.state = JobState.GONE
        rec.node = rec.cluster = rec.pool = None
        self.jobs.pop(rec.id, None)
        self.reasons.pop(rec.id, None)
        g = self.gangs.get(rec.gang_key)
        if g is not None:
            g.members.discard(rec.id)
            if not g.members:
                del self.gangs[rec.gang_key]

    def queue_bucket(self, name: str) -> TokenBucket:
        b = self.queue_buckets.get(name)
        if b is None:
            b = TokenBucket(
                self.config.maximum_per_queue_scheduling_rate, self.config.maximum_per_queue_scheduling_burst
            )
            self.queue_buckets[name] = b
        return b

    def epochs(self) -> tuple[int, int]:
        return (self.capacity_epoch, self.low_bind_epoch)

    def has_running(self) -> bool:
        return any(ids for by_queue in self.alloc.running.values() for ids in by_queue.values())

    def running_jobs(self) -> list[JobRecord]:
        return [r for r in self.jobs.values() if r.state is JobState.RUNNING]

    def queued_jobs(self) -> list[JobRecord]:
        return [r for r in self.jobs.values() if r.state is JobState.QUEUED]
