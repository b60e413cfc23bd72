"""Mirrors of what remote pods depend on: ConfigMaps, Secrets, ServiceAccounts, Services.

A mirror has the front object's name and namespace, carries the bridge's managed-by label and the
front object's UID, and lives while a front pod bound to the cluster needs it. Remote objects
without the managed-by label are the remote cluster's own: never overwritten, never deleted.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys
from armada_bridge.kube import (
    CONFIGMAPS,
    NAMESPACES,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    ApiError,
    Kube,
    Resource,
)
from armada_bridge.kube.informer import Informer
from armada_bridge.objects import Obj
from vkubelet import deps, remote_pod
from vkubelet.metrics import METRICS

log = logging.getLogger(__name__)

RESOURCES: dict[str, Resource] = {
    deps.CONFIGMAP: CONFIGMAPS,
    deps.SECRET: SECRETS,
    deps.SERVICEACCOUNT: SERVICEACCOUNTS,
    deps.SERVICE: SERVICES,
}
_SKIPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
# Secrets of these types are never mirrored: a remote one is the remote cluster's own (the bridge's
# identity there, made by `clusters join`, is one), never the vkubelet's to delete.
_UNMIRRORABLE_SECRET_TYPES = ("kubernetes.io/service-account-token",)
MIRRORABLE_SECRETS = ",".join(f"type!={t}" for t in _UNMIRRORABLE_SECRET_TYPES)  # a field selector


def is_managed(obj: Obj) -> bool:
    """A mirror the bridge made: its label and the front object's UID (both, to be sure)."""
    md = obj["metadata"]
    return (md.get("labels") or {}).get(keys.MANAGED_BY_LABEL) == keys.MANAGED_BY_VALUE and bool(
        (md.get("annotations") or {}).get(keys.FRONT_OBJECT_UID)
    )


def mirror_of(kind: str, front: Obj) -> Obj:
    """The remote copy of a front object (pure)."""
    md = front["metadata"]
    annotations = {k: v for k, v in (md.get("annotations") or {}).items() if k not in _SKIPPED_ANNOTATIONS}
    annotations[keys.FRONT_OBJECT_UID] = md["uid"]
    out: Obj = {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": md["name"],
            "namespace": md["namespace"],
            "labels": {**(md.get("labels") or {}), keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
            "annotations": annotations,
        },
    }
    if kind == deps.CONFIGMAP:
        for f in ("data", "binaryData", "immutable"):
            if f in front:
                out[f] = front[f]
    elif kind == deps.SECRET:
        for f in ("type", "data", "immutable"):
            if f in front:
                out[f] = front[f]
    elif kind == deps.SERVICEACCOUNT:
        for f in ("automountServiceAccountToken", "imagePullSecrets"):
            if f in front:
                out[f] = front[f]
    elif kind == deps.SERVICE:
        spec = front.get("spec") or {}
        rspec: Obj = {"type": "ClusterIP", "selector": spec.get("selector") or {}}
        if spec.get("clusterIP") == "None":
            rspec["clusterIP"] = "None"
        ports = []
        for p in spec.get("ports") or []:
            ports.append({k: v for k, v in p.items() if k != "nodePort"})
        if ports:
            rspec["ports"] = ports
        for f in ("publishNotReadyAddresses", "sessionAffinity", "sessionAffinityConfig"):
            if f in spec:
                rspec[f] = spec[f]
        out["spec"] = rspec
    return out


def differs(want: Obj, have: Obj) -> bool:
    """True when the remote copy must be updated to match `want`."""
    for f in ("labels", "annotations"):
        if (have["metadata"].get(f) or {}) != want["metadata"][f]:
            return True
    if want["kind"] == deps.SERVICE:
        hs = have.get("spec") or {}
        return any(hs.get(k) != v for k, v in want["spec"].items() if k != "ports") or _ports(
            hs.get("ports")
        ) != _ports(want["spec"].get("ports"))
    return any(have.get(f) != want.get(f) for f in want if f not in ("apiVersion", "kind", "metadata"))


def _ports(ports: list[Obj] | None) -> list[tuple[Any, ...]]:
    return sorted(
        (p.get("name", ""), p.get("port"), str(p.get("targetPort", p.get("port"))), p.get("protocol", "TCP"))
        for p in ports or []
    )


@dataclass
class FrontObjects:
    """The front cluster's informers of what pods depend on (shared by every cluster agent)."""

    by_kind: dict[str, Informer]
    namespaces: Informer

    @property
    def informers(self) -> list[Informer]:
        return [*self.by_kind.values(), self.namespaces]

    def get(self, kind: str, namespace: str, name: str) -> Obj | None:
        return self.by_kind[kind].get(name, namespace)

    def namespace_live(self, name: str) -> bool:
        ns = self.namespaces.get(name)
        return ns is not None and not ns["metadata"].get("deletionTimestamp")

    def services(self, namespace: str) -> list[Obj]:
        return [s for s in self.by_kind[deps.SERVICE].items() if s["metadata"]["namespace"] == namespace]


class Mirrors:
    """Creates, updates and garbage-collects the mirrors in one remote cluster."""

    def __init__(
        self,
        cluster: str,
        remote: Kube,
        front: FrontObjects,
        remote_managed: dict[str, Informer],
        remote_namespaces: Informer,
        on_error: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.remote = remote
        self.front = front
        self.managed = remote_managed
        self.namespaces = remote_namespaces
        self.on_error = on_error
        self._ns_lock = asyncio.Lock()

    def needed_for(self, pod: Obj) -> list[deps.Ref]:
        ns = pod["metadata"]["namespace"]
        # What the remote pod reads: without the front cluster's own token volume.
        refs = deps.pod_dependencies(remote_pod.remote_pod(pod))
        refs += [
            deps.Ref(deps.SERVICE, ns, s["metadata"]["name"], True)
            for s in self.front.services(ns)
            if deps.selects(s, pod)
        ]
        return refs

    async def ensure_namespace(self, namespace: str, labels: dict[str, str]) -> None:
        """The remote namespace exists; one the bridge creates carries `labels` (Pod Security)."""
        if self.namespaces.get(namespace) is not None:
            return
        async with self._ns_lock:
            if self.namespaces.get(namespace) is not None:
                return
            body = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": namespace,
                    "labels": {**labels, keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
                },
            }
            try:
                created = await self.remote.create(NAMESPACES, body)
                self.namespaces.remember(created)
            except ApiError as e:
                if not e.conflict:
                    raise

    async def ensure(self, refs: Iterable[deps.Ref]) -> list[str]:
        """Create or update the mirrors of `refs`; the problems that should hold the pod back."""
        problems = []
        for ref in refs:
            front = self.front.get(ref.kind, ref.namespace, ref.name)
            if front is None or (ref.kind == deps.SECRET and front.get("type") in _UNMIRRORABLE_SECRET_TYPES):
                if not ref.optional:
                    problems.append(f"{ref.kind} {ref.namespace}/{ref.name} not found")
                continue
            problem = await self._ensure_one(ref.kind, front)
            if problem:
                log.info("%s: %s", self.cluster, problem)
        return problems

    async def _ensure_one(self, kind: str, front: Obj) -> str | None:
        want = mirror_of(kind, front)
        md = want["metadata"]
        r = RESOURCES[kind]
        have = self.managed[kind].get(md["name"], md["namespace"])
        try:
            if have is None:
                try:
                    created = await self.remote.create(r, want)
                    self.managed[kind].remember(created)
                    METRICS.mirror_ops.labels(self.cluster, kind, "create").inc()
                    return None
                except ApiError as e:
                    if not e.conflict:
                        raise
                    have = await self.remote.get(r, md["name"], md["namespace"])
                    if not is_managed(have):
                        return (
                            f"remote {kind} {md['namespace']}/{md['name']} is not the bridge's; left as it is"
                        )
            if differs(want, have):
                body = {**have, **{k: v for k, v in want.items() if k != "metadata"}}
                body["metadata"] = {
                    **have["metadata"],
                    "labels": md["labels"],
                    "annotations": md["annotations"],
                }
                if kind == deps.SERVICE:
                    body["spec"] = {**(have.get("spec") or {}), **want["spec"]}
                await self.remote.replace(r, body)
                METRICS.mirror_ops.labels(self.cluster, kind, "update").inc()
        except ApiError as e:
            self.on_error("mirror")
            if e.conflict:
                return None  # changed meanwhile; the next sync retries
            raise
        return None

    async def label_namespaces(self, labels: dict[str, str]) -> None:
        """The namespaces the bridge created carry `labels` (after a RemoteCluster spec change)."""
        for ns in self.namespaces.items():
            md = ns["metadata"]
            have = md.get("labels") or {}
            if have.get(keys.MANAGED_BY_LABEL) != keys.MANAGED_BY_VALUE or md.get("deletionTimestamp"):
                continue
            stale = {
                k: None for k in (keys.POD_SECURITY_ENFORCE, keys.POD_SECURITY_AUDIT, keys.POD_SECURITY_WARN)
            }
            want = {**stale, **labels}
            patch = {k: v for k, v in want.items() if have.get(k) != v}
            if patch:
                await self.remote.patch(
                    NAMESPACES, md["name"], {"metadata": {"labels": patch}}, uid=md["uid"]
                )

    async def collect_namespaces(self, in_use: set[str]) -> None:
        """Delete the remote namespaces the bridge created whose front namespace is gone (or going)
        and where no pod remains (`in_use`: namespaces with a remote pod, ours or not)."""
        for ns in self.namespaces.items():
            md = ns["metadata"]
            name = md["name"]
            if (
                (md.get("labels") or {}).get(keys.MANAGED_BY_LABEL) != keys.MANAGED_BY_VALUE
                or md.get("deletionTimestamp")
                or name in in_use
                or self.front.namespace_live(name)
            ):
                continue
            try:
                await self.remote.delete(NAMESPACES, name, body={"preconditions": {"uid": md["uid"]}})
                log.info("%s: namespace %s deleted (gone from the front cluster)", self.cluster, name)
                METRICS.mirror_ops.labels(self.cluster, "Namespace", "delete").inc()
            except ApiError as e:
                if not e.conflict:
                    self.on_error("mirror")
                    log.warning("%s: deleting namespace %s: %s", self.cluster, name, e)

    async def sync(self, pods: Iterable[Obj]) -> None:
        """Level-triggered pass: every mirror the given (live, mirrored) pods need exists and is
        current; every managed mirror no such pod needs is deleted."""
        needed: dict[tuple[str, str, str], deps.Ref] = {}
        for pod in pods:
            for ref in self.needed_for(pod):
                needed.setdefault(ref.key, ref)
        await self.ensure(needed.values())
        for kind, informer in self.managed.items():
            for obj in informer.items():
                md = obj["metadata"]
                if (kind, md["namespace"], md["name"]) in needed or not is_managed(obj):
                    continue
                try:
                    await self.remote.delete(
                        RESOURCES[kind],
                        md["name"],
                        md["namespace"],
                        body={"preconditions": {"uid": md["uid"]}},
                    )
                    METRICS.mirror_ops.labels(self.cluster, kind, "delete").inc()
                except ApiError as e:
                    if not e.conflict:
                        self.on_error("mirror")
                        log.warning(
                            "%s: deleting mirror %s %s/%s: %s",
                            self.cluster,
                            kind,
                            md["namespace"],
                            md["name"],
                            e,
                        )
        for kind, informer in self.managed.items():
            METRICS.mirrored.labels(self.cluster, kind).set(len(informer.cache))
