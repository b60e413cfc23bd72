"""Pure pieces of the dev environment's real nodes: image archives, the pod network's address plan,
how a pod asks for a real node, kwokctl's argument order, the host share, the host's record of
what kubelet changes, held by environments going down in any order."""

from __future__ import annotations

import hashlib
import io
import ipaddress
import json
import os
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from armada_bridge import keys
from devenv.images import recipes
from devenv.images.oci import (
    CONTAINERD_NAME,
    DOCKER_MANIFEST,
    REF_NAME,
    ImageConfig,
    full_name,
    image_name,
    write_archive,
)
from devenv.network import dns
from devenv.network.podnet import NetworkError, PodNetwork
from devenv.network.services import INNER_BRIDGE, ClusterNetwork
from devenv.processes.control_plane import interleaved
from devenv.realnode import host, node
from devenv.realnode.placement import on_a_real_node


@pytest.mark.parametrize(
    ("name", "full"),
    [
        ("busybox", "docker.io/library/busybox:latest"),
        ("apache/spark:4.0.4", "docker.io/apache/spark:4.0.4"),
        ("quay.io/argoproj/argoexec:v3.7.18", "quay.io/argoproj/argoexec:v3.7.18"),
        ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
        ("localhost/x", "localhost/x:latest"),
        ("armada-bridge.local/python:3-bookworm", "armada-bridge.local/python:3-bookworm"),
    ],
)
def test_image_names_are_normalised_as_containerd_and_kubelet_do(name: str, full: str) -> None:
    assert full_name(name) == full


def test_an_image_archive_is_an_oci_layout_whose_digests_hold(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs.tar"
    with tarfile.open(rootfs, "w") as t:
        info = tarfile.TarInfo("hello")
        info.size = 2
        t.addfile(info, io.BytesIO(b"hi"))
    target = tmp_path / "image.tar"
    digest = write_archive(
        rootfs, "busybox", ImageConfig(env={"PATH": "/bin"}, cmd=["sh"], user="185"), target
    )
    with tarfile.open(target) as t:
        blobs = {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}  # type: ignore[union-attr]
    for path, data in blobs.items():
        if path.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == path.rsplit("/", 1)[1]
    index = json.loads(blobs["index.json"])
    (entry,) = index["manifests"]
    assert entry["digest"] == digest
    assert entry["annotations"][CONTAINERD_NAME] == "docker.io/library/busybox:latest"
    assert entry["annotations"][REF_NAME] == "docker.io/library/busybox:latest"  # podman's name for it
    assert image_name(target) == "docker.io/library/busybox:latest"  # what a node checks it has
    manifest = json.loads(blobs[f"blobs/sha256/{digest[7:]}"])
    config = json.loads(blobs[f"blobs/sha256/{manifest['config']['digest'][7:]}"])
    assert config["config"] == {"Env": ["PATH=/bin"], "Cmd": ["sh"], "User": "185", "WorkingDir": "/"}
    (layer,) = manifest["layers"]
    assert config["rootfs"]["diff_ids"] == [layer["digest"]]
    assert blobs[f"blobs/sha256/{layer['digest'][7:]}"] == rootfs.read_bytes()
    assert json.loads(blobs["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    # The docker-archive manifest (`docker load`): the same config and layer blobs, the full name.
    (docker,) = json.loads(blobs[DOCKER_MANIFEST])
    assert docker == {
        "Config": f"blobs/sha256/{manifest['config']['digest'][7:]}",
        "RepoTags": ["docker.io/library/busybox:latest"],
        "Layers": [f"blobs/sha256/{layer['digest'][7:]}"],
    }


def test_real_nodes_get_disjoint_address_blocks_of_one_flat_network(tmp_path: Path) -> None:
    net = PodNetwork(bridge="abr-00000001", subnet="10.77.0.0/16")
    assert net.gateway == "10.77.0.1"
    blocks = [net.node_range(i) for i in range(4)]
    assert blocks[0] == ("10.77.1.1", "10.77.1.254")
    addresses = [ipaddress.ip_address(a) for block in blocks for a in block]
    assert addresses == sorted(addresses)  # in order, none overlapping
    assert all(a in net.network for a in addresses)
    # The clusters' DNS addresses sit below the first node's block, apart from the gateway.
    dns_addresses = {dns.address(net, k) for k in (1, 2, 3)}
    assert dns_addresses == {"10.77.0.11", "10.77.0.12", "10.77.0.13"} and net.gateway not in dns_addresses
    with pytest.raises(NetworkError, match="no address block left"):
        net.node_range(255)
    # A cluster's router (its Services' gateway) sits there too.
    router = ClusterNetwork(net, "remote-2", 2)
    assert router.gateway == "10.77.0.32" and router.gateway not in dns_addresses | {net.gateway}
    assert (router.namespace, router.host_veth) == ("abr-00000001-remote-2", "abr-00000001-2")
    conf = net.cni_config(2, tmp_path, INNER_BRIDGE, router.gateway)
    bridge, loopback = conf["plugins"]
    assert (
        bridge["type"],
        bridge["bridge"],
        bridge["ipMasq"],
        bridge["isDefaultGateway"],
        loopback["type"],
    ) == (
        "bridge",
        INNER_BRIDGE,
        False,
        True,
        "loopback",
    )
    ((pool,),) = bridge["ipam"]["ranges"]
    assert pool == {
        "subnet": net.subnet,
        "rangeStart": "10.77.3.1",
        "rangeEnd": "10.77.3.254",
        "gateway": router.gateway,
    }
    assert bridge["ipam"]["dataDir"] == str(tmp_path)
    # A node's block is read back from its configuration when the node goes (its pods' namespaces).
    net.write_cni_config(2, tmp_path / "cni", tmp_path, INNER_BRIDGE, router.gateway)
    assert PodNetwork.block_of(tmp_path / "cni") == ("10.77.3.1", "10.77.3.254")
    assert PodNetwork.block_of(tmp_path / "none") is None


def test_a_pod_asks_for_a_real_node_in_every_term_of_its_own_affinity() -> None:
    spec = on_a_real_node({"containers": [{"name": "c", "image": "busybox"}]})
    assert spec["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert spec["tolerations"] == [
        {"key": keys.DEV_REAL_NODE_TAINT_KEY, "operator": "Exists", "effect": keys.DEV_REAL_NODE_TAINT_EFFECT}
    ]
    not_kwok = {"key": keys.NODE_TYPE_LABEL, "operator": "NotIn", "values": [keys.DEV_NODE_TYPE_VALUE]}
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [not_kwok]}]
    zone = {"key": "zone", "operator": "In", "values": ["a"]}
    own = {
        "containers": [{"name": "c", "image": "x", "imagePullPolicy": "Always"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchFields": []}]
                }
            }
        },
    }
    terms = on_a_real_node(own)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [
        {"matchExpressions": [zone, not_kwok]},
        {"matchFields": [], "matchExpressions": [not_kwok]},
    ]
    assert own["containers"][0]["imagePullPolicy"] == "Always"  # the pod's own word stands


def test_kwokctl_extra_args_first_name_each_component_at_its_position() -> None:
    args = ["a=1", "a=2", "a=3", "b=1", "c=1", "b=2"]
    assert interleaved(args) == ["a=1", "b=1", "c=1", "a=2", "b=2", "a=3"]
    assert interleaved([]) == []


def test_real_nodes_together_offer_the_host_once() -> None:
    one, two = node.host_share(1), node.host_share(2)
    assert one["cpu"] == "0m"
    cpu_m = int(two["cpu"].removesuffix("m"))
    assert 0 < cpu_m < 100_000  # half the CPUs reserved on each of two
    assert int(two["memory"]) > int(one["memory"])
    plan = node.plan(["remote-1", "remote-2"], 2)
    assert [(n.name, n.number) for n in plan] == [
        ("remote-1-real-0", 0),
        ("remote-1-real-1", 1),
        ("remote-2-real-0", 2),
        ("remote-2-real-1", 3),
        ("front-real-0", 4),  # the bridge's own pods' node, its address block after the remotes'
    ]
    assert node.plan(["remote-1"], 0) == []
    front = plan[-1]
    assert node.images_for(front) == node.FRONT_IMAGES and node.images_for(plan[0]) is None
    # A remote node starts with every image but the training frameworks' (imported on demand).
    assert "python" in recipes.started_with() and "tensorflow" not in recipes.started_with()
    # The front's node offers its own share beside the remotes' (which offer the host once).
    assert node.reserved_for(plan[0], 4) == node.host_share(4)
    cpus = (os.cpu_count() or 1) * 1000
    assert int(node.reserved_for(front, 4)["cpu"].removesuffix("m")) == max(cpus - node.FRONT_SHARE_CPU_M, 0)


def _fake_host(tmp_path: Path) -> tuple[Path, Path, Callable[[str], host.HostRecord]]:
    """A /proc/sys of kubelet's tunables at their kernel defaults, a runtime directory absent,
    and the host record of an environment's directory."""
    proc_sys = tmp_path / "proc-sys"
    for key in host.KUBELET_SYSCTLS:
        (proc_sys / key).parent.mkdir(parents=True, exist_ok=True)
        (proc_sys / key).write_text("0\n")
    runtime = tmp_path / "run-netns"

    def record(env: str) -> host.HostRecord:
        (tmp_path / env).mkdir(exist_ok=True)
        return host.HostRecord(
            tmp_path / env, path=tmp_path / "run" / "host.json", proc_sys=proc_sys, runtime_dirs=(runtime,)
        )

    return proc_sys, runtime, record


def _kubelet_starts(proc_sys: Path, runtime: Path) -> None:
    for key in host.KUBELET_SYSCTLS:
        (proc_sys / key).write_text("1\n")
    (runtime / "cni-1").mkdir(parents=True, exist_ok=True)


@pytest.mark.parametrize("first_down", ["a", "b"])
def test_the_host_goes_back_when_the_last_environment_goes_in_any_order(
    tmp_path: Path, first_down: str
) -> None:
    proc_sys, runtime, record = _fake_host(tmp_path)
    found = host.read_sysctls(proc_sys)
    a, b = record("a"), record("b")
    a.take()
    _kubelet_starts(proc_sys, runtime)
    b.take()  # after a's kubelet: what b sees is not what the host was
    first, last = (a, b) if first_down == "a" else (b, a)
    assert first.restore() == []
    # The other environment's kubelets and containers still run: nothing is put back under them.
    assert host.read_sysctls(proc_sys) == {k: "1" for k in host.KUBELET_SYSCTLS}
    assert runtime.is_dir()
    assert last.restore() == []
    assert host.read_sysctls(proc_sys) == found
    assert not runtime.exists()
    assert not (tmp_path / "run" / "host.json").exists()


def test_an_environment_removed_without_going_down_holds_nothing(tmp_path: Path) -> None:
    proc_sys, runtime, record = _fake_host(tmp_path)
    found = host.read_sysctls(proc_sys)
    gone, a = record("gone"), record("a")
    gone.take()
    _kubelet_starts(proc_sys, runtime)
    (tmp_path / "gone").rmdir()  # its state directory deleted by hand
    a.take()  # the first live holder: the record it finds is kept, the dead holder dropped
    assert a.load()["holders"] == [str(tmp_path / "a")]
    assert a.restore() == []
    assert host.read_sysctls(proc_sys) == found
