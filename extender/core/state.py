"""Long-lived bookkeeping the scheduler keeps between rounds.

Everything a round needs is maintained incrementally as jobs, nodes and queues change:
per-queue ordered job lists (sorted lazily, Timsort makes re-sorting after a few appends linear),
per-(pool, queue) allocations, per-queue queued demand, gang membership, and the capacity epochs
that let a round trust the previous round's "this job shape fits nowhere" verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extender.core import resources as rs
from extender.core.matching import RequirementsKey, requirements_key
from extender.core.model import Job, JobState, PriorityClass
from extender.core.resources import Resources

OrderKey = tuple[int, int, float, str]


@dataclass(eq=False)
class JobRecord:
    id: str
    queue: str
    job: Job
    #: the job's requests (shared with ``job``; never mutated).
    requests: Resources
    pc: PriorityClass
    rkey: RequirementsKey
    #: hashable "scheduling key": identical keys are interchangeable for node fit.
    skey: tuple[object, ...]
    order: OrderKey
    gang_key: str
    is_gang: bool
    pools: tuple[str, ...] | None
    state: JobState = JobState.QUEUED
    node: str | None = None
    cluster: str | None = None
    pool: str | None = None
    #: global bind sequence; evicted jobs are rescheduled in this order.
    bound_seq: int = 0
    bound_at: float | None = None
    #: stamp of the last pool round that examined this job.
    seen_round: int = -1


@dataclass(eq=False)
class GangRecord:
    key: str
    queue: str
    cardinality: int
    uniformity_label: str | None
    min_resources: Resources | None
    members: set[str] = field(default_factory=set)
    queued: int = 0
    running: int = 0
    #: where the gang was admitted: (pool, cluster, label key, label value); pins later members.
    domain: tuple[str, str, str | None, str | None] | None = None

    @property
    def present(self) -> int:
        return self.queued + self.running


class QueueJobs:
    """Queued jobs of one queue in Armada's order, sorted lazily."""

    __slots__ = ("dirty", "items", "stale")

    def __init__(self) -> None:
        self.items: list[JobRecord] = []
        self.dirty = False
        self.stale = 0

    def add(self, rec: JobRecord) -> None:
        items = self.items
        if items and not self.dirty and items[-1].order > rec.order:
            self.dirty = True
        items.append(rec)

    def compact(self) -> None:
        """Drop records that left the queue, once they are a good part of the list."""
        if self.stale > 64 and self.stale * 4 > len(self.items):
            self.items = [r for r in self.items if r.state is JobState.QUEUED]
            self.stale = 0

    def ordered(self) -> list[JobRecord]:
        self.compact()
        if self.dirty:
            self.items.sort(key=_order)
            self.dirty = False
        return self.items


def _order(rec: JobRecord) -> OrderKey:
    return rec.order


def scheduling_key(job: Job, pc: PriorityClass, rkey: RequirementsKey) -> tuple[object, ...]:
    return (rkey, tuple(sorted(job.requests.items())), pc.priority, job.pools)


def make_record(job: Job, pc: PriorityClass) -> JobRecord:
    rkey = requirements_key(job)
    return JobRecord(
        id=job.id,
        queue=job.queue,
        job=job,
        requests=job.requests,
        pc=pc,
        rkey=rkey,
        skey=scheduling_key(job, pc, rkey),
        order=(-pc.priority, job.priority, job.submit_time, job.id),
        gang_key=job.gang_key(),
        is_gang=job.is_gang,
        pools=job.pools,
    )


class Allocation:
    """Resources held by running jobs, per pool and queue (and priority class)."""

    def __init__(self) -> None:
        self.by_pool_queue: dict[str, dict[str, Resources]] = {}
        self.by_pool_queue_pc: dict[str, dict[str, dict[str, Resources]]] = {}
        #: pool -> queue -> ids of running jobs.
        self.running: dict[str, dict[str, set[str]]] = {}
        #: pool -> queue -> ids of running jobs of a preemptible priority class.
        self.preemptible: dict[str, dict[str, set[str]]] = {}

    def add(self, rec: JobRecord, pool: str) -> None:
        q = rec.queue
        req = rec.requests
        acc = self.by_pool_queue.setdefault(pool, {}).setdefault(q, {})
        pc_acc = self.by_pool_queue_pc.setdefault(pool, {}).setdefault(q, {}).setdefault(rec.pc.name, {})
        for k, v in req.items():
            acc[k] = acc.get(k, 0) + v
            pc_acc[k] = pc_acc.get(k, 0) + v
        self.running.setdefault(pool, {}).setdefault(q, set()).add(rec.id)
        if rec.pc.preemptible:
            self.preemptible.setdefault(pool, {}).setdefault(rec.queue, set()).add(rec.id)

    def remove(self, rec: JobRecord, pool: str) -> None:
        rs.sub_into(self.by_pool_queue[pool][rec.queue], rec.requests)
        rs.sub_into(self.by_pool_queue_pc[pool][rec.queue][rec.pc.name], rec.requests)
        self.running[pool][rec.queue].discard(rec.id)
        if rec.pc.preemptible:
            self.preemptible[pool][rec.queue].discard(rec.id)

    def of(self, pool: str, queue: str) -> Resources:
        return self.by_pool_queue.get(pool, {}).get(queue, {})

    def of_pc(self, pool: str, queue: str, pc: str) -> Resources:
        return self.by_pool_queue_pc.get(pool, {}).get(queue, {}).get(pc, {})
