"""Real nodes of the dev clusters: a real kubelet and container runtime beside the KWOK nodes of the
remote clusters, wherever a container must really run, and one in the front for the bridge's own
pods.

Each node is two supervised processes (containerd, kubelet; devenv.components) and a
directory of its own, `<state>/realnodes/<node>/`, that holds everything they write: the runtime's
root and state, kubelet's root, pod logs, IP leases. Its pods live in a cgroup root of its own and
get addresses from its block of the environment's pod network. `teardown` undoes all of it, and the
host's kernel tunables are put back once the last node is gone (devenv.realnode.host).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from devenv.base import ClusterError, log
from devenv.clients import certificate_kubeconfig
from devenv.components import Supervisor
from devenv.names import FRONT
from devenv.network import api_port, dns, services
from devenv.network.podnet import CNI_BIN_DIR, PodNetwork
from devenv.network.services import ClusterNetwork
from devenv.procs import kill_and_wait, pids_under
from devenv.realnode import containerd, host, kubelet

# Memory the environment's own processes (control planes, bridge, operators) keep from real nodes.
KEPT_FOR_THE_ENVIRONMENT = 4 * 2**30
# What the front's real node offers its pods, and the images it has (recipe keys).
# The chart's requests (two extenders of 500m/512Mi, two vkubelets of 200m/256Mi) and a rolling
# upgrade's surge (one more of each) beside them.
FRONT_SHARE_CPU_M = 3000
FRONT_SHARE_MEMORY = 4 * 2**30
FRONT_IMAGES = (
    "pause",
    "busybox",
    "bridge",
    "kube-scheduler",
    "ray",
)  # ray: a front client of a remote RayCluster
MAX_PODS = 30
# The front's also holds a relay pod for each front pod a Service selects in a Relay cluster.
FRONT_MAX_PODS = 200
# Ports of each real node, among the environment's ports (named `<kind>-<node>`).
PORT_KINDS = ("kubelet", "kubelet-healthz", "containerd-stream")
KUBELET_START = threading.Lock()
# Each remote cluster with real nodes also has these (named `<kind>-<cluster>`).
CLUSTER_PROCESSES = ("coredns", "kube-proxy")
# sun_path holds 108 bytes; containerd adds `.ttrpc` to its socket's path.
SOCKET_PATH_MAX = 100


@dataclass(frozen=True)
class RealNode:
    cluster: str
    index: int  # within its cluster
    number: int  # within the environment: its block of pod addresses

    @property
    def name(self) -> str:
        return f"{self.cluster}-real-{self.index}"


def plan(remotes: list[str], per_cluster: int) -> list[RealNode]:
    """`per_cluster` real nodes in each remote cluster and, when there are any, one in the front
    (the bridge's own pods run there when it is installed as an admin installs it: its image,
    its chart); the remotes' address blocks first."""
    nodes = [
        RealNode(cluster, i, n * per_cluster + i)
        for n, cluster in enumerate(remotes)
        for i in range(per_cluster)
    ]
    return [*nodes, RealNode(FRONT, 0, len(nodes))] if nodes else []


def images_for(node: RealNode) -> tuple[str, ...] | None:
    """The images (recipe keys) a node gets as it starts: the front's what the bridge's own pods and
    the tests' shells there run; a remote's every one it starts with (None: devenv.images.recipes
    `started_with`)."""
    return FRONT_IMAGES if node.cluster == FRONT else None


def require_host() -> None:
    """Real nodes need root (cgroups, mounts, network namespaces) and Debian's containerd, runc and
    CNI plugins; say what is missing."""
    if os.geteuid() != 0:
        raise ClusterError(
            "real nodes need root (cgroups, mounts, network namespaces): run as root, or --real-nodes 0"
        )
    missing = [
        c
        for c in ("containerd", "ctr", "runc", "ip", "nsenter", "iptables-restore", "socat")
        if shutil.which(c) is None
    ]
    if not (CNI_BIN_DIR / "bridge").is_file():
        missing.append(str(CNI_BIN_DIR / "bridge"))
    if missing:
        raise ClusterError(
            f"real nodes need {', '.join(missing)}: apt-get install containerd runc containernetworking-plugins "
            "iproute2 util-linux iptables socat (hack/setup.sh does), or --real-nodes 0"
        )


def port_names(node: RealNode) -> list[str]:
    return [f"{kind}-{node.name}" for kind in PORT_KINDS]


def reserved_for(node: RealNode, remote_nodes: int) -> dict[str, str]:
    """What `node` keeps from its pods (kubelet's systemReserved): the remote clusters' real nodes
    together offer the host once (host_share); the front's offers FRONT_SHARE beside them (the
    bridge's own few pods: the host's CPUs are shared anyway)."""
    if node.cluster != FRONT:
        return host_share(remote_nodes)
    return _reserving(FRONT_SHARE_CPU_M, FRONT_SHARE_MEMORY)


def host_share(nodes: int) -> dict[str, str]:
    """What each of `nodes` real nodes reserves so that together they offer the host once: its CPUs
    and its memory less what the environment itself needs (kubelet's systemReserved)."""
    cpu_m, mem = _host()
    return _reserving(cpu_m // nodes, max(mem - KEPT_FOR_THE_ENVIRONMENT, 2**30) // nodes)


def _host() -> tuple[int, int]:
    """The host's CPUs (milli) and memory (bytes)."""
    return (os.cpu_count() or 1) * 1000, os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _reserving(cpu_m: int, memory: int) -> dict[str, str]:
    """systemReserved that leaves a node `cpu_m` and `memory` of the host's."""
    host_cpu_m, host_mem = _host()
    return {"cpu": f"{max(host_cpu_m - cpu_m, 0)}m", "memory": str(max(host_mem - memory, 0))}


class RealNodes:
    def __init__(self, state_dir: Path, supervisor: Supervisor, network: PodNetwork) -> None:
        self.dir = state_dir / "realnodes"
        self.supervisor = supervisor
        self.network = network
        self.host = host.HostRecord(self.dir)
        self.env_id = network.bridge.removeprefix("abr-")

    def node_dir(self, node: RealNode) -> Path:
        return self.node_dir_of(node.name)

    def node_dir_of(self, name: str) -> Path:
        return self.dir / name

    def cgroup_root(self, name: str) -> str:
        return f"/armada-bridge-{self.env_id}/{name}"

    def processes(self, cluster: str) -> list[str]:
        """The supervised processes of `cluster`'s real nodes, and its DNS and kube-proxy when it
        has any."""
        nodes = [n for n in self.existing() if n.startswith(f"{cluster}-real-")]
        return [f"{kind}-{n}" for n in nodes for kind in ("containerd", "kubelet")] + (
            [f"{kind}-{cluster}" for kind in CLUSTER_PROCESSES] if nodes else []
        )

    def existing(self) -> list[str]:
        """The real nodes started in this environment (each has its directory)."""
        if not self.dir.is_dir():
            return []
        return sorted(p.name for p in self.dir.iterdir() if p.is_dir() and "-real-" in p.name)

    # ------------------------------------------------------------------ up
    def prepare(self) -> None:
        """Before the first real node (or the front listening on the pod network): record the host
        as found, make the pod network's bridge. Kept when done already."""
        self.dir.mkdir(parents=True, exist_ok=True)  # the record's holder while it exists
        self.host.take()
        self.network.create()

    def ensure(
        self,
        node: RealNode,
        *,
        server: str,
        pki: Path,
        ports: Mapping[str, int],
        reserved: dict[str, str],
        images: Mapping[Path, str],
        kubelet_binary: Path,
        cluster_net: ClusterNetwork,
        cluster_dns: str,
    ) -> None:
        """Start (or keep) `node`'s containerd and kubelet, in its cluster's network namespace
        (`cluster_net`), registered with the cluster at `server` (an address reachable from there)
        whose CA is in `pki`, its pods resolving names at `cluster_dns`; its images imported (after
        `ensure_cluster`)."""
        d = self.node_dir(node)
        if len(str(containerd.socket(d))) > SOCKET_PATH_MAX:
            raise ClusterError(
                f"{containerd.socket(d)}: longer than a Unix socket path may be ({SOCKET_PATH_MAX} characters "
                "with containerd's suffixes): use a shorter state directory (ARMADA_BRIDGE_STATE)"
            )
        d.mkdir(parents=True, exist_ok=True)
        host.create_cgroup_root(self.cgroup_root(node.name))
        self.network.write_cni_config(
            node.number, d / "cni", d / "ip-leases", services.INNER_BRIDGE, cluster_net.gateway
        )
        kubelet_port, healthz_port, stream_port = (ports[n] for n in port_names(node))
        runtime = containerd.component(node.name, d, stream_port, cluster_net.netns_path)
        self.supervisor.ensure(runtime)
        self._wait_for_socket(runtime.name, containerd.socket(d))
        imported = containerd.import_images(d, images)
        if imported:
            log(f"{node.name}: imported {', '.join(p.name for p in imported)}")
        ca = (pki / "ca.crt", pki / "ca.key")
        config = kubelet.configuration(
            address=cluster_net.node_address,
            port=kubelet_port,
            healthz_port=healthz_port,
            cgroup_root=self.cgroup_root(node.name),
            client_ca=ca[0],
            runtime_socket=containerd.socket(d),
            pod_logs=d / "pod-logs",
            reserved=reserved,
            max_pods=FRONT_MAX_PODS if node.cluster == FRONT else MAX_PODS,
            cluster_dns=cluster_dns,
        )
        agent = kubelet.component(
            kubelet_binary,
            node.name,
            d,
            config,
            kubelet.kubeconfig(node.name, server, ca, d),
            cluster_net.netns_path,
        )
        # kubelet's device plugin socket has one path on the host, whatever its root: one kubelet
        # at a time makes it.
        with KUBELET_START:
            self.supervisor.ensure(agent)
            self.supervisor.wait_ready(agent, timeout=60)

    def ensure_cluster(
        self, cluster: str, index: int, kubeconfig: Path, ready_port: int, coredns: Path
    ) -> tuple[ClusterNetwork, str]:
        """Before the real nodes of the `index`-th remote cluster, `cluster`: its network namespace
        (devenv.network.services) and its DNS; return them (the DNS's address)."""
        cluster_net = ClusterNetwork(self.network, cluster, index)
        cluster_net.create()
        listen = dns.address(self.network, index)
        self.network.add_address(listen)
        server = dns.component(coredns, cluster, listen, kubeconfig, ready_port, self.dir / "dns")
        self.supervisor.ensure(server)
        self.supervisor.wait_ready(server, timeout=60)
        return cluster_net, listen

    def ensure_services(
        self, cluster_net: ClusterNetwork, server: str, pki: Path, node: str, binary: Path
    ) -> None:
        """Once the cluster has a real node (`node`): its kube-proxy, reaching the API server at
        `server` (an address of the host's on the pod network) as `system:kube-proxy`."""
        ca = (pki / "ca.crt", pki / "ca.key")
        kubeconfig = certificate_kubeconfig(
            self.dir / f"kube-proxy-{cluster_net.cluster}.kubeconfig",
            server,
            ca,
            "/CN=system:kube-proxy",
            f"kube-proxy-{cluster_net.cluster}",
        )
        proxy = cluster_net.kube_proxy(binary, kubeconfig, node)
        self.supervisor.ensure(proxy)
        self.supervisor.wait_ready(proxy, timeout=60)

    def _wait_for_socket(self, name: str, socket: Path, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not socket.exists():
            if self.supervisor.pid(name) is None:
                raise ClusterError(f"{name} exited at start:\n{self.supervisor.tail(name)}")
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{name}: no socket {socket} after {timeout:.0f}s:\n{self.supervisor.tail(name)}"
                )
            time.sleep(0.1)

    def import_images(self, name: str, archives: Mapping[Path, str]) -> list[Path]:
        """Import into node `name` the archives (each with its image's name) it lacks."""
        return containerd.import_images(self.node_dir_of(name), archives)

    # ------------------------------------------------------------------ down
    def teardown(self, name: str) -> list[str]:
        """Stop node `name` and remove every trace of it on the host (its containers, mounts and
        cgroups); its directory goes with the state directory. Return what could not be undone."""
        d = self.dir / name
        self.supervisor.stop(f"kubelet-{name}")
        stuck = host.kill_cgroup(self.cgroup_root(name))
        # The runtime's shims name the node's socket on their command line.
        stuck += kill_and_wait(pids_under(d))
        self.supervisor.stop(f"containerd-{name}")
        stuck += kill_and_wait(pids_under(d))
        block = self.network.block_of(d / "cni")
        if block:  # its pods' network namespaces (containerd keeps them outside the node's directory)
            self.network.delete_namespaces(block)
        host.unmount_under(d)
        problems = [f"{name}: processes {stuck} survived SIGKILL"] if stuck else []
        problems += host.remove_cgroup_root(self.cgroup_root(name))
        remaining = host.mounts_under(d)
        if remaining:
            problems.append(f"{name}: still mounted: {', '.join(remaining)}")
        return problems

    def teardown_cluster(self, cluster: str) -> None:
        """What `cluster` has for its real nodes (after they are gone): DNS, kube-proxy, the host's
        route to its Services, network namespace."""
        for kind in CLUSTER_PROCESSES:
            self.supervisor.stop(f"{kind}-{cluster}")
        if cluster == FRONT:
            services.delete_routes(self.network)
        services.delete_namespace(self.network, cluster)

    def teardown_all(self) -> list[str]:
        """Every real node of the environment, then its clusters' parts, the pod network, the
        host's tunables."""
        problems = []
        for name in self.existing():
            problems += self.teardown(name)
            host.remove_empty_parents(self.cgroup_root(name))
        clusters = {
            name.removeprefix(f"{kind}-")
            for name in self.supervisor.names()
            for kind in CLUSTER_PROCESSES
            if name.startswith(f"{kind}-")
        }
        for cluster in sorted(clusters | set(services.clusters_with_namespace(self.network))):
            self.teardown_cluster(cluster)
        services.delete_host_veths(self.network)
        self.supervisor.stop(api_port.NAME)
        self.network.delete()
        problems += self.host.restore()
        return problems
