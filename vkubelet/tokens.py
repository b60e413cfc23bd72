"""The front API inside remote pods (DESIGN invariant 6): a token of the front pod's ServiceAccount,
the front CA and the namespace, where in-cluster configuration reads them, and the front endpoint in
KUBERNETES_SERVICE_HOST/PORT.

For a front pod that mounts a ServiceAccount token (its `kube-api-access-*` volume, which the
ServiceAccount admission adds unless the pod or its ServiceAccount opts out), the vkubelet asks the
front apiserver for a token bound to the front pod (TokenRequest) while it creates the remote pod,
keeps it in a remote Secret named after the front pod's UID (keys token, ca.crt, namespace) and
owned by the remote pod, mounts that Secret where the front pod mounted its token, renews it at 80%
of its lifetime (like the kubelet), issues it again if it goes missing, and deletes it with the pod
(and the remote garbage collector does too, through the owner reference). The token dies with the
front pod anyway: it is bound to it.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import datetime as dt
import logging
from collections.abc import Awaitable, Callable
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


def secret_name(front_uid: str) -> str:
    return f"{SECRET_PREFIX}{front_uid}"


def token_volume(front: Obj) -> Obj | None:
    """The ServiceAccount token volume the front admission gave the pod (None: it opted out)."""
    for v in (front.get("spec") or {}).get("volumes") or []:
        if v.get("name", "").startswith(TOKEN_VOLUME_PREFIX) and "projected" in v:
            return dict(v)
    return None


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


def token_secret(front: Obj, token: str, ca: str, refresh_at: dt.datetime) -> Obj:
    """The remote Secret with the front API credentials of one pod (pure)."""
    md = front["metadata"]

    def b64(s: str) -> str:
        return base64.b64encode(s.encode()).decode()

    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": secret_name(md["uid"]),
            "namespace": md["namespace"],
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE, keys.FRONT_UID: md["uid"]},
            "annotations": {keys.FRONT_API_REFRESH_AT: rfc3339(refresh_at)},
        },
        "type": "Opaque",
        "data": {"token": b64(token), "ca.crt": b64(ca), "namespace": b64(md["namespace"])},
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
    def remote_pod(self, uid: str) -> Obj | None: ...
    def remote_namespaces(self) -> dict[str, str]: ...


class FrontTokens:
    """Issues, renews and deletes the front API Secrets of one remote cluster."""

    def __init__(
        self,
        cluster: str,
        front: Kube,
        remote: Kube,
        secrets: Informer,
        front_pods: Informer,
        remote_pods: Informer,
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
        self._issuing: set[str] = set()  # keys of Secrets being created with their pods
        secrets.add_handler(lambda _kind, s: self.queue.add(_key(s)))
        front_pods.add_handler(self._on_front_pod)
        remote_pods.add_handler(self._on_remote_pod)

    def _on_front_pod(self, kind: str, pod: Obj) -> None:
        if kind == "DELETED" or _ending(pod):
            md = pod["metadata"]
            self.queue.add(f"{md['namespace']}/{secret_name(md['uid'])}")

    def _on_remote_pod(self, kind: str, pod: Obj) -> None:
        """A new remote pod has its Secret, or is given it."""
        uid = (pod["metadata"].get("labels") or {}).get(keys.FRONT_UID)
        if kind == "ADDED" and uid:
            self.queue.add(f"{pod['metadata']['namespace']}/{secret_name(uid)}")

    # ---------------------------------------------------------------- pod creation
    async def create(self, front: Obj, body: Obj, waiting: Callable[[Obj, str], Awaitable[None]]) -> Obj:
        """Create the remote pod `body` for `front`, with the front API when the RemoteCluster wants
        it: its token is requested while the pod is created, then its Secret created owned by the
        pod (one remote write, no round trip before the pod's). TokenUnavailable before anything is
        created: the front CA is not published yet. A token refused after the pod was created is
        said through `waiting` and issued again from the queue (the pod waits for its Secret)."""
        spec = self.spec()
        endpoint = endpoint_for(spec, self.front.config.server)
        volume = token_volume(front) if spec.enabled else None
        md = front["metadata"]
        name = secret_name(md["uid"])
        if volume is None or self.secrets.get(name, md["namespace"]) is not None:
            if spec.enabled:
                body = with_front_api(body, front, name if volume is not None else "", endpoint)
            return await self.remote.create(PODS, body)
        await self._front_ca(md["namespace"])
        key = f"{md['namespace']}/{name}"
        self._issuing.add(key)
        try:
            issued = asyncio.ensure_future(self._issue(front, volume, spec))
            try:
                pod = await self.remote.create(PODS, with_front_api(body, front, name, endpoint))
            except BaseException:
                issued.cancel()
                await asyncio.gather(issued, return_exceptions=True)  # its error is not ours to log
                raise
            try:
                await self._store(await issued, pod)
            except (ApiError, OSError, TimeoutError, TokenUnavailable) as e:
                self.on_error("token")
                log.warning("%s: front API token %s: %s", self.cluster, key, e)
                await waiting(front, f"the remote pod waits for its front API token: {e}")
                self.queue.retry(key)
            return pod
        finally:
            self._issuing.discard(key)

    async def _provide(self, namespace: str, name: str) -> None:
        """The Secret of a remote pod created without one (its token refused then, or the Secret
        deleted since): issued now, unless the pod is on its way out or no longer wants it."""
        if f"{namespace}/{name}" in self._issuing:
            return  # being created with its pod
        uid = name.removeprefix(SECRET_PREFIX)
        front, remote = self.pods.front_pod(uid), self.pods.remote_pod(uid)
        spec = self.spec()
        if front is None or remote is None or not spec.enabled or _ending(front) or _ending(remote):
            return
        volume = token_volume(front)
        if volume is not None:
            await self._store(await self._issue(front, volume, spec), remote)
            log.info("%s: front API token of %s/%s issued again", self.cluster, namespace, name)

    async def _store(self, secret: Obj, pod: Obj) -> None:
        """Create the token Secret, owned by the remote pod that mounts it (collected with it)."""
        secret["metadata"]["ownerReferences"] = [_owner(pod)]
        try:
            self.secrets.remember(await self.remote.create(SECRETS, secret))
        except ApiError as e:
            if not e.conflict:
                raise

    async def _issue(self, front: Obj, volume: Obj, spec: FrontApi) -> Obj:
        md = front["metadata"]
        audiences, _ = token_settings(volume)
        seconds = spec.token_expiration_seconds
        request: Obj = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {
                "expirationSeconds": seconds,
                "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]},
            },
        }
        if audiences:
            request["spec"]["audiences"] = audiences
        sa = front["spec"].get("serviceAccountName") or "default"
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
        return token_secret(front, str(status.get("token", "")), ca, renew)

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
                for uid, namespace in self.pods.remote_namespaces().items():
                    self.queue.add(f"{namespace}/{secret_name(uid)}")
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

    async def reconcile(self, key: str) -> None:
        ns, _, name = key.partition("/")
        secret = self.secrets.get(name, ns)
        if secret is None:
            await self._provide(ns, name)
            return
        md = secret["metadata"]
        uid = (md.get("labels") or {}).get(keys.FRONT_UID, "")
        front = self.pods.front_pod(uid)
        if front is None or _ending(front):
            await self.remote.delete(SECRETS, name, ns, body={"preconditions": {"uid": md["uid"]}})
            self.secrets.cache.pop(key, None)
            log.info("%s: front API token of %s deleted", self.cluster, key)
            return
        remote = self.pods.remote_pod(uid)
        if remote is not None and not md.get("ownerReferences"):  # made before its pod (earlier versions)
            patch = {
                "metadata": {"ownerReferences": [_owner(remote)], "resourceVersion": md["resourceVersion"]}
            }
            await self._patch(name, ns, patch, md["uid"])
            return  # the update brings us back
        due = refresh_at(secret)
        t = now()
        if due is not None and due > t:
            self.queue.add_after(key, min((due - t).total_seconds() + 0.5, RESYNC_SECONDS * 5))
            return
        volume = token_volume(front)
        if volume is None:
            return
        fresh = await self._issue(front, volume, self.spec())
        patch = {
            "metadata": {
                "annotations": fresh["metadata"]["annotations"],
                "resourceVersion": md["resourceVersion"],
            },
            "data": fresh["data"],
        }
        await self._patch(name, ns, patch, md["uid"])
        log.info("%s: front API token of %s renewed", self.cluster, key)

    async def _patch(self, name: str, namespace: str, patch: Obj, uid: str) -> None:
        try:
            await self.remote.patch(SECRETS, name, patch, namespace, uid=uid)
        except ApiError as e:
            if not (e.conflict or e.uid_mismatch):
                raise
            self.queue.add_after(f"{namespace}/{name}", 1.0)  # changed meanwhile: look again


def _owner(pod: Obj) -> Obj:
    md = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]}


def _ending(pod: Obj) -> bool:
    return is_terminal(pod) or bool(pod["metadata"].get("deletionTimestamp"))


def _key(secret: Obj) -> str:
    return f"{secret['metadata']['namespace']}/{secret['metadata']['name']}"
