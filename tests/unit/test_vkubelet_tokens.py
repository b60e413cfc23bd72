"""The pure parts of the front API in remote pods: what the remote pod and its Secret look like."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.remotecluster import FrontApi
from tests.framework.pods import pod
from vkubelet import remote_pod, tokens

MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


def front_pod(with_token: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": "remote-1",
        "serviceAccountName": "spark",
        "containers": [{"name": "driver", "image": "spark", "env": [{"name": "A", "value": "1"}]}],
        "initContainers": [{"name": "init", "image": "busybox"}],
    }
    if with_token:
        vol = {
            "name": "kube-api-access-x1",
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {
                        "configMap": {
                            "name": "kube-root-ca.crt",
                            "items": [{"key": "ca.crt", "path": "ca.crt"}],
                        }
                    },
                ],
            },
        }
        spec["volumes"] = [vol, {"name": "data", "emptyDir": {}}]
        mount = {"name": "kube-api-access-x1", "mountPath": MOUNT, "readOnly": True}
        spec["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}, mount]
        spec["initContainers"][0]["volumeMounts"] = [mount]
    else:
        spec["automountServiceAccountToken"] = False
    return pod("driver", namespace="ns", uid="u-1", cpu=None, spec=spec)


def test_remote_pod_mounts_the_front_token_where_the_front_pod_did() -> None:
    front = front_pod()
    name = tokens.secret_name("spark", [])
    body = tokens.with_front_api(remote_pod.remote_pod(front), front, name, tokens.Endpoint("10.0.0.1", 6443))
    spec = body["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert {
        "name": "kube-api-access-x1",
        "secret": {"secretName": name, "defaultMode": 420},
    } in spec["volumes"]
    assert {"name": "data", "emptyDir": {}} in spec["volumes"]
    for c in (*spec["containers"], *spec["initContainers"]):
        assert {"name": "kube-api-access-x1", "mountPath": MOUNT, "readOnly": True} in c["volumeMounts"]
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env["KUBERNETES_SERVICE_HOST"] == "10.0.0.1"
        assert env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert {"name": "A", "value": "1"} in spec["containers"][0]["env"]
    assert {"name": "data", "mountPath": "/data"} in spec["containers"][0]["volumeMounts"]
    # The API's in-cluster names are the front's too (an address endpoint only: DNS names can't be).
    assert spec["hostAliases"] == [{"ip": "10.0.0.1", "hostnames": list(tokens.IN_CLUSTER_API_NAMES)}]
    named = tokens.with_front_api(remote_pod.remote_pod(front), front, "s", tokens.Endpoint("api.front", 443))
    assert "hostAliases" not in named["spec"]


def test_opted_out_pod_gets_nothing() -> None:
    front = front_pod(with_token=False)
    assert tokens.token_volume(front) is None
    body = tokens.with_front_api(remote_pod.remote_pod(front), front, "", tokens.Endpoint("h", 1))
    assert body["spec"]["automountServiceAccountToken"] is False
    assert "volumes" not in body["spec"]
    assert not any(c.get("volumeMounts") for c in body["spec"]["containers"])


def test_endpoint_declared_or_the_vkubelets_own() -> None:
    assert tokens.endpoint_for(FrontApi(host="api.front", port=6443), "https://x:1") == tokens.Endpoint(
        "api.front", 6443
    )
    assert tokens.endpoint_for(FrontApi(), "https://127.0.0.1:32001") == tokens.Endpoint("127.0.0.1", 32001)
    assert tokens.endpoint_for(FrontApi(), "https://front.example") == tokens.Endpoint("front.example", 443)


def test_token_secret() -> None:
    when = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)
    s = tokens.token_secret("ns", "spark", "front-api-x", "tok", "CA", when)
    assert s["metadata"]["name"] == "front-api-x" and s["metadata"]["namespace"] == "ns"
    assert s["metadata"]["labels"] == {
        keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE,
        keys.FRONT_API_TOKEN_LABEL: "true",
    }
    assert s["metadata"]["annotations"][keys.FRONT_SERVICE_ACCOUNT] == "spark"
    assert {k: base64.b64decode(v).decode() for k, v in s["data"].items()} == {
        "token": "tok",
        "ca.crt": "CA",
        "namespace": "ns",
    }
    assert tokens.refresh_at(s) == when


def test_one_secret_per_service_account_and_audiences() -> None:
    """Pods of one ServiceAccount share its Secret; another ServiceAccount, or other audiences, do not."""
    a, b = front_pod(), front_pod()
    b["metadata"] = {**b["metadata"], "name": "other", "uid": "u-2"}
    assert tokens.secret_key(a) == tokens.secret_key(b) == f"ns/{tokens.secret_name('spark', [])}"
    b["spec"] = {**b["spec"], "serviceAccountName": "executor"}
    assert tokens.secret_key(b) != tokens.secret_key(a)
    assert tokens.secret_name("spark", ["vault"]) != tokens.secret_name("spark", [])
    assert tokens.secret_name("spark", ["a", "b"]) == tokens.secret_name("spark", ["b", "a"])
    long = tokens.secret_name("s" * 253, [])  # a ServiceAccount's name may be as long as a Secret's
    assert len(long) <= 63 and long.startswith(tokens.SECRET_PREFIX)
    assert tokens.secret_key(front_pod(with_token=False)) is None


def test_audience_of_the_token_volume() -> None:
    vol = {
        "name": "kube-api-access-a",
        "projected": {"sources": [{"serviceAccountToken": {"audience": "vault"}}]},
    }
    assert tokens.token_settings(vol)[0] == ["vault"]
    assert tokens.token_settings(tokens.token_volume(front_pod()) or {})[0] == []
