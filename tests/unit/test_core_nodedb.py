"""The node database's sorted indexes: a node moved to a new key lands where a full sort puts it."""

from __future__ import annotations

import random

from armada_bridge.core.builders import node
from armada_bridge.core.nodedb import NodeDb, NodeEntry, SortedGroup


def _entries(db: NodeDb, count: int) -> list[NodeEntry]:
    for i in range(count):
        db.upsert(node(f"n-{i:03d}", "c", {"cpu": "32", "memory": "256Gi"}))
    return list(db.entries.values())


def test_rekey_keeps_the_group_sorted_in_both_directions() -> None:
    rng = random.Random(7)
    db = NodeDb(["cpu", "memory"])
    group = SortedGroup()
    entries = _entries(db, 60)
    for e in entries:
        e.key = (rng.randint(0, 8), rng.randint(0, 3), e.name)
        group.insert(e)
    for _ in range(2000):
        e = rng.choice(entries)
        key = (max(0, e.key[0] + rng.choice((-2, -1, 0, 1, 2))), rng.randint(0, 3), e.name)
        group.rekey(e, key)
        e.key = key
        assert group.keys == sorted(group.keys)
        assert [x.key for x in group.entries] == group.keys
        assert len(group) == len(entries)


def test_binding_and_unbinding_keep_every_index_in_best_fit_order() -> None:
    rng = random.Random(11)
    db = NodeDb(["cpu"])
    _entries(db, 40)
    bound: list[str] = []
    for i in range(500):
        if bound and rng.random() < 0.4:
            db.unbind(bound.pop(rng.randrange(len(bound))))
        else:
            name = f"n-{rng.randrange(40):03d}"
            if db.entries[name].free["cpu"] >= 1000:
                db.bind(f"j-{i}", {"cpu": 1000}, 0, db.entries[name])
                bound.append(f"j-{i}")
        # The pool's index moves a node at once; its cluster's when next read (here: now and then,
        # so that several moved nodes are put in place together).
        for p in db.pools():
            for index in (db.pool_index[p], *(db.groups[p].values() if i % 25 == 0 else ())):
                assert index.keys == sorted(index.keys)
                assert [(e.free["cpu"], e.name) for e in index.entries] == list(index.keys)
