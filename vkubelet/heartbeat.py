"""The virtual node's liveness, as the kubelet and virtual-kubelet's node package keep theirs:
separate small loops for the ping (with hysteresis), the node status, the Lease, and the
RemoteCluster status. What they report comes from the agent (:class:`Source`).

As the kubelet does: the Lease is renewed only while the remote API answers; when it stops
answering the node's Ready condition turns False at once (the front node lifecycle controller's
grace period would take minutes), and both recover when it answers again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from armada_bridge.contract.capacity import Capacity
from armada_bridge.contract.remotecluster import NetworkMode, RemoteClusterSpec
from armada_bridge.keys import ROUTABLE_CONDITION
from armada_bridge.kube import ApiError, Kube
from armada_bridge.kube.lifecycle import run_together, wait_set
from armada_bridge.kube.resources import REMOTECLUSTERS
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj
from vkubelet.metrics import METRICS
from vkubelet.node import NodeClient, node_status, status_differs

log = logging.getLogger(__name__)

PING_SECONDS = 5.0
PING_TIMEOUT = 5.0
FAILED_PINGS_BEFORE_NOT_READY = 2
LEASE_RENEW_SECONDS = 10.0
STATUS_REFRESH_SECONDS = 60.0
CLUSTER_STATUS_REFRESH_SECONDS = 30.0
STARTUP_WAIT_SECONDS = 5.0


@dataclass
class Reachability:
    """Ping results with hysteresis: reachable at the first answer, unreachable only after
    ``failures`` pings in a row went unanswered. Pure."""

    failures: int = FAILED_PINGS_BEFORE_NOT_READY
    reachable: bool = False
    failed: int = 0

    def observe(self, answered: bool, *, count_failure: bool = True) -> bool | None:
        """Record one ping; the new state when it changed, else None."""
        if answered:
            self.failed = 0
        elif count_failure:
            self.failed += 1
        was = self.reachable
        self.reachable = answered or (self.reachable and self.failed < self.failures)
        return self.reachable if self.reachable != was else None

    @property
    def settled(self) -> bool:
        """Unreachable for sure (enough failures in a row): safe to report even before listing."""
        return self.failed >= self.failures


class Source(Protocol):
    """What the heartbeat reports on, kept by the agent."""

    name: str
    spec: RemoteClusterSpec
    generation: int
    remote: Kube | None
    #: (reason, message) of what is wrong when the remote cluster does not answer.
    problem: tuple[str, str]
    #: set once the remote side is listed and its controllers run.
    synced: asyncio.Event
    #: Routable: the last remote pod address inside the front's ranges, not shown ("" for none).
    network_problem: str

    def capacity(self, node: Obj) -> Capacity: ...

    def pod_count(self) -> int: ...

    def on_reachable(self) -> None: ...

    def on_remote_error(self, op: str) -> None: ...


class Heartbeat:
    def __init__(self, source: Source, front: Kube, address: str, port: int) -> None:
        self.src = source
        self.front = front
        self.address, self.port = address, port
        self.node_client = NodeClient(front, source.name)
        self.reach = Reachability()
        self.node: Obj | None = None
        self.spec_changed = asyncio.Event()
        self.changed = asyncio.Event()  # reachability or the node itself changed: report now

    @property
    def reachable(self) -> bool:
        return self.reach.reachable

    def status_reason(self) -> tuple[str, str]:
        if self.reachable:
            return "RemoteClusterReady", f"remote cluster {self.src.name} answers"
        return self.src.problem

    def settled(self) -> bool:
        """Until the remote cluster is listed, a node that answers keeps its last status (a
        restarted vkubelet must not flap its nodes); only its Lease is renewed."""
        return self.src.synced.is_set() or self.reach.settled

    async def run(self) -> None:
        # Give the remote side a moment to connect and list, so a (re)started vkubelet's first
        # node write is already the truth.
        await wait_set(self.src.synced, STARTUP_WAIT_SECONDS)
        loops = [self._ping_loop, self._status_loop, self._lease_loop, self._cluster_status_loop]
        await run_together(_forever(f"{self.src.name}/{f.__name__}", f) for f in loops)

    # ---------------------------------------------------------------- ping
    async def _ping(self) -> bool:
        remote = self.src.remote
        if remote is None:
            return False
        try:
            await remote.request("GET", "/version", timeout=PING_TIMEOUT)
            return True
        except (ApiError, OSError, TimeoutError) as e:
            self.src.on_remote_error("ping")
            self.src.problem = (
                "RemoteUnreachable",
                f"the remote API does not answer: {type(e).__name__}: {e}",
            )
            return False

    async def _ping_loop(self) -> None:
        while True:
            answered = await self._ping()
            # While the agent is still connecting for the first time, no answer is no failure.
            starting = self.src.remote is None and self.src.problem[0] == "Starting"
            changed = self.reach.observe(answered, count_failure=not starting)
            if changed is True:
                log.info("%s: remote cluster reachable", self.src.name)
                self.src.on_reachable()
            elif changed is False:
                log.warning("%s: remote cluster unreachable: %s", self.src.name, self.src.problem[1])
            if changed is not None:
                self.changed.set()
            METRICS.cluster_ready.labels(self.src.name).set(1 if self.reachable else 0)
            await asyncio.sleep(PING_SECONDS)

    # ---------------------------------------------------------------- node status
    async def _status_loop(self) -> None:
        last_write = 0.0
        loop = asyncio.get_running_loop()
        while True:
            if (
                self.node is None
                or self.spec_changed.is_set()
                or loop.time() - last_write > STATUS_REFRESH_SECONDS
            ):
                self.spec_changed.clear()
                self.node = await self.node_client.ensure(self.src.spec)
                self.changed.set()  # observedGeneration may have changed
            node = self.node
            reason, message = self.status_reason()
            want = node_status(
                ready=self.reachable,
                reason=reason,
                message=message,
                capacity=self.src.capacity(node),
                address=self.address,
                port=self.port,
                heartbeat=now(),
                previous=node,
            )
            t = loop.time()
            if self.settled() and (
                status_differs(node.get("status") or {}, want) or t - last_write > STATUS_REFRESH_SECONDS
            ):
                self.node = await self.node_client.update_status(want, node["metadata"]["uid"])
                last_write = t
            await _wait_any((self.spec_changed, self.changed), PING_SECONDS)
            self.changed.clear()

    # ---------------------------------------------------------------- lease
    async def _lease_loop(self) -> None:
        while True:
            if self.reachable and self.node is not None:
                await self.node_client.renew_lease(self.node["metadata"]["uid"])
            await asyncio.sleep(LEASE_RENEW_SECONDS if self.reachable else PING_SECONDS)

    # ---------------------------------------------------------------- RemoteCluster status
    async def _cluster_status_loop(self) -> None:
        written: Obj = {}
        last_write = 0.0
        loop = asyncio.get_running_loop()
        while True:
            if self.node is not None and self.settled():
                reason, message = self.status_reason()
                capacity = self.src.capacity(self.node)
                cs = {
                    "ready": self.reachable,
                    "reason": reason,
                    "message": message,
                    "capacity": capacity.capacity,
                    "allocatable": capacity.allocatable,
                    "nodeCount": capacity.nodes,
                    "pods": self.src.pod_count(),
                    "generation": self.src.generation,
                    "routable": self.src.spec.network == NetworkMode.ROUTABLE,
                    "network_problem": self.src.network_problem,
                }
                t = loop.time()
                if cs != written or t - last_write > CLUSTER_STATUS_REFRESH_SECONDS:
                    await self._write_cluster_status(cs)
                    written, last_write = cs, t
            await asyncio.sleep(PING_SECONDS)

    async def _write_cluster_status(self, cs: Obj) -> None:
        t = rfc3339(now())
        generation = cs["generation"]
        status: Obj = {
            "observedGeneration": generation,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if cs["ready"] else "False",
                    "reason": cs["reason"],
                    "message": cs["message"][:1000],
                    "lastTransitionTime": t,
                    "observedGeneration": generation,
                }
            ],
            "capacity": cs["capacity"],
            "allocatable": cs["allocatable"],
            "nodeCount": cs["nodeCount"],
            "pods": cs["pods"],
        }
        if cs["routable"]:
            status["conditions"].append(routable_condition(cs["network_problem"], t, generation))
        if cs["ready"]:
            status["lastSyncTime"] = t
        current = await self.front.get_or_none(REMOTECLUSTERS, self.src.name)
        if current is None:
            return
        for c in (current.get("status") or {}).get("conditions") or []:
            for mine in status["conditions"]:
                if c.get("type") == mine["type"] and c.get("status") == mine["status"]:
                    mine["lastTransitionTime"] = c.get("lastTransitionTime", t)
        await self.front.patch(
            REMOTECLUSTERS,
            self.src.name,
            {"status": status},
            subresource="status",
            uid=current["metadata"]["uid"],
        )


def routable_condition(problem: str, t: str, generation: int) -> Obj:
    """A Routable cluster's condition `AddressesShown`: False once a remote pod's address fell
    inside the front's pod or Service ranges (it was not shown: it would name some front pod)."""
    return {
        "type": ROUTABLE_CONDITION,
        "status": "False" if problem else "True",
        "reason": "InsideFrontRanges" if problem else "Apart",
        "message": (
            f"{problem}: the clusters' pod networks overlap; declare the cluster `network: Relay`"
            if problem
            else "remote pods' addresses are outside the front's ranges"
        )[:1000],
        "lastTransitionTime": t,
        "observedGeneration": generation,
    }


async def _wait_any(events: tuple[asyncio.Event, ...], timeout: float) -> None:
    waiters = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()


async def _forever(name: str, loop: Callable[[], Awaitable[None]]) -> None:
    """One loop, restarted after an error (logged), so one failed write never stops the others."""
    while True:
        try:
            await loop()
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.warning("%s failed: %s: %s", name, type(e).__name__, e)
            await asyncio.sleep(PING_SECONDS)
