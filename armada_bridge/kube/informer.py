"""List-then-watch caches (client-go's reflector + store, in small): level-triggered inputs for loops."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

import aiohttp

from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.packed import PackedCache
from armada_bridge.kube.resources import Resource
from armada_bridge.kube.shapes import WHOLE, Shape, shaped
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)

# (event type "ADDED" | "MODIFIED" | "DELETED", the object; for DELETED its last known state)
Handler = Callable[[str, Obj], None]
# told the informer's name whenever one of its handlers raised (a component counts these)
HandlerErrorHook = Callable[[str], None]


def _too_new(e: ApiError) -> bool:
    causes = ((e.body or {}).get("details") or {}).get("causes") or []
    return any(c.get("reason") == "ResourceVersionTooLarge" for c in causes) or (
        "too large resource version" in e.message.lower()
    )


def key_of(obj: Obj) -> str:
    md = obj["metadata"]
    ns = md.get("namespace")
    return f"{ns}/{md['name']}" if ns else str(md["name"])


class Informer:
    """Keeps `cache` equal to the API server's view of one resource and calls handlers on changes."""

    def __init__(
        self,
        kube: Kube,
        resource: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        shape: Mapping[str, Shape] = WHOLE,
        keep: Mapping[str, Shape] | None = None,
        packed: bool = False,
        name: str = "",
        on_handler_error: HandlerErrorHook | None = None,
    ) -> None:
        """`shape`: what the cache keeps of each object and hands the handlers
        (:mod:`armada_bridge.kube.shapes`; by default everything but managedFields).
        `keep`: what the cache keeps instead, where the handlers need more than any reader of the
        cache (an informer whose objects are only acted on as they come can keep their identity:
        name, namespace, uid and resourceVersion, all a relist compares).
        `packed`: the cache holds each object serialized (:mod:`armada_bridge.kube.packed`): a third
        of the memory, a decode per read; for caches read an object at a time, not scanned often.
        `on_handler_error`: told of every event a handler raised on (the cache has the object all
        the same; the event is lost to that handler, which a periodic resync makes up for)."""
        self.kube = kube
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.name = name or resource.plural
        self.transform = shaped(shape)
        self.kept = shaped(keep) if keep is not None else None
        self.packed = packed
        self.cache: MutableMapping[str, Obj] = self._new_cache()
        self.synced = asyncio.Event()
        self.handlers: list[Handler] = []
        self.on_handler_error = on_handler_error
        self.healthy = False
        self.last_error = ""

    def _new_cache(self) -> MutableMapping[str, Obj]:
        return PackedCache() if self.packed else {}

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def get(self, name: str, namespace: str | None = None) -> Obj | None:
        return self.cache.get(f"{namespace}/{name}" if namespace else name)

    def items(self) -> list[Obj]:
        return list(self.cache.values())

    def remember(self, obj: Obj) -> Obj:
        """Cache an object this process just created or read, before its watch event comes (which
        then replaces it); what the cache holds under its key is returned."""
        return self.cache.setdefault(key_of(obj), self._kept(self.transform(obj)))

    def _kept(self, obj: Obj) -> Obj:
        return self.kept(obj) if self.kept is not None else obj

    def _emit(self, kind: str, obj: Obj) -> None:
        for h in self.handlers:
            try:
                h(kind, obj)
            except Exception:  # one broken handler must not stop the informer
                log.exception("%s informer handler failed on %s %s", self.name, kind, key_of(obj))
                if self.on_handler_error is not None:
                    self.on_handler_error(self.name)

    def _selectors(self) -> dict[str, Any]:
        return {"labelSelector": self.label_selector, "fieldSelector": self.field_selector}

    async def _relist(self) -> str:
        """List every object anew (page by page: a page's objects are shaped before the next is
        read, so a relist of thousands never holds them all whole), then tell the handlers what
        changed since the cache was last filled."""
        fresh = self._new_cache()
        # (event, key, the object where the cache keeps less than the handlers get; else None: read
        # back from the cache when told, so that a packed cache's objects are not all held whole)
        changed: list[tuple[str, str, Obj | None]] = []
        version = ""
        old = self.cache
        async for page in self.kube.list_pages(self.resource, self.namespace, **self._selectors()):
            version = version or str(page["metadata"]["resourceVersion"])
            for item in page.get("items") or []:
                item.setdefault("apiVersion", self.resource.api_version)
                item.setdefault("kind", self.resource.kind)
                obj = self.transform(item)
                k = key_of(obj)
                fresh[k] = self._kept(obj)
                prev = old.get(k)
                whole = obj if self.kept is not None else None
                if prev is None:
                    changed.append(("ADDED", k, whole))
                elif prev["metadata"].get("resourceVersion") != obj["metadata"].get("resourceVersion"):
                    changed.append(("MODIFIED", k, whole))
        self.cache = fresh
        for kind, k, whole in changed:
            self._emit(kind, whole if whole is not None else fresh[k])
        for k in old:
            if k not in fresh:
                self._emit("DELETED", old[k])
        return version

    async def run(self) -> None:
        """Run until cancelled: list on start, then watch from the last resourceVersion seen (bookmarks
        keep it fresh), resuming after errors with backoff; list again only on 410 Gone."""
        backoff = 0.2
        rv = ""
        while True:
            try:
                if not rv:
                    rv = await self._relist()
                    self.synced.set()
                self.healthy = True
                async for kind, obj in self.kube.watch(
                    self.resource, self.namespace, resourceVersion=rv, **self._selectors()
                ):
                    rv = obj["metadata"].get("resourceVersion", rv)
                    if kind == "BOOKMARK":
                        continue
                    obj = self.transform(obj)
                    k = key_of(obj)
                    if kind == "DELETED":
                        self.cache.pop(k, None)
                    else:
                        self.cache[k] = self._kept(obj)
                    self._emit(kind, obj)
                backoff = 0.2
            except asyncio.CancelledError:
                raise
            except ApiError as e:
                if e.gone:  # too old to resume from: list again
                    rv = ""
                    continue
                if _too_new(e):  # a cluster recreated under the same address: start over
                    rv = ""
                self._failed(str(e))
            except (aiohttp.ClientError, TimeoutError, OSError) as e:
                self._failed(f"{type(e).__name__}: {e}")  # resumed from rv (relisted on 410)
            except ValueError as e:  # an undecodable answer: start from a fresh list
                self._failed(f"{type(e).__name__}: {e}")
                rv = ""
            except Exception as e:  # anything else (a malformed stream, a handler's bug): never stop
                log.exception("%s: watch failed", self.name)
                self._failed(f"{type(e).__name__}: {e}")
                rv = ""
            await asyncio.sleep(backoff * (1 + random.random()))
            backoff = min(backoff * 2, 5.0)

    def _failed(self, why: str) -> None:
        if self.healthy or why != self.last_error:
            log.warning("%s informer: %s", self.name, why)
        self.healthy = False
        self.last_error = why
