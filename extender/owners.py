"""Following ownerReferences to a pod's root controller, for any kind (no kind is special).

Pods that share a root controller (a RayJob, a Deployment, a Workflow, ...) are kept in one remote
cluster so the Services between them work. Lookups use API discovery for the kind's resource name
and are cached by UID: owner references do not change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from armada_bridge import keys
from armada_bridge.kube.client import ApiError, Kube, Obj
from armada_bridge.kube.discovery import Discovery
from armada_bridge.kube.resources import JOBS

log = logging.getLogger(__name__)
MAX_DEPTH = 10


@dataclass(frozen=True)
class Root:
    uid: str
    kind: str
    name: str
    #: its label ``armadaproject.io/queue`` ("": none, or the root is the object itself)
    queue: str = ""

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
        self._queues: dict[str, str] = {}  # owner uid -> its queue label ("": none)

    async def _parent_of(self, ref: Obj, namespace: str) -> Obj | None:
        uid = ref["uid"]
        if uid in self._parents:
            return self._parents[uid]
        resource = await self.discovery.resource(str(ref["apiVersion"]), str(ref["kind"]))
        if resource is None:
            return None  # unknown kind: treat the owner as the root, do not cache (discovery may recover)
        try:  # names from an ownerReference are the pod author's: one path segment each
            path = resource.path(namespace, str(ref["name"]))
        except ValueError:
            return None
        try:
            owner = await self.kube.request("GET", path)
        except ApiError as e:
            if e.not_found:
                return None
            log.debug("owner %s/%s: %s", ref["kind"], ref["name"], e)
            return None
        if owner.get("metadata", {}).get("uid") != uid:
            return None  # a new object with the old name: the chain ends here
        parent = controller_ref(owner)
        self._parents[uid] = parent
        self._queues[uid] = str((owner["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL) or "")
        return parent

    async def root(self, obj: Obj) -> Root:
        """The topmost controller of `obj` (the object itself when nothing controls it)."""
        md = obj["metadata"]
        ref = controller_ref(obj)
        if ref is None:
            return Root(md["uid"], obj.get("kind", "Pod"), md["name"])
        for _ in range(MAX_DEPTH):
            parent = await self._parent_of(ref, md.get("namespace", ""))
            if parent is None:
                break
            ref = parent
        return Root(ref["uid"], ref["kind"], ref["name"], self._queues.get(ref["uid"], ""))

    def forget(self, uid: str) -> None:
        self._parents.pop(uid, None)
        self._queues.pop(uid, None)
