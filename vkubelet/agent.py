"""Everything the vkubelet does for one RemoteCluster: its own remote client and informers, its
virtual node, its pods, mirrors and events. Agents share nothing that one broken cluster could
block: each runs in its own tasks and fails alone."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from armada_bridge import keys
from armada_bridge.contract.capacity import Capacity, cluster_capacity
from armada_bridge.contract.pods import USAGE_SHAPE, is_terminal
from armada_bridge.contract.remotecluster import (
    NetworkMode,
    RemoteClusterError,
    RemoteClusterSpec,
    remote_client,
)
from armada_bridge.kube import (
    CONFIGMAPS,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    ApiError,
    Kube,
)
from armada_bridge.kube.events import pod_ref
from armada_bridge.kube.informer import Informer, key_of
from armada_bridge.kube.lifecycle import wait_set
from armada_bridge.kube.resources import CORE_EVENTS
from armada_bridge.kube.shapes import IDENTITY, Shape
from armada_bridge.objects import Obj
from vkubelet import deps
from vkubelet.admission import PodAdmission
from vkubelet.events import PendingEvents, Recorder
from vkubelet.heartbeat import Heartbeat
from vkubelet.metrics import METRICS
from vkubelet.mirror import FrontObjects, Mirrors
from vkubelet.pods import PodController
from vkubelet.relays import RelayController, Relays
from vkubelet.status import Network, routable_addresses
from vkubelet.tokens import FrontTokens
from vkubelet.workqueue import WorkQueue

log = logging.getLogger(__name__)

#: What the vkubelet keeps of its remote pods: their metadata and status, and where they run; their
#: spec (the front pod's, copied) it reads from the front pod.
REMOTE_POD_SHAPE: dict[str, Shape] = {
    "metadata": {"*": True, "managedFields": False},
    "spec": {"nodeName": True},
    "status": True,
}
MIRROR_RESYNC_SECONDS = 30.0
MIRROR_SETTLE_SECONDS = 0.2
FULL_RESYNC_SECONDS = 300.0
EVENT_WORKERS = 2
#: the reason of the remote scheduler's Event that a pod is bound (not reflected to the front)
REMOTE_SCHEDULED = "Scheduled"


@dataclass(frozen=True)
class NodeEndpoint:
    address: str
    port: int


class ClusterAgent:
    def __init__(
        self,
        name: str,
        spec: RemoteClusterSpec,
        generation: int,
        front: Kube,
        front_objects: FrontObjects,
        endpoint: NodeEndpoint,
        workers: int,
        admission: PodAdmission,
        relays: Relays,
        front_ranges: tuple[Network, ...] = (),
    ) -> None:
        """`relays`: the process's relay pods; `front_ranges`: the front's pod and Service ranges
        (a Routable cluster's pod address inside one is never shown)."""
        self.name = name
        self.admission = admission
        self.relays = relays
        self.front_ranges = front_ranges
        self.spec = spec
        self.generation = generation
        # A client (connection pool) of its own for the front cluster: one busy cluster never
        # queues another's writes.
        self.front = Kube(front.config, timeout=30, user_agent=f"armada-bridge-vkubelet/{name}")
        self.front_objects = front_objects
        self.endpoint = endpoint
        self.workers = workers
        self.recorder = Recorder(self.front, name)
        self.remote: Kube | None = None
        self.pods: PodController | None = None
        self.relay_controller: RelayController | None = None
        # Routable: the last remote pod address the front could not be shown (inside its ranges).
        self.network_problem = ""
        self.mirror_dirty = asyncio.Event()
        self.problem = ("Starting", "connecting to the remote cluster")
        self.synced = asyncio.Event()  # the remote side is listed and its controllers run
        self.heartbeat = Heartbeat(self, self.front, endpoint.address, endpoint.port)
        self._front_labels: dict[str, int] = {}  # front pod key -> hash of its labels
        self._informers: list[Informer] = []
        # Remote Events waiting to be reflected, written by a few workers so they never crowd out
        # pod status writes.
        self._events = PendingEvents()
        self.event_queue = WorkQueue(f"events/{name}")

    def update_spec(self, spec: RemoteClusterSpec, generation: int) -> None:
        """A new spec for the same remote cluster: node labels, cordon and policy apply at once."""
        self.spec, self.generation = spec, generation
        self.network_problem = ""
        if self.pods is not None:
            self.pods.spec = spec
            self.pods.enqueue_all()  # the network mode decides their addresses
        if self.relay_controller is not None:
            self.relay_controller.enqueue_all()
        self.heartbeat.spec_changed.set()
        self.mirror_dirty.set()  # namespace labels follow the spec

    @property
    def reachable(self) -> bool:
        return self.heartbeat.reachable

    # ---------------------------------------------------------------- entry
    async def run(self) -> None:
        tasks = [
            asyncio.create_task(self.heartbeat.run(), name=f"{self.name}/heartbeat"),
            asyncio.create_task(self._resync_loop(), name=f"{self.name}/resync"),
        ]
        try:
            while True:
                try:
                    await self._run_remote()
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    self.problem = ("RemoteError", f"{type(e).__name__}: {e}")
                    log.exception("%s: agent failed; restarting in 10s", self.name)
                finally:
                    if self.remote is not None:
                        await self.remote.close()
                        self.remote = None
                await asyncio.sleep(10)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.front.close()

    def on_remote_error(self, op: str) -> None:
        METRICS.remote_errors.labels(self.name, op).inc()

    async def _run_remote(self) -> None:
        try:
            self.remote = await remote_client(
                self.front, self.spec, user_agent=f"armada-bridge-vkubelet/{self.name}"
            )
        except RemoteClusterError as e:
            self.problem = ("KubeconfigError", str(e))
            raise
        remote = self.remote
        front_pods = Informer(  # whole (remote pods, mirrors and tokens are made from them): packed
            self.front,
            PODS,
            field_selector=f"spec.nodeName={self.name}",
            packed=True,
            name=f"{self.name}/front-pods",
        )
        remote_pods = Informer(  # read a pod at a time; their nodes are counted from PodController
            remote,
            PODS,
            label_selector=keys.FRONT_UID,
            shape=REMOTE_POD_SHAPE,
            packed=True,
            name=f"{self.name}/pods",
        )
        foreign_pods = Informer(
            remote,
            PODS,
            label_selector=f"!{keys.FRONT_UID}",
            field_selector="status.phase!=Succeeded,status.phase!=Failed",
            shape=USAGE_SHAPE,  # only what they take from the nodes is read
            name=f"{self.name}/foreign-pods",
        )
        nodes = Informer(remote, NODES, name=f"{self.name}/nodes")
        namespaces = Informer(remote, NAMESPACES, name=f"{self.name}/namespaces")
        # Not the remote scheduler's `Scheduled`: the remote pod is pinned to the node the decision
        # on the front pod already names (a front write per pod).
        events = Informer(
            remote,
            CORE_EVENTS,
            field_selector=f"involvedObject.kind=Pod,reason!={REMOTE_SCHEDULED}",
            keep=IDENTITY,  # each Event is reflected as it comes; the cache only tells a relist what is new
            name=f"{self.name}/events",
        )
        managed_selector = f"{keys.MANAGED_BY_LABEL}={keys.MANAGED_BY_VALUE}"
        managed = {
            kind: Informer(remote, r, label_selector=managed_selector, name=f"{self.name}/{r.plural}")
            for kind, r in (
                (deps.CONFIGMAP, CONFIGMAPS),
                (deps.SECRET, SECRETS),
                (deps.SERVICEACCOUNT, SERVICEACCOUNTS),
                (deps.SERVICE, SERVICES),
            )
        }
        mirrors = Mirrors(self.name, remote, self.front_objects, managed, namespaces, self.on_remote_error)
        pods = PodController(
            self.name,
            self.spec,
            self.front,
            remote,
            front_pods,
            remote_pods,
            mirrors,
            self.recorder,
            self.on_remote_error,
            self.admission,
            self._addresses,
        )
        relay_controller = RelayController(
            self.name,
            self.relays,
            pods.front_pod,
            pods.front_uids,
            self.front_objects.services,
            lambda: self.spec.network,
            pods.queue.add,
        )
        self.relay_controller = relay_controller
        token_secrets = Informer(
            remote, SECRETS, label_selector=keys.FRONT_API_TOKEN_LABEL, name=f"{self.name}/front-api-tokens"
        )
        tokens = FrontTokens(
            self.name,
            self.front,
            remote,
            token_secrets,
            front_pods,
            pods,
            lambda: self.spec.front_api,
            self.on_remote_error,
        )
        pods.tokens = tokens
        self.pods = pods
        self.mirrors = mirrors
        self.nodes, self.foreign_pods, self.remote_pods = nodes, foreign_pods, remote_pods
        self._informers = [
            front_pods,
            remote_pods,
            foreign_pods,
            nodes,
            namespaces,
            events,
            token_secrets,
            *managed.values(),
        ]
        for informer in self._informers:
            informer.on_handler_error = METRICS.handler_failed
        events.add_handler(self._on_remote_event)
        front_pods.add_handler(self._on_front_pod)
        tasks = [asyncio.create_task(i.run(), name=i.name) for i in self._informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in self._informers))
            log.info(
                "%s: informers synced (%d remote nodes, %d bridge pods)",
                self.name,
                len(nodes.cache),
                len(remote_pods.cache),
            )
            self.synced.set()
            tasks.append(asyncio.create_task(pods.run(self.workers), name=f"{self.name}/pods"))
            tasks.append(asyncio.create_task(self._mirror_loop(), name=f"{self.name}/mirrors"))
            tasks.append(asyncio.create_task(tokens.run(), name=f"{self.name}/tokens"))
            tasks.append(asyncio.create_task(relay_controller.run(), name=f"{self.name}/relays"))
            tasks.append(
                asyncio.create_task(
                    self.event_queue.run(self._reflect, EVENT_WORKERS), name=f"{self.name}/events"
                )
            )
            # Any task ending means something broke: let run() restart the remote side.
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                t.result()
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.synced.clear()
            self.pods = None

    def _addresses(self, uid: str, remote: Obj) -> Obj:
        """The addresses a front pod shows: its relay's, or in a Routable cluster the remote pod's."""
        if self.spec.network == NetworkMode.ROUTABLE:
            shown, left_out = routable_addresses(remote, self.front_ranges)
            if left_out:
                md = remote["metadata"]
                self.network_problem = f"pod {md.get('namespace')}/{md.get('name')}: {left_out}, not shown"
            return shown
        return self.relays.addresses(uid)

    # ---------------------------------------------------------------- mirrors
    def _on_front_pod(self, kind: str, pod: Obj) -> None:
        """Mirrors may have lost their last user: a pod went, finished, or changed its labels
        (Service selection). New pods get theirs when they are created. Its relay is looked at
        then too, and when it is first seen: not on every status write of the pod's."""
        key = key_of(pod)
        relays = self.relay_controller
        if kind == "DELETED" or is_terminal(pod) or pod["metadata"].get("deletionTimestamp"):
            if kind == "DELETED":
                self._front_labels.pop(key, None)
            self.mirror_dirty.set()
            if relays is not None:
                relays.pod_changed(str(pod["metadata"]["uid"]))
            return
        # The labels' hash, not the labels: one int a pod (the front pods' cache is packed).
        labels = hash(frozenset((pod["metadata"].get("labels") or {}).items()))
        seen = self._front_labels.get(key)
        if kind == "MODIFIED" and self.pods is not None and seen is not None and seen != labels:
            self.mirror_dirty.set()
        if relays is not None and seen != labels:
            relays.pod_changed(str(pod["metadata"]["uid"]))
        self._front_labels[key] = labels

    async def _mirror_loop(self) -> None:
        took = 0.0
        while True:
            await wait_set(self.mirror_dirty, MIRROR_RESYNC_SECONDS)
            self.mirror_dirty.clear()
            # Let a burst of changes settle; a pass reads every live front pod, so while pods keep
            # ending (thousands deleted) passes take at most a fifth of the time.
            await asyncio.sleep(max(MIRROR_SETTLE_SECONDS, 4 * took))
            if self.pods is None or not self.reachable:
                continue
            started = time.monotonic()
            try:
                await self.mirrors.sync(self.pods.live_front_pods())
                await self.mirrors.collect_namespaces(self._namespaces_in_use())
                await self.mirrors.label_namespaces(self.spec.namespace_labels())
            except (ApiError, OSError, TimeoutError) as e:
                self.on_remote_error("mirror")
                log.warning("%s: mirror sync: %s", self.name, e)
                await asyncio.sleep(1)
                self.mirror_dirty.set()
            took = time.monotonic() - started

    def _namespaces_in_use(self) -> set[str]:
        """Namespaces of the remote cluster holding a pod (ours or its own), or about to."""
        assert self.pods is not None
        remote = (k.partition("/")[0] for i in (self.remote_pods, self.foreign_pods) for k in i.cache)
        return self.pods.live_front_namespaces() | set(remote)

    # ---------------------------------------------------------------- events
    def _on_remote_event(self, kind: str, event: Obj, attempt: int = 0) -> None:
        if kind == "DELETED" or self.pods is None:
            return
        inv = event.get("involvedObject") or {}
        pod = self.pods.remote_pods.get(inv.get("name", ""), inv.get("namespace"))
        if pod is None or (inv.get("uid") and pod["metadata"]["uid"] != inv.get("uid")):
            if attempt < 3:  # the Event may come before the pod reaches our cache
                asyncio.get_running_loop().call_later(1.0, self._on_remote_event, kind, event, attempt + 1)
            return
        uid = (pod["metadata"].get("labels") or {}).get(keys.FRONT_UID)
        front = self.pods.front_pod(uid) if uid else None
        if front is None:
            return
        key = str(event["metadata"]["uid"])
        if not self._events.put(key, event, pod_ref(front)):
            METRICS.events_dropped.labels(self.name).inc()
            return
        self.event_queue.add(key)

    async def _reflect(self, key: str) -> None:
        item = self._events.take(key)
        if item is None:
            return
        try:
            await self.recorder.reflect(*item)
        except (ApiError, OSError, TimeoutError) as e:
            log.debug("%s: reflecting event: %s", self.name, e)

    # ---------------------------------------------------------------- heartbeat source
    def capacity(self, node: Obj) -> Capacity:
        if not self.synced.is_set():  # not listed yet: what the node last said
            st = node.get("status") or {}
            return Capacity(dict(st.get("capacity") or {}), dict(st.get("allocatable") or {}), 0)
        if self.pods is None:
            return cluster_capacity(self.nodes.items(), self.foreign_pods.items())
        ours = list(self.pods.remote_node.items())
        return cluster_capacity(self.nodes.items(), self.foreign_pods.items(), ours, self.pods.front_pod)

    def pod_count(self) -> int:
        return self.pods.report() if self.pods is not None else 0

    def on_reachable(self) -> None:
        """The remote cluster answers again: every pod and mirror is looked at."""
        if self.pods is not None:
            self.pods.enqueue_all()
            self.mirror_dirty.set()

    async def _resync_loop(self) -> None:
        """Level-triggered safety net: every pod is looked at again now and then."""
        while True:
            await asyncio.sleep(FULL_RESYNC_SECONDS)
            self.on_reachable()
