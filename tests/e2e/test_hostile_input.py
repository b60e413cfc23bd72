"""Hostile input on every surface (issue 13): objects the API server accepts but that make no sense,
objects its validation refuses, and random requests to the kubelet API. Nothing crashes or wedges a
loop; a bad object is told why (an Event or a status); every other object keeps being served."""

from __future__ import annotations

import random
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.names import FRONT
from devenv.processes.environment import Environment
from tests.framework.bridge import create_podgroup, events_for, pod, wait_running
from tests.framework.kube import wait_for

Api = Callable[[str], k8s.ApiClient]
SEED = 20261130


def _hostile_pods(namespace: str) -> dict[str, dict[str, Any]]:
    """name -> a pod the API server accepts, whose intent the bridge must refuse with a reason."""
    out: dict[str, dict[str, Any]] = {}
    p = pod(
        "armada-bad-cardinality",
        queue=namespace,
        annotations={keys.GANG_ID: "g", keys.GANG_CARDINALITY: "-1"},
    )
    out[p["metadata"]["name"]] = p
    p = pod("armada-no-cardinality", queue=namespace, annotations={keys.GANG_ID: "g2"})
    out[p["metadata"]["name"]] = p
    p = pod(
        "kueue-bad-count",
        queue=namespace,
        labels={keys.KUEUE_POD_GROUP_NAME_LABEL: "k"},
        annotations={keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION: "many"},
    )
    out[p["metadata"]["name"]] = p
    p = pod(
        "volcano-missing-group", queue=namespace, annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "nowhere"}
    )
    out[p["metadata"]["name"]] = p
    p = pod(
        "volcano-absurd-group", queue=namespace, annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "absurd"}
    )
    out[p["metadata"]["name"]] = p
    p = pod("cosched-absurd-group", queue=namespace, labels={keys.COSCHEDULING_POD_GROUP_LABEL: "absurd"})
    out[p["metadata"]["name"]] = p
    return out


WANTED_REASON = {
    "armada-bad-cardinality": keys.GANG_CARDINALITY,
    "armada-no-cardinality": keys.GANG_CARDINALITY,
    "kueue-bad-count": keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION,
    "volcano-missing-group": "does not exist",
    "volcano-absurd-group": "minMember",
    "cosched-absurd-group": "minimum resources",
}


def test_hostile_pods_and_podgroups_wait_with_a_reason_and_others_run(
    namespace: str, cluster_api: Api
) -> None:
    core = k8s.CoreV1Api(cluster_api(FRONT))
    wanted_reason = dict(WANTED_REASON)
    create_podgroup(
        cluster_api,
        namespace,
        "scheduling.volcano.sh",
        "v1beta1",
        "absurd",
        {"minMember": -3, "minResources": {"cpu": "-5", "nvidia.com/gpu": "1e30"}},
    )
    create_podgroup(
        cluster_api,
        namespace,
        "scheduling.x-k8s.io",
        "v1alpha1",
        "absurd",
        {"minMember": 1, "minResources": {"cpu": "1e40"}},
    )
    for body in _hostile_pods(namespace).values():
        core.create_namespaced_pod(namespace, body)
    # Unicode and a near-limit annotation (the API server caps all annotations at 256 KiB).
    big = pod(
        "big-annotations",
        queue=namespace,
        annotations={"example.com/unicode": "ドキュメント ✓ \u202e", "example.com/blob": "x" * 200_000},
    )
    core.create_namespaced_pod(namespace, big)
    # Ten thousand containers (more than any node fits: it must wait, not run): accepted or refused
    # by the API server (its size limits), never a wedged bridge.
    many = pod("many-containers", queue=namespace, cpu="100000")
    c0 = many["spec"]["containers"][0]
    many["spec"]["containers"] = [c0] + [
        {"name": f"c{i}", "image": c0["image"], "resources": {}} for i in range(1, 10_000)
    ]
    try:
        core.create_namespaced_pod(namespace, many)
        wanted_reason["many-containers"] = "cpu"  # over its queue's limit, or no node fits it
    except ApiException as e:
        assert e.status in (413, 422, 500, 504), e  # too large for etcd / the request limit
    good = [pod(f"good-{i}", queue=namespace) for i in range(3)]
    for body in good:
        core.create_namespaced_pod(namespace, body)
    wait_for(
        "the good pods Running",
        lambda: (
            all(
                core.read_namespaced_pod(b["metadata"]["name"], namespace).status.phase == "Running"
                for b in good
            )
            or None
        ),
        timeout=120,
    )
    assert core.read_namespaced_pod("big-annotations", namespace).status.phase == "Running"

    missing: dict[str, str] = {}

    def told_why() -> str | None:
        missing.clear()
        for name, wanted in wanted_reason.items():
            events = [e for e in events_for(cluster_api, namespace, name) if e.startswith("ArmadaWaiting")]
            if not any(wanted in e for e in events):
                missing[name] = f"wanted {wanted!r} in {events}"
        return None if missing else "every one"

    try:
        wait_for("every hostile pod told why it waits", told_why, timeout=60)
    except AssertionError as e:
        raise AssertionError(f"{e}: {missing}") from None
    for name in wanted_reason:
        assert not core.read_namespaced_pod(name, namespace).spec.node_name, name


@pytest.mark.parametrize(
    ("plural", "spec"),
    [
        ("queues", {"priorityFactor": -1}),
        ("queues", {"resourceLimits": {"cpu": {"fraction": 7}}}),
        ("queues", {"resourceLimits": {"cpu": {"absolute": "lots"}}}),
        ("remoteclusters", {"hostAccess": "Maybe"}),
        ("remoteclusters", {"unschedulableSeconds": 0}),
        ("remoteclusters", {"frontAPI": {"port": 99999}}),
        ("remoteclusters", {"podSecurity": {"enforce": "lax"}}),
    ],
)
def test_the_api_server_refuses_absurd_queues_and_remote_clusters(
    cluster_api: Api, plural: str, spec: dict[str, Any]
) -> None:
    kind = "Queue" if plural == "queues" else "RemoteCluster"
    body = {"apiVersion": keys.API_VERSION, "kind": kind, "metadata": {"name": "hostile"}, "spec": spec}
    with pytest.raises(ApiException) as e:
        k8s.CustomObjectsApi(cluster_api(FRONT)).create_cluster_custom_object(
            keys.GROUP, "v1alpha1", plural, body
        )
    assert e.value.status == 422


def test_an_unusable_remote_cluster_says_why_and_the_others_keep_serving(
    namespace: str, cluster_api: Api
) -> None:
    custom = k8s.CustomObjectsApi(cluster_api(FRONT))
    body = {
        "apiVersion": keys.API_VERSION,
        "kind": "RemoteCluster",
        "metadata": {"name": "hostile-remote"},
        "spec": {"kubeconfigSecret": {"name": "no-such-secret"}},
    }
    custom.create_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", body)
    try:

        def status_says_why() -> str | None:
            rc = custom.get_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "hostile-remote")
            for c in (rc.get("status") or {}).get("conditions") or []:
                if (
                    c.get("type") == "Ready"
                    and c.get("status") == "False"
                    and "no-such-secret" in c.get("message", "")
                ):
                    return str(c["message"])
            return None

        wait_for("the RemoteCluster's status names the missing Secret", status_says_why, timeout=60)
        core = k8s.CoreV1Api(cluster_api(FRONT))
        core.create_namespaced_pod(namespace, pod("still-served", queue=namespace))
        wait_running(cluster_api, namespace, 1, timeout=90)
    finally:
        custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", "hostile-remote")


def _kubelet_request(
    env: Environment, path: str, headers: dict[str, str], cert: tuple[Path, Path] | None
) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    if cert is not None:
        ctx.load_cert_chain(*map(str, cert))
    req = urllib.request.Request(f"https://127.0.0.1:{env.port('kubelet')}{path}", headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            r.read(4096)
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def test_random_requests_to_the_kubelet_api_are_refused_cleanly(dev_env: Environment) -> None:
    rng = random.Random(SEED)
    pki = dev_env.cluster(FRONT).workdir / "pki"
    admin = (pki / "admin.crt", pki / "admin.key")
    words = [
        "containerLogs",
        "exec",
        "attach",
        "portForward",
        "run",
        "metrics",
        "..",
        "%2e%2e",
        "ns",
        "p",
        "ü",
        "",
        "x" * 300,
    ]
    seen: dict[int, int] = {}
    for i in range(300):
        path = "/" + "/".join(
            urllib.parse.quote(rng.choice(words), safe="%.") for _ in range(rng.randint(0, 6))
        )
        if rng.random() < 0.5:
            path += "?" + urllib.parse.urlencode(
                {
                    rng.choice(["follow", "tailLines", "cmd", "command", "x"]): rng.choice(
                        ["1", "-5", "true", "ü", "a b"]
                    )
                }
            )
        headers = {}
        if rng.random() < 0.3:
            headers["Authorization"] = rng.choice(
                ["Bearer ", "Bearer x.y.z", "Basic Zm9vOmJhcg==", "Bearer " + "a" * 5000]
            )
        if rng.random() < 0.2:
            headers["X-Stream-Protocol-Version"] = "v4.channel.k8s.io"
            headers["Connection"] = "Upgrade"
            headers["Upgrade"] = "SPDY/3.1"
        status = _kubelet_request(dev_env, path, headers, admin if i % 2 else None)
        seen[status] = seen.get(status, 0) + 1
        assert status < 500 or status in (502, 503), (path, headers, status)
    assert seen.get(401, 0) > 0  # anonymous calls were refused, not served
    assert _kubelet_request(dev_env, "/healthz", {}, None) == 200
    time.sleep(0.5)
