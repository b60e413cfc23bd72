"""The front cluster as the API reaches it: as the caller (every write, with the caller's own bearer
token, on a connection without the server's credentials; or, for a caller that came with a client
certificate of the front's client CA, as the server impersonating that user and their groups) and
as itself (read-only: where a job is, which Queues exist)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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


@dataclass(frozen=True)
class Caller:
    """Who makes a call: a bearer token the front judges itself, or a user whose certificate the
    front's client CA signed (its CN, and its O as groups, as kube-apiserver reads them), for whom
    the server's requests impersonate."""

    token: str | None = None
    user: str | None = None
    groups: tuple[str, ...] = ()


def subject_attributes(subject: str) -> list[tuple[str, str]]:
    """(type, value) of each attribute of an RFC 4514 subject string (as gRPC gives a verified peer
    certificate's: `CN=alice,O=dev\\, ops,O=team-a`), escapes undone (`\\,` or `\\2C`)."""
    parts: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(subject):
        c = subject[i]
        if c == "\\" and i + 1 < len(subject):
            pair = subject[i + 1 : i + 3]
            if len(pair) == 2 and all(h in "0123456789abcdefABCDEF" for h in pair):
                current.append(chr(int(pair, 16)))
                i += 3
                continue
            current.append(subject[i + 1])
            i += 2
            continue
        if c in ",+":  # between RDNs, or between the attributes of one
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
        i += 1
    parts.append("".join(current))
    out = []
    for part in parts:
        kind, sep, value = part.partition("=")
        if sep:
            out.append((kind.strip().upper(), value.strip()))
    return out


def certificate_caller(auth_context: Mapping[str, Sequence[bytes]]) -> Caller | None:
    """The caller a verified client certificate names (the port that requires one: gRPC has
    checked it against the front's client CA), None without one. Refused (PERMISSION_DENIED): no
    CN, or a `system:` user or group, which the server never impersonates (`system:masters` would
    be the cluster's administrator)."""
    subjects = auth_context.get("x509_subject") or ()
    if not subjects:
        return None
    attributes = subject_attributes(subjects[0].decode())
    users = [v for k, v in attributes if k == "CN"]
    groups = tuple(v for k, v in attributes if k == "O")
    if len(users) != 1 or not users[0]:
        raise Refused(grpc.StatusCode.PERMISSION_DENIED, "a client certificate must name one user (CN)")
    if any(name.startswith("system:") for name in (users[0], *groups)):
        raise Refused(
            grpc.StatusCode.PERMISSION_DENIED,
            "the server does not act for system: users or groups by certificate: use a token",
        )
    return Caller(user=users[0], groups=groups)


class Front:
    """`own`: the server's read-only client; `anonymous`: the front's address and CA, no credentials."""

    def __init__(self, own: Kube, anonymous: KubeConfig) -> None:
        if anonymous.headers or anonymous.token_file:
            raise ValueError("the callers' connection config must carry no credentials")
        self.own = own
        self.anonymous = anonymous

    def as_caller(self, caller: Caller) -> Kube:
        """A client that speaks as the caller (use as `async with`): with its token on a connection
        without the server's credentials, or with the server's own credentials impersonating its
        certificate's user and groups (RBAC, admission and audit see that user)."""
        if caller.token is not None:
            config = KubeConfig(
                server=self.anonymous.server,
                ssl_context=self.anonymous.ssl_context,
                headers={"Authorization": f"Bearer {caller.token}"},
            )
        elif caller.user:
            config = replace(
                self.own.config,
                headers={**self.own.config.headers, "Impersonate-User": caller.user},
                impersonate_groups=caller.groups,
            )
        else:
            raise Refused(grpc.StatusCode.UNAUTHENTICATED, "no caller")
        return Kube(config, timeout=CALLER_TIMEOUT, user_agent="armada-bridge-armada-api")

    async def may(self, caller: Caller, verb: str, resource: str, namespace: str) -> bool:
        """Whether the front lets the caller `verb` `resource` in `namespace` (the caller's own
        SelfSubjectAccessReview: every authenticated user may ask what they may do)."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"namespace": namespace, "verb": verb, "resource": resource}},
        }
        async with self.as_caller(caller) as kube:
            answer = await kube.create(SELFSUBJECTACCESSREVIEWS, review)
        return bool((answer.get("status") or {}).get("allowed"))
