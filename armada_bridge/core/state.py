"""Long-lived bookkeeping the scheduler keeps between rounds.

Everything a round needs is maintained incrementally as jobs, nodes and queues change:
per-queue ordered job lists (sorted lazily, Timsort makes re-sorting after a few appends linear),
per-(pool, queue) allocations, per-queue queued demand, gang membership, and the capacity epochs
that let a round trust the previous round's "this job shape fits nowhere" verdicts.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from typing import Any

from armada_bridge.core import quantities as rs
from armada_bridge.core.matching import RequirementsKey, requirements_key
from armada_bridge.core.model import Job, JobState, PriorityClass
from armada_bridge.core.quantities import Resources

OrderKey = tuple[int, int, float, str]


@dataclass(eq=False, slots=True)
class JobRecord:
    id: str
    queue: str
    job: Job
    #: the job's requests (equal to ``job``'s, one dict for all jobs that request the same;
    #: never mutated).
    requests: Resources
    #: the number of its requests (:class:`Shapes`).
    rno: int
    pc: PriorityClass
    rkey: RequirementsKey
    #: "scheduling key", numbered (:func:`make_record`): jobs with the same key are
    #: interchangeable for node fit.
    skey: int
    order: OrderKey
    gang_key: str
    is_gang: bool
    pools: tuple[str, ...] | None
    colocation: str | None
    state: JobState = JobState.QUEUED
    node: str | None = None
    cluster: str | None = None
    pool: str | None = None
    #: (when it was bound, global bind sequence): evicted jobs are rescheduled in this order, the
    #: longest bound first, as Armada orders them by their run's start.
    bound: tuple[float, int] = (0.0, 0)
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


@dataclass(eq=False)
class Colocation:
    """Jobs that share a :attr:`~armada_bridge.core.model.Job.colocation` key."""

    pool: str
    cluster: str
    running: int = 0


class QueueJobs:
    """Queued jobs of one queue in Armada's order, sorted lazily.

    Besides the records it keeps their ids and the *runs* of consecutive single jobs with the same
    scheduling key (jobs of one template usually form one run), so a round can skip a whole run
    of jobs whose shape fits nowhere, and give them their reason, at C speed.
    """

    __slots__ = (
        "dirty",
        "ids",
        "items",
        "pinned",
        "run_ends",
        "run_keys",
        "run_starts",
        "stale",
        "w_ends",
        "w_reasons",
        "w_starts",
    )

    def __init__(self) -> None:
        self.items: list[JobRecord] = []
        self.ids: list[str] = []
        self.run_starts: list[int] = []
        self.run_ends: list[int] = []
        self.run_keys: list[object] = []
        self.dirty = False
        self.stale = 0
        #: queued jobs restricted to some pools (bulk reason updates are skipped for such queues).
        self.pinned = 0
        #: Disjoint ranges of positions, sorted, whose jobs all have one reason, given by
        #: :meth:`give_reason` and not changed since: starts, ends (exclusive), reasons. Shifted
        #: when a prefix is dropped, forgotten when positions move otherwise or a job of the queue
        #: gets a reason of its own (:meth:`touched`).
        self.w_starts: list[int] = []
        self.w_ends: list[int] = []
        self.w_reasons: list[str] = []

    def add(self, rec: JobRecord) -> None:
        items = self.items
        if items and not self.dirty and items[-1].order > rec.order:
            self.dirty = True
        items.append(rec)
        if rec.pools is not None:
            self.pinned += 1
        if not self.dirty:
            self._extend_runs(rec, len(items) - 1)

    def _extend_runs(self, rec: JobRecord, i: int) -> None:
        self.ids.append(rec.id)
        key = None if rec.is_gang else rec.skey
        if key is not None and self.run_keys and self.run_keys[-1] == key and self.run_ends[-1] == i:
            self.run_ends[-1] = i + 1
        else:
            self.run_starts.append(i)
            self.run_ends.append(i + 1)
            self.run_keys.append(key)

    def _rebuild(self) -> None:
        self.touched()
        self.ids = []
        self.run_starts = []
        self.run_ends = []
        self.run_keys = []
        for i, rec in enumerate(self.items):
            self._extend_runs(rec, i)

    def left(self, rec: JobRecord) -> None:
        """``rec`` is no longer queued (bound or removed); its entry is now stale."""
        self.stale += 1
        if rec.pools is not None:
            self.pinned -= 1

    def compact(self, force: bool = False) -> None:
        """Drop records that left the queue (always with ``force``, else once they pile up)."""
        if not self.stale or not (force or (self.stale > 64 and self.stale * 4 > len(self.items))):
            return
        items = self.items
        # Scheduling takes jobs from the head of the queue, so the stale entries are usually a
        # prefix: cut it off and shift the runs instead of rebuilding everything.
        k = 0
        n = len(items)
        queued = JobState.QUEUED
        while k < n and items[k].state is not queued:
            k += 1
        if not self.dirty and k == self.stale:
            self._drop_prefix(k)
        else:
            self.items = [r for r in items if r.state is queued]
            if not self.dirty:
                self._rebuild()
        self.stale = 0

    def _drop_prefix(self, k: int) -> None:
        keep = bisect_right(self.w_ends, k)
        self.w_starts = [max(x - k, 0) for x in self.w_starts[keep:]]
        self.w_ends = [x - k for x in self.w_ends[keep:]]
        del self.w_reasons[:keep]
        del self.items[:k]
        del self.ids[:k]
        r = bisect_right(self.run_starts, k) - 1
        if r >= 0 and self.run_ends[r] <= k:
            r += 1
        r = max(r, 0)
        starts = self.run_starts[r:]
        if starts:
            starts[0] = max(starts[0], k)
        self.run_starts = [x - k for x in starts]
        self.run_ends = [x - k for x in self.run_ends[r:]]
        self.run_keys = self.run_keys[r:]

    def ordered(self) -> list[JobRecord]:
        self.compact()
        if self.dirty:
            self.items.sort(key=_order)
            self.dirty = False
            self._rebuild()
        return self.items

    def give_reason(self, reasons: dict[str, str], start: int, end: int, reason: str) -> None:
        """Give the jobs at positions ``start..end-1`` ``reason``. Positions a range written earlier
        already gives that reason are not written again, so a round that skips an unchanged
        backlog writes nothing per waiting job."""
        starts, ends, texts = self.w_starts, self.w_ends, self.w_reasons
        ids = self.ids
        j = bisect_left(ends, start)  # ranges ending at or after start (adjacent ones merge)
        i = bisect_right(starts, end)  # ranges starting at or before end
        lo, hi, cursor = start, end, start
        pieces: list[tuple[int, int, str]] = []
        for k in range(j, i):
            s, e, r = starts[k], ends[k], texts[k]
            if r == reason:
                if s > cursor:
                    reasons.update(dict.fromkeys(ids[cursor:s], reason))
                cursor = max(cursor, e)
                lo, hi = min(lo, s), max(hi, e)
            else:  # what lies outside [start, end) keeps its reason
                if s < start:
                    pieces.append((s, min(e, start), r))
                if e > end:
                    pieces.append((max(s, end), e, r))
        if cursor < end:
            reasons.update(dict.fromkeys(ids[cursor:end], reason))
        pieces.append((lo, hi, reason))
        pieces.sort()
        starts[j:i] = [p[0] for p in pieces]
        ends[j:i] = [p[1] for p in pieces]
        texts[j:i] = [p[2] for p in pieces]

    def touched(self) -> None:
        """A job of this queue got a reason of its own: the bulk ranges may no longer hold."""
        if self.w_starts:
            self.w_starts = []
            self.w_ends = []
            self.w_reasons = []

    def run_end(self, i: int) -> int:
        """End (exclusive) of the run of identical single jobs that contains position ``i``."""
        r = bisect_right(self.run_starts, i) - 1
        if r < 0 or self.run_keys[r] is None:
            return i + 1
        return self.run_ends[r]


def _order(rec: JobRecord) -> OrderKey:
    return rec.order


def scheduling_key(job: Job, pc: PriorityClass, rkey: RequirementsKey) -> tuple[object, ...]:
    return (rkey, tuple(sorted(job.requests.items())), pc.priority, job.pools)


class Shapes:
    """What many jobs have in common, kept once: scheduling keys numbered (a small int is hashed
    and compared for nothing, a key tuple on every look-up) and request vectors (a round reads the
    requests of every job it places: one dict per distinct request stays in the cache)."""

    __slots__ = ("keys", "requests", "vectors")

    def __init__(self) -> None:
        #: scheduling key -> its number (JobRecord.skey).
        self.keys: dict[tuple[object, ...], int] = {}
        #: requests, as (resource, quantity) pairs in their order -> their number (JobRecord.rno).
        self.requests: dict[tuple[tuple[str, int], ...], int] = {}
        #: number -> the one dict for those requests.
        self.vectors: list[Resources] = []

    def total(self, counts: dict[int, int]) -> Resources:
        """Sum of ``count`` times the requests numbered ``n``, for each ``n, count`` of ``counts``."""
        out: Resources = {}
        vectors = self.vectors
        for n, count in counts.items():
            if count:
                for k, v in vectors[n].items():
                    out[k] = out.get(k, 0) + count * v
        return out


def make_record(job: Job, pc: PriorityClass, shapes: Shapes) -> JobRecord:
    """The record of a queued job."""
    rkey = requirements_key(job)
    skey = scheduling_key(job, pc, rkey)
    keys = shapes.keys
    rno = shapes.requests.setdefault(tuple(job.requests.items()), len(shapes.vectors))
    if rno == len(shapes.vectors):
        shapes.vectors.append(job.requests)
    return JobRecord(
        id=job.id,
        queue=job.queue,
        job=job,
        requests=shapes.vectors[rno],
        rno=rno,
        pc=pc,
        rkey=rkey,
        skey=keys.setdefault(skey, len(keys)),
        order=(-pc.priority, job.priority, job.submit_time, job.id),
        gang_key=job.gang_key(),
        is_gang=job.is_gang,
        pools=job.pools,
        colocation=job.colocation,
    )


_Slots = tuple[Resources, Resources, set[str], set[str] | None]


class Allocation:
    """Resources held by running jobs, per pool and queue (and priority class)."""

    def __init__(self) -> None:
        self.by_pool_queue: dict[str, dict[str, Resources]] = {}
        self.by_pool_queue_pc: dict[str, dict[str, dict[str, Resources]]] = {}
        #: pool -> queue -> ids of running jobs.
        self.running: dict[str, dict[str, set[str]]] = {}
        #: pool -> queue -> ids of running jobs of a preemptible priority class.
        self.preemptible: dict[str, dict[str, set[str]]] = {}
        #: (pool, queue, priority class) -> its allocation, its class's, its running and
        #: preemptible ids: the containers above, found once (they are never removed).
        self._slots: dict[tuple[str, str, str], _Slots] = {}

    def _slots_of(self, rec: JobRecord, pool: str) -> _Slots:
        key = (pool, rec.queue, rec.pc.name)
        slots = self._slots.get(key)
        if slots is None:
            q = rec.queue
            slots = self._slots[key] = (
                _slot(_slot(self.by_pool_queue, pool), q),
                _slot(_slot(_slot(self.by_pool_queue_pc, pool), q), rec.pc.name),
                _ids(_slot(self.running, pool), q),
                _ids(_slot(self.preemptible, pool), q) if rec.pc.preemptible else None,
            )
        return slots

    def add(self, rec: JobRecord, pool: str) -> None:
        slots = self._slots.get((pool, rec.queue, rec.pc.name))
        acc, pc_acc, running, preemptible = slots if slots is not None else self._slots_of(rec, pool)
        for k, v in rec.requests.items():
            acc[k] = acc.get(k, 0) + v
            pc_acc[k] = pc_acc.get(k, 0) + v
        running.add(rec.id)
        if preemptible is not None:
            preemptible.add(rec.id)

    def remove(self, rec: JobRecord, pool: str) -> None:
        rs.sub_into(self.by_pool_queue[pool][rec.queue], rec.requests)
        rs.sub_into(self.by_pool_queue_pc[pool][rec.queue][rec.pc.name], rec.requests)
        self.running[pool][rec.queue].discard(rec.id)
        if rec.pc.preemptible:
            self.preemptible[pool][rec.queue].discard(rec.id)

    def slots(self, pool: str, queue: str) -> tuple[Resources, dict[str, Resources]]:
        """The dicts ``queue``'s allocation in ``pool`` is kept in, in all and per priority class
        (made if missing; they are updated in place from then on)."""
        return _slot(_slot(self.by_pool_queue, pool), queue), _slot(_slot(self.by_pool_queue_pc, pool), queue)

    def of(self, pool: str, queue: str) -> Resources:
        return self.by_pool_queue.get(pool, {}).get(queue, {})

    def of_pc(self, pool: str, queue: str, pc: str) -> Resources:
        return self.by_pool_queue_pc.get(pool, {}).get(queue, {}).get(pc, {})


def _slot(d: dict[str, Any], key: str) -> Any:
    """``d[key]``, a new dict there if missing (``setdefault`` would build one on every call)."""
    v = d.get(key)
    if v is None:
        v = d[key] = {}
    return v


def _ids(d: dict[str, set[str]], key: str) -> set[str]:
    v = d.get(key)
    if v is None:
        v = d[key] = set()
    return v
