"""What the extender reads: the front cluster's objects and each remote cluster's nodes and pods,
kept by informers, and what changed since the loop last looked.

A read-only view for the rest of the extender: informer caches and small indexes (pods per
namespace, what each live remote pod takes on its node). Informer events only mark things dirty
in :class:`Changes` and wake the loop; nothing here decides anything.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.pods import admitted_pod_usage
from armada_bridge.core import quantities as rs
from armada_bridge.kube import NAMESPACES, NODES, PODS, Kube
from armada_bridge.kube.informer import HandlerErrorHook, Informer, key_of
from armada_bridge.kube.lifecycle import run_together
from armada_bridge.kube.resources import QUEUES, REMOTECLUSTERS
from armada_bridge.kube.shapes import Shape
from armada_bridge.objects import Obj
from extender import protocols
from extender.remotes import Remotes

#: a Queue not seen yet, or seen without a namespaceSelector (unlike one deleted: None).
_ABSENT = object()


@dataclass
class Changes:
    """What changed since the loop last looked; `wake` is set whenever something did."""

    pods: set[str] = field(default_factory=set)  # "namespace/name"
    nodes: set[tuple[str, str]] = field(default_factory=set)  # (cluster, remote node)
    queues: bool = True
    clusters: bool = True
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def take_pods(self) -> set[str]:
        out, self.pods = self.pods, set()
        return out

    def take_nodes(self) -> set[tuple[str, str]]:
        out, self.nodes = self.nodes, set()
        return out


_CONTAINER: Shape = {"name": True, "resources": True, "restartPolicy": True, "ports": True}
#: What the extender keeps of a front pod: everything but what it never reads (containers' commands,
#: environment, images and mounts, volumes, container statuses), which is most of a pod.
FRONT_POD_SHAPE: Mapping[str, Shape] = {
    "*": True,
    "metadata": {"*": True, "managedFields": False},
    "spec": {
        "*": True,
        "containers": [_CONTAINER],
        "initContainers": [_CONTAINER],
        "ephemeralContainers": False,
        "volumes": False,
    },
    "status": {
        "*": True,
        "containerStatuses": False,
        "initContainerStatuses": False,
        "ephemeralContainerStatuses": False,
    },
}


class Inputs:
    def __init__(self, front: Kube, *, on_handler_error: HandlerErrorHook | None = None) -> None:
        self.front = front
        self.changes = Changes()
        self.pods = Informer(front, PODS, shape=FRONT_POD_SHAPE, name="front/pods")
        self.namespaces = Informer(front, NAMESPACES, name="front/namespaces")
        self.queues = Informer(front, QUEUES, name="front/queues")
        #: protocol name -> its PodGroups (the protocols that describe gangs with objects).
        self.podgroups: dict[str, Informer] = {
            p.name: Informer(front, p.resource, name=f"front/{p.name}-podgroups")
            for p in protocols.WITH_PODGROUPS
            if p.resource is not None
        }
        self.remote_clusters = Informer(front, REMOTECLUSTERS, name="front/remoteclusters")
        self.vnodes = Informer(
            front,
            NODES,
            label_selector=f"{keys.NODE_TYPE_LABEL}={keys.NODE_TYPE_VIRTUAL}",
            name="front/virtual-nodes",
        )
        self.remotes = Remotes(front, self.on_remote_event, on_handler_error=on_handler_error)
        for informer in self.informers:
            informer.on_handler_error = on_handler_error
        self._pods_by_ns: dict[str, set[str]] = defaultdict(set)
        #: queue name -> its spec.namespaceSelector as last seen (which namespaces it takes).
        self._queue_selectors: dict[str, Any] = {}
        #: (cluster, node) -> remote pod key -> (front pod UID or "" for the remote cluster's own
        #: pods, what it takes: requests and a pod slot), for every live pod on the remote node.
        self.remote_usage: dict[tuple[str, str], dict[str, tuple[str, rs.Resources]]] = defaultdict(dict)

        self.pods.add_handler(self._on_pod)
        self.namespaces.add_handler(lambda _k, ns: self._dirty_namespace(ns["metadata"]["name"]))
        for inf in self.podgroups.values():
            inf.add_handler(lambda _k, pg: self._dirty_namespace(pg["metadata"]["namespace"]))
        self.queues.add_handler(self._on_queue)
        self.remote_clusters.add_handler(self._on_remote_cluster)
        self._cluster_seen: dict[str, tuple[str, int, str]] = {}

    @property
    def informers(self) -> list[Informer]:
        return [
            self.pods,
            self.namespaces,
            self.queues,
            *self.podgroups.values(),
            self.remote_clusters,
            self.vnodes,
        ]

    async def run(self) -> None:
        """Keep every cache current (all replicas: the webhook and filter read them)."""
        await run_together(i.run() for i in self.informers)

    async def wait_synced(self, timeout: float = 60) -> None:
        essential = (self.pods, self.namespaces, self.queues, self.remote_clusters, self.vnodes)
        async with asyncio.timeout(timeout):  # not wait_for: see lifecycle.wait_set
            await asyncio.gather(*(i.synced.wait() for i in essential))

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        ns = self.namespaces.get(namespace)
        return dict((ns or {}).get("metadata", {}).get("labels") or {})

    def namespace_closing(self, namespace: str) -> bool:
        """The namespace is being deleted: its pods go with it, and none can be created in it."""
        ns = self.namespaces.get(namespace)
        return bool(ns and ns["metadata"].get("deletionTimestamp"))

    def podgroups_of(self, pod: Mapping[str, Any]) -> dict[str, Obj | None]:
        """protocol name -> the PodGroup the pod names under it (None: named but not found)."""
        ns = pod["metadata"]["namespace"]
        return {p: self.podgroups[p].get(name, ns) for p, name in protocols.podgroup_names(pod).items()}

    async def read_through(self, pod: Mapping[str, Any]) -> tuple[dict[str, Obj | None], dict[str, str]]:
        """For a pod being created: the PodGroups it names (:meth:`podgroups_of`) and its
        namespace's labels, from the caches, or from the API server where a cache has not seen
        them yet. An operator creates a PodGroup just before its pods, a user a namespace with its
        queue label just before a pod in it: a watch that lags behind would leave the pod without
        its queue, unmanaged, and the front scheduler would place it outside the bridge."""
        ns = pod["metadata"]["namespace"]
        podgroups = self.podgroups_of(pod)
        for p, name in protocols.podgroup_names(pod).items():
            if podgroups.get(p) is None:
                podgroups[p] = await self.front.get_or_none(self.podgroups[p].resource, name, ns)
        known = self.namespaces.get(ns)
        if known is None:
            known = await self.front.get_or_none(NAMESPACES, ns)
        return podgroups, dict(((known or {}).get("metadata") or {}).get("labels") or {})

    # ------------------------------------------------------------------ events -> changes
    def _set_dirty(self, *, queues: bool = False, clusters: bool = False) -> None:
        self.changes.queues |= queues
        self.changes.clusters |= clusters
        self.changes.wake.set()

    def _on_remote_cluster(self, kind: str, rc: Obj) -> None:
        """A RemoteCluster created, deleted, its spec changed (generation) or its deletion begun:
        the remote watchers and the nodes' cordons are synced. Its status, written every few
        seconds by the vkubelet, changes neither: a kubeconfig Secret rotated under an unchanged
        RemoteCluster is seen at the controller's next resync (`resync_interval`)."""
        md = rc["metadata"]
        seen = (
            str(md.get("uid") or ""),
            int(md.get("generation") or 0),
            str(md.get("deletionTimestamp") or ""),
        )
        if kind == "DELETED":
            self._cluster_seen.pop(md["name"], None)
        elif self._cluster_seen.get(md["name"]) == seen:
            return
        else:
            self._cluster_seen[md["name"]] = seen
        self._set_dirty(clusters=True)

    def virtual_nodes(self) -> dict[str, str]:
        """virtual node name -> its remote cluster's name."""
        out = {}
        for n in self.vnodes.items():
            md = n["metadata"]
            out[md["name"]] = (md.get("labels") or {}).get(keys.CLUSTER_LABEL, md["name"])
        return out

    def _on_pod(self, kind: str, pod: Obj) -> None:
        k = key_of(pod)
        ns = pod["metadata"]["namespace"]
        if kind == "DELETED":
            self._pods_by_ns[ns].discard(k)
        else:
            self._pods_by_ns[ns].add(k)
        self.changes.pods.add(k)
        self.changes.wake.set()

    def _on_queue(self, kind: str, queue: Obj) -> None:
        # Which namespaces a queue takes decides which of its pods may be admitted: every pod is
        # described again when that changes (an admin's edit), not on the queue's status writes.
        # Before the first sync no pod has been described yet (the loop waits for it).
        name = queue["metadata"]["name"]
        selector = None if kind == "DELETED" else (queue.get("spec") or {}).get("namespaceSelector", _ABSENT)
        if self._queue_selectors.get(name, _ABSENT) != selector:
            self._queue_selectors[name] = selector
            if self.queues.synced.is_set():
                for pods in self._pods_by_ns.values():
                    self.changes.pods.update(pods)
        self._set_dirty(queues=True)

    def _dirty_namespace(self, ns: str) -> None:
        self.changes.pods.update(self._pods_by_ns.get(ns, ()))
        self.changes.wake.set()

    def on_remote_event(self, cluster: str, what: str, kind: str, obj: Obj) -> None:
        if what == "nodes":
            self.changes.nodes.add((cluster, obj["metadata"]["name"]))
        else:
            node = obj.get("spec", {}).get("nodeName")
            if not node:
                return
            labels = obj["metadata"].get("labels") or {}
            on_node = self.remote_usage[(cluster, node)]
            k = key_of(obj)
            if kind == "DELETED":
                if on_node.pop(k, None) is None:
                    return
            else:
                entry = (str(labels.get(keys.FRONT_UID) or ""), admitted_pod_usage(obj))
                if on_node.get(k) == entry:
                    return
                on_node[k] = entry
            self.changes.nodes.add((cluster, node))
        self.changes.wake.set()
