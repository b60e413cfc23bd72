"""The front API inside remote pods (DESIGN invariant 6): a token of the front pod's ServiceAccount,
the front CA and the namespace, where in-cluster configuration reads them, and the front endpoint in
KUBERNETES_SERVICE_HOST/PORT.

For a front pod that mounts a ServiceAccount token (its `kube-api-access-*` volume, which the
ServiceAccount admission adds unless the pod or its ServiceAccount opts out), the remote pod mounts,
where the front pod mounted its token, a remote Secret (keys token, ca.crt, namespace) of its
ServiceAccount and the token's audiences, one per namespace for every pod of that ServiceAccount in
the cluster: the first pod that needs it has the token requested from the front apiserver
(TokenRequest) while the pod is created. The token is bound to the cluster's virtual node (it dies
with the node, as when the cluster leaves), renewed at 80% of its lifetime (like the kubelet), issued
again if the Secret goes missing, and the Secret is deleted once no live front pod of the cluster
mounts it (the token itself stays valid until it expires: at most the RemoteCluster's
`frontApi.tokenExpirationSeconds`). One token per ServiceAccount rather than per pod: a
TokenRequest and a remote Secret per ServiceAccount, not per pod.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from armada_bridge import keys
from armada_bridge.certs import is_ip
from armada_bridge.contract.pods import is_terminal
from armada_bridge.contract.remotecluster import FrontApi
from armada_bridge.kube import CONFIGMAPS, PODS, SECRETS, ApiError, Kube, Resource
from armada_bridge.kube.informer import Informer
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj
from vkubelet.workqueue import WorkQueue

log = logging.getLogger(__name__)

TOKEN_VOLUME_PREFIX = "kube-api-access-"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
SECRET_PREFIX = "front-api-"
REFRESH_FRACTION = 0.8
RESYNC_SECONDS = 60.0
CA_CACHE_SECONDS = 60.0
# The names in-cluster clients may call their cluster's API by (remote pods: the front's).
IN_CLUSTER_API_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
TOKENREQUEST = Resource("", "v1", "serviceaccounts", "ServiceAccount")


class TokenUnavailable(Exception):
    """The front apiserver refused the token (no such ServiceAccount, no right to ask): the pod waits."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


def service_account(front: Obj) -> str:
    return str(front["spec"].get("serviceAccountName") or "default")


def secret_name(service_account: str, audiences: Sequence[str]) -> str:
    """The remote Secret of a ServiceAccount's front token for these audiences (pure): named by a
    digest, as a ServiceAccount's name may be as long as a Secret's."""
    digest = hashlib.sha256("\n".join([service_account, *sorted(audiences)]).encode()).hexdigest()
    return f"{SECRET_PREFIX}{digest[:20]}"


def token_volume(front: Obj) -> Obj | None:
    """The ServiceAccount token volume the front admission gave the pod (None: it opted out)."""
    for v in (front.get("spec") or {}).get("volumes") or []:
        if v.get("name", "").startswith(TOKEN_VOLUME_PREFIX) and "projected" in v:
            return dict(v)
    return None


def secret_key(front: Obj) -> str | None:
    """`namespace/name` of the token Secret the front pod mounts remotely (None: it mounts no
    token; pure)."""
    volume = token_volume(front)
    if volume is None:
        return None
    return (
        f"{front['metadata']['namespace']}/{secret_name(service_account(front), token_settings(volume)[0])}"
    )


def token_settings(volume: Obj) -> tuple[list[str], Obj]:
    """(audiences, the volume's serviceAccountToken source) of a token volume (pure)."""
    for src in (volume.get("projected") or {}).get("sources") or []:
        sat = src.get("serviceAccountToken")
        if sat is not None:
            return ([sat["audience"]] if sat.get("audience") else []), sat
    return [], {}


def endpoint_for(spec: FrontApi, front_server: str) -> Endpoint:
    """The front endpoint remote pods use: the RemoteCluster's, else the vkubelet's own (pure)."""
    if spec.host:
        return Endpoint(spec.host, spec.port)
    u = urlsplit(front_server)
    return Endpoint(u.hostname or "", u.port or (443 if u.scheme == "https" else 80))


def with_front_api(body: Obj, front: Obj, secret: str, endpoint: Endpoint) -> Obj:
    """The remote pod `body` seeing the front API (pure): no remote token, the Secret mounted where
    the front containers mounted their token, the front endpoint in every container's environment,
    and, when the endpoint is an address, the API's in-cluster names resolving to it (clients such
    as Spark's driver call `https://kubernetes.default.svc`, port 443, not the environment's)."""
    out = copy.deepcopy(body)
    spec = out["spec"]
    spec["automountServiceAccountToken"] = False
    volume = token_volume(front)
    if volume is None:
        return out
    mode = (volume.get("projected") or {}).get("defaultMode", 0o644)
    spec["volumes"] = [
        *[v for v in spec.get("volumes") or [] if v.get("name") != volume["name"]],
        {"name": volume["name"], "secret": {"secretName": secret, "defaultMode": mode}},
    ]
    env = [
        {"name": "KUBERNETES_SERVICE_HOST", "value": endpoint.host},
        {"name": "KUBERNETES_SERVICE_PORT", "value": str(endpoint.port)},
        {"name": "KUBERNETES_SERVICE_PORT_HTTPS", "value": str(endpoint.port)},
        {"name": "KUBERNETES_PORT", "value": f"tcp://{endpoint.host}:{endpoint.port}"},
    ]
    names = {e["name"] for e in env}
    if is_ip(endpoint.host):
        alias = {"ip": endpoint.host, "hostnames": list(IN_CLUSTER_API_NAMES)}
        spec["hostAliases"] = [*(spec.get("hostAliases") or []), alias]
    front_containers = {
        (kind, c["name"]): c
        for kind in ("initContainers", "containers")
        for c in front["spec"].get(kind) or []
    }
    for kind in ("initContainers", "containers"):
        for c in spec.get(kind) or []:
            c["env"] = [*[e for e in c.get("env") or [] if e.get("name") not in names], *env]
            fc = front_containers.get((kind, c["name"])) or {}
            mounts = [m for m in fc.get("volumeMounts") or [] if m.get("name") == volume["name"]]
            if mounts:
                c["volumeMounts"] = [*(c.get("volumeMounts") or []), *mounts]
    return out


def token_secret(
    namespace: str, service_account: str, name: str, token: str, ca: str, refresh_at: dt.datetime
) -> Obj:
    """The remote Secret with the front API credentials of one ServiceAccount (pure)."""

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE, keys.FRONT_API_TOKEN_LABEL: "true"},
            "annotations": {
                keys.FRONT_API_REFRESH_AT: rfc3339(refresh_at),
                keys.FRONT_SERVICE_ACCOUNT: service_account,
            },
        },
        "type": "Opaque",
        "data": {"token": b64(token), "ca.crt": b64(ca), "namespace": b64(namespace)},
    }


def refresh_at(secret: Obj) -> dt.datetime | None:
    raw = (secret["metadata"].get("annotations") or {}).get(keys.FRONT_API_REFRESH_AT)
    if not raw:
        return None
    try:
        return dt.datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return None


class Pods(Protocol):
    def front_pod(self, uid: str) -> Obj | None: ...


class FrontTokens:
    """Issues, renews and deletes the front API Secrets of one remote cluster: one per namespace,
    ServiceAccount and audiences that its live front pods mount, deleted when the last goes."""

    def __init__(
        self,
        cluster: str,
        front: Kube,
        remote: Kube,
        secrets: Informer,
        front_pods: Informer,
        pods: Pods,
        spec: Callable[[], FrontApi],
        on_error: Callable[[str], None],
    ) -> None:
        self.cluster = cluster
        self.front = front
        self.remote = remote
        self.secrets = secrets
        self.pods = pods
        self.spec = spec
        self.on_error = on_error
        self.queue = WorkQueue(f"tokens/{cluster}")
        self._ca: dict[str, tuple[float, str]] = {}  # namespace -> (when read, front CA)
        self._issuing: set[str] = set()  # keys of Secrets being created beside a pod
        self._users: dict[str, set[str]] = {}  # Secret key -> UIDs of the front pods that mount it
        self._used: dict[str, str] = {}  # front pod UID -> the key of the Secret it mounts
        secrets.add_handler(lambda _kind, s: self.queue.add(_key(s)))
        front_pods.add_handler(self._on_front_pod)

    def _on_front_pod(self, kind: str, pod: Obj) -> None:
        """Index who mounts what; a Secret whose last user goes is looked at (and deleted)."""
        uid = pod["metadata"]["uid"]
        if kind == "DELETED" or _ending(pod):
            self._drop(uid)
        elif uid not in self._used and (key := secret_key(pod)) is not None:
            self._use(uid, key)

    def _use(self, uid: str, key: str) -> None:
        self._used[uid] = key
        self._users.setdefault(key, set()).add(uid)

    def _drop(self, uid: str) -> None:
        """The pod no longer mounts its Secret; a Secret left without users is looked at."""
        key = self._used.pop(uid, None)
        if key is None:
            return
        users = self._users.get(key, set())
        users.discard(uid)
        if not users:
            self._users.pop(key, None)
            self.queue.add(key)

    # ---------------------------------------------------------------- pod creation
    async def create(self, front: Obj, body: Obj, waiting: Callable[[Obj, str], Awaitable[None]]) -> Obj:
        """Create the remote pod `body` for `front`, with the front API when the RemoteCluster wants
        it. The pod mounts its ServiceAccount's Secret; the first pod to need one has its token
        requested while the pod is created, then the Secret created (no round trip before the
        pod's). TokenUnavailable before anything is created: the front CA is not published yet. A
        token refused after the pod was created is said through `waiting` and issued again from the
        queue (the pod waits for its Secret)."""
        spec = self.spec()
        if not spec.enabled:
            return await self.remote.create(PODS, body)
        endpoint = endpoint_for(spec, self.front.config.server)
        key = secret_key(front)
        if key is None:
            return await self.remote.create(PODS, with_front_api(body, front, "", endpoint))
        ns, _, name = key.partition("/")
        self._use(front["metadata"]["uid"], key)
        if self.secrets.get(name, ns) is not None or key in self._issuing:
            return await self.remote.create(PODS, with_front_api(body, front, name, endpoint))
        await self._front_ca(ns)
        self._issuing.add(key)
        try:
            issued = asyncio.ensure_future(self._issue(front, spec))
            try:
                pod = await self.remote.create(PODS, with_front_api(body, front, name, endpoint))
            except BaseException:
                issued.cancel()
                await asyncio.gather(issued, return_exceptions=True)  # its error is not ours to log
                raise
            try:
                await self._store(await issued)
            except (ApiError, OSError, TimeoutError, TokenUnavailable) as e:
                self.on_error("token")
                log.warning("%s: front API token %s: %s", self.cluster, key, e)
                await waiting(front, f"the remote pod waits for its front API token: {e}")
                self.queue.retry(key)
            return pod
        finally:
            self._issuing.discard(key)

    async def _store(self, secret: Obj) -> None:
        try:
            self.secrets.remember(await self.remote.create(SECRETS, secret))
        except ApiError as e:
            if not e.conflict:
                raise

    async def _issue(self, front: Obj, spec: FrontApi) -> Obj:
        """A token of the front pod's ServiceAccount, bound to this cluster's virtual node (it dies
        with the node, or at its expiry), as the Secret that holds it."""
        md = front["metadata"]
        volume = token_volume(front) or {}
        audiences, _ = token_settings(volume)
        seconds = spec.token_expiration_seconds
        request: Obj = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Node", "name": self.cluster},
            },
        }
        if audiences:
            request["spec"]["audiences"] = audiences
        sa = service_account(front)
        issued = now()
        try:
            answer = await self.front.request(
                "POST", TOKENREQUEST.path(md["namespace"], sa, "token"), body=request
            )
        except ApiError as e:
            if e.status not in (400, 403, 404, 422):
                raise
            raise TokenUnavailable(
                f"no front token for ServiceAccount {md['namespace']}/{sa}: {e.message}"
            ) from e
        status = answer.get("status") or {}
        renew = issued + dt.timedelta(seconds=seconds * REFRESH_FRACTION)
        ca = await self._front_ca(md["namespace"])
        name = secret_name(sa, audiences)
        return token_secret(md["namespace"], sa, name, str(status.get("token", "")), ca, renew)

    async def _front_ca(self, namespace: str) -> str:
        """The front CA as the front's kubelet would mount it (kube-root-ca.crt of the namespace)."""
        hit = self._ca.get(namespace)
        t = asyncio.get_running_loop().time()
        if hit is not None and t - hit[0] < CA_CACHE_SECONDS:
            return hit[1]
        cm = await self.front.get_or_none(CONFIGMAPS, ROOT_CA_CONFIGMAP, namespace)
        ca = str(((cm or {}).get("data") or {}).get("ca.crt", ""))
        if not ca:  # a namespace just made: the front's root CA publisher has not reached it yet
            raise TokenUnavailable(
                f"the front CA (ConfigMap {namespace}/{ROOT_CA_CONFIGMAP}) is not published yet"
            )
        self._ca[namespace] = (t, ca)
        return ca

    # ---------------------------------------------------------------- renewal and deletion
    async def run(self, workers: int = 2) -> None:
        async def resync() -> None:
            while True:
                for s in self.secrets.items():
                    self.queue.add(_key(s))
                for key in list(self._users):
                    self.queue.add(key)
                await asyncio.sleep(RESYNC_SECONDS)

        ticker = asyncio.create_task(resync(), name=f"{self.cluster}/tokens-resync")
        try:
            await self.queue.run(self._sync, workers)
        finally:
            ticker.cancel()

    async def _sync(self, key: str) -> None:
        try:
            await self.reconcile(key)
            self.queue.forget(key)
        except (ApiError, OSError, TimeoutError, TokenUnavailable) as e:
            self.on_error("token")
            log.warning("%s: front API token %s: %s", self.cluster, key, e)
            self.queue.retry(key)

    def _a_user(self, key: str) -> Obj | None:
        """A live front pod that mounts the Secret `key` (those gone meanwhile dropped)."""
        for uid in list(self._users.get(key, ())):
            pod = self.pods.front_pod(uid)
            if pod is not None and not _ending(pod):
                return pod
            self._drop(uid)
        return None

    async def reconcile(self, key: str) -> None:
        if key in self._issuing:
            return  # being created beside a pod
        ns, _, name = key.partition("/")
        secret = self.secrets.get(name, ns)
        user = self._a_user(key)
        if user is None:
            if secret is not None:
                md = secret["metadata"]
                await self.remote.delete(SECRETS, name, ns, body={"preconditions": {"uid": md["uid"]}})
                self.secrets.cache.pop(key, None)
                log.info("%s: front API token %s deleted (no pod mounts it)", self.cluster, key)
            return
        spec = self.spec()
        if secret is None:
            if spec.enabled:
                await self._store(await self._issue(user, spec))
                log.info("%s: front API token %s issued again", self.cluster, key)
            return
        due = refresh_at(secret)
        t = now()
        if due is not None and due > t:
            self.queue.add_after(key, min((due - t).total_seconds() + 0.5, RESYNC_SECONDS * 5))
            return
        fresh = await self._issue(user, spec)
        md = secret["metadata"]
        patch = {
            "metadata": {
                "annotations": fresh["metadata"]["annotations"],
                "resourceVersion": md["resourceVersion"],
            },
            "data": fresh["data"],
        }
        try:
            await self.remote.patch(SECRETS, name, patch, ns, uid=md["uid"])
        except ApiError as e:
            if not (e.conflict or e.uid_mismatch):
                raise
            self.queue.add_after(key, 1.0)  # changed meanwhile: look again
            return
        log.info("%s: front API token %s renewed", self.cluster, key)


def _ending(pod: Obj) -> bool:
    return is_terminal(pod) or bool(pod["metadata"].get("deletionTimestamp"))


def _key(secret: Obj) -> str:
    return f"{secret['metadata']['namespace']}/{secret['metadata']['name']}"
