"""Which kinds of object the API accepts in a job (the administrator's list, ``--object-kinds`` or
``--object-kinds-file``, with where each states its state: :mod:`armada_api.kind_states`), and the
resource that serves each (API discovery: no kind is known in code).

The server must find a job set's objects to cancel them and to follow their events, so it lists
each accepted resource with its own identity: that identity needs ``get``/``list``/``watch`` on them
(manifests/armada-api/rbac.yaml grants it for the kinds the deployment names). A kind outside the
list, or one the front does not serve, or not namespaced, is refused (INVALID_ARGUMENT).
"""

from __future__ import annotations

import asyncio

from armada_api.found import Found
from armada_api.jobs import RequestError
from armada_api.kind_states import ObjectKind, StateRule
from armada_bridge import keys
from armada_bridge.kube.client import Kube
from armada_bridge.kube.discovery import Discovery
from armada_bridge.kube.resources import PODS, Resource
from armada_bridge.objects import ObjView


class ObjectKinds:
    def __init__(self, kube: Kube, kinds: list[ObjectKind]) -> None:
        self.kube = kube
        self.discovery = Discovery(kube)
        self.kinds = kinds
        self._accepted: list[Resource] | None = None

    async def accepted(self) -> list[Resource]:
        """The accepted resources the front serves (looked up until all are: a CRD installed later)."""
        if self._accepted is None or len(self._accepted) < len(self.kinds):
            found = await asyncio.gather(*(self.discovery.preferred(k.plural, k.group) for k in self.kinds))
            self._accepted = [r for r in found if r is not None and r.namespaced]
        return self._accepted

    def rules_of(self, resource: Resource) -> tuple[StateRule, ...]:
        """Where objects of `resource` state their state (its kind's rules; none: conditions only)."""
        for k in self.kinds:
            if (k.plural, k.group) == (resource.plural, resource.group):
                return k.rules
        return ()

    async def resource_of(self, obj: ObjView) -> Resource:
        """The resource to create `obj` as; RequestError when its kind is not accepted."""
        api_version, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
        resource = await self.discovery.resource(api_version, kind)
        if resource is None:
            raise RequestError(f"the front cluster serves no kind {kind} of apiVersion {api_version}")
        accepted = await self.accepted()
        if not any((a.group, a.plural) == (resource.group, resource.plural) for a in accepted):
            names = ", ".join(_name(a) for a in accepted)
            raise RequestError(
                f"the Armada API does not accept {kind} objects ({_name(resource)}); it accepts:"
                f" {names or 'none'} (its --object-kinds)"
            )
        return resource

    async def find(self, selector: str) -> list[Found]:
        """The accepted objects that `selector` selects, with their pods (the server's own identity)."""
        listed = await asyncio.gather(
            *(self.kube.list_all(r, None, labelSelector=selector) for r in await self.accepted())
        )
        found = [
            (r, {**o, "apiVersion": r.api_version, "kind": r.kind})  # a list's items may not say
            for r, answer in zip(await self.accepted(), listed, strict=True)
            for o in answer.get("items") or []
        ]
        if not found:
            return []
        by_owner: dict[str, list[ObjView]] = {}
        for p in await self.pods_of([str(o["metadata"]["uid"]) for _r, o in found]):
            by_owner.setdefault(p["metadata"]["labels"][keys.QUEUE_OWNER_LABEL], []).append(p)
        return [
            Found(r, o, tuple(by_owner.get(o["metadata"]["uid"], ())), self.rules_of(r)) for r, o in found
        ]

    async def pods_of(self, uids: list[str]) -> list[ObjView]:
        """The pods that took the queue (and priority) of the objects of `uids` (the server's own
        identity): label ``bridge.armadaproject.io/queue-owner``."""
        if not uids:
            return []
        selector = f"{keys.QUEUE_OWNER_LABEL} in ({','.join(sorted(uids))})"
        return list((await self.kube.list_all(PODS, None, labelSelector=selector)).get("items") or [])


def _name(resource: Resource) -> str:
    """plural.group, as --object-kinds and kubectl name a resource."""
    return ObjectKind(resource.plural, resource.group).name
