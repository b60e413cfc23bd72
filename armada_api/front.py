"""The front cluster as the API reaches it: as the caller (every write, with the caller's own bearer
token, on a connection without the server's credentials) and as itself (read-only: where a job is,
which Queues exist)."""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from armada_api.errors import Refused
from armada_bridge.kube.client import Kube, KubeConfig
from armada_bridge.kube.resources import Resource

SELFSUBJECTACCESSREVIEWS = Resource(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False
)
#: how long one front request made for a caller may take (seconds)
CALLER_TIMEOUT = 30.0


def bearer_token(metadata: Sequence[tuple[str, str | bytes]] | None) -> str:
    """The caller's token from the call's metadata (`authorization: Bearer <token>`); Refused
    (UNAUTHENTICATED) without one, or with basic auth, which Kubernetes does not have."""
    for key, value in metadata or ():
        if key.lower() != "authorization":
            continue
        text = value.decode() if isinstance(value, bytes) else value
        scheme, _, credential = text.strip().partition(" ")
        if scheme.lower() == "bearer" and credential.strip():
            return credential.strip()
        if scheme.lower() == "basic":
            raise Refused(
                grpc.StatusCode.UNAUTHENTICATED,
                "basic auth is not accepted: send a bearer token the front cluster accepts",
            )
    raise Refused(grpc.StatusCode.UNAUTHENTICATED, "no bearer token: send `authorization: Bearer <token>`")


class Front:
    """`own`: the server's read-only client; `anonymous`: the front's address and CA, no credentials."""

    def __init__(self, own: Kube, anonymous: KubeConfig) -> None:
        if anonymous.headers or anonymous.token_file:
            raise ValueError("the callers' connection config must carry no credentials")
        self.own = own
        self.anonymous = anonymous

    def as_caller(self, token: str) -> Kube:
        """A client that speaks with the caller's token (use as `async with`)."""
        config = KubeConfig(
            server=self.anonymous.server,
            ssl_context=self.anonymous.ssl_context,
            headers={"Authorization": f"Bearer {token}"},
        )
        return Kube(config, timeout=CALLER_TIMEOUT, user_agent="armada-bridge-armada-api")

    async def may(self, token: str, verb: str, resource: str, namespace: str) -> bool:
        """Whether the front lets the caller `verb` `resource` in `namespace` (the caller's own
        SelfSubjectAccessReview: every authenticated user may ask what they may do)."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource}},
        }
        async with self.as_caller(token) as kube:
            answer = await kube.create(SELFSUBJECTACCESSREVIEWS, review)
        return bool((answer.get("status") or {}).get("allowed"))
