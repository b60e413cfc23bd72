"""`armada-bridge clusters join|leave`: make a remote cluster one of the bridge's, or undo it.

Join, with an admin's kubeconfig of the remote cluster: in the remote, the bridge's identity (the
ServiceAccount, ClusterRole and binding of ``data/remote-rbac.yaml``, as
``manifests/vkubelet/remote-rbac.yaml``) and a token Secret for it; checked from here (it lists
nodes and pods with that token); in the front, the Secret with a kubeconfig of that identity (the
server address as the vkubelet, in the front, sees the remote API server: the admin's, unless
given) and the RemoteCluster; then it waits until the cluster's virtual node is Ready, or says what
the vkubelet found wrong (the RemoteCluster's Ready condition: unreachable, certificate, rights).
Running it again changes nothing that is right. Leave: the RemoteCluster removed as
``remove-clusters`` does (the vkubelet cleans up its remote pods first), the Secret, and, with the
remote's kubeconfig, the identity there and the namespaces the vkubelet made where no pod remains.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import urllib3.exceptions
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from armada_bridge import keys
from armada_bridge.kube.resources import REMOTECLUSTERS
from armada_bridge.objects import Obj
from cli.cluster_removal import remove_clusters

REMOTE_RBAC = Path(__file__).parent / "data" / "remote-rbac.yaml"
#: the token Secret of the bridge's identity in a remote cluster
TOKEN_SECRET = "armada-bridge-remote-token"
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
Say = Callable[[str], None]


class JoinError(RuntimeError):
    """A join or leave that cannot go on; the message says what is wrong and where."""


@dataclass(frozen=True)
class RemoteServer:
    """The remote API server as the vkubelet will reach it."""

    server: str
    ca_data: str | None  # base64 PEM, as a kubeconfig's certificate-authority-data
    insecure: bool = False


def remote_objects() -> list[Obj]:
    """The bridge's identity in a remote cluster: ServiceAccount, ClusterRole, ClusterRoleBinding."""
    return [dict(d) for d in yaml.safe_load_all(REMOTE_RBAC.read_text()) if d]


def _service_account(objects: list[Obj]) -> tuple[str, str]:
    sa = next(o for o in objects if o["kind"] == "ServiceAccount")
    return sa["metadata"]["name"], sa["metadata"]["namespace"]


def server_of(api: k8s.ApiClient, server: str | None = None) -> RemoteServer:
    """The remote API server the admin's client talks to (its CA), at `server` where given."""
    c = api.configuration
    ca = None
    if c.ssl_ca_cert:
        ca = base64.b64encode(Path(c.ssl_ca_cert).read_bytes()).decode()
    return RemoteServer(server or str(c.host), ca, insecure=not c.verify_ssl)


def kubeconfig_for(cluster: str, remote: RemoteServer, token: str) -> Obj:
    """A kubeconfig of the bridge's identity in `cluster`, fit for a Secret (everything inline)."""
    entry: Obj = {"server": remote.server}
    if remote.ca_data:
        entry["certificate-authority-data"] = remote.ca_data
    if remote.insecure:
        entry["insecure-skip-tls-verify"] = True
    user = f"armada-bridge@{cluster}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": entry}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
    }


def remote_cluster_object(name: str, secret: str, namespace: str, front_api: str | None) -> Obj:
    spec: Obj = {"kubeconfigSecret": {"name": secret, "namespace": namespace}}
    if front_api:
        host, _, port = front_api.rpartition(":")
        if not host or not port.isdigit():
            raise JoinError(f"--front-api {front_api!r}: give HOST:PORT, as remote pods reach the front API")
        spec["frontAPI"] = {"host": host.strip("[]"), "port": int(port)}
    return {
        "apiVersion": keys.API_VERSION,
        "kind": "RemoteCluster",
        "metadata": {"name": name, "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE}},
        "spec": spec,
    }


def _where(api: k8s.ApiClient) -> str:
    return str(api.configuration.host)


@dataclass(frozen=True)
class _Calls:
    """How the identity's objects of one kind are created, brought up to date (None: left as they
    are) and deleted."""

    create: Callable[[Obj], object] | None
    replace: Callable[[str, Obj], object] | None
    delete: Callable[[str], object]


def _calls(remote: k8s.ApiClient, obj: Obj) -> _Calls:
    core, rbac = k8s.CoreV1Api(remote), k8s.RbacAuthorizationV1Api(remote)
    ns = obj["metadata"].get("namespace", "")
    kind = obj["kind"]
    if kind == "ServiceAccount":
        return _Calls(
            lambda o: core.create_namespaced_service_account(ns, o),
            None,
            lambda n: core.delete_namespaced_service_account(n, ns),
        )
    if kind == "Secret":
        return _Calls(None, None, lambda n: core.delete_namespaced_secret(n, ns))
    if kind == "ClusterRole":
        return _Calls(rbac.create_cluster_role, rbac.replace_cluster_role, rbac.delete_cluster_role)
    return _Calls(
        rbac.create_cluster_role_binding, rbac.replace_cluster_role_binding, rbac.delete_cluster_role_binding
    )


def _apply(remote: k8s.ApiClient, obj: Obj) -> None:
    """Create `obj`, or bring an existing one to it (a ClusterRole's rules may have grown)."""
    calls = _calls(remote, obj)
    assert calls.create is not None, obj["kind"]
    try:
        calls.create(obj)
    except ApiException as e:
        if e.status != 409:
            raise
        if calls.replace is not None:
            calls.replace(obj["metadata"]["name"], obj)


def _delete(remote: k8s.ApiClient, obj: Obj) -> bool:
    """Delete one of the identity's objects; False where it was not there."""
    try:
        _calls(remote, obj).delete(obj["metadata"]["name"])
    except ApiException as e:
        if e.status != 404:
            raise
        return False
    return True


def _token(remote: k8s.ApiClient, account: str, namespace: str, timeout: float = 60) -> str:
    """The token of a long-lived token Secret for the ServiceAccount (made once, filled by the
    remote's token controller)."""
    core = k8s.CoreV1Api(remote)
    body = {
        "metadata": {
            "name": TOKEN_SECRET,
            "namespace": namespace,
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
            "annotations": {"kubernetes.io/service-account.name": account},
        },
        "type": "kubernetes.io/service-account-token",
    }
    try:
        core.create_namespaced_secret(namespace, body)
    except ApiException as e:
        if e.status != 409:
            raise
    deadline = time.monotonic() + timeout
    while True:
        data = core.read_namespaced_secret(TOKEN_SECRET, namespace).data or {}
        if data.get("token"):
            return base64.b64decode(data["token"]).decode()
        if time.monotonic() > deadline:
            raise JoinError(
                f"the remote cluster's token controller did not fill Secret {namespace}/{TOKEN_SECRET} in "
                f"{timeout:.0f}s (is kube-controller-manager running there?)"
            )
        time.sleep(0.5)


def _check_identity(kubeconfig: Obj, say: Say) -> None:
    """What the vkubelet will do first, done with the new identity from here: list nodes and pods.
    Forbidden is an error; unreachable from here is only said (the front may reach it)."""
    api = k8s_config.new_client_from_config_dict(kubeconfig)
    try:
        core = k8s.CoreV1Api(api)
        core.list_node(limit=1)
        core.list_pod_for_all_namespaces(limit=1)
    except ApiException as e:
        raise JoinError(
            f"the bridge's identity in the remote cluster was refused ({e.status} {e.reason}): "
            "its RBAC did not take (data/remote-rbac.yaml)"
        ) from None
    except (urllib3.exceptions.HTTPError, OSError) as e:
        say(
            f"note: the remote API server cannot be reached from here ({e}); the vkubelet in the front will try"
        )
    finally:
        api.close()


def _upsert_secret(front: k8s.ApiClient, name: str, namespace: str, kubeconfig: Obj) -> None:
    core = k8s.CoreV1Api(front)
    data = {keys.KUBECONFIG_SECRET_KEY: base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()}
    body = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE},
        },
        "type": "Opaque",
        "data": data,
    }
    try:
        core.create_namespaced_secret(namespace, body)
    except ApiException as e:
        if e.status == 404:
            raise JoinError(
                f"namespace {namespace} does not exist in the front: is the bridge installed?"
            ) from None
        if e.status != 409:
            raise
        core.replace_namespaced_secret(name, namespace, body)


def _remote_cluster(front: k8s.ApiClient, name: str) -> Obj | None:
    try:
        return dict(
            k8s.CustomObjectsApi(front).get_cluster_custom_object(
                REMOTECLUSTERS.group, REMOTECLUSTERS.version, REMOTECLUSTERS.plural, name
            )
        )
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _ready(front: k8s.ApiClient, name: str) -> tuple[bool, str]:
    """Whether the cluster's virtual node is Ready, and else what its RemoteCluster says."""
    try:
        node = k8s.CoreV1Api(front).read_node(name)
        for c in node.status.conditions or []:
            if c.type == "Ready" and c.status == "True":
                return True, ""
    except ApiException as e:
        if e.status != 404:
            raise
    rc = _remote_cluster(front, name) or {}
    for c in (rc.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready" and c.get("status") != "True":
            return False, f"{c.get('reason') or 'NotReady'}: {c.get('message') or ''}".rstrip(": ")
    return False, "no virtual node yet: is the vkubelet running in the front?"


def join(
    front: k8s.ApiClient,
    remote: k8s.ApiClient,
    name: str,
    *,
    server: str | None = None,
    front_api: str | None = None,
    namespace: str = keys.SYSTEM_NAMESPACE,
    timeout: float = 120,
    say: Say = print,
) -> None:
    if not NAME.match(name):
        raise JoinError(f"{name!r} is not a cluster name (lowercase letters, digits and '-', at most 63)")
    secret = f"{name}-kubeconfig"
    existing = _remote_cluster(front, name)
    if existing is not None:
        ref = (existing.get("spec") or {}).get("kubeconfigSecret") or {}
        if (ref.get("name"), ref.get("namespace", keys.SYSTEM_NAMESPACE)) != (secret, namespace):
            raise JoinError(
                f"RemoteCluster {name} exists with another kubeconfig Secret "
                f"({ref.get('namespace', keys.SYSTEM_NAMESPACE)}/{ref.get('name')}): leave it first, or choose another name"
            )
    target = server_of(remote, server)
    try:
        k8s.CoreV1Api(remote).list_node(limit=1)
    except ApiException as e:
        raise JoinError(
            f"the remote cluster at {_where(remote)} refused its admin ({e.status} {e.reason})"
        ) from None
    objects = remote_objects()
    account, account_ns = _service_account(objects)
    say(f"remote {_where(remote)}: the bridge's identity {account_ns}/{account} and its ClusterRole")
    for obj in objects:
        _apply(remote, obj)
    kubeconfig = kubeconfig_for(name, target, _token(remote, account, account_ns))
    _check_identity(kubeconfig, say)
    say(f"front: Secret {namespace}/{secret} (server {target.server}) and RemoteCluster {name}")
    _upsert_secret(front, secret, namespace, kubeconfig)
    if existing is None:
        body = remote_cluster_object(name, secret, namespace, front_api)
        k8s.CustomObjectsApi(front).create_cluster_custom_object(
            REMOTECLUSTERS.group, REMOTECLUSTERS.version, REMOTECLUSTERS.plural, body
        )
    deadline, shown = time.monotonic() + timeout, 0.0
    while True:
        ready, why = _ready(front, name)
        if ready:
            say(f"remote cluster {name} joined: virtual node {name} Ready")
            return
        now = time.monotonic()
        if now > deadline:
            raise JoinError(
                f"virtual node {name} not Ready after {timeout:.0f}s: {why} (the kubeconfig's server is "
                f"{target.server}, as the vkubelet in the front must reach it: --server to change it)"
            )
        if now - shown > 10:
            say(f"waiting for virtual node {name}: {why}")
            shown = now
        time.sleep(1)


def leave(
    front: k8s.ApiClient,
    name: str,
    remote: k8s.ApiClient | None,
    *,
    namespace: str = keys.SYSTEM_NAMESPACE,
    timeout: float = 600,
    say: Say = print,
) -> None:
    rc = _remote_cluster(front, name)
    if rc is not None:
        remove_clusters(front, [name], timeout, say)
        ref = (rc.get("spec") or {}).get("kubeconfigSecret") or {}
        secret, namespace = ref.get("name") or f"{name}-kubeconfig", ref.get("namespace") or namespace
    else:
        say(f"no RemoteCluster {name} in the front")
        secret = f"{name}-kubeconfig"
    _delete_front_secret(front, secret, namespace, say)
    if remote is None:
        say("the bridge's identity stays in the remote cluster: give its kubeconfig to remove it too")
        return
    objects = remote_objects()
    _, account_ns = _service_account(objects)
    token = {"kind": "Secret", "metadata": {"name": TOKEN_SECRET, "namespace": account_ns}}
    for obj in [token, *reversed(objects)]:
        md = obj["metadata"]
        what = f"{obj['kind']} {md['namespace'] + '/' if md.get('namespace') else ''}{md['name']}"
        if _delete(remote, obj):
            say(f"remote {_where(remote)}: deleted {what}")
    _delete_empty_namespaces(remote, say)


def _delete_empty_namespaces(remote: k8s.ApiClient, say: Say) -> None:
    """The namespaces the vkubelet made in the remote cluster, where no pod remains (what it leaves
    when a RemoteCluster goes: they might hold the remote cluster's own objects; the admin leaving
    the cluster means them gone)."""
    core = k8s.CoreV1Api(remote)
    managed = f"{keys.MANAGED_BY_LABEL}={keys.MANAGED_BY_VALUE}"
    for ns in core.list_namespace(label_selector=managed).items:
        name = ns.metadata.name
        if ns.metadata.deletion_timestamp:
            continue
        if core.list_namespaced_pod(name, limit=1).items:
            say(f"remote {_where(remote)}: namespace {name} left: it still holds pods")
            continue
        try:
            core.delete_namespace(
                name, body=k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=ns.metadata.uid))
            )
            say(f"remote {_where(remote)}: deleted namespace {name} (made by the bridge, no pod left)")
        except ApiException as e:
            if e.status not in (404, 409):
                raise


def _delete_front_secret(front: k8s.ApiClient, name: str, namespace: str, say: Say) -> None:
    """Delete the kubeconfig Secret where the bridge made it (labelled managed-by armada-bridge);
    leave one an admin made."""
    core = k8s.CoreV1Api(front)
    try:
        secret = core.read_namespaced_secret(name, namespace)
    except ApiException as e:
        if e.status == 404:
            return
        raise
    if (secret.metadata.labels or {}).get(keys.MANAGED_BY_LABEL) != keys.MANAGED_BY_VALUE:
        say(f"front Secret {namespace}/{name} was not made by armada-bridge: left as it is")
        return
    core.delete_namespaced_secret(name, namespace)
    say(f"front: deleted Secret {namespace}/{name}")
