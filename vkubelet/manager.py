"""Starts, restarts and stops one ClusterAgent per RemoteCluster, at run time.

An agent restarts when its RemoteCluster's spec (generation) or its kubeconfig Secret changes. A
deleted RemoteCluster (finalizer) loses its virtual node; its front pods fail with a reason; its
remote pods and mirrors are deleted when the remote cluster still answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.remotecluster import RemoteClusterSpec, parse_spec
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
from armada_bridge.kube.resources import REMOTECLUSTERS
from armada_bridge.kube.times import now, rfc3339
from vkubelet import deps
from vkubelet.admission import PodAdmission
from vkubelet.agent import ClusterAgent, NodeEndpoint
from vkubelet.metrics import METRICS
from vkubelet.mirror import RESOURCES, FrontObjects
from vkubelet.node import NodeClient
from vkubelet.status import failed_patch, is_terminal

log = logging.getLogger(__name__)
Obj = dict[str, Any]

RECHECK_SECONDS = 15.0
CLEANUP_TIMEOUT = 20.0


@dataclass
class Running:
    agent: ClusterAgent
    task: asyncio.Task[None]
    fingerprint: tuple[Any, ...]


@dataclass
class Manager:
    front: Kube
    endpoint: NodeEndpoint
    workers: int = 32
    agents: dict[str, Running] = field(default_factory=dict)
    #: the bridge's namespace: where the extender keeps the decision key
    bridge_namespace: str = keys.SYSTEM_NAMESPACE

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
        self.admission = PodAdmission(self.front_objects.by_kind[deps.SECRET], self.bridge_namespace)
        self._dirty = asyncio.Event()
        self.clusters.add_handler(lambda kind, obj: self._dirty.set())
        for informer in self.front_objects.informers:
            informer.add_handler(self._on_front_object)
        self._bad_specs: dict[str, str] = {}

    def agent_for(self, node_name: str) -> ClusterAgent | None:
        running = self.agents.get(node_name)
        return running.agent if running else None

    def remote_for(self, node_name: str, front_uid: str) -> Kube | None:
        """The remote cluster client for a front pod, if its remote pod exists."""
        agent = self.agent_for(node_name)
        if agent is None or agent.pods is None or agent.remote is None:
            return None
        return agent.remote if agent.pods.remote_pod(front_uid) is not None else None

    def _on_front_object(self, kind: str, obj: Obj) -> None:
        for running in self.agents.values():
            running.agent.mirror_dirty.set()

    async def run(self) -> None:
        informers = [self.clusters, *self.front_objects.informers]
        tasks = [asyncio.create_task(i.run(), name=i.name) for i in informers]
        try:
            await asyncio.gather(*(i.synced.wait() for i in informers))
            log.info("front informers synced; %d RemoteCluster(s)", len(self.clusters.cache))
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._dirty.wait(), RECHECK_SECONDS)
                self._dirty.clear()
                try:
                    await self.reconcile()
                except (ApiError, OSError, TimeoutError) as e:
                    log.warning("reconciling RemoteClusters: %s", e)
        finally:
            for t in tasks:
                t.cancel()
            for name in list(self.agents):
                await self._stop(name)
            await asyncio.gather(*tasks, return_exceptions=True)

    async def reconcile(self) -> None:
        seen = set()
        for rc in self.clusters.items():
            name = rc["metadata"]["name"]
            seen.add(name)
            if rc["metadata"].get("deletionTimestamp"):
                await self._remove(rc)
                continue
            try:
                spec = parse_spec(rc)
            except ValueError as e:
                await self._invalid(rc, str(e))
                continue
            self._bad_specs.pop(name, None)
            if keys.REMOTECLUSTER_FINALIZER not in (rc["metadata"].get("finalizers") or []):
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
            fingerprint = (spec.kubeconfig_secret.model_dump_json(), await self._secret_version(spec))
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
            )
            self.agents[name] = Running(
                agent, asyncio.create_task(agent.run(), name=f"agent/{name}"), fingerprint
            )
            log.info("%s: agent started", name)
        for name in list(self.agents):
            if name not in seen:
                await self._stop(name)
                with contextlib.suppress(ApiError):
                    await NodeClient(self.front, name).delete()

    async def _secret_version(self, spec: RemoteClusterSpec) -> str:
        ref = spec.kubeconfig_secret
        secret = await self.front.get_or_none(SECRETS, ref.name, ref.namespace)
        return str(secret["metadata"]["resourceVersion"]) if secret else ""

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

    async def _remove(self, rc: Obj) -> None:
        """A RemoteCluster being deleted: clean up, then let it go."""
        name = rc["metadata"]["name"]
        if keys.REMOTECLUSTER_FINALIZER not in (rc["metadata"].get("finalizers") or []):
            return
        running = self.agents.get(name)
        remote = running.agent.remote if running else None
        if running and remote is not None and running.agent.reachable:
            try:
                await asyncio.wait_for(self._delete_remote_objects(remote), CLEANUP_TIMEOUT)
            except (ApiError, OSError, TimeoutError) as e:
                log.warning("%s: remote cleanup incomplete: %s", name, e)
        await self._stop(name)
        await self._fail_front_pods(name)
        with contextlib.suppress(ApiError):
            await NodeClient(self.front, name).delete()
        finalizers = [f for f in rc["metadata"].get("finalizers") or [] if f != keys.REMOTECLUSTER_FINALIZER]
        with contextlib.suppress(ApiError):
            await self.front.patch(
                REMOTECLUSTERS,
                name,
                {
                    "metadata": {
                        "finalizers": finalizers,
                        "resourceVersion": rc["metadata"]["resourceVersion"],
                    }
                },
                uid=rc["metadata"]["uid"],
            )
        log.info("%s: removed", name)

    async def _delete_remote_objects(self, remote: Kube) -> None:
        selector = f"{keys.MANAGED_BY_LABEL}={keys.MANAGED_BY_VALUE}"
        for r in (PODS, *RESOURCES.values()):
            listed = await remote.list(r, labelSelector=selector)
            for obj in listed.get("items") or []:
                md = obj["metadata"]
                await remote.delete(
                    r, md["name"], md["namespace"], body={"preconditions": {"uid": md["uid"]}}
                )
        # Namespaces the bridge created are left: they may hold the remote cluster's own objects.

    async def _fail_front_pods(self, name: str) -> None:
        listed = await self.front.list(PODS, fieldSelector=f"spec.nodeName={name}")
        for pod in listed.get("items") or []:
            md = pod["metadata"]
            if md.get("deletionTimestamp"):
                with contextlib.suppress(ApiError):
                    await self.front.delete(
                        PODS,
                        md["name"],
                        md["namespace"],
                        body={"gracePeriodSeconds": 0, "preconditions": {"uid": md["uid"]}},
                    )
                continue
            if is_terminal(pod):
                continue
            patch = failed_patch(
                pod, "RemoteClusterRemoved", f"RemoteCluster {name} was deleted", rfc3339(now())
            )
            with contextlib.suppress(ApiError):
                await self.front.patch(
                    PODS, md["name"], patch, md["namespace"], subresource="status", uid=md["uid"]
                )
