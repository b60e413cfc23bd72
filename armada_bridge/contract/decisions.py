"""The extender's decisions, signed: only a decision the extender made for that very pod runs.

A decision is written on the front pod as annotations naming the remote cluster and node
(``keys.ASSIGNED_CLUSTER``, ``keys.ASSIGNED_REMOTE_NODE``) and ``keys.DECISION_SIGNATURE``, an
HMAC-SHA256 over the pod's UID, the cluster and the node with a key only the bridge holds (Secret
``keys.DECISION_KEY_SECRET`` in the bridge's namespace). The vkubelet runs a pod, and the extender
counts a pod as placed, only when that signature verifies, as a kubelet admits only pods it may
run: anyone who can update a pod can write annotations, but nobody without the key can sign, and
a signature copied from another pod names another UID. The admission policy
(manifests/extender/admission-policy.yaml) refuses such writes at the API in the first place;
this check holds without it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys
from armada_bridge.kube import SECRETS, ApiError, Kube

log = logging.getLogger(__name__)

KEY_BYTES = 32


@dataclass(frozen=True)
class Decision:
    cluster: str
    node: str


def _message(uid: str, cluster: str, node: str) -> bytes:
    return f"{uid}\n{cluster}\n{node}".encode()


class DecisionKey:
    """Signs and verifies decisions with one secret key."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("a decision key needs at least 16 bytes")
        self._secret = secret

    def sign(self, uid: str, cluster: str, node: str) -> str:
        digest = hmac.new(self._secret, _message(uid, cluster, node), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def annotations(self, uid: str, cluster: str, node: str) -> dict[str, str]:
        """The annotations of a decision: cluster, node and their signature for this pod."""
        return {
            keys.ASSIGNED_CLUSTER: cluster,
            keys.ASSIGNED_REMOTE_NODE: node,
            keys.DECISION_SIGNATURE: self.sign(uid, cluster, node),
        }

    def verified(self, pod: Mapping[str, Any]) -> Decision | None:
        """The pod's decision if the extender made it for this pod (its signature verifies), else None."""
        md = pod.get("metadata") or {}
        annotations = md.get("annotations") or {}
        cluster = annotations.get(keys.ASSIGNED_CLUSTER)
        signature = annotations.get(keys.DECISION_SIGNATURE)
        uid = md.get("uid")
        if not cluster or not signature or not uid:
            return None
        node = annotations.get(keys.ASSIGNED_REMOTE_NODE) or ""
        if not hmac.compare_digest(self.sign(str(uid), str(cluster), str(node)), str(signature)):
            return None
        return Decision(str(cluster), str(node))


def claimed(pod: Mapping[str, Any]) -> str | None:
    """The cluster the pod's annotations name, verified or not (what a user may have written)."""
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(keys.ASSIGNED_CLUSTER) or None


def key_secret(secret: bytes) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": keys.DECISION_KEY_SECRET,
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
        },
        "type": "Opaque",
        "data": {keys.DECISION_KEY_FIELD: base64.b64encode(secret).decode()},
    }


def key_of(secret: Mapping[str, Any]) -> DecisionKey:
    raw = (secret.get("data") or {}).get(keys.DECISION_KEY_FIELD)
    if not raw:
        raise ValueError(
            f"Secret {keys.DECISION_KEY_SECRET} has no {keys.DECISION_KEY_FIELD!r}: delete it and let "
            "the extender make a new one"
        )
    return DecisionKey(base64.b64decode(raw))


async def read_key(front: Kube, namespace: str = keys.SYSTEM_NAMESPACE) -> DecisionKey | None:
    """The decision key from its Secret; None while the Secret does not exist yet."""
    secret = await front.get_or_none(SECRETS, keys.DECISION_KEY_SECRET, namespace)
    return key_of(secret) if secret is not None else None


async def ensure_key(front: Kube, namespace: str = keys.SYSTEM_NAMESPACE) -> DecisionKey:
    """The decision key, made first when no replica has made it yet (create-if-absent: two replicas
    starting together end up with the same key)."""
    found = await read_key(front, namespace)
    if found is not None:
        return found
    try:
        created = await front.create(SECRETS, key_secret(secrets.token_bytes(KEY_BYTES)), namespace)
    except ApiError as e:
        if not e.conflict:
            raise
        found = await read_key(front, namespace)
        if found is None:
            raise
        return found
    log.info("made the decision key (Secret %s/%s)", namespace, keys.DECISION_KEY_SECRET)
    return key_of(created)
