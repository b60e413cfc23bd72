"""API discovery: which resource serves a kind (any kind: none is known in advance), cached per
group/version (a resource's name and scope do not change while it is served)."""

from __future__ import annotations

import logging
import re

from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import Resource

log = logging.getLogger(__name__)

#: "version" or "group/version" (DNS names), as an apiVersion must be to name anything.
API_VERSION = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[a-z]([-a-z0-9]*[a-z0-9])?")


class Discovery:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self._served: dict[str, list[Resource]] = {}  # apiVersion -> its resources

    async def _resources(self, api_version: str) -> list[Resource]:
        """The resources of a group/version ([] when not served, or discovery failed: not cached,
        it may recover)."""
        served = self._served.get(api_version)
        if served is not None:
            return served
        if not API_VERSION.fullmatch(api_version):
            return []  # not a group/version: nothing to look up
        try:
            doc = await self.kube.request("GET", f"/apis/{api_version}" if "/" in api_version else "/api/v1")
        except ApiError as e:
            log.debug("discovery of %s failed: %s", api_version, e)
            return []
        group, _, version = api_version.rpartition("/")
        served = [
            Resource(group, version, r["name"], r["kind"], bool(r.get("namespaced")))
            for r in doc.get("resources", [])
            if "/" not in r["name"]  # not a subresource
        ]
        self._served[api_version] = served
        return served

    async def resource(self, api_version: str, kind: str) -> Resource | None:
        """The resource that serves `kind` of `api_version`; None when the front serves none."""
        if api_version != "v1" and "/" not in api_version:
            return None  # the core group's only version
        return next((r for r in await self._resources(api_version) if r.kind == kind), None)

    async def preferred(self, plural: str, group: str) -> Resource | None:
        """The resource `plural` of `group` at the group's preferred version; None when not served."""
        version = "v1"
        if group:
            try:
                doc = await self.kube.request("GET", f"/apis/{group}")
            except ApiError as e:
                log.debug("discovery of %s failed: %s", group, e)
                return None
            version = str((doc.get("preferredVersion") or {}).get("version") or "")
        api_version = f"{group}/{version}" if group else version
        return next((r for r in await self._resources(api_version) if r.plural == plural), None)
