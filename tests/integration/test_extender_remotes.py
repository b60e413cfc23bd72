"""The extender's view of a remote cluster (extender/remotes.py, extender/inputs.py) on the real API
servers of the dev environment: what the remote pods take on their nodes, across a watcher that
stops and starts again."""

from __future__ import annotations

import asyncio
import base64
import socket
from typing import Any

import pytest
import yaml

from armada_bridge import keys
from armada_bridge.kube import NODES, PODS, SECRETS, Kube, load_config
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment
from extender.inputs import Inputs
from tests.framework.kube import wait_for_async

CLUSTER = "restarted"  # the watcher's name here: the dev environment's own RemoteClusters stay as they are


def _remote_pod(name: str, node: str) -> dict[str, Any]:
    """A pod of the remote cluster's own (no front pod), bound to one of its nodes."""
    return busybox_pod(name, cpu="1", nodeName=node, terminationGracePeriodSeconds=0)


def _usage_in(inputs: Inputs, namespace: str) -> set[str]:
    """The remote pods of `namespace` whose usage the extender counts on a node of CLUSTER."""
    return {
        k
        for (cluster, _node), on_node in inputs.remote_usage.items()
        if cluster == CLUSTER
        for k in on_node
        if k.startswith(f"{namespace}/")
    }


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unreachable(kubeconfig: bytes) -> bytes:
    """The same kubeconfig with its server moved to a port nothing listens on."""
    cfg = yaml.safe_load(kubeconfig)
    for c in cfg["clusters"]:
        c["cluster"]["server"] = f"https://127.0.0.1:{_closed_port()}"
    return yaml.safe_dump(cfg).encode()


@pytest.mark.parametrize("restart", ["recreated", "secret-rotated"])
def test_a_restarted_remote_watcher_counts_exactly_what_it_lists(
    dev_env: Environment, namespace: str, restart: str
) -> None:
    """A remote pod that ends while no watcher of its cluster runs (its RemoteCluster deleted and
    created again under the same name; its kubeconfig Secret rotated to a server that does not
    answer, then back) no longer takes room once a watcher runs again."""

    async def scenario() -> None:
        async with (
            Kube(load_config(dev_env.kubeconfig("front"))) as front,
            Kube(load_config(dev_env.kubeconfig("remote-1"))) as remote,
        ):
            # The RemoteCluster handed to the extender's Remotes names a Secret of this test's
            # namespace holding remote-1's kubeconfig (the one the dev environment made for it).
            shipped = await front.get(SECRETS, "remote-1-kubeconfig", keys.SYSTEM_NAMESPACE)
            good = base64.b64decode(shipped["data"][keys.KUBECONFIG_SECRET_KEY])
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "kubeconfig"},
                "data": {keys.KUBECONFIG_SECRET_KEY: base64.b64encode(good).decode()},
            }
            await front.create(SECRETS, secret, namespace)
            rc = {
                "metadata": {"name": CLUSTER},
                "spec": {"kubeconfigSecret": {"name": "kubeconfig", "namespace": namespace}},
            }

            async def rotate(kubeconfig: bytes) -> None:
                patch = {"data": {keys.KUBECONFIG_SECRET_KEY: base64.b64encode(kubeconfig).decode()}}
                await front.patch(SECRETS, "kubeconfig", patch, namespace)

            node = (await remote.list(NODES))["items"][0]["metadata"]["name"]
            for name in ("kept", "ended"):
                await remote.create(PODS, _remote_pod(name, node), namespace)

            inputs = Inputs(front)
            try:
                await inputs.remotes.sync([rc])
                first = inputs.remotes.watchers[CLUSTER]
                both = {f"{namespace}/kept", f"{namespace}/ended"}
                await wait_for_async("both remote pods counted", lambda: _usage_in(inputs, namespace) == both)

                if restart == "recreated":
                    await inputs.remotes.sync([])  # the RemoteCluster is deleted ...
                else:
                    await rotate(_unreachable(good))  # ... or its Secret names a server that is down
                    await inputs.remotes.sync([rc])
                    assert inputs.remotes.watchers[CLUSTER] is not first
                await remote.delete(PODS, "ended", namespace, body={"gracePeriodSeconds": 0})
                while await remote.get_or_none(PODS, "ended", namespace) is not None:
                    await asyncio.sleep(0.1)
                if restart == "secret-rotated":
                    await rotate(good)
                await inputs.remotes.sync([rc])  # ... and a watcher runs again

                watcher = inputs.remotes.watchers[CLUSTER]
                await wait_for_async("the new watcher's first list", watcher.pods.synced.is_set)
                assert watcher.pods.healthy
                listed = {k for k in watcher.pods.cache if k.startswith(f"{namespace}/")}
                assert listed == {f"{namespace}/kept"}
                assert _usage_in(inputs, namespace) == listed
            finally:
                await inputs.remotes.close()
                for name in ("kept", "ended"):
                    await remote.delete(PODS, name, namespace, body={"gracePeriodSeconds": 0})

    asyncio.run(scenario())
