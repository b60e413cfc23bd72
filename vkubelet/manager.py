"""Starts, restarts and stops one ClusterAgent per RemoteCluster, at run time.

An agent restarts when its RemoteCluster's spec (generation) or its kubeconfig Secret changes. A
deleted RemoteCluster (finalizer) has its agent stopped, its remote pods and mirrors deleted, its
front pods failed with a reason and its virtual node deleted, in that order, retried with backoff
until all is done; only then does its finalizer go. What blocks it is in its status (condition
CleanupBlocked) and an Event. A remote cluster that does not answer keeps its finalizer too, unless
the bridge can have nothing there (it never answered, and no front pod is bound to its node); an
admin gives up on it by removing the finalizer by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from armada_bridge import keys
from armada_bridge.contract.pods import is_terminal
from armada_bridge.contract.remotecluster import (
    kubeconfig_fingerprint,
    parse_spec,
    remote_client,
)
from armada_bridge.kube import (
    CONFIGMAPS,
    NAMESPACES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    ApiError,
    Kube,
)
from armada_bridge.kube.informer import Informer
from armada_bridge.kube.lifecycle import wait_set
from armada_bridge.kube.resources import REMOTECLUSTERS
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj
from vkubelet import deps
from vkubelet.admission import PodAdmission
from vkubelet.agent import ClusterAgent, NodeEndpoint
from vkubelet.events import Recorder
from vkubelet.metrics import METRICS
from vkubelet.mirror import MIRRORABLE_SECRETS, RESOURCES, FrontObjects
from vkubelet.node import NodeClient
from vkubelet.relay_pods import RelaySettings, relay_token
from vkubelet.relay_server import RelayTarget
from vkubelet.relays import Relays
from vkubelet.status import Network, failed_patch

log = logging.getLogger(__name__)

RECHECK_SECONDS = 15.0
# One round of a deleted RemoteCluster's remote cleanup: deletes, then waiting for them to finish.
CLEANUP_TIMEOUT = 20.0
CLEANUP_POLL_SECONDS = 2.0
# Rounds that left something behind are retried after 5 s, 10 s, ... at most 30 s apart.
CLEANUP_RETRY_SECONDS = 5.0
CLEANUP_RETRY_MAX = 30.0


class CleanupBlocked(Exception):
    """A deleted RemoteCluster cannot let go yet: `reason` and `message` say why (its status)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


@dataclass
class Running:
    agent: ClusterAgent
    task: asyncio.Task[None]
    fingerprint: str  # contract.remotecluster.kubeconfig_fingerprint


@dataclass
class Manager:
    front: Kube
    endpoint: NodeEndpoint
    workers: int = 32
    agents: dict[str, Running] = field(default_factory=dict)
    #: the bridge's namespace: where the extender keeps the decision key
    bridge_namespace: str = keys.SYSTEM_NAMESPACE
    #: deleted RemoteClusters (or gone ones whose agent ran) being cleaned up, retried until done
    removals: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    #: how relay pods are made (None: no relay endpoint, no relays)
    relay_settings: RelaySettings | None = None
    #: the front's pod and Service ranges (what a Routable cluster's pod never shows)
    front_ranges: tuple[Network, ...] = ()

    def __post_init__(self) -> None:
        self.clusters = Informer(self.front, REMOTECLUSTERS, name="remoteclusters")
        self.front_objects = FrontObjects(
            {
                deps.CONFIGMAP: Informer(self.front, CONFIGMAPS, name="front-configmaps"),
                deps.SECRET: Informer(self.front, SECRETS, name="front-secrets"),
                deps.SERVICEACCOUNT: Informer(self.front, SERVICEACCOUNTS, name="front-serviceaccounts"),
                deps.SERVICE: Informer(self.front, SERVICES, name="front-services"),
            },
            Informer(self.front, NAMESPACES, name="front-namespaces"),
        )
        for informer in (self.clusters, *self.front_objects.informers):
            informer.on_handler_error = METRICS.handler_failed
        self.admission = PodAdmission(self.front_objects.by_kind[deps.SECRET], self.bridge_namespace)
        self.relays = Relays(self.front, self.relay_settings, self.bridge_namespace)
        self.relays.informer.on_handler_error = METRICS.handler_failed
        self.front_objects.by_kind[deps.SERVICE].add_handler(
            lambda kind, svc: self.relays.services_changed(svc["metadata"]["namespace"])
        )
        self._dirty = asyncio.Event()
        self.clusters.add_handler(lambda kind, obj: self._dirty.set())
        for informer in self.front_objects.informers:
            informer.add_handler(self._on_front_object)
        self._bad_specs: dict[str, str] = {}
        self._blocked: dict[str, str] = {}  # RemoteCluster -> what its cleanup last said (once)

    def agent_for(self, node_name: str) -> ClusterAgent | None:
        running = self.agents.get(node_name)
        return running.agent if running else None

    def remote_for(self, node_name: str, front_uid: str) -> Kube | None:
        """The remote cluster client for a front pod, if its remote pod exists."""
        agent = self.agent_for(node_name)
        if agent is None or agent.pods is None or agent.remote is None:
            return None
        return agent.remote if agent.pods.remote_pod(front_uid) is not None else None

    def relay_target(self, front_uid: str) -> RelayTarget | None:
        """Where the relay of a front pod leads, if the pod's remote pod and relay exist."""
        relay = self.relays.relay_of(front_uid)
        if relay is None:
            return None
        for running in self.agents.values():
            pods, remote = running.agent.pods, running.agent.remote
            # Keys only: nothing decoded from the packed caches on a connection's way.
            if pods is None or remote is None or front_uid not in pods.front_key:
                continue
            key = pods.remote_key.get(front_uid)
            if key is None:
                return None
            namespace, _, name = key.partition("/")
            ports = frozenset(
                p["containerPort"] for c in relay["spec"]["containers"] for p in c.get("ports") or []
            )
            return RelayTarget(remote, namespace, name, relay_token(relay), ports)
        return None

    def _on_front_object(self, kind: str, obj: Obj) -> None:
        for running in self.agents.values():
            running.agent.mirror_dirty.set()

    async def run(self) -> None:
        informers = [self.clusters, *self.front_objects.informers]
        tasks = [asyncio.create_task(i.run(), name=i.name) for i in informers]
        tasks.append(asyncio.create_task(self.relays.run(), name="relays"))
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            log.info("front informers synced; %d RemoteCluster(s)", len(self.clusters.cache))
            while True:
                await wait_set(self._dirty, RECHECK_SECONDS)
                self._dirty.clear()
                try:
                    await self.reconcile()
                except (ApiError, OSError, TimeoutError) as e:
                    log.warning("reconciling RemoteClusters: %s", e)
        finally:
            for t in [*tasks, *self.removals.values()]:
                t.cancel()
            for name in list(self.agents):
                await self._stop(name)
            await asyncio.gather(*tasks, *self.removals.values(), return_exceptions=True)

    async def reconcile(self) -> None:
        seen = set()
        for rc in self.clusters.items():
            name = rc["metadata"]["name"]
            seen.add(name)
            if rc["metadata"].get("deletionTimestamp"):
                if _ours(rc) or name in self.agents:
                    self._start_removal(name)
                continue
            if name in self.removals:  # an earlier RemoteCluster of that name is still let go
                continue
            try:
                spec = parse_spec(rc)
            except ValueError as e:
                await self._invalid(rc, str(e))
                continue
            self._bad_specs.pop(name, None)
            if not _ours(rc):
                await self.front.patch(
                    REMOTECLUSTERS,
                    name,
                    {
                        "metadata": {
                            "finalizers": [
                                *(rc["metadata"].get("finalizers") or []),
                                keys.REMOTECLUSTER_FINALIZER,
                            ],
                            "resourceVersion": rc["metadata"]["resourceVersion"],
                        }
                    },
                    uid=rc["metadata"]["uid"],
                )
            # Only a different remote cluster (kubeconfig) needs a new agent; other spec changes
            # (labels, cordon, host access) are applied to the running one.
            ref = spec.kubeconfig_secret
            secret = await self.front.get_or_none(SECRETS, ref.name, ref.namespace)
            fingerprint = kubeconfig_fingerprint(spec, secret)
            generation = int(rc["metadata"].get("generation") or 0)
            running = self.agents.get(name)
            if running and running.fingerprint == fingerprint and not running.task.done():
                if running.agent.generation != generation:
                    log.info("%s: spec changed (generation %d)", name, generation)
                    running.agent.update_spec(spec, generation)
                continue
            if running:
                log.info("%s: kubeconfig changed, restarting its agent", name)
                await self._stop(name)
            agent = ClusterAgent(
                name,
                spec,
                generation,
                self.front,
                self.front_objects,
                self.endpoint,
                self.workers,
                self.admission,
                self.relays,
                self.front_ranges,
            )
            self.agents[name] = Running(
                agent, asyncio.create_task(agent.run(), name=f"agent/{name}"), fingerprint
            )
            log.info("%s: agent started", name)
        for name in list(self.agents):
            if name not in seen:  # gone without our cleanup (its finalizer removed by hand)
                self._start_removal(name)

    async def _stop(self, name: str) -> None:
        running = self.agents.pop(name, None)
        if running is None:
            return
        running.task.cancel()
        await asyncio.gather(running.task, return_exceptions=True)
        METRICS.forget(name)
        log.info("%s: agent stopped", name)

    async def _invalid(self, rc: Obj, message: str) -> None:
        name = rc["metadata"]["name"]
        if self._bad_specs.get(name) == message:
            return
        self._bad_specs[name] = message
        await self._stop(name)
        log.warning("%s: %s", name, message)
        status = {
            "observedGeneration": rc["metadata"].get("generation"),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "False",
                    "reason": "InvalidSpec",
                    "message": message[:1000],
                    "lastTransitionTime": rfc3339(now()),
                }
            ],
        }
        with contextlib.suppress(ApiError):
            await self.front.patch(
                REMOTECLUSTERS, name, {"status": status}, subresource="status", uid=rc["metadata"]["uid"]
            )

    # ---------------------------------------------------------------- removal
    def _start_removal(self, name: str) -> None:
        if name not in self.removals:
            self.removals[name] = asyncio.create_task(self._removal(name), name=f"remove/{name}")

    async def _removal(self, name: str) -> None:
        """Clean up after a deleted RemoteCluster until it is done, retried with backoff. While our
        finalizer is on it: its remote objects first, then its front pods and node, then the
        finalizer. Gone (or its finalizer removed by hand): its front pods and node only."""
        delay = CLEANUP_RETRY_SECONDS
        while True:
            rc = self.clusters.get(name)
            ours = rc is not None and _ours(rc) and bool(rc["metadata"].get("deletionTimestamp"))
            try:
                if rc is not None and ours:
                    await self._remove(rc)
                else:
                    await self._let_go(name)
                    log.info("%s: let go without remote cleanup (its finalizer was removed)", name)
                self.removals.pop(name, None)
                self._blocked.pop(name, None)
                return
            except CleanupBlocked as e:
                blocked = e
            except Exception as e:  # any failed round is tried again
                blocked = CleanupBlocked("CleanupFailed", f"{type(e).__name__}: {e}")
            log.warning("%s: cleanup blocked (retry in %.0fs): %s", name, delay, blocked)
            if rc is not None and ours:
                with contextlib.suppress(ApiError, OSError, TimeoutError):
                    await self._report_blocked(rc, blocked)
            await asyncio.sleep(delay)
            delay = min(delay * 2, CLEANUP_RETRY_MAX)

    async def _remove(self, rc: Obj) -> None:
        """One round for a RemoteCluster being deleted; CleanupBlocked when it cannot let go yet."""
        name = rc["metadata"]["name"]
        await self._stop(name)  # nothing new runs there, nothing races the cleanup
        await self._clean_remote(rc)
        await self._let_go(name)
        await self._drop_finalizer(rc)
        log.info("%s: removed", name)

    async def _drop_finalizer(self, rc: Obj) -> None:
        name, uid = rc["metadata"]["name"], rc["metadata"]["uid"]
        current: Obj | None = rc
        for _ in range(3):  # our own status writes change its resourceVersion: read it again
            if current is None or current["metadata"]["uid"] != uid or not _ours(current):
                return
            md = current["metadata"]
            finalizers = [f for f in md.get("finalizers") or [] if f != keys.REMOTECLUSTER_FINALIZER]
            try:
                await self.front.patch(
                    REMOTECLUSTERS,
                    name,
                    {"metadata": {"finalizers": finalizers, "resourceVersion": md["resourceVersion"]}},
                    uid=uid,
                )
                return
            except ApiError as e:
                if not e.conflict:
                    raise
            current = await self.front.get_or_none(REMOTECLUSTERS, name)
        raise CleanupBlocked("CleanupFailed", "its finalizer could not be removed: it kept changing")

    async def _let_go(self, name: str) -> None:
        await self._stop(name)
        await self._fail_front_pods(name)
        await self.relays.sweep()  # the relays of those pods, now ended
        await NodeClient(self.front, name).delete()

    async def _clean_remote(self, rc: Obj) -> None:
        """Delete the bridge's objects in the remote cluster and see them gone; CleanupBlocked with
        what is left, or when the remote cluster does not answer and may hold some."""
        name = rc["metadata"]["name"]
        try:
            remote = await remote_client(
                self.front, parse_spec(rc), user_agent=f"armada-bridge-vkubelet/{name}"
            )
        except ValueError as e:  # its kubeconfig Secret is gone or unusable, or its spec invalid
            await self._unreachable(rc, "KubeconfigError", str(e))
            return
        try:
            left = await self._delete_remote_objects(remote)
        except ApiError as e:  # it answers, and refuses
            raise CleanupBlocked("CleanupFailed", f"remote cluster {name}: {e}") from e
        except (OSError, TimeoutError) as e:  # no answer (each request has its timeout)
            await self._unreachable(rc, "RemoteUnreachable", f"{type(e).__name__}: {e}")
            return
        finally:
            await remote.close()
        if left:
            more = f"; and {len(left) - 5} more" if len(left) > 5 else ""
            raise CleanupBlocked(
                "RemoteObjectsRemain",
                f"{len(left)} object(s) of the bridge remain in remote cluster {name}: "
                f"{'; '.join(left[:5])}{more}",
            )

    async def _unreachable(self, rc: Obj, reason: str, why: str) -> None:
        """The remote cluster does not answer. If the bridge can have nothing there (the cluster
        never answered: no status.lastSyncTime; and no front pod is bound to its node), there is
        nothing to orphan; otherwise the finalizer stays until it answers or an admin removes it."""
        name = rc["metadata"]["name"]
        listed = await self.front.list(PODS, fieldSelector=f"spec.nodeName={name}", limit=1)
        if not (rc.get("status") or {}).get("lastSyncTime") and not listed.get("items"):
            log.info("%s: never answered and runs nothing: no remote cleanup (%s)", name, why)
            return
        raise CleanupBlocked(
            reason,
            f"remote cluster {name} cannot be cleaned up: {why}; the bridge's pods there are deleted "
            f"when it answers again (remove the finalizer {keys.REMOTECLUSTER_FINALIZER} by hand to "
            "give up on them)",
        )

    async def _delete_remote_objects(self, remote: Kube) -> list[str]:
        """Delete every object of the bridge in the remote cluster, then wait (CLEANUP_TIMEOUT at
        most) until they are gone; what is still there, each with why."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CLEANUP_TIMEOUT
        while True:
            left = await self._delete_pass(remote)
            if not left or loop.time() > deadline:
                return left
            await asyncio.sleep(CLEANUP_POLL_SECONDS)

    async def _delete_pass(self, remote: Kube) -> list[str]:
        selector = f"{keys.MANAGED_BY_LABEL}={keys.MANAGED_BY_VALUE}"
        left = []
        for r in (PODS, *RESOURCES.values()):
            fields = {"fieldSelector": MIRRORABLE_SECRETS} if r is SECRETS else {}
            listed = await remote.list(r, labelSelector=selector, **fields)
            for obj in listed.get("items") or []:
                md = obj["metadata"]
                what = f"{r.kind} {md['namespace']}/{md['name']}"
                if md.get("deletionTimestamp"):
                    held = (
                        f", held by finalizers {', '.join(md['finalizers'])}" if md.get("finalizers") else ""
                    )
                    left.append(f"{what} is being deleted{held}")
                    continue
                try:
                    await remote.delete(
                        r, md["name"], md["namespace"], body={"preconditions": {"uid": md["uid"]}}
                    )
                except ApiError as e:
                    if e.conflict:  # another object by that name now: the next pass lists it
                        continue
                    left.append(f"{what}: deletion refused: {e}")
                    continue
                left.append(f"{what} is being deleted")  # gone, or going: the next pass tells
        # Namespaces the bridge created are left: they may hold the remote cluster's own objects.
        return left

    async def _report_blocked(self, rc: Obj, blocked: CleanupBlocked) -> None:
        """The RemoteCluster's status and an Event say why it is still there (once per change)."""
        name = rc["metadata"]["name"]
        said = f"{blocked.reason}: {blocked.message}"
        if self._blocked.get(name) == said:
            return
        t = rfc3339(now())
        conditions = [
            {
                "type": "Ready",
                "status": "False",
                "reason": "CleanupBlocked",
                "message": f"RemoteCluster {name} is being deleted; its cleanup is blocked: {blocked.reason}",
                "lastTransitionTime": t,
            },
            {
                "type": "CleanupBlocked",
                "status": "True",
                "reason": blocked.reason,
                "message": blocked.message[:1000],
                "lastTransitionTime": t,
            },
        ]
        for c in conditions:
            for had in (rc.get("status") or {}).get("conditions") or []:
                if had.get("type") == c["type"] and had.get("status") == c["status"]:
                    c["lastTransitionTime"] = had.get("lastTransitionTime", t)
        await self.front.patch(
            REMOTECLUSTERS,
            name,
            {"status": {"conditions": conditions}},
            subresource="status",
            uid=rc["metadata"]["uid"],
        )
        await Recorder(self.front, name).cluster_event(rc, "Warning", "CleanupBlocked", blocked.message)
        self._blocked[name] = said

    async def _fail_front_pods(self, name: str) -> None:
        """Every front pod on the node fails with RemoteClusterRemoved (one being deleted is
        deleted at once); raises, after trying them all, when a write did not land."""
        listed = await self.front.list(PODS, fieldSelector=f"spec.nodeName={name}")
        failed = []
        for pod in listed.get("items") or []:
            md = pod["metadata"]
            try:
                if md.get("deletionTimestamp"):
                    await self.front.delete(
                        PODS,
                        md["name"],
                        md["namespace"],
                        body={"gracePeriodSeconds": 0, "preconditions": {"uid": md["uid"]}},
                    )
                elif not is_terminal(pod):
                    patch = failed_patch(
                        pod, "RemoteClusterRemoved", f"RemoteCluster {name} was deleted", rfc3339(now())
                    )
                    await self.front.patch(
                        PODS,
                        md["name"],
                        patch,
                        md["namespace"],
                        subresource="status",
                        uid=md["uid"],
                        resource_version=md["resourceVersion"],
                    )
            except ApiError as e:
                if not (e.not_found or e.uid_mismatch):  # else: that pod is gone
                    failed.append(f"{md['namespace']}/{md['name']}: {e}")  # a conflict: changed since listed
        if failed:
            raise CleanupBlocked(
                "FrontPodsNotFailed", f"{len(failed)} front pod(s) not failed yet: {'; '.join(failed)}"
            )


def _ours(rc: Obj) -> bool:
    """The RemoteCluster carries the vkubelet's cleanup finalizer."""
    return keys.REMOTECLUSTER_FINALIZER in (rc["metadata"].get("finalizers") or [])
