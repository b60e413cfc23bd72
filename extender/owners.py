"""Following ownerReferences to a pod's root controller, for any kind (no kind is special).

Pods that share a root controller (a RayJob, a Deployment, a Workflow, ...) are kept in one remote
cluster so the Services between them work. Lookups use API discovery for the kind's resource name
and are cached by UID: owner references do not change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from armada_bridge import keys
from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.discovery import Discovery
from armada_bridge.kube.resources import JOBS
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)
MAX_DEPTH = 10


@dataclass(frozen=True)
class Root:
    uid: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


def controller_ref(obj: Obj) -> Obj | None:
    for ref in obj.get("metadata", {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return dict(ref)
    return None


async def controlling_job(kube: Kube, pod: Obj) -> Obj | None:
    """The batch/v1 Job that controls `pod` (that very Job: same UID), or None. Raises ApiError
    when it cannot be read, ValueError when the reference names no object."""
    ref = controller_ref(pod)
    if ref is None or ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
        return None
    job = await kube.get(JOBS, str(ref["name"]), pod["metadata"]["namespace"])
    return job if job["metadata"].get("uid") == ref.get("uid") else None


class OwnerResolver:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.discovery = Discovery(kube)
        self._parents: dict[str, Obj | None] = {}  # owner uid -> its controller ref (None: it is a root)
        self._queued: dict[str, bool] = {}  # owner uid -> it had a queue label when first read

    async def _get(self, ref: Obj, namespace: str) -> Obj | None:
        """The object `ref` names, as it is now (None: unknown kind, gone, unreadable, or another
        object of the same name)."""
        resource = await self.discovery.resource(str(ref["apiVersion"]), str(ref["kind"]))
        if resource is None:
            return None
        try:  # names from an ownerReference are the pod author's: one path segment each
            path = resource.path(namespace, str(ref["name"]))
        except ValueError:
            return None
        try:
            owner = await self.kube.request("GET", path)
        except ApiError as e:
            if not e.not_found:
                log.debug("owner %s/%s: %s", ref["kind"], ref["name"], e)
            return None
        return owner if owner.get("metadata", {}).get("uid") == ref["uid"] else None

    async def _parent_of(self, ref: Obj, namespace: str) -> Obj | None:
        uid = ref["uid"]
        if uid in self._parents:
            return self._parents[uid]
        owner = await self._get(ref, namespace)
        if owner is None:
            return None  # the chain ends here, not cached (an unknown kind: discovery may recover)
        parent = controller_ref(owner)
        self._parents[uid] = parent
        self._queued[uid] = bool((owner["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL))
        return parent

    async def _root_ref(self, obj: Obj) -> Obj | None:
        """The reference to the topmost controller of `obj` (None: nothing controls it)."""
        ref = controller_ref(obj)
        if ref is None:
            return None
        for _ in range(MAX_DEPTH):
            parent = await self._parent_of(ref, obj["metadata"].get("namespace", ""))
            if parent is None:
                break
            ref = parent
        return ref

    async def root(self, obj: Obj) -> Root:
        """The topmost controller of `obj` (the object itself when nothing controls it)."""
        md = obj["metadata"]
        ref = await self._root_ref(obj)
        if ref is None:
            return Root(md["uid"], obj.get("kind", "Pod"), md["name"])
        return Root(ref["uid"], ref["kind"], ref["name"])

    async def queued_root(self, obj: Obj) -> Obj | None:
        """The topmost controller of `obj` as it is now, when it names a queue: read afresh (the
        chain to it is cached, the root's labels and annotations are not: a job's priority
        changes). None when nothing controls `obj`, the root cannot be read, or it had no queue
        label when first read (not read again: most roots, a Deployment's, are not the bridge's)."""
        ref = await self._root_ref(obj)
        if ref is None or not self._queued.get(str(ref["uid"])):
            return None
        return await self._get(ref, obj["metadata"].get("namespace", ""))

    def forget(self, uid: str) -> None:
        self._parents.pop(uid, None)
        self._queued.pop(uid, None)
