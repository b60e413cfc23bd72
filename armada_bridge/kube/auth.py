"""Authentication and authorization of callers of the bridge's own HTTPS endpoints, delegated
to the front cluster as kubelets and extension API servers do it: a client certificate signed by
the front's client CA, or a bearer token checked with a TokenReview; then a SubjectAccessReview."""

from __future__ import annotations

import logging
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import CONFIGMAPS, Resource
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)

#: where kube-apiserver publishes its client CA for delegated authentication.
AUTH_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")

TOKENREVIEWS = Resource("authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False)
SUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)
CACHE_SECONDS = 30.0


@dataclass(frozen=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


def user_from_cert(peercert: Obj) -> User | None:
    """CN is the user name, O the groups (as kube-apiserver reads client certificates)."""
    cn, orgs = "", []
    for rdn in peercert.get("subject") or ():
        for k, v in rdn:
            if k == "commonName":
                cn = v
            elif k == "organizationName":
                orgs.append(v)
    return User(cn, tuple(orgs)) if cn else None


class Auth:
    """Who calls (a client certificate of the front's client CA, or a bearer token checked with a
    TokenReview) and what they may do (SubjectAccessReview), each answer cached briefly."""

    def __init__(self, front: Kube) -> None:
        self.front = front
        self._tokens: dict[str, tuple[float, User | None]] = {}
        self._decisions: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    async def authenticate(self, request: web.Request) -> User | None:
        peercert = request.transport.get_extra_info("peercert") if request.transport else None
        if peercert:
            user = user_from_cert(peercert)
            if user:
                return user
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer ") and len(header) > 7:
            return await self._token_user(header[7:].strip())
        return None

    async def _token_user(self, token: str) -> User | None:
        hit = self._tokens.get(token)
        if hit and time.monotonic() - hit[0] < CACHE_SECONDS:
            return hit[1]
        review = await self.front.create(
            TOKENREVIEWS,
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}},
        )
        st = review.get("status") or {}
        user = None
        if st.get("authenticated"):
            u = st.get("user") or {}
            extra = tuple(sorted((k, tuple(v)) for k, v in (u.get("extra") or {}).items()))
            user = User(u.get("username", ""), tuple(u.get("groups") or ()), u.get("uid", ""), extra)
        self._tokens[token] = (time.monotonic(), user)
        return user

    async def authorize_node(self, user: User, verb: str, node: str, subresource: str) -> tuple[bool, str]:
        """May `user` do `verb` on the node's subresource (as kubelets authorize their API)?"""
        attributes = {
            "verb": verb,
            "group": "",
            "version": "v1",
            "resource": "nodes",
            "subresource": subresource,
            "name": node,
        }
        return await self._authorize(user, "resourceAttributes", attributes)

    async def authorize_path(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """May `user` do `verb` (get, post, ...) on the non-resource URL `path`?"""
        return await self._authorize(user, "nonResourceAttributes", {"verb": verb, "path": path})

    async def _authorize(self, user: User, kind: str, attributes: dict[str, str]) -> tuple[bool, str]:
        key = (user, kind, tuple(sorted(attributes.items())))
        hit = self._decisions.get(key)
        if hit and time.monotonic() - hit[0] < CACHE_SECONDS:
            return hit[1], hit[2]
        spec: Obj = {"user": user.name, "groups": list(user.groups), kind: attributes}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        review = await self.front.create(
            SUBJECTACCESSREVIEWS,
            {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec},
        )
        st = review.get("status") or {}
        allowed, reason = bool(st.get("allowed")), str(st.get("reason") or "")
        self._decisions[key] = (time.monotonic(), allowed, reason)
        return allowed, reason


async def front_client_ca(front: Kube) -> str:
    """The front cluster's client CA bundle, as kube-apiserver publishes it for delegated authn."""
    ns, name = AUTH_CONFIGMAP
    cm = await front.get(CONFIGMAPS, name, ns)
    ca = (cm.get("data") or {}).get("client-ca-file", "")
    if not ca:
        raise RuntimeError(f"ConfigMap {ns}/{name} has no client-ca-file: give --client-ca-file")
    return str(ca)


def server_context(cert: Path, key: Path, client_ca_pem: str | None) -> ssl.SSLContext:
    """TLS server context; client certificates are optional but verified against the client CA."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca_pem:
        ctx.load_verify_locations(cadata=client_ca_pem)
        ctx.verify_mode = ssl.CERT_OPTIONAL
    return ctx


async def authenticated(auth: Auth, request: web.Request) -> User | web.Response:
    """The caller, or the response refusing it (401 anonymous, 503 when the front cannot say)."""
    try:
        user = await auth.authenticate(request)
    except (TimeoutError, ApiError, OSError) as e:
        log.warning("authentication failed: %s", e)
        return web.Response(status=503, text="authentication unavailable\n")
    if user is None:
        return web.Response(status=401, text="Unauthorized\n")
    return user
