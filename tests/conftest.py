"""Test fixtures: the local multi-cluster environment, started once per run (by whichever test
process needs it first) and stopped after it by the run's main process, the room every test against
it holds (tests/framework/room.py), and per-test namespaces."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from devenv.base import default_state_dir
from tests.framework import room

TESTS = Path(__file__).parent
# The run's id, which its test processes (pytest-xdist's workers) inherit; the environment started
# by a run names it in STARTED, and the run's main process stops that environment at the end.
RUN = "ARMADA_BRIDGE_TEST_RUN"
STARTED = "tests-started-by"
DEMO_CLEANED = "tests-cleaned-demo-for"  # the run that removed the demo's objects


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


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN, uuid.uuid4().hex)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by the folder it lives in (unit / integration / e2e), and run them in that
    order, those that use the released operators (the `operators` fixture) last: hack/test.sh
    compiles the operators meanwhile (otherwise in the order collected). The `exclusive` tests go
    to one test process (pytest-xdist's group), one after another, and so do the tests of each
    module marked `own_environment` (they share that environment), or of each group it names."""
    for item in items:
        kind = _kind(item)
        if kind in KINDS:
            item.add_marker(getattr(pytest.mark, kind))
        if item.get_closest_marker("exclusive"):
            item.add_marker(pytest.mark.xdist_group("exclusive"))
        elif own := item.get_closest_marker("own_environment"):
            group = own.args[0] if own.args else item.module.__name__ if item.module else item.nodeid
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_order)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)  # around pytest-timeout's: waiting is not testing
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test against the environment holds its room from its fixtures' setup to their teardown:
    shared, or alone for an `exclusive` one. A test on an environment of its own holds it shared
    too: not to be beside an exclusive test, which may kill what it judges by its timing while the
    other environment loads the cores."""
    if _kind(item) in ("integration", "e2e"):
        with room.held(default_state_dir(), exclusive=item.get_closest_marker("exclusive") is not None):
            yield
    else:
        yield


@pytest.fixture(scope="session")
def dev_env() -> object:
    """The environment of `armada-bridge dev up`: reused when healthy, started otherwise (once,
    whichever test process comes first; the run's main process stops it at the end)."""
    from devenv.processes.environment import Environment

    env = Environment()
    with room.one_at_a_time(env.state_dir / "tests-up.lock"):
        statuses = env.status()
        if not (len(statuses) >= 3 and all(s.healthy for s in statuses)):
            env.up()
            (env.state_dir / STARTED).write_text(os.environ[RUN])
        # What README's first command left (`hack/demo.sh`: a gang, a PyTorchJob that ends after a
        # minute, a RayCluster) holds the remotes' room and frees some of it at a time of its own:
        # gone before the first test (once per run), so that a test sizing itself to the free room
        # finds it steady.
        cleaned = env.state_dir / DEMO_CLEANED
        if not cleaned.is_file() or cleaned.read_text() != os.environ[RUN]:
            from devenv.demo import clean_demo

            assert clean_demo() == 0, "the demo's namespaces are still there (armada-bridge demo --clean)"
            cleaned.write_text(os.environ[RUN])
    return env


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's main process stops the environment the run started, unless ARMADA_BRIDGE_KEEP_ENV."""
    if hasattr(session.config, "workerinput"):
        return  # a pytest-xdist worker: the others may still be running
    started = default_state_dir() / STARTED
    if not started.is_file() or started.read_text() != os.environ[RUN]:
        return
    started.unlink()
    if not os.environ.get("ARMADA_BRIDGE_KEEP_ENV"):
        from devenv.processes.environment import Environment

        Environment().down()


@pytest.fixture(scope="session")
def node_images(dev_env: object) -> Callable[..., None]:
    """`node_images("tensorflow", ...)`: those images (imported on demand: the training
    frameworks') on every remote real node of the environment."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    return lambda *keys: dev_env.ensure_node_images(keys)


@pytest.fixture
def operators(dev_env: object) -> Callable[..., None]:
    """`operators("kuberay", ...)`: make sure those released operators run against the front
    (installed and started by the dev environment once per session, reused when already running)."""
    from devenv.processes.environment import Environment

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
    from devenv.clients import api_client
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    clients: dict[str, k8s.ApiClient] = {}

    def get(name: str) -> k8s.ApiClient:
        if name not in clients:
            clients[name] = api_client(dev_env.kubeconfig(name))
        return clients[name]

    yield get
    for c in clients.values():
        c.close()


def _queue(name: str, namespace: str, **spec: object) -> dict[str, object]:
    """A Queue that takes pods of `namespace` only (by its name, so the namespace keeps no queue
    label: its pods are managed only where they name a queue)."""
    from armada_bridge import keys

    selector = {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"priorityFactor": 1, "namespaceSelector": selector, **spec},
    }


@contextmanager
def _made_queues(api: k8s.ApiClient, namespace: str, names: list[str]) -> Iterator[list[str]]:
    from armada_bridge import keys

    crd = k8s.CustomObjectsApi(api)
    for n in names:
        crd.create_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", _queue(n, namespace))
    try:
        yield names
    finally:
        for n in names:
            try:
                crd.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", n)
            except ApiException as e:
                if e.status != 404:
                    raise


@pytest.fixture
def queues(cluster_api: Callable[[str], k8s.ApiClient], namespace: str) -> Iterator[list[str]]:
    """Two more fresh Queues with equal priority factors that take pods of the test's namespace,
    deleted after the test."""
    names = [f"q{uuid.uuid4().hex[:6]}-{x}" for x in "ab"]
    with _made_queues(cluster_api("front"), namespace, names) as made:
        yield made


@pytest.fixture
def namespace(
    request: pytest.FixtureRequest, dev_env: object, cluster_api: Callable[[str], k8s.ApiClient]
) -> Iterator[str]:
    """A fresh namespace of the same name in every cluster, deleted after the test, and a Queue of
    that name that takes its pods (no other queue does: the environment has no catch-all queue; a
    pod is managed where it names the queue, or where the test labels the namespace for it)."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:6]}"
    names = dev_env.cluster_names()
    for c in names:
        k8s.CoreV1Api(cluster_api(c)).create_namespace({"metadata": {"name": name}})
    with _made_queues(cluster_api("front"), name, [name]):
        yield name
    for c in names:
        try:
            k8s.CoreV1Api(cluster_api(c)).delete_namespace(name)
        except ApiException as e:
            if e.status != 404:
                raise


@pytest.fixture
def namespace_in_its_queue(namespace: str, cluster_api: Callable[[str], k8s.ApiClient]) -> str:
    """The test's namespace labelled `armadaproject.io/queue` with its own queue, as an admin sets a
    team's namespace up: what an operator makes there, naming no queue, runs in that queue."""
    from armada_bridge import keys

    labels = {keys.QUEUE_LABEL: namespace}
    k8s.CoreV1Api(cluster_api("front")).patch_namespace(namespace, {"metadata": {"labels": labels}})
    return namespace
