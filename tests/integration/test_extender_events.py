"""The extender's Event recorder (extender/events.py) on the real front API server: an Event it
refuses is not lost silently, and posted again it is written; what waits to be written is what the
Event names, not the object, and how many wait is a gauge."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest

from armada_bridge.kube import NAMESPACES, PODS, Kube, load_config
from armada_bridge.kube.resources import CORE_EVENTS
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment
from extender.events import WAITING, EventRecorder
from extender.metrics import Metrics


def test_an_event_the_api_server_refuses_is_counted_warned_and_handed_back(
    dev_env: Environment, namespace: str, caplog: pytest.LogCaptureFixture
) -> None:
    absent = f"{namespace}-later"  # a namespace that does not exist yet: the API server says 404

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as front:
            metrics = Metrics()
            lost: list[tuple[str, str, str]] = []
            recorder = EventRecorder(front, metrics, on_lost=lambda *e: lost.append(e))
            pod = {"metadata": {"name": "p", "namespace": absent, "uid": str(uuid.uuid4())}}
            with caplog.at_level(logging.WARNING, logger="extender.events"):
                await recorder.emit(pod, WAITING, "why it waits")
                await recorder._queue.join()
            assert lost == [(pod["metadata"]["uid"], WAITING, "why it waits")]
            failed = {"cause": "failed"}
            assert metrics.registry.get_sample_value("armada_bridge_extender_events_lost_total", failed) == 1
            assert any("404" in r.getMessage() and WAITING in r.getMessage() for r in caplog.records)

            await front.create(NAMESPACES, {"metadata": {"name": absent}})
            try:
                await recorder.emit(pod, WAITING, "why it waits")  # what the loop does next round
                await recorder._queue.join()
                events = (await front.list(CORE_EVENTS, absent))["items"]
                assert [(e["reason"], e["message"]) for e in events] == [(WAITING, "why it waits")]
                assert len(lost) == 1
            finally:
                await front.delete(NAMESPACES, absent)

    asyncio.run(scenario())


def test_an_event_waiting_to_be_written_keeps_what_it_names_not_the_object(
    dev_env: Environment, namespace: str
) -> None:
    """A decision's patch answers with the whole pod; thousands of Events can wait behind a slow
    API server, and each held its pod (managed fields and all) until written."""

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as front:
            pod = await front.create(
                PODS, busybox_pod("p", schedulingGates=[{"name": "test/hold"}]), namespace
            )
            assert pod["metadata"].get("managedFields")
            metrics = Metrics()
            recorder = EventRecorder(front, metrics)
            await recorder.emit(pod, "Tested", "what waits is small")
            assert metrics.registry.get_sample_value("armada_bridge_extender_events_queued") == 1
            waiting = recorder._queue._queue[0][0]  # type: ignore[attr-defined]
            md = pod["metadata"]
            assert waiting == {
                "metadata": {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion")}
            }
            await recorder._queue.join()
            assert metrics.registry.get_sample_value("armada_bridge_extender_events_queued") == 0
            events = (await front.list(CORE_EVENTS, namespace))["items"]
            [ref] = [e["involvedObject"] for e in events if e["reason"] == "Tested"]
            assert (ref["kind"], ref["name"], ref["uid"], ref["resourceVersion"]) == (
                "Pod",
                "p",
                md["uid"],
                md["resourceVersion"],
            )

    asyncio.run(scenario())
