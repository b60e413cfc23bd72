"""The extender's shell around the core: a decision counts only once written, pod slots, status;
its loop survives failures, and its resync recovers lost events.

The controller runs here against an API server that is not there (a closed loopback port), with
its caches filled by hand: every write fails the way a dropped connection does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey
from armada_bridge.core.model import JobState
from armada_bridge.core.result import Placement, RoundResult
from armada_bridge.kube.client import Kube, KubeConfig, with_preconditions
from armada_bridge.kube.informer import Informer, key_of
from armada_bridge.kube.resources import NODES, PODS
from armada_bridge.objects import Obj
from armada_bridge.rejection import Rejection, rejection_of
from extender.controller import Controller, Settings, core_node_name
from extender.metrics import Metrics
from extender.remotes import RemoteWatcher
from extender.status_writer import merge_patch
from tests.framework.kube import wait_for_async
from tests.framework.pods import pod

CLUSTER = "remote-1"
KEY = DecisionKey(b"unit-test-decision-key-0123456789")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _feed(informer: Informer, obj: Obj, kind: str = "ADDED") -> None:
    if kind == "DELETED":
        informer.cache.pop(key_of(obj), None)
    else:
        informer.cache[key_of(obj)] = obj
    informer._emit(kind, obj)


def _node(name: str, *, cpu: str = "32", pods: str = "110") -> Obj:
    return {
        "metadata": {"name": name, "labels": {}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "128Gi", "pods": pods},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, *, cpu: str = "1", annotations: dict[str, str] | None = None) -> Obj:
    return pod(name, cpu=cpu, annotations={keys.SCHEDULING_CONSTRAINTS: "{}", **(annotations or {})})


def _remote_pod(name: str, node: str, *, front_uid: str | None = None, cpu: str = "1") -> Obj:
    labels = {keys.FRONT_UID: front_uid} if front_uid else {}
    return pod(name, uid=f"r-{name}", labels=labels, cpu=cpu, spec={"nodeName": node}, phase="Running")


def _controller(nodes: list[Obj], settings: Settings | None = None) -> Controller:
    kube = Kube(KubeConfig(server=f"http://127.0.0.1:{_closed_port()}"), timeout=2)
    c = Controller(kube, settings or Settings(explain_after_seconds=0), Metrics(), KEY)
    _feed(c.inputs.namespaces, {"metadata": {"name": "team-a", "labels": {keys.QUEUE_LABEL: "default"}}})
    _feed(c.inputs.queues, {"metadata": {"name": "default", "uid": "q"}, "spec": {}})
    c.changes.clusters = False  # the remote cluster's watcher is made by hand below
    remote_nodes = Informer(kube, NODES, name=f"{CLUSTER}/nodes")
    remote_pods = Informer(kube, PODS, name=f"{CLUSTER}/pods")
    remote_nodes.add_handler(lambda kind, obj: c.inputs.on_remote_event(CLUSTER, "nodes", kind, obj))
    remote_pods.add_handler(lambda kind, obj: c.inputs.on_remote_event(CLUSTER, "pods", kind, obj))
    remote_nodes.synced.set()
    remote_pods.synced.set()
    c.inputs.remotes.watchers[CLUSTER] = RemoteWatcher(CLUSTER, "1", kube, remote_nodes, remote_pods)
    for n in nodes:
        _feed(remote_nodes, n)
    return c


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_decision_that_cannot_be_written_is_reverted_and_retried() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        _feed(c.inputs.pods, _pod("a"))
        first = await c.round()
        assert list(first.scheduled) == ["uid-a"]
        # The patch failed (nothing listens): the core must not keep the job running.
        assert c.core.state_of("uid-a") is JobState.QUEUED
        assert c.unwritten == 1 and c.managed["uid-a"].placed is None
        second = await c.round()
        assert list(second.scheduled) == ["uid-a"]  # reconsidered, not forgotten
        assert c.core.state_of("uid-a") is JobState.QUEUED
        await c.front.close()

    _run(scenario())


def test_a_preemption_that_cannot_be_written_keeps_the_victim_and_blocks_its_room() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0"), _node("n1")])
        _feed(c.inputs.pods, _pod("victim", annotations=KEY.annotations("uid-victim", CLUSTER, "n0")))
        _feed(c.inputs.pods, _pod("taker"))
        _feed(c.inputs.pods, _pod("elsewhere"))
        await c._sync()
        n0, n1 = core_node_name(CLUSTER, "n0"), core_node_name(CLUSTER, "n1")
        assert c.core.state_of("uid-victim") is JobState.RUNNING
        # What a round that preempts does in the core: the victim leaves, others are bound.
        c.core.remove_job("uid-victim")
        c.core.mark_running("uid-taker", n0)
        c.core.mark_running("uid-elsewhere", n1)
        result = RoundResult(
            time=0.0,
            scheduled={
                "uid-taker": Placement(cluster=CLUSTER, node=n0, pool="default"),
                "uid-elsewhere": Placement(cluster=CLUSTER, node=n1, pool="default"),
            },
            preempted={"uid-victim": "fair share"},
        )
        await c._apply(result)
        placement = c.core.placement_of("uid-victim")
        assert placement is not None and placement.node == n0  # it still runs there
        assert c.core.state_of("uid-taker") is JobState.QUEUED  # its room was never freed
        assert c.core.state_of("uid-elsewhere") is JobState.QUEUED  # not written either
        assert c.unwritten == 3
        await c.front.close()

    _run(scenario())


def test_rounds_back_off_after_failures() -> None:
    c = Controller(
        Kube(KubeConfig(server="http://127.0.0.1:1")), Settings(coalesce_seconds=0.05), Metrics(), KEY
    )
    assert c.backoff() == 0.05
    c.failed_rounds = 3
    assert c.backoff() == 0.4
    c.failed_rounds = 1000
    assert c.backoff() == Settings().max_backoff_seconds


def _count(c: Controller, name: str, **labels: str) -> float:
    return c.metrics.registry.get_sample_value(name, labels) or 0.0


@contextlib.asynccontextmanager
async def _leading(c: Controller) -> AsyncIterator[asyncio.Task[None]]:
    """The leader's loop (run_rounds) on caches filled by hand, stopped on exit; it never ends by
    itself."""
    for informer in (
        c.inputs.pods,
        c.inputs.namespaces,
        c.inputs.queues,
        c.inputs.remote_clusters,
        c.inputs.vnodes,
    ):
        informer.synced.set()
    loop = asyncio.create_task(c.run_rounds())
    try:
        yield loop
        assert not loop.done(), loop.exception()
    finally:
        loop.cancel()
        await asyncio.gather(loop, return_exceptions=True)


def test_an_unexpected_error_in_a_round_does_not_end_the_loop() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        _feed(c.inputs.pods, _pod("a"))
        schedule_round, calls = c.core.schedule_round, []

        def a_bug_once(now: float) -> RoundResult:
            calls.append(now)
            if len(calls) == 1:
                raise RuntimeError("a bug")
            return schedule_round(now)

        c.core.schedule_round = a_bug_once  # type: ignore[method-assign]
        async with _leading(c) as loop:
            await wait_for_async("a round after the failed one", lambda: c.rounds >= 1 or loop.done())
        assert _count(c, "armada_bridge_extender_round_errors_total", stage="round") == 1
        assert c.last_result is not None and "uid-a" in c.last_result.scheduled
        await c.front.close()

    _run(scenario())


def test_a_failed_round_loses_none_of_the_pods_it_had_to_look_at() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        owned = _pod("a-owned")  # its owner is looked up on the API server, which does not answer
        owned["metadata"]["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "uid-j", "controller": True}
        ]
        _feed(c.inputs.pods, owned)
        _feed(c.inputs.pods, _pod("b"))
        with pytest.raises(OSError):
            await c.round()
        assert c.changes.pods == {"team-a/a-owned", "team-a/b"}  # both looked at again next round
        await c.front.close()

    _run(scenario())


def _refused(pod: Obj) -> Obj:
    """`pod` as kube-scheduler leaves one it found no node for."""
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/3 nodes"}
    pod["status"]["conditions"] = [condition]
    return pod


def test_only_admitted_pods_kube_scheduler_refused_are_nudged() -> None:
    """A pod admitted a while ago and not bound yet is still in kube-scheduler's queue unless it
    refused the pod: only a refused one is touched (a write per pod and a requeue otherwise)."""

    async def scenario() -> None:
        c = _controller([_node("n0")])
        for name in ("queued", "refused"):
            placed = KEY.annotations(f"uid-{name}", CLUSTER, "n0")
            _feed(c.inputs.pods, _pod(name, annotations=placed))
        await c.round()
        assert {"uid-queued", "uid-refused"} <= set(c.managed)
        touched: list[str] = []

        async def touch(info: Any) -> None:
            touched.append(info.uid)

        c.actions.touch = touch  # type: ignore[method-assign]
        placed = KEY.annotations("uid-refused", CLUSTER, "n0")
        _feed(c.inputs.pods, _refused(_pod("refused", annotations=placed)), "MODIFIED")
        for info in c.managed.values():
            info.placed_at = time.monotonic() - 60
        await c.touch_unbound()
        assert touched == ["uid-refused"]
        await c.front.close()

    _run(scenario())


def test_a_failing_status_step_stops_none_of_the_others() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        placed = KEY.annotations("uid-admitted", CLUSTER, "n0")
        _feed(c.inputs.pods, _pod("admitted", annotations=placed))  # admitted, not bound yet
        await c.round()
        _feed(c.inputs.pods, _refused(_pod("admitted", annotations=placed)), "MODIFIED")  # and refused
        c.managed["uid-admitted"].placed_at = time.monotonic() - 60
        # Its nudge cannot be written (nothing answers): the queue status step runs all the same.
        await c.write_statuses()
        assert _count(c, "armada_bridge_gangs_running", queue="default") == 1
        assert _count(c, "armada_bridge_extender_round_errors_total", stage="status") >= 1
        await c.front.close()

    _run(scenario())


@pytest.mark.parametrize("cause", ["failed", "dropped"])
def test_a_waiting_reason_whose_event_was_not_written_is_posted_again(cause: str) -> None:
    async def scenario() -> None:
        c = _controller([])  # no nodes: the pod waits
        if cause == "dropped":
            c.events.max_queued = 0  # too many Events wait already
        _feed(c.inputs.pods, _pod("a"))
        await c.round()
        for attempt in (1, 2):
            await c.explain_waiting()
            await c.events._queue.join()  # written, or not (nothing answers)
            assert "uid-a" not in c._posted  # not marked posted: it is posted again, ...
            assert _count(c, "armada_bridge_extender_events_lost_total", cause=cause) == attempt
            await c.explain_waiting()  # ... not at once (what refused it would refuse it again) ...
            await c.events._queue.join()
            assert _count(c, "armada_bridge_extender_events_lost_total", cause=cause) == attempt
            c._post_again_at["uid-a"] = 0.0  # ... but once EVENT_RETRY_SECONDS have passed
        await c.front.close()

    _run(scenario())


def test_a_waiting_reason_is_said_once_the_pod_has_waited_explain_after_seconds() -> None:
    """A pod admitted within that time (a gang's early members, a burst) gets no waiting Event."""

    async def scenario() -> None:
        c = _controller([_node("n0", cpu="1")], Settings(explain_after_seconds=0.3))
        emitted: list[tuple[str, str]] = []

        async def explain(pod: Obj, reason: str) -> None:
            emitted.append((pod["metadata"]["name"], reason))

        c.actions.explain = explain  # type: ignore[method-assign]
        _feed(c.inputs.pods, _pod("a", annotations=KEY.annotations("uid-a", CLUSTER, "n0")))  # takes the node
        _feed(c.inputs.pods, _pod("b"))
        await c.round()
        await c.explain_waiting()
        assert emitted == []
        await asyncio.sleep(0.3)
        await c.explain_waiting()
        assert [name for name, _ in emitted] == ["b"]
        await c.front.close()

    _run(scenario())


def test_a_pod_placed_on_a_node_not_known_yet_is_not_told_it_waits() -> None:
    """After a restart, pods run on nodes the extender learns of only once their remote cluster's
    pods are listed: they are being caught up with, not waiting for room."""

    async def scenario() -> None:
        c = _controller([_node("n0", cpu="1")])
        told: list[str] = []

        async def explain(pod: Obj, reason: str) -> None:
            told.append(pod["metadata"]["name"])

        c.actions.explain = explain  # type: ignore[method-assign]
        _feed(c.inputs.pods, _pod("a", annotations=KEY.annotations("uid-a", CLUSTER, "n9")))
        _feed(c.inputs.pods, _pod("b", cpu="2"))
        await c.round()
        assert "not known yet" in c.shell_reasons["uid-a"]
        await c.explain_waiting()
        assert told == ["b"]
        assert set(c._waiting_since) == {"uid-b"}
        await c.front.close()

    _run(scenario())


def test_a_waiting_pod_is_told_again_when_its_reason_changes_not_its_figures() -> None:
    """A waiting reason's figures (members present, free room, shares) change with every arrival
    and admission: with thousands of pods waiting, an Event for each of them each time."""

    async def scenario() -> None:
        c = _controller([_node("n0", cpu="1")])
        told: list[tuple[str, str]] = []

        async def explain(pod: Obj, reason: str) -> None:
            told.append((pod["metadata"]["name"], reason))

        c.actions.explain = explain  # type: ignore[method-assign]
        gang = {keys.GANG_ID: "g", keys.GANG_CARDINALITY: "3"}
        reasons: list[str] = []
        for i in range(3):
            _feed(c.inputs.pods, _pod(f"g-{i}", annotations=gang))
            await c.round()
            await c.explain_waiting()
            reasons.append(c.core.waiting_reasons()["uid-g-0"])
        assert reasons[0] != reasons[1]  # "gang 1/3 present", "gang 2/3 present": figures alone
        assert told[:3] == [("g-0", reasons[0]), ("g-1", reasons[1]), ("g-0", reasons[2])]
        assert [name for name, _ in told[3:]] == ["g-1", "g-2"]  # the gang's new reason, to each
        await c.front.close()

    _run(scenario())


def test_informer_handler_errors_are_counted() -> None:
    async def scenario() -> None:
        c = _controller([])

        def broken(_kind: str, _obj: Obj) -> None:
            raise KeyError("a bug")

        c.inputs.namespaces.add_handler(broken)
        _feed(c.inputs.namespaces, {"metadata": {"name": "team-b"}})
        assert (
            _count(c, "armada_bridge_extender_informer_handler_errors_total", informer="front/namespaces")
            == 1
        )
        await c.front.close()

    _run(scenario())


def _at(obj: Obj, resource_version: str) -> Obj:
    obj["metadata"]["resourceVersion"] = resource_version
    return obj


def test_the_resync_recovers_pod_events_that_were_lost() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        await c.round()
        # Cached by the informer, but its event never reached the loop (a handler that raised).
        pods = c.inputs.pods
        pods.cache["team-a/a"] = _at(_pod("a", cpu="64"), "1")
        await c.round()
        assert "uid-a" not in c.managed
        c.resync()
        result = await c.round()
        assert "uid-a" in result.waiting and "uid-a" in c.managed  # too big for n0: it waits
        # A change whose MODIFIED event was lost: it fits now.
        pods.cache["team-a/a"] = _at(_pod("a", cpu="1"), "2")
        c.resync()
        assert "uid-a" in (await c.round()).scheduled
        # And a pod whose DELETED event was lost is forgotten.
        del pods.cache["team-a/a"]
        c.resync()
        await c.round()
        assert "uid-a" not in c.managed and c.core.state_of("uid-a") is JobState.GONE
        await c.front.close()

    _run(scenario())


def test_the_loop_resyncs_every_resync_interval() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        c.settings.resync_interval = 0.0  # every round
        async with _leading(c) as loop:
            await wait_for_async("the first round", lambda: c.rounds >= 1 or loop.done())
            c.inputs.pods.cache["team-a/a"] = _at(_pod("a"), "1")  # its event lost
            await wait_for_async("the pod synced", lambda: "uid-a" in c.managed or loop.done(), timeout=20)
        await c.front.close()

    _run(scenario())


def test_a_resync_with_nothing_changed_keeps_the_round_incremental() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0"), _node("n1")])
        for i in range(3):
            _feed(c.inputs.pods, _pod(f"big{i}", cpu="64"))  # fits nowhere: the core remembers that
        await c.round()
        epochs = c.core.epochs()
        c.resync()
        assert not c.changes.pods  # every pod is as it was last synced
        await c.round()
        assert c.core.epochs() == epochs  # nor did any node change for the core
        await c.front.close()

    _run(scenario())


def test_a_round_woken_by_what_did_not_reach_the_core_looks_at_no_backlog() -> None:
    """A pod's status, a binding, a node heartbeat wake the loop; after a round that decided
    nothing, another would decide nothing too, at a cost that grows with the backlog."""

    async def scenario() -> None:
        c = _controller([_node("n0", cpu="1")])
        _feed(c.inputs.pods, _pod("big", cpu="2"))  # waits
        await c.round()
        rounds = c.core.round_no
        waiting = _pod("big", cpu="2")
        waiting["status"]["conditions"] = [{"type": "PodScheduled", "status": "False"}]
        _feed(c.inputs.pods, waiting, "MODIFIED")  # the same job for the core
        await c.round()
        assert c.core.round_no == rounds
        _feed(c.inputs.pods, _pod("small", cpu="1"))  # a new job: a round
        await c.round()
        assert c.core.round_no == rounds + 1
        await c.front.close()

    _run(scenario())


def test_pod_slots_are_counted() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0", pods="2"), _node("n1", pods="2")])
        for i in range(5):
            _feed(c.inputs.pods, _pod(f"p{i}", cpu="50m"))
        result = await c.round()
        assert len(result.scheduled) == 4  # two per node, whatever their CPU
        nodes = [p.node for p in result.scheduled.values()]
        assert sorted(nodes) == sorted(
            [core_node_name(CLUSTER, "n0")] * 2 + [core_node_name(CLUSTER, "n1")] * 2
        )
        assert "uid-p4" in result.waiting
        await c.front.close()

    _run(scenario())


def test_remote_pods_the_core_does_not_account_take_room() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0", cpu="8", pods="10")])
        _feed(c.inputs.pods, _pod("running", annotations=KEY.annotations("uid-running", CLUSTER, "n0")))
        await c._sync()
        pods = c.inputs.remotes.watchers[CLUSTER].pods
        _feed(pods, _remote_pod("running", "n0", front_uid="uid-running"))  # accounted by the core
        _feed(pods, _remote_pod("foreign", "n0", cpu="2"))  # the remote cluster's own
        _feed(pods, _remote_pod("finished", "n0", front_uid="uid-gone", cpu="3"))  # front pod let go
        await c._sync()
        free = c.core.nodedb.entries[core_node_name(CLUSTER, "n0")].free
        assert free["cpu"] == (8 - 1 - 2 - 3) * 1000
        assert free["pods"] == (10 - 3) * 1000
        # Its remote pod gone, the room comes back.
        _feed(pods, _remote_pod("finished", "n0", front_uid="uid-gone", cpu="3"), kind="DELETED")
        await c._sync()
        assert c.core.nodedb.entries[core_node_name(CLUSTER, "n0")].free["cpu"] == (8 - 1 - 2) * 1000
        await c.front.close()

    _run(scenario())


def test_a_pod_its_remote_cluster_refused_is_placed_again_on_another_node() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0"), _node("n1", cpu="64"), _node("n2")])
        refused = Rejection(("n0", "n2"), "Too many pods").encode()
        decision = KEY.annotations("uid-refused", CLUSTER, "n0")
        annotations = {**decision, keys.REMOTE_REJECTION: refused}
        placed = _pod("refused", annotations=decision)
        placed["spec"]["nodeName"] = CLUSTER  # bound to its virtual node
        _feed(c.inputs.pods, placed)
        await c._sync()
        assert c.core.state_of("uid-refused") is JobState.RUNNING
        pod = _pod("refused", annotations=annotations)  # then the vkubelet notes the refusal
        pod["spec"]["nodeName"] = CLUSTER
        _feed(c.inputs.pods, pod, kind="MODIFIED")
        result = await c.round()
        assert result.scheduled["uid-refused"].node == core_node_name(CLUSTER, "n1")
        await c.front.close()

    _run(scenario())


def test_rejection_applies_only_to_the_node_it_names() -> None:
    pod = _pod(
        "p",
        annotations={
            keys.ASSIGNED_REMOTE_NODE: "n1",
            keys.REMOTE_REJECTION: Rejection(("n0",), "x").encode(),
        },
    )
    assert rejection_of(pod) is None
    pod["metadata"]["annotations"][keys.ASSIGNED_REMOTE_NODE] = "n0"
    assert rejection_of(pod) == Rejection(("n0",), "x")
    assert Rejection(("n0", "n1"), "x").adding("n1", "y") == Rejection(("n1", "n0"), "y")
    pod["metadata"]["annotations"][keys.REMOTE_REJECTION] = "not json"
    assert rejection_of(pod) is None


def test_queue_status_patch_removes_what_is_no_longer_allocated() -> None:
    current = {"allocated": {"cpu": "63", "memory": "126Gi"}, "queuedGangs": 2, "fairShare": 0.5}
    wanted = {"allocated": {}, "queuedGangs": 0, "fairShare": 0.5}
    assert merge_patch(current, wanted) == {"allocated": {"cpu": None, "memory": None}, "queuedGangs": 0}
    assert merge_patch({"allocated": {"cpu": "1"}}, {"allocated": {"cpu": "2", "pods": "1"}}) == {
        "allocated": {"cpu": "2", "pods": "1"}
    }
    assert merge_patch({}, {"allocated": {}}) == {}  # absent and empty say the same
    assert merge_patch(wanted, wanted) == {}


def test_uid_precondition_on_patches() -> None:
    assert with_preconditions({"status": {"phase": "Failed"}}, "strategic", uid="u1") == {
        "status": {"phase": "Failed"},
        "metadata": {"uid": "u1"},
    }
    merged = with_preconditions({"metadata": {"annotations": {"a": "b"}}}, "merge", uid="u1")
    assert merged == {"metadata": {"annotations": {"a": "b"}, "uid": "u1"}}
    ops = with_preconditions([{"op": "remove", "path": "/x"}], "json", uid="u1")
    assert ops[0] == {"op": "test", "path": "/metadata/uid", "value": "u1"}
    assert json.dumps(ops)


def test_nothing_new_goes_to_a_remote_cluster_being_removed() -> None:
    async def scenario() -> None:
        c = _controller([_node("n0")])
        rc = {"metadata": {"name": CLUSTER, "uid": "rc", "deletionTimestamp": "2026-01-01T00:00:00Z"}}
        _feed(c.inputs.remote_clusters, rc)
        c.changes.clusters = False  # its watcher stays (the vkubelet is still cleaning up)
        c.changes.nodes.add((CLUSTER, "n0"))
        _feed(c.inputs.pods, _pod("a"))
        result = await c.round()
        assert not result.scheduled and "uid-a" in result.waiting
        await c.front.close()

    _run(scenario())


def test_nothing_new_is_placed_in_a_namespace_being_deleted() -> None:
    """Its pods go with it: placed, they would only be bound, refused by the API server (no new
    content in a namespace being deleted) and tried again until deleted. A pod placed before keeps
    its room until it is gone."""

    async def scenario() -> None:
        c = _controller([_node("n0", cpu="2")])
        released: list[str] = []

        async def release(pod: Obj) -> None:
            released.append(pod["metadata"]["name"])

        c.actions.release = release  # type: ignore[method-assign]
        _feed(c.inputs.pods, _pod("placed", annotations=KEY.annotations("uid-placed", CLUSTER, "n0")))
        for name, cpu in (("waiting", "1"), ("big", "2")):
            gated = _pod(name, cpu=cpu)
            gated["spec"]["schedulingGates"] = [{"name": keys.SCHEDULING_GATE}]
            _feed(c.inputs.pods, gated)
        assert await c.round()  # "waiting" placed (its write fails: nothing listens), "big" waits
        assert "uid-big" in c.managed and "uid-placed" in c.managed
        going = {
            "metadata": {
                "name": "team-a",
                "labels": {keys.QUEUE_LABEL: "default"},
                "deletionTimestamp": "2026-01-01T00:00:00Z",
            }
        }
        _feed(c.inputs.namespaces, going, "MODIFIED")
        result = await c.round()
        assert not result.scheduled
        assert "uid-waiting" not in c.managed and "uid-big" not in c.managed
        assert "uid-placed" in c.managed  # still running remotely: its room stays taken
        assert released == []  # not handed to the front scheduler either
        await c.front.close()

    _run(scenario())


def test_a_remote_cluster_status_write_does_not_resync_the_remote_watchers() -> None:
    """The vkubelet writes each RemoteCluster's status every few seconds: only its creation, a spec
    change (generation), its deletion beginning or ending (or the controller's resync, every
    minute) makes the next round read its kubeconfig Secret and sync its watcher and nodes."""

    async def scenario() -> None:
        c = _controller([_node("n0")])
        rc: Obj = {"metadata": {"name": CLUSTER, "uid": "rc", "generation": 1}, "spec": {}, "status": {}}
        seen = []
        for kind, change in [
            ("ADDED", {}),
            ("MODIFIED", {"status": {"pods": 3}}),
            ("MODIFIED", {"metadata": {"name": CLUSTER, "uid": "rc", "generation": 2}}),
            ("MODIFIED", {"status": {"pods": 4}}),
            ("MODIFIED", {"metadata": {**rc["metadata"], "generation": 2, "deletionTimestamp": "t"}}),
            ("DELETED", {}),
            ("ADDED", {"metadata": {"name": CLUSTER, "uid": "rc2", "generation": 1}}),
        ]:
            rc = {**rc, **change}
            c.changes.clusters = False
            _feed(c.inputs.remote_clusters, rc, kind)
            seen.append(c.changes.clusters)
        assert seen == [True, False, True, False, True, True, True]
        await c.front.close()

    _run(scenario())
