"""Test fixtures: the local multi-cluster environment, started once per run, and per-test namespaces."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

TESTS = Path(__file__).parent


KINDS = ("unit", "integration", "e2e")


def _kind(item: pytest.Item) -> str:
    rel = Path(str(item.fspath)).relative_to(TESTS)
    return rel.parts[0] if len(rel.parts) > 1 else ""


def _order(item: pytest.Item) -> tuple[int, bool]:
    kind = _kind(item)
    return (
        KINDS.index(kind) if kind in KINDS else len(KINDS),
        "operators" in getattr(item, "fixturenames", ()),
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the folder it lives in (unit / integration / e2e), and run them in that
    order, those that use the released operators (the `operators` fixture) last: hack/test.sh
    compiles the operators meanwhile (otherwise in the order collected)."""
    for item in items:
        kind = _kind(item)
        if kind in KINDS:
            item.add_marker(getattr(pytest.mark, kind))
    items.sort(key=_order)


@pytest.fixture(scope="session")
def dev_env() -> Iterator[object]:
    """The environment of `armada-bridge dev up`: reused when healthy, started (and stopped) otherwise."""
    from armada_bridge.dev.binary.environment import Environment

    env = Environment()
    statuses = env.status()
    healthy = len(statuses) >= 3 and all(s.healthy for s in statuses)
    if not healthy:
        env.up()
    yield env
    if not healthy and not os.environ.get("ARMADA_BRIDGE_KEEP_ENV"):
        env.down()


@pytest.fixture(scope="session")
def operators(dev_env: object) -> Callable[..., None]:
    """`operators("kuberay", ...)`: make sure those released operators run against the front
    (installed and started by the dev environment once per session, reused when already running)."""
    from armada_bridge.dev.binary.environment import Environment

    assert isinstance(dev_env, Environment)
    ready: set[str] = set()

    def ensure(*names: str) -> None:
        todo = [n for n in names if n not in ready]
        if todo:
            dev_env.ensure_operators(todo)
            ready.update(todo)

    return ensure


@pytest.fixture(scope="session")
def cluster_api(dev_env: object) -> Iterator[Callable[[str], k8s.ApiClient]]:
    """cluster name -> ApiClient (one per cluster, shared by the session)."""
    from armada_bridge.dev.binary.environment import Environment
    from armada_bridge.dev.clients import api_client

    assert isinstance(dev_env, Environment)
    clients: dict[str, k8s.ApiClient] = {}

    def get(name: str) -> k8s.ApiClient:
        if name not in clients:
            clients[name] = api_client(dev_env.kubeconfig(name))
        return clients[name]

    yield get
    for c in clients.values():
        c.close()


@pytest.fixture
def queues(cluster_api: Callable[[str], k8s.ApiClient]) -> Iterator[list[str]]:
    """Two fresh Queues with equal priority factors, deleted after the test."""
    from armada_bridge import keys

    crd = k8s.CustomObjectsApi(cluster_api("front"))
    names = [f"q{uuid.uuid4().hex[:6]}-{x}" for x in "ab"]
    for n in names:
        body = {
            "apiVersion": keys.API_VERSION,
            "kind": "Queue",
            "metadata": {"name": n},
            "spec": {"priorityFactor": 1, "namespaceSelector": {}},
        }
        crd.create_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", body)
    yield names
    for n in names:
        crd.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", n)


@pytest.fixture
def namespace(
    request: pytest.FixtureRequest, dev_env: object, cluster_api: Callable[[str], k8s.ApiClient]
) -> Iterator[str]:
    """A fresh namespace of the same name in every cluster, deleted after the test."""
    from armada_bridge.dev.binary.environment import Environment

    assert isinstance(dev_env, Environment)
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:6]}"
    names = dev_env.cluster_names()
    for c in names:
        k8s.CoreV1Api(cluster_api(c)).create_namespace({"metadata": {"name": name}})
    yield name
    for c in names:
        try:
            k8s.CoreV1Api(cluster_api(c)).delete_namespace(name)
        except ApiException as e:
            if e.status != 404:
                raise
