"""The front API inside remote pods: the front ServiceAccount's token (one Secret per ServiceAccount
and cluster, shared by its pods), the front CA, the namespace and the front endpoint, renewed before
expiry, deleted with the last pod that mounts it; opt-out and the RemoteCluster switch."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.processes.environment import Environment
from tests.framework.kube import create_bound, grant, wait_for
from tests.framework.vkubelet_pods import bound_pod, exists, phases, run_bound
from vkubelet import tokens

Api = Callable[[str], k8s.ApiClient]
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def _secret(core: k8s.CoreV1Api, namespace: str, service_account: str) -> Any:
    try:
        return core.read_namespaced_secret(tokens.secret_name(service_account, []), namespace)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def _data(secret: Any, key: str) -> str:
    return base64.b64decode(secret.data[key]).decode()


def _client(env: Environment, secret: Any, tmp_path: Path) -> k8s.ApiClient:
    """A client of the front apiserver with what the remote pod reads from its Secret."""
    ca = tmp_path / f"ca-{secret.metadata.resource_version}.crt"
    ca.write_text(_data(secret, "ca.crt"))
    cfg = k8s.Configuration()
    cfg.host = env.cluster("front").server()
    cfg.ssl_ca_cert = str(ca)
    cfg.api_key = {"authorization": f"Bearer {_data(secret, 'token')}"}
    return k8s.ApiClient(cfg)


def _whoami(client: k8s.ApiClient) -> Any:
    review = k8s.AuthenticationV1Api(client).create_self_subject_review(
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    )
    return review.status.user_info


@pytest.fixture
def worker_sa(front: k8s.CoreV1Api, namespace: str) -> str:
    front.create_namespaced_service_account(namespace, {"metadata": {"name": "worker"}})
    wait_for("ServiceAccount", lambda: exists(front.read_namespaced_service_account, "worker", namespace))
    return "worker"


def test_remote_pod_sees_the_front_api(
    vkubelet: Environment,
    front: k8s.CoreV1Api,
    remote1: k8s.CoreV1Api,
    cluster_api: Api,
    namespace: str,
    worker_sa: str,
    tmp_path: Path,
) -> None:
    run_bound(front, namespace, bound_pod("driver", "remote-1", serviceAccountName=worker_sa))
    secret = wait_for("token Secret", lambda: _secret(remote1, namespace, worker_sa), timeout=15)

    # What the remote pod sees: the Secret where the token was, the front endpoint, no remote token.
    rpod = remote1.read_namespaced_pod("driver", namespace)
    assert rpod.spec.automount_service_account_token is False
    vol = next(v for v in rpod.spec.volumes if v.secret and v.secret.secret_name == secret.metadata.name)
    main = rpod.spec.containers[0]
    assert any(m.name == vol.name and m.mount_path == MOUNT for m in main.volume_mounts)
    env = {e.name: e.value for e in main.env}
    # The front as remote pods reach it (on the pod network's gateway when there are real nodes).
    server = vkubelet.front_api_server()
    assert f"https://{env['KUBERNETES_SERVICE_HOST']}:{env['KUBERNETES_SERVICE_PORT']}" == server
    assert _data(secret, "namespace") == namespace
    assert secret.metadata.annotations[keys.FRONT_SERVICE_ACCOUNT] == worker_sa
    assert not secret.metadata.owner_references  # shared: it goes with the last pod that mounts it

    # The token is the front ServiceAccount's, bound to the cluster's virtual node.
    user = _whoami(_client(vkubelet, secret, tmp_path))
    assert user.username == f"system:serviceaccount:{namespace}:{worker_sa}"
    assert user.extra["authentication.kubernetes.io/node-name"] == ["remote-1"]

    # A second pod of the ServiceAccount in that cluster mounts the same Secret: no second token.
    run_bound(front, namespace, bound_pod("driver-2", "remote-1", serviceAccountName=worker_sa))
    second = remote1.read_namespaced_pod("driver-2", namespace)
    assert any(v.secret and v.secret.secret_name == secret.metadata.name for v in second.spec.volumes)
    assert _secret(remote1, namespace, worker_sa).metadata.uid == secret.metadata.uid

    # Renewed before it expires: make the renewal due now (as 80% of its lifetime would).
    old = _data(secret, "token")
    past = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    remote1.patch_namespaced_secret(
        secret.metadata.name, namespace, {"metadata": {"annotations": {keys.FRONT_API_REFRESH_AT: past}}}
    )
    renewed = wait_for(
        "token renewed",
        lambda: (s := _secret(remote1, namespace, worker_sa)) is not None and _data(s, "token") != old and s,
        timeout=30,
    )
    due = dt.datetime.fromisoformat(
        renewed.metadata.annotations[keys.FRONT_API_REFRESH_AT].replace("Z", "+00:00")
    )
    assert due > dt.datetime.now(dt.UTC)
    assert _whoami(_client(vkubelet, renewed, tmp_path)).username == user.username

    # Deleted by someone: issued again (a restarted container mounts it).
    remote1.delete_namespaced_secret(renewed.metadata.name, namespace)
    renewed = wait_for(
        "token Secret issued again",
        lambda: (
            (s := _secret(remote1, namespace, worker_sa)) is not None
            and s.metadata.uid != renewed.metadata.uid
            and s
        ),
        timeout=30,
    )
    assert _whoami(_client(vkubelet, renewed, tmp_path)).username == user.username

    # Pods the remote pod creates with it are front pods, scheduled through the extender.
    rbac = k8s.RbacAuthorizationV1Api(cluster_api("front"))
    makes = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list"]}]
    grant(rbac, namespace, "pod-maker", makes, worker_sa)
    as_pod = k8s.CoreV1Api(_client(vkubelet, renewed, tmp_path))
    executor = {
        "metadata": {"name": "executor", "labels": {keys.QUEUE_LABEL: namespace}},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ]
        },
    }

    def create() -> bool:
        try:
            as_pod.create_namespaced_pod(namespace, executor)
            return True
        except ApiException as e:
            if e.status == 403:  # RBAC caches catching up
                return False
            raise

    wait_for("pod created with the remote pod's token", create, timeout=15)
    placed = wait_for(
        "executor Running on a virtual node",
        lambda: (p := front.read_namespaced_pod("executor", namespace)).status.phase == "Running" and p,
        timeout=60,
    )
    assert placed.spec.node_name in ("remote-1", "remote-2")
    assert (placed.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) == placed.spec.node_name

    # Kept while a pod mounts it; gone with the last.
    front.delete_namespaced_pod("driver", namespace, grace_period_seconds=0)
    wait_for("driver gone", lambda: "driver" not in phases(front, namespace), timeout=30)
    assert _secret(remote1, namespace, worker_sa) is not None
    front.delete_namespaced_pod("driver-2", namespace, grace_period_seconds=0)
    wait_for("token Secret deleted", lambda: _secret(remote1, namespace, worker_sa) is None, timeout=30)


def test_opted_out_pod_gets_no_token(
    front: k8s.CoreV1Api,
    remote1: k8s.CoreV1Api,
    namespace: str,
    worker_sa: str,
) -> None:
    create_bound(
        front,
        namespace,
        bound_pod("quiet", "remote-1", serviceAccountName=worker_sa, automountServiceAccountToken=False),
    )
    wait_for("pod Running", lambda: phases(front, namespace).get("quiet") == "Running", timeout=30)
    rpod = remote1.read_namespaced_pod("quiet", namespace)
    assert rpod.spec.automount_service_account_token is False
    assert not any(v.secret for v in rpod.spec.volumes or [])
    assert _secret(remote1, namespace, worker_sa) is None


@pytest.fixture
def front_api_off(cluster_api: Api, vkubelet: Environment) -> Iterator[None]:
    custom = k8s.CustomObjectsApi(cluster_api("front"))

    def set_enabled(on: bool) -> None:
        rc = custom.patch_cluster_custom_object(
            keys.GROUP, "v1alpha1", "remoteclusters", "remote-2", {"spec": {"frontAPI": {"enabled": on}}}
        )
        generation = rc["metadata"]["generation"]

        def observed() -> bool:
            got = custom.get_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "remote-2")
            return bool((got.get("status") or {}).get("observedGeneration", 0) >= generation)

        wait_for("the vkubelet applied the RemoteCluster change", observed, timeout=30)

    set_enabled(False)
    try:
        yield
    finally:
        set_enabled(True)


@pytest.mark.exclusive  # it turns remote-2's front API off for a while
def test_remote_cluster_can_turn_it_off(
    front: k8s.CoreV1Api,
    remote2: k8s.CoreV1Api,
    namespace: str,
    worker_sa: str,
    front_api_off: None,
) -> None:
    run_bound(front, namespace, bound_pod("local", "remote-2", serviceAccountName=worker_sa))
    rpod = remote2.read_namespaced_pod("local", namespace)
    assert rpod.spec.automount_service_account_token is None
    assert not any(e.name == "KUBERNETES_SERVICE_HOST" for e in rpod.spec.containers[0].env or [])
    assert _secret(remote2, namespace, worker_sa) is None
