"""The extender's metrics: units waiting and running per queue, how long the oldest has waited, and
endpoint errors counted whatever their cause."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest
from aiohttp import web
from aiohttp.test_utils import make_mocked_request

from armada_bridge.core import model
from extender.metrics import Metrics
from extender.pod_info import PodInfo
from extender.protocols.base import GangSpec
from extender.server import _instrument
from extender.status_writer import gang_counts, oldest_waits

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


@dataclass
class _Source:
    managed: dict[str, PodInfo] = field(default_factory=dict)


def _pod(name: str, queue: str, created: float, *, gang: str | None = None, placed: bool = False) -> PodInfo:
    spec = GangSpec(key=gang, min_member=2, protocol="armada") if gang else None
    return PodInfo(
        key=f"team-a/{name}",
        uid=name,
        queue=queue,
        gang=spec,
        root=None,
        job=model.Job(name, queue, {}, submit_time=created),
        placed=("remote-1", "node-0") if placed else None,
    )


def _value(metrics: Metrics, name: str, queue: str) -> float | None:
    return metrics.registry.get_sample_value(name, {"queue": queue})


def test_oldest_wait_is_the_earliest_created_waiting_pod_of_each_queue() -> None:
    src = _Source(
        {
            p.uid: p
            for p in (
                _pod("g-0", "a", NOW - 900, gang="g"),
                _pod("g-1", "a", NOW - 30, gang="g"),
                _pod("single", "a", NOW - 60),
                _pod("old-but-running", "a", NOW - 5000, placed=True),
                _pod("b-0", "b", NOW - 10),
                _pod("c-running", "c", NOW - 700, placed=True),
                _pod("unknown-creation", "d", 0.0),
            )
        }
    )
    assert oldest_waits(src, NOW) == {"a": 900.0, "b": 10.0}
    assert gang_counts(src) == ({"a": 2, "b": 1, "d": 1}, {"a": 1, "c": 1})


def test_a_clock_behind_the_api_server_never_gives_a_negative_wait() -> None:
    src = _Source({"p": _pod("p", "a", NOW + 3)})
    assert oldest_waits(src, NOW) == {"a": 0.0}


def test_observe_gangs_sets_the_gauges_and_zeroes_a_queue_that_is_gone() -> None:
    m = Metrics()
    m.observe_gangs({"a": 2}, {"a": 1, "b": 3}, {"a": 900.0})
    assert _value(m, "armada_bridge_gangs_queued", "a") == 2
    assert _value(m, "armada_bridge_gangs_running", "b") == 3
    assert _value(m, "armada_bridge_gang_oldest_wait_seconds", "a") == 900.0
    assert _value(m, "armada_bridge_gang_oldest_wait_seconds", "b") == 0.0
    m.observe_gangs({}, {"b": 1}, {})  # queue a's pods are all gone
    assert _value(m, "armada_bridge_gangs_queued", "a") == 0
    assert _value(m, "armada_bridge_gangs_running", "a") == 0
    assert _value(m, "armada_bridge_gang_oldest_wait_seconds", "a") == 0.0
    assert _value(m, "armada_bridge_gangs_running", "b") == 1


async def test_an_unexpected_error_in_an_endpoint_is_counted_as_a_500() -> None:
    metrics = Metrics()
    api = SimpleNamespace(c=SimpleNamespace(metrics=metrics))

    async def broken(_request: web.Request) -> web.StreamResponse:
        raise RuntimeError("a bug")

    wrapped = _instrument(api, "mutate", broken)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        await wrapped(make_mocked_request("POST", "/mutate"))
    labels = {"endpoint": "mutate", "code": "500"}
    assert metrics.registry.get_sample_value("armada_bridge_extender_request_errors_total", labels) == 1
    assert (
        metrics.registry.get_sample_value(
            "armada_bridge_extender_request_seconds_count", {"endpoint": "mutate"}
        )
        == 1
    )
