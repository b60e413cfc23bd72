"""Indexed node database: best-fit placement on real nodes.

Like Armada's NodeDb, nodes are kept ordered from least to most free of the indexed resources
(``cpu`` first by default) and the first node that fits is taken, i.e. best-fit bin packing.
Each (pool, cluster) has its own sorted index so a gang can be confined to one cluster, and a job
for any cluster checks the head of every cluster's index. Finding a node is a binary search on
the first indexed resource followed by a short forward scan, and binding re-keys a single node,
so a placement costs O(log n) plus the scan instead of a pass over all nodes. A bound node's key
and its place in the indexes follow only when an index is next read in order: a node that takes
many jobs in a row (best fit fills one node at a time) moves once.

Static compatibility (selectors, affinity, taints) is evaluated once per (node type, job
requirements) pair; a node type is a distinct (labels, taints) combination.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from armada_bridge.core import quantities as rs
from armada_bridge.core.matching import RequirementsKey, mismatch_stage, requirements_key, static_mismatch
from armada_bridge.core.model import Job, Node, Taint
from armada_bridge.core.quantities import Resources

NodeKey = tuple[object, ...]


@dataclass(eq=False, slots=True)
class NodeEntry:
    node: Node
    labels: dict[str, str]
    type_id: int
    free: Resources
    #: job id -> (requests, priority, bind sequence) of every job bound to the node.
    bound: dict[str, tuple[Mapping[str, int], int, int]] = field(default_factory=dict)
    #: the best-fit key; while ``stale``, of the free resources before the latest binds.
    key: NodeKey = ()
    #: ``free`` changed since ``key`` was computed; the node's indexes have it among their moved
    #: entries and compute its key when they are next read in order.
    stale: bool = False
    # The node's, copied as plain attributes: they are read on every bind.
    name: str = field(init=False)
    cluster: str = field(init=False)
    pool: str = field(init=False)
    schedulable: bool = field(init=False)
    #: the indexes it is in while schedulable: its cluster's and its pool's.
    indexes: tuple[SortedGroup, SortedGroup] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.name = self.node.name
        self.cluster = self.node.cluster
        self.pool = self.node.pool
        self.schedulable = not self.node.unschedulable


class SortedGroup:
    """Nodes of one (pool, cluster), or of a whole pool, ordered by their best-fit key.

    A node whose key changed may be filed under its old key for a while (:meth:`defer`): the
    group moves it when its order is next read (``keys``, ``entries``). A node that takes many
    jobs in a row then moves once, not once per job. Reads that need no order (:attr:`members`)
    leave the moved nodes where they are.
    """

    __slots__ = ("_entries", "_hint", "_key_of", "_keys", "_moved")

    def __init__(self, key_of: Callable[[NodeEntry], NodeKey] | None = None) -> None:
        #: computes a stale entry's key (None: keys are set by the caller, as in :meth:`rekey`).
        self._key_of = key_of
        self._keys: list[NodeKey] = []
        self._entries: list[NodeEntry] = []
        #: entry -> the key it is filed under, for entries whose ``key`` has changed since.
        self._moved: dict[NodeEntry, NodeKey] = {}
        #: where the entry last returned by a search is (checked before use).
        self._hint = 0

    @property
    def keys(self) -> list[NodeKey]:
        if self._moved:
            self._settle()
        return self._keys

    @property
    def entries(self) -> list[NodeEntry]:
        if self._moved:
            self._settle()
        return self._entries

    @property
    def members(self) -> list[NodeEntry]:
        """The nodes, in no particular order (do not change the list)."""
        return self._entries

    @property
    def last(self) -> NodeEntry | None:
        """The node with the largest key (the most free)."""
        entries = self.entries
        return entries[-1] if entries else None

    def insert(self, entry: NodeEntry) -> None:
        keys = self.keys
        i = bisect_left(keys, entry.key)
        keys.insert(i, entry.key)
        self._entries.insert(i, entry)

    def _index(self, entry: NodeEntry, key: NodeKey) -> int:
        """Where ``entry``, filed under ``key``, is (callers try the hint first)."""
        entries = self._entries
        i = bisect_left(self._keys, key)
        if i < len(entries) and entries[i] is entry:
            return i
        return entries.index(entry)  # fallback; keys are unique: they end with the node name

    def found(self, i: int) -> None:
        """A search of this group returned the entry at ``i``: it is likely to be moved next."""
        self._hint = i

    def remove(self, entry: NodeEntry) -> None:
        keys = self.keys
        i = self._hint
        if not (i < len(keys) and self._entries[i] is entry):
            i = self._index(entry, entry.key)
        del keys[i]
        del self._entries[i]

    def defer(self, entry: NodeEntry) -> None:
        """``entry.key`` is about to change: move the entry when the order is next read."""
        if entry not in self._moved:
            self._moved[entry] = entry.key

    def _settle(self) -> None:
        moved, self._moved = self._moved, {}
        key_of = self._key_of
        if key_of is not None:
            for entry in moved:
                if entry.stale:
                    entry.key = key_of(entry)
                    entry.stale = False
        if len(moved) * 8 > len(self._entries):
            # Many moved (a round filled many nodes): sorting again is cheaper than moving each.
            self._entries.sort(key=_key_of)
            self._keys = [e.key for e in self._entries]
            return
        for entry, filed in moved.items():
            self._move(entry, filed, entry.key)

    def _move(self, entry: NodeEntry, filed: NodeKey, key: NodeKey) -> None:
        """Only the entries between the old and the new place shift: a bind usually leaves a node
        where it was (best fit fills the least free node first), so this is a search, not two
        shifts of the whole list."""
        keys, entries = self._keys, self._entries
        i = self._hint
        if not (i < len(entries) and entries[i] is entry):
            i = self._index(entry, filed)
        if (i == 0 or keys[i - 1] < key) and (i + 1 == len(keys) or key < keys[i + 1]):
            keys[i] = key  # it keeps its place (the usual case)
            return
        if key < filed:
            j = bisect_left(keys, key, 0, i)
            if j < i:
                keys[j + 1 : i + 1] = keys[j:i]
                entries[j + 1 : i + 1] = entries[j:i]
        else:
            j = bisect_left(keys, key, i + 1) - 1
            if j > i:
                keys[i:j] = keys[i + 1 : j + 1]
                entries[i:j] = entries[i + 1 : j + 1]
        keys[j] = key
        entries[j] = entry

    def __len__(self) -> int:
        return len(self._entries)


def _key_of(entry: NodeEntry) -> NodeKey:
    return entry.key


class NodeDb:
    def __init__(self, indexed_resources: Iterable[str]) -> None:
        self.indexed = tuple(indexed_resources) or ("cpu",)
        self.entries: dict[str, NodeEntry] = {}
        self.groups: dict[str, dict[str, SortedGroup]] = {}
        #: pool -> index over all its clusters (single jobs may go to any cluster).
        self.pool_index: dict[str, SortedGroup] = {}
        self._types: dict[tuple[object, ...], int] = {}
        self._type_info: list[tuple[dict[str, str], tuple[Taint, ...]]] = []
        self._compat: dict[tuple[RequirementsKey, int], str | None] = {}
        self._pool_total: dict[str, Resources] = {}
        #: pool -> priority -> number of bound jobs (to skip hopeless urgency-preemption scans).
        self._bound_by_priority: dict[str, dict[int, int]] = {}
        #: bumped by every change of a node's free resources or of the set of nodes.
        self.version = 0

    # ------------------------------------------------------------------ nodes
    def _key(self, free: Mapping[str, int], name: str) -> NodeKey:
        idx = self.indexed
        n = len(idx)
        if n == 3:
            return (free.get(idx[0], 0), free.get(idx[1], 0), free.get(idx[2], 0), name)
        if n == 2:
            return (free.get(idx[0], 0), free.get(idx[1], 0), name)
        if n == 1:
            return (free.get(idx[0], 0), name)
        return (*(free.get(r, 0) for r in idx), name)

    def _entry_key(self, entry: NodeEntry) -> NodeKey:
        return self._key(entry.free, entry.name)

    def _type_id(self, labels: dict[str, str], taints: tuple[Taint, ...]) -> int:
        sig = (tuple(sorted(labels.items())), taints)
        tid = self._types.get(sig)
        if tid is None:
            tid = len(self._type_info)
            self._types[sig] = tid
            self._type_info.append((labels, taints))
        return tid

    def upsert(self, node: Node) -> None:
        self.version += 1
        old = self.entries.get(node.name)
        bound = old.bound if old is not None else {}
        if old is not None:
            self._detach(old)
            old_counts = self._bound_by_priority.get(old.pool, {})
            new_counts = self._bound_by_priority.setdefault(node.pool, {})
            for _req, prio, _seq in bound.values():
                old_counts[prio] -= 1
                new_counts[prio] = new_counts.get(prio, 0) + 1
        labels = node.effective_labels()
        free = dict(node.allocatable)
        for req, _prio, _seq in bound.values():
            rs.sub_into(free, req)
        entry = NodeEntry(node=node, labels=labels, type_id=self._type_id(labels, node.taints), free=free)
        entry.bound = bound
        entry.key = self._key(free, node.name)
        self.entries[node.name] = entry
        self._attach(entry)

    def remove(self, name: str) -> list[str]:
        """Remove a node; returns the ids of the jobs that were bound to it."""
        self.version += 1
        entry = self.entries.pop(name, None)
        if entry is None:
            return []
        self._detach(entry)
        counts = self._bound_by_priority.get(entry.pool, {})
        for _req, prio, _seq in entry.bound.values():
            counts[prio] -= 1
        return sorted(entry.bound)

    def _attach(self, entry: NodeEntry) -> None:
        if entry.schedulable:
            clusters = self.groups.setdefault(entry.pool, {})
            group = clusters.get(entry.cluster)
            if group is None:
                group = clusters[entry.cluster] = SortedGroup(self._entry_key)
            index = self.pool_index.get(entry.pool)
            if index is None:
                index = self.pool_index[entry.pool] = SortedGroup(self._entry_key)
            group.insert(entry)
            index.insert(entry)
            entry.indexes = (group, index)
            rs.add_into(self._pool_total.setdefault(entry.pool, {}), entry.node.allocatable)

    def _detach(self, entry: NodeEntry) -> None:
        if entry.schedulable:
            group = self.groups[entry.pool][entry.cluster]
            group.remove(entry)
            self.pool_index[entry.pool].remove(entry)
            if not group:
                del self.groups[entry.pool][entry.cluster]
                if not self.groups[entry.pool]:
                    del self.groups[entry.pool]
                    del self.pool_index[entry.pool]
            rs.sub_into(self._pool_total[entry.pool], entry.node.allocatable)
            entry.indexes = None

    def has_bound_below(self, pool: str, priority: int) -> bool:
        """Is any job bound in ``pool`` at a priority lower than ``priority``?"""
        return any(n > 0 and p < priority for p, n in self._bound_by_priority.get(pool, {}).items())

    def pools(self) -> list[str]:
        return sorted(self.groups)

    def clusters(self, pool: str) -> list[str]:
        return sorted(self.groups.get(pool, {}))

    def pool_total(self, pool: str) -> Resources:
        return {k: v for k, v in self._pool_total.get(pool, {}).items() if v}

    # --------------------------------------------------------------- binding
    def bind(
        self, job_id: str, requests: Mapping[str, int], priority: int, entry: NodeEntry, seq: int
    ) -> None:
        """Bind a job to ``entry``; ``seq`` orders it among the jobs bound before it (the scheduler's
        bind sequence: victims are taken newest first)."""
        self.version += 1
        free = entry.free
        for k, v in requests.items():
            free[k] = free.get(k, 0) - v
        entry.bound[job_id] = (requests, priority, seq)
        counts = self._bound_by_priority.get(entry.pool)
        if counts is None:
            counts = self._bound_by_priority[entry.pool] = {}
        counts[priority] = counts.get(priority, 0) + 1
        if not entry.stale:  # a stale node is already due to move (a node's run of binds)
            self._rekey(entry)

    def unbind(self, job_id: str, node_name: str) -> str | None:
        """Unbind a job from ``node_name`` (nothing if it is not bound there)."""
        entry = self.entries.get(node_name)
        if entry is None or job_id not in entry.bound:
            return None
        self.version += 1
        req, prio, _seq = entry.bound.pop(job_id)
        self._bound_by_priority[entry.pool][prio] -= 1
        rs.add_into(entry.free, req)
        self._rekey(entry)
        return node_name

    def _rekey(self, entry: NodeEntry) -> None:
        """The node's free resources changed: its key follows, and its place in its indexes,
        when they are next read in order (at once for a node in no index)."""
        if entry.indexes is None:
            entry.key = self._key(entry.free, entry.name)
        elif not entry.stale:
            # Not stale: no index has read it in order since it changed, so both have it filed.
            entry.stale = True
            group, index = entry.indexes
            group.defer(entry)
            index.defer(entry)

    # ------------------------------------------------------------ matching
    def mismatch(self, job: Job, rkey: RequirementsKey, entry: NodeEntry) -> str | None:
        ck = (rkey, entry.type_id)
        try:
            return self._compat[ck]
        except KeyError:
            labels, taints = self._type_info[entry.type_id]
            reason = static_mismatch(job, labels, taints)
            self._compat[ck] = reason
            return reason

    def compatible_anywhere(self, job: Job, pool: str) -> str | None:
        """None if some node of the pool is statically compatible, else the mismatch of the nodes
        that came closest (a job asking for a node type whose nodes are all tainted is told the
        taint, not that the other nodes are of another type)."""
        rkey = requirements_key(job)
        reason: str | None = "no nodes in pool"
        stage = -2
        for group in self.groups.get(pool, {}).values():
            for entry in group.entries:
                r = self.mismatch(job, rkey, entry)
                if r is None:
                    return None
                if (s := mismatch_stage(r)) > stage:
                    reason, stage = r, s
        return reason

    def first_fit(
        self,
        job: Job,
        rkey: RequirementsKey,
        request: Mapping[str, int],
        group: SortedGroup,
        overlay: Mapping[str, Resources] | None = None,
        label: tuple[str, str] | None = None,
    ) -> NodeEntry | None:
        """Best-fit node of ``group`` for ``request`` (least free first).

        ``overlay`` holds tentative free vectors of nodes already used by a gang being placed;
        those nodes are skipped here and considered separately by :meth:`best_fit`.
        """
        keys = group.keys
        entries = group.entries
        i = bisect_left(keys, (request.get(self.indexed[0], 0),))
        n = len(keys)
        mismatch = self.mismatch
        while i < n:
            entry = entries[i]
            i += 1
            if overlay is not None and entry.name in overlay:
                continue
            free = entry.free
            for k, v in request.items():
                if v > free.get(k, 0):
                    break
            else:
                if label is not None and entry.labels.get(label[0]) != label[1]:
                    continue
                if mismatch(job, rkey, entry) is not None:
                    continue
                group.found(i - 1)
                return entry
        return None

    def best_fit(
        self,
        job: Job,
        rkey: RequirementsKey,
        request: Mapping[str, int],
        groups: Sequence[SortedGroup],
        overlay: dict[str, Resources] | None = None,
        label: tuple[str, str] | None = None,
    ) -> NodeEntry | None:
        if overlay is None and len(groups) == 1:
            return self.first_fit(job, rkey, request, groups[0], None, label)
        best: NodeEntry | None = None
        best_key: NodeKey | None = None
        for group in groups:
            e = self.first_fit(job, rkey, request, group, overlay, label)
            if e is not None and (best_key is None or e.key < best_key):
                best, best_key = e, e.key
        if overlay:
            for name, free in overlay.items():
                entry = self.entries[name]
                if not rs.fits(request, free):
                    continue
                if label is not None and entry.labels.get(label[0]) != label[1]:
                    continue
                if self.mismatch(job, rkey, entry) is not None:
                    continue
                k = self._key(free, name)
                if best_key is None or k < best_key:
                    best, best_key = entry, k
        return best

    # ------------------------------------------------------------- reports
    def label_values(self, pool: str, cluster: str, label: str) -> list[str]:
        group = self.groups.get(pool, {}).get(cluster)
        if group is None:
            return []
        return sorted({e.labels[label] for e in group.members if e.labels.get(label)})

    def largest_free_node(self, pool: str) -> NodeEntry | None:
        """The node with the most of the indexed resources free: the tail of the pool's index."""
        index = self.pool_index.get(pool)
        return index.last if index is not None else None

    def cluster_free(self, pool: str, cluster: str, label: tuple[str, str] | None = None) -> Resources:
        out: Resources = {}
        group = self.groups.get(pool, {}).get(cluster)
        if group is None:
            return out
        for e in group.members:
            if label is None or e.labels.get(label[0]) == label[1]:
                rs.add_into(out, e.free)
        return out
