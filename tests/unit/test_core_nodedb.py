"""The node database's sorted indexes: a node moved to a new key lands where a full sort puts it."""

from __future__ import annotations

import random

from armada_bridge.core.builders import node
from armada_bridge.core.nodedb import NodeDb, NodeEntry, SortedGroup


def _entries(db: NodeDb, count: int) -> list[NodeEntry]:
    for i in range(count):
        db.upsert(node(f"n-{i:03d}", "c", {"cpu": "32", "memory": "256Gi"}))
    return list(db.entries.values())


def test_a_moved_node_lands_where_a_full_sort_puts_it_in_both_directions() -> None:
    rng = random.Random(7)
    db = NodeDb(["cpu", "memory"])
    group = SortedGroup()
    entries = _entries(db, 60)
    for e in entries:
        e.key = (rng.randint(0, 8), rng.randint(0, 3), e.name)
        group.insert(e)
    for step in range(2000):
        # One node moved, or (now and then) several before the group is read again.
        for e in rng.sample(entries, 1 if step % 50 else 12):
            group.defer(e)
            e.key = (max(0, e.key[0] + rng.choice((-2, -1, 0, 1, 2))), rng.randint(0, 3), e.name)
        assert group.keys == sorted(group.keys)
        assert [x.key for x in group.entries] == group.keys
        assert len(group) == len(entries)


def test_binding_and_unbinding_keep_every_index_in_best_fit_order() -> None:
    rng = random.Random(11)
    db = NodeDb(["cpu"])
    _entries(db, 40)
    bound: list[tuple[str, str]] = []
    for i in range(500):
        if bound and rng.random() < 0.4:
            db.unbind(*bound.pop(rng.randrange(len(bound))))
        else:
            name = f"n-{rng.randrange(40):03d}"
            if db.entries[name].free["cpu"] >= 1000:
                db.bind(f"j-{i}", {"cpu": 1000}, 0, db.entries[name], i)
                bound.append((f"j-{i}", name))
        # A bound node moves in its indexes when they are next read in order (here: the pool's
        # index often, its clusters' now and then, so that several moved nodes are put in place
        # together); reads in no order leave them as they are.
        assert sum(len(g.members) for g in db.groups["default"].values()) == 40
        if i % 3 == 0:
            largest = db.largest_free_node("default")
            assert largest is not None and largest.free["cpu"] == max(
                e.free["cpu"] for e in db.entries.values()
            )
        for p in db.pools():
            for index in (db.pool_index[p], *(db.groups[p].values() if i % 25 == 0 else ())):
                assert index.keys == sorted(index.keys)
                assert [(e.free["cpu"], e.name) for e in index.entries] == list(index.keys)
