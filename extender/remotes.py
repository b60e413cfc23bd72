"""The extender's view of each remote cluster: its real nodes and the pods running there.

One watcher per RemoteCluster, each with its own client and informers, so a broken cluster only
marks itself unhealthy; adding or removing a RemoteCluster starts or stops its watcher. A stopped
watcher's pods and nodes are forgotten (DELETED), so one started again (its kubeconfig Secret
rotated, its RemoteCluster recreated) counts exactly what its own informers list.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from armada_bridge.contract.pods import USAGE_SHAPE
from armada_bridge.contract.remotecluster import (
    RemoteClusterError,
    kubeconfig_fingerprint,
    kubeconfig_secret,
    parse_spec,
    remote_client_of,
)
from armada_bridge.kube import NODES, PODS, Kube
from armada_bridge.kube.informer import HandlerErrorHook, Informer
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)

# (cluster, "nodes" | "pods", event type, object)
RemoteHandler = Callable[[str, str, str, Obj], None]


@dataclass
class RemoteWatcher:
    name: str
    secret_version: str
    kube: Kube
    nodes: Informer
    pods: Informer
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        return self.nodes.healthy and self.pods.healthy and self.nodes.synced.is_set()

    async def stop(self) -> None:
        for t in self.tasks:
            t.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.kube.close()


class Remotes:
    """Starts, replaces and stops one RemoteWatcher per RemoteCluster object."""

    def __init__(
        self, front: Kube, on_event: RemoteHandler, *, on_handler_error: HandlerErrorHook | None = None
    ) -> None:
        self.front = front
        self.on_event = on_event
        self.on_handler_error = on_handler_error
        self.watchers: dict[str, RemoteWatcher] = {}
        self.errors: dict[str, str] = {}

    async def sync(self, remote_clusters: list[Obj]) -> None:
        wanted = {rc["metadata"]["name"]: rc for rc in remote_clusters}
        for name in list(self.watchers):
            if name not in wanted:
                await self._stop(name)
        for name, rc in wanted.items():
            try:
                await self._ensure(name, rc)
                self.errors.pop(name, None)
            except (RemoteClusterError, ValueError) as e:
                if self.errors.get(name) != str(e):
                    log.warning("remote cluster %s: %s", name, e)
                self.errors[name] = str(e)

    async def _ensure(self, name: str, rc: Obj) -> None:
        spec = parse_spec(rc)
        secret = await kubeconfig_secret(self.front, spec)
        version = kubeconfig_fingerprint(spec, secret)
        current = self.watchers.get(name)
        if current is not None and current.secret_version == version:
            return  # the same kubeconfig: the running watcher stays (no client built to compare)
        kube = remote_client_of(secret, spec, user_agent="armada-bridge-extender")
        if current is not None:
            await self._stop(name)
        nodes = Informer(kube, NODES, name=f"{name}/nodes", on_handler_error=self.on_handler_error)
        pods = Informer(
            kube,
            PODS,
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            shape=USAGE_SHAPE,  # only what the pods take from their nodes is read
            name=f"{name}/pods",
            on_handler_error=self.on_handler_error,
        )
        nodes.add_handler(lambda kind, obj: self.on_event(name, "nodes", kind, obj))
        pods.add_handler(lambda kind, obj: self.on_event(name, "pods", kind, obj))
        w = RemoteWatcher(name, version, kube, nodes, pods)
        w.tasks = [asyncio.create_task(nodes.run()), asyncio.create_task(pods.run())]
        self.watchers[name] = w
        log.info("remote cluster %s: watching %s", name, kube.config.server)

    async def _stop(self, name: str) -> None:
        w = self.watchers.pop(name, None)
        if w is None:
            return
        await w.stop()
        # What ended while no watcher runs is never seen: the next watcher lists afresh.
        for pod in list(w.pods.cache.values()):
            self.on_event(name, "pods", "DELETED", pod)
        for node in list(w.nodes.cache.values()):
            self.on_event(name, "nodes", "DELETED", node)
        log.info("remote cluster %s: stopped watching", name)

    async def close(self) -> None:
        for name in list(self.watchers):
            await self._stop(name)
