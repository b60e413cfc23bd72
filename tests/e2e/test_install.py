"""The bridge installed as a cluster admin installs it: its image (hack/build-images.sh bridge) and
its Helm chart, in an environment of its own whose front has no bridge on the host (`dev up
--without-bridge`) and a real node for the bridge's pods. The chart runs two extenders and two
vkubelets there from the image, with certificates Helm makes (`self-signed`) and the remote
cluster from its values; the front's kube-scheduler is then pointed at the extender's Service as
docs/install.md tells for `scheduler.mode: extender`; a gang and a real container's command then
run through that installation, as through `dev up`'s host processes; `helm uninstall` then
leaves nothing behind in either cluster (its pre-delete hook removes the RemoteCluster first)."""

from __future__ import annotations

import base64
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.dev import binaries
from armada_bridge.dev.binary.environment import Environment
from armada_bridge.dev.bridge.vkubelet_setup import inline_kubeconfig
from armada_bridge.dev.clients import api_client
from armada_bridge.dev.images import runtime
from armada_bridge.dev.realnode.placement import on_a_real_node
from armada_bridge.versions import REPO_ROOT
from tests.support import wait_for

CHART = REPO_ROOT / "manifests" / "helm" / "armada-bridge"
NAMESPACE = "armada-bridge-system"
RELEASE = "armada-bridge"
EXTENDER = "armada-bridge-extender"
VKUBELET = "armada-bridge-vkubelet"
REMOTE = "remote-1"


@pytest.fixture
def bare() -> Iterator[Environment]:
    """An environment of its own (one remote cluster of one KWOK and one real node; a real node in
    the front) without the bridge's host processes, down after."""
    state = Path(tempfile.mkdtemp(prefix="ab-", dir="/tmp"))  # short: containerd's socket path
    env = Environment(state)
    try:
        env.up(workers=1, nodes=1, real_nodes=1, host_bridge=False)
        yield env
    finally:
        with contextlib.suppress(Exception):
            env.down()
        shutil.rmtree(state, ignore_errors=True)


def values(env: Environment) -> dict[str, Any]:
    """The admin's values: the image as the front's real node has it (imported, never pulled), the
    bridge's pods on that node, Helm's own certificates, the remote cluster by a kubeconfig that
    names its API server where pods reach it."""
    remotes = []
    for name, path in env.remote_kubeconfigs().items():
        config = inline_kubeconfig(path)
        for cluster in config["clusters"]:
            cluster["cluster"]["server"] = env._pod_facing(cluster["cluster"]["server"])
        remotes.append({"name": name, "kubeconfig": yaml.safe_dump(config)})
    return {
        "image": {"pullPolicy": "Never"},
        "certificates": {"mode": "self-signed"},
        "nodeSelector": {"kubernetes.io/hostname": "front-real-0"},
        "tolerations": [
            {
                "key": keys.DEV_REAL_NODE_TAINT_KEY,
                "operator": "Exists",
                "effect": keys.DEV_REAL_NODE_TAINT_EFFECT,
            }
        ],
        "remoteClusters": remotes,
    }


def helm(env: Environment, *args: str, timeout: float = 420) -> str:
    r = subprocess.run(
        [str(binaries.helm()), "--kubeconfig", str(env.kubeconfig("front")), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_helm_install_runs_the_bridge_from_its_image_and_helm_uninstall_leaves_nothing(
    bare: Environment, tmp_path: Path
) -> None:
    env = bare
    file = tmp_path / "values.yaml"
    file.write_text(yaml.safe_dump(values(env)))
    helm(
        env, "install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace", "-f", str(file), "--wait"
    )
    with api_client(env.kubeconfig("front")) as api:
        core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        for name in (EXTENDER, VKUBELET):
            d = apps.read_namespaced_deployment(name, NAMESPACE)
            assert d.status.ready_replicas == 2, (name, d.status)
        for p in core.list_namespaced_pod(NAMESPACE).items:
            assert p.spec.node_name == "front-real-0", (p.metadata.name, p.spec.node_name)
            assert p.spec.containers[0].image == runtime.NAME, p.spec.containers[0].image
        lease = k8s.CoordinationV1Api(api).read_namespaced_lease(EXTENDER, NAMESPACE)
        assert lease.spec.holder_identity.startswith(f"{EXTENDER}-"), lease.spec
        wait_for(
            f"the virtual node {REMOTE}, run by the chart's vkubelet, Ready",
            lambda: any(
                c.type == "Ready" and c.status == "True"
                for c in (core.read_node(REMOTE).status.conditions or [])
            ),
            timeout=120,
        )

        # The front's scheduler calls the installed extender: at its Service's ClusterIP (the
        # scheduler runs outside cluster DNS), checking the certificate Helm made for its name.
        service = core.read_namespaced_service(EXTENDER, NAMESPACE)
        ca = base64.b64decode(
            core.read_namespaced_secret(f"{EXTENDER}-tls", NAMESPACE).data["ca.crt"]
        ).decode()
        env.point_front_scheduler_at(
            f"https://{service.spec.cluster_ip}:443", ca, f"{EXTENDER}.{NAMESPACE}.svc"
        )

        # Work of a team: a queue, a gang of two on the KWOK nodes, a real container's command.
        k8s.CustomObjectsApi(api).create_cluster_custom_object(
            keys.GROUP,
            "v1alpha1",
            "queues",
            {
                "apiVersion": keys.API_VERSION,
                "kind": "Queue",
                "metadata": {"name": "team"},
                "spec": {"priorityFactor": 1},
            },
        )
        core.create_namespace({"metadata": {"name": "team", "labels": {keys.QUEUE_LABEL: "team"}}})
        gang = {keys.GANG_ID: "pair", keys.GANG_CARDINALITY: "2"}
        for i in range(2):
            container = {
                "name": "main",
                "image": "busybox",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            }
            core.create_namespaced_pod(
                "team",
                {"metadata": {"name": f"pair-{i}", "annotations": gang}, "spec": {"containers": [container]}},
            )
        said = "hello from a real container, through the bridge the chart installed"
        hello = {
            "name": "main",
            "image": "busybox",
            "command": ["sh", "-c", f"echo {said}"],
            "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}},
        }
        core.create_namespaced_pod(
            "team",
            {
                "metadata": {"name": "hello"},
                "spec": on_a_real_node({"restartPolicy": "Never", "containers": [hello]}),
            },
        )

        def phases() -> dict[str, str] | None:
            pods = {p.metadata.name: p for p in core.list_namespaced_pod("team").items}
            seen = {n: p.status.phase for n, p in pods.items()}
            done = seen.get("hello") == "Succeeded" and seen.get("pair-0") == seen.get("pair-1") == "Running"
            return seen if done else None

        wait_for(
            "the gang Running and the real container done, through the installed bridge", phases, timeout=240
        )
        for p in core.list_namespaced_pod("team").items:
            assert (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) == REMOTE, p.metadata.name
            assert (p.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), p.metadata.name
        # `kubectl logs` on the front: kube-apiserver asks the chart's vkubelet, which asks the
        # remote kubelet.
        assert core.read_namespaced_pod_log("hello", "team").strip() == said

        # `helm uninstall`: its pre-delete hook removes the RemoteCluster while the chart's vkubelet
        # still runs, so the gang's remote pods are deleted before the vkubelet goes, and nothing is
        # left holding a finalizer.
        with api_client(env.kubeconfig(REMOTE)) as remote_api:
            remote = k8s.CoreV1Api(remote_api)
            assert {p.metadata.name for p in remote.list_namespaced_pod("team").items} >= {"pair-0", "pair-1"}
            helm(env, "uninstall", RELEASE, "-n", NAMESPACE, "--wait")
            assert not remote.list_namespaced_pod("team").items, "remote pods left after helm uninstall"
        crs = k8s.CustomObjectsApi(api).list_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters")
        assert not crs["items"], [rc["metadata"] for rc in crs["items"]]
        assert REMOTE not in {n.metadata.name for n in core.list_node().items}
        assert not core.list_namespaced_pod("team").items
        assert (
            not k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items
        )  # the hook's Job, deleted on success
        assert not apps.list_namespaced_deployment(NAMESPACE).items
