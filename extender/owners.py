"""Following ownerReferences to a pod's root controller, for any kind (no kind is special).

Pods that share a root controller (a RayJob, a Deployment, a Workflow, ...) are kept in one remote
cluster so the Services between them work. Lookups use API discovery for the kind's resource name
and are cached by UID: owner references do not change.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from armada_bridge.kube.client import ApiError, Kube, Obj
from armada_bridge.kube.resources import JOBS, segment

log = logging.getLogger(__name__)
MAX_DEPTH = 10


@dataclass(frozen=True)
class Root:
    uid: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


#: "version" or "group/version" (DNS names), as an ownerReference's apiVersion must be to name anything.
_API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z]([-a-z0-9]*[a-z0-9])?")


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
        self._plurals: dict[
            str, dict[str, tuple[str, bool]]
        ] = {}  # apiVersion -> kind -> (plural, namespaced)
        self._parents: dict[str, Obj | None] = {}  # owner uid -> its controller ref (None: it is a root)

    async def _resource(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        kinds = self._plurals.get(api_version)
        if kinds is None and not _API_VERSION.fullmatch(api_version):
            return None  # not a group/version: nothing to look up
        if kinds is None:
            path = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            try:
                doc = await self.kube.request("GET", path)
            except ApiError as e:
                log.debug("discovery of %s failed: %s", api_version, e)
                return None
            kinds = {
                r["kind"]: (r["name"], bool(r.get("namespaced")))
                for r in doc.get("resources", [])
                if "/" not in r["name"]
            }
            self._plurals[api_version] = kinds
        return kinds.get(kind)

    async def _parent_of(self, ref: Obj, namespace: str) -> Obj | None:
        uid = ref["uid"]
        if uid in self._parents:
            return self._parents[uid]
        res = await self._resource(ref["apiVersion"], ref["kind"])
        if res is None:
            return None  # unknown kind: treat the owner as the root, do not cache (discovery may recover)
        plural, namespaced = res
        base = f"/api/{ref['apiVersion']}" if "/" not in ref["apiVersion"] else f"/apis/{ref['apiVersion']}"
        try:  # names from an ownerReference are the pod author's: one path segment each
            name = segment(str(ref["name"]))
            path = (
                f"{base}/namespaces/{segment(namespace)}/{plural}/{name}"
                if namespaced
                else f"{base}/{plural}/{name}"
            )
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
        return Root(ref["uid"], ref["kind"], ref["name"])

    def forget(self, uid: str) -> None:
        self._parents.pop(uid, None)
