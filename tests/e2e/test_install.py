"""The bridge installed as a cluster admin installs it, in an environment of its own whose front
has no bridge on the host (`dev up --without-bridge`) and a real node for the bridge's pods. First
docs/guides/install.md as written (its ```` ```sh chart ```` blocks, and those of the other docs
for an installed chart): its image (the one hack/build-images.sh bridge builds, under the guide's
name as if pulled), its values and `helm install`, two extenders and two vkubelets from the image
with certificates Helm makes, the front's kube-scheduler pointed at the extender's Service as step
4 tells for `scheduler.mode: extender`, `clusters join`. Through that installation, as through `dev
up`'s host processes: a gang, a real container's command, the demo's PyTorchJob and RayCluster from
their operators. Then day 2: the guide's upgrade to a new image with gangs running, one queued and
one submitted during the rollout (nothing lost, duplicated or orphaned, the Leases handed over);
each leader pod killed (the other replica takes over); the Armada API enabled and used; `clusters
leave` and `helm uninstall` leave nothing behind in either cluster. The chart in `second-scheduler`
mode with cert-manager's certificates and the remote cluster from its values (its pre-delete hook
removes the RemoteCluster) is a second test, and `kubectl apply -k manifests` (cert-manager's too)
as docs/install.md tells, its smoke run and `kubectl delete -k manifests` a third: each passes or
fails on its own, in the same environment."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
import yaml
from armada_client.client import ArmadaClient
from armada_client.k8s.io.api.core.v1 import generated_pb2 as core_pb
from armada_client.k8s.io.apimachinery.pkg.api.resource.generated_pb2 import Quantity
from google.protobuf import json_format
from kubernetes import client as k8s

from armada_bridge import keys
from devenv import binaries
from devenv.bridge.vkubelet_setup import inline_kubeconfig
from devenv.clients import api_client, kubectl
from devenv.images import kube_scheduler, runtime
from devenv.pods import busybox_pod, real_pod
from devenv.processes.environment import Environment
from devenv.realnode import containerd
from devenv.realnode.placement import on_a_real_node
from devenv.versions import REPO_ROOT
from tests.framework import REAL_NODE_ENVIRONMENTS, doc_runs
from tests.framework import helm_chart as chart
from tests.framework.docs_blocks import Block, blocks, chart_blocks
from tests.framework.kube import role_binding, wait_for

CHART = REPO_ROOT / "manifests" / "helm" / "armada-bridge"
NAMESPACE = "armada-bridge-system"
RELEASE = "armada-bridge"
EXTENDER = "armada-bridge-extender"
VKUBELET = "armada-bridge-vkubelet"
ARMADA_API = "armada-bridge-armada-api"
ARMADA_API_MANIFESTS = REPO_ROOT / "manifests" / "armada-api"
REMOTE = "remote-1"  # the environment's remote cluster
NODES = 2  # KWOK nodes of the remote cluster
UPGRADED_TAG = "0.1.0-upgraded"
#: docs/guides/install.md's names: the image as its admin pushed it, the remote cluster as joined.
GUIDE_IMAGE = "registry.example.com/batch/armada-bridge"
GUIDE_CLUSTER = "gpu-east"


# The three ways of installing share one environment of their own; environments with real nodes
# made by tests set the host's network up and down, one at a time (test_real_nodes.py's hygiene
# test checks the host's network before and after its own).
pytestmark = pytest.mark.own_environment(REAL_NODE_ENVIRONMENTS)
DEMO_OPERATORS = ("training-operator", "kuberay")


@pytest.fixture(scope="module")
def bare() -> Iterator[Environment]:
    """An environment of its own (one remote cluster of two KWOK nodes and one real node; a real
    node in the front) without the bridge's host processes, down after the module."""
    state = Path(tempfile.mkdtemp(prefix="ab-", dir="/tmp"))  # short: containerd's socket path
    env = Environment(state)
    try:
        env.up(workers=1, nodes=NODES, real_nodes=1, host_bridge=False)
        yield env
    finally:
        with contextlib.suppress(Exception):
            env.down()
        shutil.rmtree(state, ignore_errors=True)


@pytest.fixture
def front(bare: Environment, tmp_path: Path) -> Iterator[Front]:
    """The environment's clients; after the test, whatever it left (a failed one's installation,
    its pods, the scheduler pointed at it) removed, so that each way of installing passes or fails
    on its own."""
    with api_client(bare.kubeconfig("front")) as api, api_client(bare.kubeconfig(REMOTE)) as remote_api:
        f = Front(bare, api, remote_api)
        try:
            yield f
        finally:
            _remove_what_is_left(f, tmp_path)


def _remove_what_is_left(f: Front, tmp: Path) -> None:
    """Best effort, each step whatever the others did: the release, the kustomizations, the
    RemoteClusters (their finalizers too: no vkubelet may be left to clear them), the teams' pods
    and Queues, the front's scheduler without the extender."""
    steps = [
        lambda: helm(f.env, "uninstall", RELEASE, "-n", NAMESPACE, "--wait", "--ignore-not-found"),
        lambda: _kubectl(f.env, "delete", "-k", str(ARMADA_API_MANIFESTS), "--ignore-not-found"),
        lambda: _kubectl(f.env, "delete", "-k", str(REPO_ROOT / "manifests"), "--ignore-not-found"),
    ]
    custom = k8s.CustomObjectsApi(f.api)
    for step in steps:
        with contextlib.suppress(Exception):
            step()
    with contextlib.suppress(Exception):
        for rc in custom.list_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters")["items"]:
            name = rc["metadata"]["name"]
            custom.patch_cluster_custom_object(
                keys.GROUP, "v1alpha1", "remoteclusters", name, {"metadata": {"finalizers": None}}
            )
            custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters", name)
    for namespace in TEAM_NAMESPACES.values():
        with contextlib.suppress(Exception):
            f.core.delete_collection_namespaced_pod(namespace, grace_period_seconds=0)
    with contextlib.suppress(Exception):
        f.env.front_scheduler_without_extender()


def values(env: Environment) -> dict[str, Any]:
    """The admin's values: the image as the front's real node has it (imported, never pulled), the
    bridge's pods on that node, Helm's own certificates, the remote cluster by a kubeconfig that
    names its API server where pods reach it."""
    remotes = [
        {"name": name, "kubeconfig": _remote_kubeconfig(env, name)} for name in env.remote_kubeconfigs()
    ]
    return {
        "image": {"pullPolicy": "Never"},
        "certificates": {"mode": "self-signed"},
        "armadaApi": {"enabled": True},
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


def _remote_kubeconfig(env: Environment, name: str) -> str:
    """A remote cluster's kubeconfig as the bridge's pods use it: inline, naming its API server
    where pods reach it."""
    config = inline_kubeconfig(env.remote_kubeconfigs()[name])
    for cluster in config["clusters"]:
        cluster["cluster"]["server"] = env._pod_facing(cluster["cluster"]["server"])
    return yaml.safe_dump(config)


def _helm_args(env: Environment, *args: str) -> list[str]:
    return ["--kubeconfig", str(env.kubeconfig("front")), *args]


def helm_command(env: Environment, *args: str) -> list[str]:
    return [str(binaries.helm()), *_helm_args(env, *args)]


def helm(env: Environment, *args: str, timeout: float = 420) -> str:
    r = chart.helm(*_helm_args(env, *args), timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def _gang(core: k8s.CoreV1Api, name: str, size: int, cpu: str, namespace: str = "team") -> list[str]:
    """A gang of `size` pods of `cpu` on the KWOK nodes, as a team submits it; their names."""
    names = [f"{name}-{i}" for i in range(size)]
    annotations = {keys.GANG_ID: name, keys.GANG_CARDINALITY: str(size)}
    for pod in names:
        core.create_namespaced_pod(
            namespace, busybox_pod(pod, cpu=cpu, memory="1Gi", annotations=annotations)
        )
    return names


def _wait_running(f: Front, names: list[str], what: str, namespace: str = "team") -> None:
    """All of `names` Running on the remote cluster, admitted there by a signed decision."""
    core = f.core

    def probe() -> bool:
        pods = [p for p in core.list_namespaced_pod(namespace).items if p.metadata.name in names]
        return len(pods) == len(names) and all(p.status.phase == "Running" for p in pods)

    wait_for(what, probe, timeout=180)
    for name in names:
        annotations = core.read_namespaced_pod(name, namespace).metadata.annotations or {}
        assert annotations.get(keys.ASSIGNED_CLUSTER) == f.cluster, (name, annotations)
        assert annotations.get(keys.DECISION_SIGNATURE), name


def _placed(f: Front) -> set[str]:
    """The front pods bound to the remote cluster's virtual node, as namespace/name."""
    pods = f.core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={f.cluster}").items
    return {f"{p.metadata.namespace}/{p.metadata.name}" for p in pods}


def _remote_uids(remote: k8s.CoreV1Api) -> dict[str, str]:
    """The remote cluster's pods that stand for front pods (namespace/name: uid)."""
    return {
        f"{p.metadata.namespace}/{p.metadata.name}": p.metadata.uid
        for p in remote.list_pod_for_all_namespaces().items
        if p.metadata.namespace not in ("kube-system", "kube-node-lease", "kube-public")
    }


def _one_remote_pod_each(f: Front, what: str) -> dict[str, str]:
    """Every front pod on the virtual node has its remote pod and no remote pod is left without one
    (none duplicated, none orphaned); the remote pods' uids."""

    def probe() -> dict[str, str] | None:
        uids = _remote_uids(f.remote)
        return uids if set(uids) == _placed(f) else None

    return wait_for(what, probe, timeout=120)


def _lease_holder(api: k8s.ApiClient, name: str) -> str:
    try:
        lease = k8s.CoordinationV1Api(api).read_namespaced_lease(name, NAMESPACE)
    except k8s.ApiException as e:
        if e.status == 404:  # not taken yet
            return ""
        raise
    return str(lease.spec.holder_identity or "")


def _pods_of(core: k8s.CoreV1Api, deployment: str) -> dict[str, k8s.V1Pod]:
    selector = f"app.kubernetes.io/name={deployment}"
    return {p.metadata.name: p for p in core.list_namespaced_pod(NAMESPACE, label_selector=selector).items}


def _kill_leader(api: k8s.ApiClient, deployment: str) -> str:
    """Delete the Lease holder's pod at once (no grace: no release of its Lease); the new holder,
    another pod of the Deployment."""
    core = k8s.CoreV1Api(api)
    old = _lease_holder(api, deployment)
    assert old in _pods_of(core, deployment), (old, list(_pods_of(core, deployment)))
    core.delete_namespaced_pod(old, NAMESPACE, grace_period_seconds=0)

    def probe() -> str | None:
        holder = _lease_holder(api, deployment)
        return holder if holder != old and holder in _pods_of(core, deployment) else None

    return wait_for(f"another {deployment} pod holding its Lease after {old} was killed", probe, timeout=120)


def _kubectl(env: Environment, *args: str, stdin: str | None = None) -> str:
    return kubectl(binaries.expected(), env.kubeconfig("front"), *args, stdin=stdin, timeout=360)


#: queue -> the namespace labelled for it, as an admin makes them for a team.
TEAM_NAMESPACES = {"team": "team", "default": "demo"}


def _teams(f: Front) -> None:
    """The Queues and their namespaces (kept where an earlier test made them)."""
    for queue, namespace in TEAM_NAMESPACES.items():
        body = {
            "apiVersion": keys.API_VERSION,
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"priorityFactor": 1},  # its namespaces: those labelled for it
        }
        with contextlib.suppress(k8s.ApiException):  # 409: there already
            k8s.CustomObjectsApi(f.api).create_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", body)
        with contextlib.suppress(k8s.ApiException):
            f.core.create_namespace({"metadata": {"name": namespace, "labels": {keys.QUEUE_LABEL: queue}}})


def _demo_operators(f: Front) -> None:
    """The operators of the demo's objects, installed as usual once the bridge is (its CRDs,
    Volcano's PodGroup among them, are there). `up` leaves the front's scheduler as it made it
    (without the extender): point it at the extender after this."""
    f.env.up(workers=1, nodes=NODES, real_nodes=1, operator_names=DEMO_OPERATORS)


class Front:
    """The front's clients, the remote cluster's, and the environment; `cluster`: the remote
    cluster's name in the front (its RemoteCluster and virtual node), as installed."""

    def __init__(self, env: Environment, api: k8s.ApiClient, remote_api: k8s.ApiClient) -> None:
        self.env, self.api = env, api
        self.cluster = REMOTE
        self.core, self.apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
        self.remote = k8s.CoreV1Api(remote_api)


def _install(f: Front, values_file: Path, mode: str, certificates: str = "self-signed") -> None:
    """`helm install` as docs/install.md tells, with the certificates of `certificates` mode; in
    extender mode the front's kube-scheduler is then pointed at the extender's Service."""
    helm(
        f.env,
        *("install", RELEASE, str(CHART), "-n", NAMESPACE, "--create-namespace", "-f", str(values_file)),
        *("--set", f"scheduler.mode={mode}", "--set", f"certificates.mode={certificates}", "--wait"),
    )
    _running_from_the_image(f, mode)
    _virtual_node_ready(f)


def _running_from_the_image(f: Front, mode: str, image: str = runtime.NAME) -> None:
    """Both Deployments' two replicas ready on the front's real node, from the bridge's image,
    named `image` there (and the kube-scheduler's in second-scheduler mode); an extender holding
    the Lease."""
    for name in (EXTENDER, VKUBELET):
        d = f.apps.read_namespaced_deployment(name, NAMESPACE)
        assert d.status.ready_replicas == 2, (name, d.status)
    containers = {
        "extender": image,
        "vkubelet": image,
        "armada-api": image,
        "kube-scheduler": kube_scheduler.IMAGE,
    }
    for p in f.core.list_namespaced_pod(NAMESPACE).items:
        assert p.spec.node_name == "front-real-0", (p.metadata.name, p.spec.node_name)
        seen = {c.name: c.image for c in p.spec.containers}
        assert seen == {n: containers[n] for n in seen}, seen
        assert ("kube-scheduler" in seen) == (mode == "second-scheduler" and "extender" in seen), seen
    wait_for(
        "an extender pod holding its Lease",
        lambda: _lease_holder(f.api, EXTENDER) in _pods_of(f.core, EXTENDER),
        timeout=60,
    )


def _virtual_node_ready(f: Front) -> None:
    wait_for(
        f"the virtual node {f.cluster}, run by the installed vkubelet, Ready",
        lambda: any(
            c.type == "Ready" and c.status == "True"
            for n in f.core.list_node(field_selector=f"metadata.name={f.cluster}").items
            for c in n.status.conditions or []
        ),
        timeout=120,
    )


def _as_pulled(f: Front, image: str) -> None:
    """The bridge's image on the front's real node under the name `image`, as if pulled from the
    admin's registry (there is none here)."""
    real = f.env.real_nodes()
    assert real is not None
    containerd.ctr(real.dir / "front-real-0", "images", "tag", "--force", runtime.NAME, image)


def _helm_upgrade(f: Front, tmp: Path) -> doc_runs.Run:
    """`helm upgrade` of the release to UPGRADED_TAG with the values it has, begun."""
    command = helm_command(
        f.env,
        *("upgrade", RELEASE, str(CHART), "-n", NAMESPACE, "--reuse-values", "--wait", "--timeout=6m"),
        *("--set", f"image.tag={UPGRADED_TAG}"),
    )
    return doc_runs.Run(shlex.join(command), tmp, dict(os.environ), tmp / "helm-upgrade")


class Admin:
    """docs/guides/install.md's admin (and the other guides' commands for an installed chart): the
    docs' ```` ```sh chart ```` blocks run as written, in a reader's directory with the guide's
    files (`gpu-east-admin.yaml`: the remote cluster's admin kubeconfig, its API server where the
    installed vkubelet reaches it) and `FRONT_API` the front API server as remote pods reach it."""

    def __init__(self, f: Front, tmp: Path) -> None:
        self.tmp = tmp
        self.cwd, home = doc_runs.reader(tmp)
        (self.cwd / f"{GUIDE_CLUSTER}-admin.yaml").write_text(_remote_kubeconfig(f.env, REMOTE))
        front_api = f.env.front_api_server().split("//", 1)[1]
        self.env = doc_runs.reader_env(
            home, f.env.kubeconfig("front"), path=[binaries.helm().parent], FRONT_API=front_api
        )
        self.ran: list[Block] = []

    def blocks(self, doc: str, section: str) -> list[Block]:
        found = [b for b in blocks(REPO_ROOT / doc) if b.chart and b.section.startswith(section)]
        assert found, f"no chart block in {doc} under {section!r}"
        return found

    def begin(self, doc: str, section: str) -> doc_runs.Run:
        found = self.blocks(doc, section)
        self.ran += found
        return doc_runs.Run(doc_runs.script(found), self.cwd, self.env, self.tmp / f"run-{len(self.ran)}")

    def run(self, doc: str, section: str, timeout: float = 600) -> None:
        self.begin(doc, section).finish(timeout)


def _described(f: Front, namespace: str, name: str) -> str:
    """A pod as the front and the remote cluster see it, and its events on both: what a failure says."""
    out = []
    for where, core in (("front", f.core), ("remote", f.remote)):
        try:
            pod = core.read_namespaced_pod(name, namespace)
            out.append(f"{where}: node {pod.spec.node_name}, status {pod.status.to_dict()}")
        except k8s.ApiException as e:
            out.append(f"{where}: {e.status} {e.reason}")
        events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
        out += [f"  {where} event: {ev.reason}: {ev.message}" for ev in events]
    return "\n".join(out)


def _point_scheduler(f: Front) -> None:
    service = f.core.read_namespaced_service(EXTENDER, NAMESPACE)
    ca = base64.b64decode(f.core.read_namespaced_secret(f"{EXTENDER}-tls", NAMESPACE).data["ca.crt"]).decode()
    f.env.point_front_scheduler_at(
        f"https://{service.spec.cluster_ip}:443", ca, f"{EXTENDER}.{NAMESPACE}.svc"
    )


def _work(f: Front, mode: str) -> None:
    """A team's gang of two on the KWOK nodes, a real container's command, the demo's PyTorchJob
    and RayCluster from their operators: all admitted by the installed extender and run remotely."""
    pair = _gang(f.core, "pair", 2, "1")
    said = f"hello from a real container, through the bridge the chart installed in {mode} mode"
    f.core.create_namespaced_pod("team", real_pod("hello", ["sh", "-c", f"echo {said}"]))
    _wait_running(f, pair, "the gang Running through the installed bridge")
    try:
        wait_for(
            "the real container done",
            lambda: f.core.read_namespaced_pod("hello", "team").status.phase == "Succeeded",
            timeout=180,
        )
    except AssertionError as e:
        raise AssertionError(f"{e}\n{_described(f, 'team', 'hello')}") from None
    # `kubectl logs` on the front: kube-apiserver asks the chart's vkubelet, which asks the remote
    # kubelet.
    assert f.core.read_namespaced_pod_log("hello", "team").strip() == said
    samples = REPO_ROOT / "manifests" / "samples"
    _kubectl(
        f.env,
        "-n",
        "demo",
        "apply",
        "-f",
        str(samples / "pytorchjob.yaml"),
        "-f",
        str(samples / "raycluster.yaml"),
    )
    _kubectl(
        f.env, "-n", "demo", "wait", "pytorchjob/pytorch-simple", "--for=condition=Running", "--timeout=180s"
    )
    _kubectl(
        f.env,
        "-n",
        "demo",
        "wait",
        "raycluster/raycluster-kuberay",
        "--for=jsonpath={.status.state}=ready",
        "--timeout=180s",
    )
    demo = [p for p in f.core.list_namespaced_pod("demo").items if p.spec.node_name]
    assert len(demo) == 4 + 3, [p.metadata.name for p in demo]
    for p in demo:
        assert (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) == f.cluster, p.metadata.name


def _upgrade_under_load(
    f: Front, upgraded: str, upgrade: Callable[[], doc_runs.Run]
) -> tuple[list[str], dict[str, str]]:
    """`helm upgrade` to a new image (the same one under a new tag, imported into the node as a
    release would be pulled) with gangs running, one queued (two pods of a whole node each while
    the others run) and one submitted during the rollout: every Deployment pod replaced, the Leases
    held by new pods, the gang submitted meanwhile admitted whole once, the queued one still
    queued, no remote pod made again, none left without its front pod. The queued gang's pods and
    the remote pods' uids after."""
    whole = _gang(f.core, "whole", NODES, "32")
    wait_for(
        "the whole-node gang queued (refused by the extender for now)",
        lambda: all(
            any(c.type == "PodScheduled" and c.status == "False" for c in (p.status.conditions or []))
            for p in f.core.list_namespaced_pod("team").items
            if p.metadata.name in whole
        ),
        timeout=60,
    )
    before = _one_remote_pod_each(f, "one remote pod per placed front pod before the upgrade")
    old_pods = set(_pods_of(f.core, EXTENDER)) | set(_pods_of(f.core, VKUBELET))
    _as_pulled(f, upgraded)
    run = upgrade()
    try:
        during = _gang(f.core, "during", 2, "1")
        run.finish(timeout=660)
    finally:
        run.stop()
    for name in (EXTENDER, VKUBELET):
        # helm --wait waits for the new pods, not for the old ones to finish terminating.
        pods = wait_for(
            f"{name}: two pods, all new",
            lambda n=name: p if len(p := _pods_of(f.core, n)) == 2 and not set(p) & old_pods else None,
            timeout=120,
        )
        images = {c.image for p in pods.values() for c in p.spec.containers if c.name != "kube-scheduler"}
        assert images == {upgraded}, (name, images)
        wait_for(
            f"a new {name} pod holding its Lease",
            lambda n=name: _lease_holder(f.api, n) in _pods_of(f.core, n),
            timeout=60,
        )
    _wait_running(f, during, "the gang submitted during the upgrade Running, admitted whole once")
    after = _one_remote_pod_each(f, "one remote pod per placed front pod after the upgrade")
    kept = {k: v for k, v in before.items() if k in after}
    assert {k: after[k] for k in kept} == kept, "remote pods made again across the upgrade"
    placed = {k.split("/", 1)[1] for k in _placed(f)}
    assert not set(whole) & placed, "the queued gang placed while others hold its room"
    return whole, after


def _failovers(f: Front, after: dict[str, str]) -> None:
    """Each leader's pod killed, one at a time: the other replica (or the replacement) takes over,
    admits and runs new gangs, and the running pods keep their remote pods."""
    _kill_leader(f.api, EXTENDER)
    _wait_running(f, _gang(f.core, "after-extender", 2, "1"), "a gang admitted by the new extender leader")
    _kill_leader(f.api, VKUBELET)
    _wait_running(f, _gang(f.core, "after-vkubelet", 2, "1"), "a gang run by the new vkubelet leader")
    final = _one_remote_pod_each(f, "one remote pod per placed front pod after the failovers")
    assert {k: final[k] for k in after if k in final} == {k: after[k] for k in after if k in final}


def _free_room(f: Front, whole: list[str]) -> None:
    """The others' work deleted: the queued gang is admitted whole by the leader of the moment."""
    _kubectl(f.env, "-n", "demo", "delete", "pytorchjob,raycluster", "--all", "--wait=true")
    for p in f.core.list_namespaced_pod("team").items:
        if p.metadata.name not in whole:
            f.core.delete_namespaced_pod(p.metadata.name, "team")
    _wait_running(f, whole, "the queued whole-node gang admitted once the room is free")


def _uninstall(f: Front, tmp: Path, uninstall: Callable[[], None] | None = None) -> None:
    """`helm uninstall` (or `uninstall`, the guide's): its pre-delete hook removes the RemoteCluster
    while the chart's vkubelet still runs (or `clusters leave` did), so the remote pods are deleted
    before the vkubelet goes, and nothing is left holding a finalizer."""
    assert _remote_uids(f.remote)
    made = tmp / "release.yaml"
    made.write_text(helm(f.env, "get", "manifest", RELEASE, "-n", NAMESPACE))
    if uninstall is None:
        helm(f.env, "uninstall", RELEASE, "-n", NAMESPACE, "--wait")
    else:
        uninstall()
    assert not _remote_uids(f.remote), "remote pods left after helm uninstall"
    left = _kubectl(f.env, "get", "-f", str(made), "--ignore-not-found", "-o", "name")
    assert not left.strip(), f"objects of the release left after helm uninstall:\n{left}"
    for crd in ("queues", "remoteclusters"):  # kept, as Helm keeps a chart's CRDs
        k8s.ApiextensionsV1Api(f.api).read_custom_resource_definition(f"{crd}.{keys.GROUP}")
    crs = k8s.CustomObjectsApi(f.api).list_cluster_custom_object(keys.GROUP, "v1alpha1", "remoteclusters")
    assert not crs["items"], [rc["metadata"] for rc in crs["items"]]
    assert f.cluster not in {n.metadata.name for n in f.core.list_node().items}
    # The front pods that ran there failed, as on a lost node (their owners make new ones), and
    # kube-controller-manager's pod garbage collector deletes them, their node being gone.
    for namespace in ("team", "demo"):
        for p in f.core.list_namespaced_pod(namespace).items:
            assert (p.status.phase, p.status.reason) == ("Failed", "RemoteClusterRemoved"), (
                p.metadata.name,
                p.status.phase,
                p.status.reason,
            )
        wait_for(
            f"the pod garbage collector deleting the failed pods of {namespace}",
            lambda n=namespace: not f.core.list_namespaced_pod(n).items,
            timeout=150,
        )
    assert not k8s.BatchV1Api(f.api).list_namespaced_job(NAMESPACE).items  # the hook's, gone on success
    assert not f.apps.list_namespaced_deployment(NAMESPACE).items
    assert not f.core.list_namespaced_pod(NAMESPACE).items


@contextlib.contextmanager
def _nodes_as_an_admins(f: Front) -> Iterator[None]:
    """The front's nodes as an admin's cluster has them for the bridge's own pods, which the
    kustomization places nowhere in particular: the real node without the dev environment's taint
    (kept for the chart's nodeSelector and tolerations), the KWOK node (whose containers never run)
    cordoned. Put back after."""
    taint = f"{keys.DEV_REAL_NODE_TAINT_KEY}:{keys.DEV_REAL_NODE_TAINT_EFFECT}"
    _kubectl(f.env, "taint", "node", "front-real-0", f"{taint}-")
    _kubectl(f.env, "cordon", "front-node-0")
    try:
        yield
    finally:
        _kubectl(f.env, "uncordon", "front-node-0")
        _kubectl(f.env, "taint", "node", "front-real-0", f"{taint}", "--overwrite")


def _submits_through_the_armada_api(
    f: Front, mode: str, image: str = runtime.NAME, through: tuple[str, bytes] | None = None
) -> None:
    """The installed Armada API's replicas run from the bridge's image on the front's real node,
    and `armada-client` submits a job through one of them over TLS (the certificates mode's
    certificate, its ca.crt trusted) as a team's ServiceAccount: a pod in the team's namespace and
    queue, run remotely. `through`: the address and CA a reader's port-forward gives (else a
    replica's pod address, the Secret's CA)."""
    _kubectl(f.env, "-n", NAMESPACE, "rollout", "status", f"deployment/{ARMADA_API}", "--timeout=300s")
    replicas = [p for p in _pods_of(f.core, ARMADA_API).values() if not p.metadata.deletion_timestamp]
    assert {c.image for p in replicas for c in p.spec.containers} == {image}, replicas
    ca = base64.b64decode(f.core.read_namespaced_secret(f"{ARMADA_API}-tls", NAMESPACE).data["ca.crt"])
    # The pod's address (this host reaches the pod network); the certificate names the Service.
    target = f"{replicas[0].status.pod_ip}:50051"
    if through:
        target, ca = through
    account = f"submitter-{mode}"
    f.core.create_namespaced_service_account("team", {"metadata": {"name": account}})
    k8s.RbacAuthorizationV1Api(f.api).create_namespaced_role_binding(
        "team", role_binding(f"{account}-edit", "edit", account, "team")
    )
    token = f.core.create_namespaced_service_account_token(
        account, "team", {"spec": {"expirationSeconds": 900}}
    ).status.token
    creds = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=ca), grpc.access_token_call_credentials(token)
    )
    override = [("grpc.ssl_target_name_override", f"{ARMADA_API}.{NAMESPACE}.svc")]
    # A real container on the remote cluster's real node (the KWOK nodes may be full of gangs by
    # now), its output read back through the front.
    said = f"hello through the Armada API installed by {mode}"
    spec = on_a_real_node({"containers": [{"name": "main", "image": "busybox", "command": ["echo", said]}]})
    pod_spec = json_format.ParseDict(spec, core_pb.PodSpec())
    resources = {"cpu": Quantity(string="100m"), "memory": Quantity(string="64Mi")}
    pod_spec.containers[0].resources.CopyFrom(
        core_pb.ResourceRequirements(requests=resources, limits=resources)
    )
    with grpc.secure_channel(target, creds, options=override) as channel:
        client = ArmadaClient(channel)
        item = client.create_job_request_item(namespace="team", pod_spec=pod_spec)
        response = client.submit_jobs(
            queue="team", job_set_id=f"through-the-{mode}", job_request_items=[item]
        )
    (job,) = response.job_response_items
    assert not job.error, job.error
    selector = f"{keys.ARMADA_JOB_ID_LABEL}={job.job_id}"

    def done() -> str | None:
        found = f.core.list_namespaced_pod("team", label_selector=selector).items
        return found[0].metadata.name if len(found) == 1 and found[0].status.phase == "Succeeded" else None

    try:
        name = wait_for("the job submitted through the installed Armada API done", done, timeout=180)
    except AssertionError as e:
        pods = f.core.list_namespaced_pod("team", label_selector=selector).items
        raise AssertionError(f"{e}\n{[_described(f, 'team', p.metadata.name) for p in pods]}") from None
    assert f.core.read_namespaced_pod_log(name, "team").strip() == said
    f.core.delete_namespaced_pod(name, "team")  # done: not one of the pods the next steps count
    wait_for(
        "the job's pod gone",
        lambda: not f.core.list_namespaced_pod("team", label_selector=selector).items,
        timeout=60,
    )


@contextlib.contextmanager
def _port_forward(admin: Admin) -> Iterator[tuple[str, bytes]]:
    """docs/guides/from-armada.md's port-forward to the installed Armada API, as a reader runs it
    (the CA written to armada-api-ca.crt, then `kubectl port-forward` on local port 8051): the
    address and CA it gives, while it runs."""
    forward = admin.begin("docs/guides/from-armada.md", "From your machine")
    ca = admin.cwd / "armada-api-ca.crt"

    def listening() -> bool:
        assert forward.shell.poll() is None, f"the port-forward ended: {forward.err.read_text()[-2000:]}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", 8051), timeout=1):
            return ca.stat().st_size > 0
        return False

    try:
        wait_for("the reader's port-forward listening, the CA written", listening, timeout=60)
        yield "127.0.0.1:8051", ca.read_bytes()
    finally:
        forward.stop()


def _kustomize(f: Front, tmp: Path) -> None:
    """docs/install.md's kustomize install, its commands as written: `kubectl apply -k manifests`
    (cert-manager's certificates), a RemoteCluster from a kubeconfig Secret, the front's scheduler
    pointed at the extender; the same work as through the chart; then `armada-bridge
    remove-clusters --all && kubectl delete -k manifests`, which leave nothing behind."""
    manifests = str(REPO_ROOT / "manifests")
    made = tmp / "kustomize.yaml"
    made.write_text(_kubectl(f.env, "kustomize", manifests))
    _kubectl(f.env, "apply", "-k", manifests)
    for name in (EXTENDER, VKUBELET):
        _kubectl(f.env, "-n", NAMESPACE, "rollout", "status", f"deployment/{name}", "--timeout=300s")
    kubeconfig = tmp / f"{REMOTE}.yaml"
    kubeconfig.write_text(_remote_kubeconfig(f.env, REMOTE))
    secret = ("create", "secret", "generic", f"{REMOTE}-kubeconfig", f"--from-file=kubeconfig={kubeconfig}")
    _kubectl(f.env, "-n", NAMESPACE, *secret)
    cluster_object = {"apiVersion": keys.API_VERSION, "kind": "RemoteCluster", "metadata": {"name": REMOTE}}
    _kubectl(f.env, "apply", "-f", "-", stdin=json.dumps(cluster_object))
    _running_from_the_image(f, "extender")
    _virtual_node_ready(f)
    _demo_operators(f)
    _point_scheduler(f)
    _teams(f)
    _work(f, "kustomize")
    # docs/armada-api.md's `kubectl apply -k manifests/armada-api`, after the bridge.
    _kubectl(f.env, "apply", "-k", str(ARMADA_API_MANIFESTS))
    _submits_through_the_armada_api(f, "kustomize")
    _kubectl(f.env, "-n", "demo", "delete", "pytorchjob,raycluster", "--all", "--wait=true")
    assert _remote_uids(f.remote)
    removal = subprocess.run(
        [sys.executable, "-m", "cli.main", "remove-clusters", "--all"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "KUBECONFIG": str(f.env.kubeconfig("front"))},
    )
    assert removal.returncode == 0, removal.stderr[-3000:]
    assert not _remote_uids(f.remote), "remote pods left after remove-clusters"
    _kubectl(f.env, "delete", "-k", str(ARMADA_API_MANIFESTS), "--wait=true", "--timeout=300s")
    _kubectl(f.env, "delete", "-k", manifests, "--wait=true", "--timeout=300s")
    left = _kubectl(f.env, "get", "-f", str(made), "--ignore-not-found", "-o", "name")
    assert not left.strip(), f"objects of the kustomization left after delete -k:\n{left}"
    assert f.cluster not in {n.metadata.name for n in f.core.list_node().items}


@pytest.mark.timeout(1200)
def test_the_install_guide_as_written_extender_mode_upgraded_failed_over_uninstalled(
    front: Front, tmp_path: Path
) -> None:
    """docs/guides/install.md's commands as written, in extender mode with Helm's own
    certificates: its image (as pulled), `helm install` with its values, the front's kube-scheduler
    pointed at the extender's Service (step 4, this environment's way), `clusters join`; worked;
    troubleshooting's commands for an installed chart; the guide's upgrade under load; each leader
    killed; the Armada API enabled as docs/guides/from-armada.md tells and used; `clusters leave`
    and `helm uninstall`. Every ```` ```sh chart ```` block of the docs runs here."""
    f = front
    admin = Admin(f, tmp_path)
    guide = "docs/guides/install.md"
    with _nodes_as_an_admins(f):
        _as_pulled(f, f"{GUIDE_IMAGE}:0.1.0")
        admin.run(guide, "3. Helm")
        _running_from_the_image(f, "extender", f"{GUIDE_IMAGE}:0.1.0")
        _demo_operators(f)
        _point_scheduler(f)
        admin.run(guide, "5. Join")
        f.cluster = GUIDE_CLUSTER
        _virtual_node_ready(f)
        _teams(f)
        _work(f, "extender")
        admin.run("docs/guides/troubleshooting.md", "A remote cluster")
        admin.run("docs/guides/troubleshooting.md", "Pods are Pending with no decision")
        upgraded = f"{GUIDE_IMAGE}:0.1.1"
        whole, after = _upgrade_under_load(f, upgraded, lambda: admin.begin(guide, "9. Upgrade"))
        _failovers(f, after)
        _free_room(f, whole)
        admin.run("docs/guides/from-armada.md", "2. Find the endpoint")
        with _port_forward(admin) as through:
            _submits_through_the_armada_api(f, "chart", upgraded, through)
        _uninstall(f, tmp_path, lambda: admin.run(guide, "10. Uninstall"))
    identity = f.remote.list_namespaced_service_account("kube-system").items
    assert "armada-bridge-remote" not in {a.metadata.name for a in identity}, (
        "`clusters leave` left the identity"
    )
    missed = [b.where for b in chart_blocks() if b not in admin.ran]
    assert not missed, f"```sh chart``` blocks of the docs no test runs: {missed}"


@pytest.mark.timeout(1200)
def test_chart_in_second_scheduler_mode_with_cert_managers_certificates(front: Front, tmp_path: Path) -> None:
    """The chart's own kube-scheduler in each extender pod (the front's scheduler left without the
    extender), cert-manager's certificates: worked, upgraded under load, uninstalled."""
    f = front
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values(f.env)))
    f.env.ensure_operators(["cert-manager"])
    _install(f, values_file, "second-scheduler", certificates="cert-manager")
    _demo_operators(f)
    _teams(f)
    _work(f, "second-scheduler")
    for p in f.core.list_namespaced_pod("team").items:
        assert p.spec.scheduler_name == "armada-bridge-scheduler", (p.metadata.name, p.spec.scheduler_name)
    upgraded = f"{runtime.NAME.rsplit(':', 1)[0]}:{UPGRADED_TAG}"
    whole, _ = _upgrade_under_load(f, upgraded, lambda: _helm_upgrade(f, tmp_path))
    _free_room(f, whole)
    _submits_through_the_armada_api(f, "chart-with-cert-manager", upgraded)
    _uninstall(f, tmp_path)


@pytest.mark.timeout(900)
def test_kustomize_installs_works_and_deletes_leaving_nothing(front: Front, tmp_path: Path) -> None:
    """docs/install.md's `kubectl apply -k manifests` (cert-manager's certificates), worked, and
    `kubectl delete -k manifests`."""
    front.env.ensure_operators(["cert-manager"])
    with _nodes_as_an_admins(front):
        _kustomize(front, tmp_path)
