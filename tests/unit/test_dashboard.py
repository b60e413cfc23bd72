"""The dashboard's pure parts: the bounded share history, the units and their filters, the
clusters' allocation by queue, one pod's story, and which paths need authentication."""

from __future__ import annotations

from typing import Any

from armada_bridge import keys
from extender import overview
from extender.dashboard.history import ShareHistory
from extender.server import protected_verb
from tests.framework.pods import pod


def _queue(name: str, fair: float = 0.5) -> overview.QueueRow:
    return overview.QueueRow(name, 1.0, fair, fair, fair / 2, 1, 2, False, {})


def test_history_keeps_one_window_per_queue_and_forgets_queues_gone_that_long() -> None:
    h = ShareHistory(window=60, interval=5)
    for t in range(0, 200, 5):
        h.record(float(t), [_queue("a", t / 1000)] + ([_queue("b")] if t < 100 else []))
    a = h.series("a")
    assert [s.t for s in a] == [float(t) for t in range(135, 200, 5)]  # the last 60 s only
    assert a[-1].fair_share == 0.195 and (a[-1].queued, a[-1].running) == (1, 2)
    assert h.queues() == ["a"]  # b's last sample (t=95) is older than the window
    assert len(h) == len(a) <= h.max_samples


def test_history_is_bounded_in_count_whatever_the_clock_does() -> None:
    h = ShareHistory(window=60, interval=5)
    for i in range(1000):
        h.record(100.0 + i * 0.001, [_queue("a")])  # sampled far more often than its interval
    assert len(h.series("a")) == h.max_samples == 14
    h.record(50.0, [_queue("a")])  # the clock went back: the queue starts again
    assert [s.t for s in h.series("a")] == [50.0]


def _pod(name: str, **kw: Any) -> dict[str, Any]:
    ann = dict(kw.get("annotations") or {})
    if kw.get("cluster"):
        ann[keys.ASSIGNED_CLUSTER] = kw["cluster"]
    queue = kw.get("queue", "q1")
    return pod(
        name,
        namespace=kw.get("ns", "team-a"),
        created=kw.get("created", "2026-01-01T00:00:00Z"),
        labels={keys.QUEUE_LABEL: queue} if queue else {},
        annotations=ann,
        cpu=kw.get("cpu", "1"),
        phase=kw.get("phase", "Pending"),
    )


def _gang(gang: str, size: int) -> dict[str, str]:
    return {keys.GANG_ID: gang, keys.GANG_CARDINALITY: str(size)}


PODS = [
    _pod("g-0", annotations=_gang("g", 3), created="2026-01-01T00:00:05Z"),
    _pod("g-1", annotations=_gang("g", 3), created="2026-01-01T00:00:01Z"),
    _pod("r-0", annotations=_gang("r", 2), cluster="remote-1", phase="Running", queue="q2"),
    _pod("r-1", annotations=_gang("r", 2), cluster="remote-1", phase="Running", queue="q2", cpu="500m"),
    _pod("solo", cluster="remote-2", ns="team-b"),
    _pod("bad", annotations={keys.GANG_ID: "x", keys.GANG_CARDINALITY: "many"}, ns="team-b"),
    _pod("done", phase="Succeeded", cluster="remote-2"),
    _pod("plain", queue=None),
]


def _units() -> list[overview.Unit]:
    views = overview.read_pods(PODS, {}, {})
    return overview.units(views, {"uid-g-1": "gang 2/3 present", "uid-solo": "stale"})


def test_units_group_gangs_and_lone_pods_with_state_age_and_reason() -> None:
    by_name = {(u.namespace, u.name): u for u in _units()}
    assert set(by_name) == {
        ("team-a", "armada/g"),
        ("team-a", "armada/r"),
        ("team-b", "solo"),
        ("team-b", "bad"),
    }
    g = by_name[("team-a", "armada/g")]
    assert (g.kind, g.present, g.size, g.state, g.reason) == ("gang", 2, 3, "Waiting", "gang 2/3 present")
    assert g.created == "2026-01-01T00:00:01Z" and g.pods == ("g-0", "g-1")
    r = by_name[("team-a", "armada/r")]
    assert (r.queue, r.clusters, r.state, r.reason) == ("q2", ("remote-1",), "Running", None)
    solo = by_name[("team-b", "solo")]
    assert (solo.kind, solo.state, solo.reason) == ("pod", "Admitted", None)  # no reason once admitted
    bad = by_name[("team-b", "bad")]
    assert bad.state == "Waiting" and bad.reason and "many" in bad.reason  # its gang cannot be read


def test_filters_by_queue_namespace_state_and_kind() -> None:
    every = _units()
    names = lambda rows: sorted(u.name for u in rows)  # noqa: E731
    assert names(overview.filter_units(every)) == names(every)
    assert names(overview.filter_units(every, queue="q2")) == ["armada/r"]
    assert names(overview.filter_units(every, namespace="team-b")) == ["bad", "solo"]
    assert names(overview.filter_units(every, state="Waiting")) == ["armada/g", "bad"]
    assert names(overview.filter_units(every, state="Waiting", namespace="team-a", queue="")) == ["armada/g"]
    assert names(overview.filter_units(every, kind="gang", queue="q1")) == ["armada/g"]
    assert overview.filter_units(every, queue="nope") == []


def test_clusters_show_readiness_heartbeat_and_allocation_by_queue() -> None:
    rcs = [
        {
            "metadata": {"name": "remote-2"},
            "status": {
                "conditions": [{"type": "Ready", "status": "False", "reason": "Unreachable"}],
                "allocatable": {"cpu": "8"},
            },
        },
        {
            "metadata": {"name": "remote-1"},
            "spec": {"cordoned": True},
            "status": {
                "conditions": [{"type": "Ready", "status": "True", "reason": "RemoteClusterReady"}],
                "nodeCount": 4,
                "lastSyncTime": "2026-01-01T00:01:00Z",
            },
        },
    ]
    rows = overview.cluster_rows(rcs, overview.read_pods(PODS, {}, {}))
    assert [(c.name, c.ready, c.cordoned, c.last_heartbeat) for c in rows] == [
        ("remote-1", "True", True, "2026-01-01T00:01:00Z"),
        ("remote-2", "False", False, ""),
    ]
    assert rows[0].allocated_by_queue == {"q2": {"cpu": "1500m"}}
    assert rows[1].allocated_by_queue == {"q1": {"cpu": "1"}}  # the finished pod counts no more


def test_a_story_orders_events_by_time_and_waits_with_the_last_reason() -> None:
    pod = _pod("g-0", annotations=_gang("g", 3))
    pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "message": "0/3 nodes"}]
    events = [
        {"reason": "ArmadaWaiting", "message": "gang 2/3 present", "lastTimestamp": "2026-01-01T00:00:09Z"},
        {"reason": "FailedScheduling", "message": "0/3", "eventTime": "2026-01-01T00:00:03.500000Z"},
        {
            "reason": "ArmadaWaiting",
            "message": "no schedulable nodes",
            "lastTimestamp": "2026-01-01T00:00:02Z",
        },
    ]
    s = overview.story(pod, overview.read_pods([pod], {}, {})[0], events)
    assert [e.reason for e in s.events] == ["ArmadaWaiting", "FailedScheduling", "ArmadaWaiting"]
    assert s.waiting == "gang 2/3 present" and s.scheduler == ("0/3 nodes",)


def test_the_dashboard_and_the_state_need_authentication_health_and_mutate_do_not() -> None:
    for path in ("/dashboard", "/dashboard/", "/dashboard/api/queues", "/dashboard/static/app.js", "/state"):
        assert protected_verb(path) == "get", path
    assert protected_verb("/filter") == "post"
    for path in ("/healthz", "/readyz", "/mutate", "/dashboardx"):
        assert protected_verb(path) is None, path
