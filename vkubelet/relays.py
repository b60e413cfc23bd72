"""Relay pods, made and removed with the front pods they give an address to.

`Relays` is the process's: the relay pods (an informer of the bridge's namespace), how relays are
made (RelaySettings; None when the vkubelet was given no relay endpoint: then no relay is made and
pods of Relay clusters show no address), and the sweep of relays whose front pod is gone. Each
cluster agent runs a `RelayController` over its own front pods: a pod of a RemoteCluster in Relay
mode that a front Service selects gets a relay (vkubelet/relay_pods.py); a pod that ends, is no
longer selected, or whose cluster turns Routable loses it. A relay that no longer fits (other ports,
image or endpoint) is replaced. When a relay's address changes, the pod's status is synced again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Iterable

from armada_bridge import keys
from armada_bridge.contract.pods import is_terminal
from armada_bridge.contract.remotecluster import NetworkMode
from armada_bridge.kube import PODS, ApiError, Kube
from armada_bridge.kube.informer import Informer
from armada_bridge.objects import Obj
from vkubelet.metrics import METRICS
from vkubelet.relay_pods import RelaySettings, is_current, relay_addresses, relay_name, relay_pod, relay_ports
from vkubelet.workqueue import WorkQueue

log = logging.getLogger(__name__)

SWEEP_SECONDS = 60.0
RELAY_WORKERS = 4


class Relays:
    def __init__(self, front: Kube, settings: RelaySettings | None, namespace: str) -> None:
        self.front = front
        self.settings = settings
        self.namespace = namespace
        self.informer = Informer(
            front,
            PODS,
            namespace,
            label_selector=f"{keys.COMPONENT_LABEL}={keys.RELAY_COMPONENT},{keys.RELAY_FOR}",
            name="relay-pods",
        )
        self.controllers: set[RelayController] = set()
        self.informer.add_handler(self._on_relay)

    def relay_of(self, front_uid: str) -> Obj | None:
        return self.informer.get(relay_name(front_uid), self.namespace)

    def addresses(self, front_uid: str) -> Obj:
        """What the front pod shows as its addresses: its relay's, once the relay runs."""
        return relay_addresses(self.relay_of(front_uid))

    def _on_relay(self, kind: str, relay: Obj) -> None:
        uid = (relay["metadata"].get("labels") or {}).get(keys.RELAY_FOR, "")
        METRICS.relay_pods.set(len(self.informer.cache))
        for c in self.controllers:
            c.relay_changed(uid)

    def services_changed(self, namespace: str) -> None:
        for c in self.controllers:
            c.namespace_changed(namespace)

    async def run(self) -> None:
        """The informer, and now and then the sweep of relays no front pod of ours has."""
        task = asyncio.create_task(self.informer.run(), name=self.informer.name)
        try:
            await self.informer.synced.wait()
            while True:
                await asyncio.sleep(SWEEP_SECONDS)
                with contextlib.suppress(ApiError, OSError, TimeoutError):
                    await self.sweep()
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def sweep(self) -> None:
        """Delete relays whose front pod no agent knows and the front API says is gone or ended
        (read again: an agent restarting has not listed its pods yet)."""
        known = {uid for c in self.controllers for uid in c.known()}
        for relay in self.informer.items():
            md = relay["metadata"]
            uid = (md.get("labels") or {}).get(keys.RELAY_FOR, "")
            if uid in known or md.get("deletionTimestamp"):
                continue
            namespace, _, name = str((md.get("annotations") or {}).get(keys.RELAY_FRONT_POD, "")).partition(
                "/"
            )
            front = await self.front.get_or_none(PODS, name, namespace) if name else None
            if front is None or front["metadata"]["uid"] != uid or is_terminal(front):
                log.info("relay %s: its front pod %s/%s is gone", md["name"], namespace, name)
                await self.delete(relay)

    async def delete(self, relay: Obj) -> None:
        md = relay["metadata"]
        try:  # that relay, not a newer one of the same name
            await self.front.delete(
                PODS, md["name"], md["namespace"], body={"preconditions": {"uid": md["uid"]}}
            )
        except ApiError as e:
            if not e.conflict:
                raise


class RelayController:
    """The relays of one cluster agent's front pods."""

    def __init__(
        self,
        cluster: str,
        relays: Relays,
        front_pod: Callable[[str], Obj | None],
        front_uids: Callable[[], Iterable[tuple[str, str]]],
        services: Callable[[str], list[Obj]],
        mode: Callable[[], NetworkMode],
        status_changed: Callable[[str], None],
    ) -> None:
        """`front_pod`: a front pod of the agent by UID; `front_uids`: (UID, namespace/name) of
        each; `services`: the front Services of a namespace; `mode`: the RemoteCluster's network
        mode now; `status_changed`: a front pod's addresses may have changed."""
        self.cluster = cluster
        self.relays = relays
        self.front_pod = front_pod
        self.front_uids = front_uids
        self.services = services
        self.mode = mode
        self.status_changed = status_changed
        self.queue = WorkQueue(f"relays/{cluster}")
        self._warned = False

    def known(self) -> set[str]:
        return {uid for uid, _ in self.front_uids()}

    def pod_changed(self, uid: str) -> None:
        self.queue.add(uid)

    def relay_changed(self, uid: str) -> None:
        if self.front_pod(uid) is not None:
            self.queue.add(uid)
            self.status_changed(uid)

    def namespace_changed(self, namespace: str) -> None:
        for uid, key in self.front_uids():
            if key.partition("/")[0] == namespace:
                self.queue.add(uid)

    def enqueue_all(self) -> None:
        for uid, _ in self.front_uids():
            self.queue.add(uid)

    async def run(self) -> None:
        self.relays.controllers.add(self)
        try:
            self.enqueue_all()
            await self.queue.run(self._sync, RELAY_WORKERS)
        finally:
            self.relays.controllers.discard(self)

    async def _sync(self, uid: str) -> None:
        try:
            await self.reconcile(uid)
            self.queue.forget(uid)
        except (ApiError, OSError, TimeoutError) as e:
            log.warning("%s: relay of pod %s: %s", self.cluster, uid, e)
            self.queue.retry(uid)

    def wanted_ports(self, front: Obj | None) -> tuple[int, ...]:
        if (
            front is None
            or self.mode() != NetworkMode.RELAY
            or is_terminal(front)
            or front["metadata"].get("deletionTimestamp")
        ):
            return ()
        return relay_ports(front, self.services(front["metadata"]["namespace"]))

    async def reconcile(self, uid: str) -> None:
        front = self.front_pod(uid)
        ports = self.wanted_ports(front)
        relay = self.relays.relay_of(uid)
        settings = self.relays.settings
        if ports and settings is None:
            if not self._warned:
                self._warned = True
                log.warning(
                    "%s: pods a front Service selects get no address: no relay endpoint is set", self.cluster
                )
            ports = ()
        if relay is not None and not (ports and settings and is_current(relay, ports, settings)):
            if not relay["metadata"].get("deletionTimestamp"):
                log.info(
                    "%s: relay %s goes (ports now %s)", self.cluster, relay["metadata"]["name"], list(ports)
                )
                await self.relays.delete(relay)
            return  # a new one, if wanted, once this one is gone (its DELETED event)
        if relay is not None or not ports or front is None or settings is None:
            return
        body = relay_pod(front, ports, secrets.token_urlsafe(24), settings)
        try:
            created = await self.relays.front.create(PODS, body, settings.namespace)
        except ApiError as e:
            if e.conflict:  # made already; its event comes
                return
            raise
        self.relays.informer.remember(created)
        log.info("%s: relay %s for %s, ports %s", self.cluster, created["metadata"]["name"], uid, list(ports))
