"""The network side of a dev cluster that has real nodes: its pods' network, Services (ClusterIPs)
that work, and everything its nodes write to the network stack kept off the host's.

Each such cluster has a network namespace of its own on the host, `<bridge>-<cluster>`, in which
its real nodes' containerd and kubelet and the cluster's kube-proxy run. Its pods hang off a bridge
inside it (CNI's "host" is that namespace), whose address (the router) is their default gateway:
what is not on the pod network, a ClusterIP, goes there, where kube-proxy (iptables mode, SNAT of
all Service traffic so that replies come back through it) sends it on to an endpoint.

- Flat network: that bridge is joined to the host's bridge by a veth pair, so every pod reaches
  every other pod and the host at layer 2; the router's address is the nodes' address too.
- Isolated network: a veth pair links the namespace to the host on a /24 of its own (the nodes'
  address is the namespace's end, its default route the host's end). Pods reach the host's own
  addresses only (a filter), under the nodes' address (NAT), as from any cluster's nodes; the
  host's forwarding stays off, so no cluster reaches another. Only the front's pods are routed to
  from the host (`route_from_host`), for its control plane.

kube-proxy's and kubelet's iptables rules, the filter and NAT, forwarding and the veth live in that
namespace only: deleting it deletes them all. Processes in it reach the host (its API servers) at
the host's address on the pod network, not at loopback.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from devenv.components import Component
from devenv.network.podnet import LINK_PREFIX, PREFIX, NetworkError, PodNetwork, ip

FIRST_ROUTER_HOST = 30  # flat: cluster k's router is the network's address number 30 + k (below node blocks)
INNER_BRIDGE = "cbr0"  # the pods' bridge inside a cluster's namespace
UPLINK = "uplink"  # the veth end inside the namespace, on that bridge
HEALTHZ_PORT = 10256  # kube-proxy's, on the router's address (the namespace's own ports)
NETNS_DIR = Path("/run/netns")  # where `ip netns` keeps named namespaces


@dataclass(frozen=True)
class ClusterNetwork:
    network: PodNetwork
    cluster: str
    index: int  # the cluster's number: the front 0, the remote clusters 1, 2, ...

    @property
    def namespace(self) -> str:
        return namespace_name(self.network, self.cluster)

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.namespace

    @property
    def isolated(self) -> bool:
        return bool(self.network.outside)

    @property
    def gateway(self) -> str:
        """The router's address: the gateway of the cluster's pods (isolated: the same in every
        cluster, as their pod ranges are)."""
        if self.isolated:
            return self.network.gateway
        return str(self.network.network.network_address + FIRST_ROUTER_HOST + self.index)

    @property
    def node_address(self) -> str:
        """The address of the cluster's nodes (kubelet, kube-proxy), where its API server reaches them."""
        return self.network.cluster_side(self.index) if self.isolated else self.gateway

    @property
    def host_veth(self) -> str:
        name = f"{self.network.bridge}-{self.index}"
        if len(name) > 15:
            raise NetworkError(f"{name}: longer than a link name may be (15)")
        return name

    def exists(self) -> bool:
        return self.netns_path.exists()

    def create(self) -> None:
        """The namespace, its bridge with the router's address, the veth to the host's bridge, and
        forwarding on inside it; kept when it is there."""
        if not self.exists():
            ip("netns", "add", self.namespace)
        inside = ("-n", self.namespace)
        ip(*inside, "link", "set", "dev", "lo", "up")
        if ip(*inside, "link", "show", "dev", INNER_BRIDGE, check=False).returncode != 0:
            ip(*inside, "link", "add", "name", INNER_BRIDGE, "type", "bridge")
        if self.gateway not in _addresses(self.namespace, INNER_BRIDGE):
            ip(*inside, "addr", "add", f"{self.gateway}/{PREFIX}", "dev", INNER_BRIDGE)
        ip(*inside, "link", "set", "dev", INNER_BRIDGE, "up")
        if ip(*inside, "link", "show", "dev", UPLINK, check=False).returncode != 0:
            # A host end left from an earlier namespace of this name (its peer went with it) goes.
            ip("link", "delete", "dev", self.host_veth, check=False)
            ip("link", "add", self.host_veth, "type", "veth", "peer", "name", UPLINK, "netns", self.namespace)
        if self.isolated:
            self._link_to_host()
        else:
            ip("link", "set", "dev", self.host_veth, "master", self.network.bridge, "up")
            ip(*inside, "link", "set", "dev", UPLINK, "master", INNER_BRIDGE, "up")
        self._in_namespace("sh", "-c", "echo 1 > /proc/sys/net/ipv4/ip_forward")

    def _link_to_host(self) -> None:
        """Isolated: the namespace's own link to the host, its default route; its pods reach the
        host's addresses only, as its nodes (NAT), unless it is the front (routed from the host)."""
        inside = ("-n", self.namespace)
        host_side, cluster_side = self.network.host_side(self.index), self.network.cluster_side(self.index)
        if host_side not in _addresses(None, self.host_veth):
            ip("addr", "add", f"{host_side}/{LINK_PREFIX}", "dev", self.host_veth)
        ip("link", "set", "dev", self.host_veth, "up")
        if cluster_side not in _addresses(self.namespace, UPLINK):
            ip(*inside, "addr", "add", f"{cluster_side}/{LINK_PREFIX}", "dev", UPLINK)
        ip(*inside, "link", "set", "dev", UPLINK, "up")
        ip(*inside, "route", "replace", "default", "via", host_side, "dev", UPLINK)
        if self.index == 0:
            return  # the front: the host routes its pod range here, its pods keep their addresses
        host_addresses = f"{self.network.host_address}/{LINK_PREFIX}"
        rules = [
            ("nat", "POSTROUTING", "-s", self.network.subnet, "-o", UPLINK, "-j", "MASQUERADE"),
            ("filter", "FORWARD", "-i", INNER_BRIDGE, "-o", UPLINK, "-d", host_addresses, "-j", "ACCEPT"),
            ("filter", "FORWARD", "-i", INNER_BRIDGE, "-o", UPLINK, "-j", "REJECT"),
        ]
        for table, chain, *rule in rules:
            if not self._in_namespace("iptables", "-w", "-t", table, "-C", chain, *rule, check=False):
                self._in_namespace("iptables", "-w", "-t", table, "-A", chain, *rule)

    def route_from_host(self, cidr: str) -> None:
        """The host reaches `cidr` (the cluster's Service range; isolated, its pod range too)
        through the cluster's namespace, where kube-proxy sends it on; the route goes with the host
        bridge or the cluster's link (or `delete_routes`)."""
        if self.isolated:
            ip("route", "replace", cidr, "via", self.node_address, "dev", self.host_veth)
        else:
            ip("route", "replace", cidr, "via", self.gateway, "dev", self.network.bridge)

    def _in_namespace(self, *argv: str, check: bool = True) -> bool:
        """Run `argv` in the namespace; whether it succeeded (NetworkError if not, with `check`)."""
        r = subprocess.run(
            ["nsenter", f"--net={self.netns_path}", "--", *argv], capture_output=True, text=True, check=False
        )
        if r.returncode != 0 and check:
            raise NetworkError(f"in {self.namespace}: `{' '.join(argv)}` failed: {r.stderr.strip()}")
        return r.returncode == 0

    # ------------------------------------------------------------------ kube-proxy
    def kube_proxy(self, binary: Path, kubeconfig: Path, node: str) -> Component:
        """The cluster's kube-proxy, in its namespace, watching the API server through `kubeconfig`
        (which must name an address reachable from the namespace: the host's on the pod network) as
        the kube-proxy of `node`, one of its nodes. Every conntrack setting is left as the kernel
        has it (those are the host's)."""
        return Component(
            name=f"kube-proxy-{self.cluster}",
            argv=[
                str(binary),
                f"--kubeconfig={kubeconfig}",
                f"--hostname-override={node}",
                "--proxy-mode=iptables",
                "--masquerade-all",
                f"--cluster-cidr={self.network.subnet}",
                f"--bind-address={self.node_address}",
                f"--healthz-bind-address={self.node_address}:{HEALTHZ_PORT}",
                "--metrics-bind-address=127.0.0.1:10249",
                f"--nodeport-addresses={self.node_address}/32",
                "--conntrack-max-per-core=0",
                "--conntrack-tcp-timeout-established=0",
                "--conntrack-tcp-timeout-close-wait=0",
                "--conntrack-udp-timeout=0",
                "--conntrack-udp-timeout-stream=0",
            ],
            ready_url=f"http://{self.node_address}:{HEALTHZ_PORT}/healthz",
            follows_code=False,
            inputs=kubeconfig.read_text(),
            netns=self.netns_path,
        )


def namespace_name(network: PodNetwork, cluster: str) -> str:
    return f"{network.bridge}-{cluster}"


def clusters_with_namespace(network: PodNetwork) -> list[str]:
    """The clusters whose network namespace is on the host."""
    prefix = f"{network.bridge}-"
    names = sorted(p.name for p in NETNS_DIR.iterdir()) if NETNS_DIR.is_dir() else []
    return [n.removeprefix(prefix) for n in names if n.startswith(prefix)]


def delete_namespace(network: PodNetwork, cluster: str) -> None:
    """`cluster`'s namespace (its bridge and kube-proxy's and kubelet's rules go with it) and the
    host's end of its veth, deleted as such: a namespace lasts while anything still holds it, and
    its veth with it."""
    namespace = namespace_name(network, cluster)
    if not (NETNS_DIR / namespace).exists():
        return
    uplink = json.loads(ip("-j", "-n", namespace, "link", "show", "dev", UPLINK, check=False).stdout or "[]")
    peer = uplink[0].get("link_index") if uplink else None
    ip("netns", "delete", namespace, check=False)
    for link in json.loads(ip("-j", "link", "show", "type", "veth", check=False).stdout or "[]"):
        if link.get("ifindex") == peer and str(link.get("ifname", "")).startswith(f"{network.bridge}-"):
            ip("link", "delete", "dev", link["ifname"], check=False)


def delete_routes(network: PodNetwork) -> None:
    """The host's routes through a cluster's router (`route_from_host`): those on the host bridge
    with a next hop."""
    for route in json.loads(ip("-j", "route", "show", "dev", network.bridge, check=False).stdout or "[]"):
        if route.get("gateway"):
            ip("route", "delete", route["dst"], "via", route["gateway"], "dev", network.bridge, check=False)


def delete_host_veths(network: PodNetwork) -> None:
    """Whatever host end of a cluster's veth is still there (its namespace was held past deletion)."""
    for link in json.loads(ip("-j", "link", "show", "type", "veth", check=False).stdout or "[]"):
        if str(link.get("ifname", "")).startswith(f"{network.bridge}-"):
            ip("link", "delete", "dev", link["ifname"], check=False)


def _addresses(namespace: str | None, link: str) -> set[str]:
    where = ("-n", namespace) if namespace else ()
    out = json.loads(ip("-j", *where, "addr", "show", "dev", link).stdout or "[]")
    return {a.get("local", "") for entry in out for a in entry.get("addr_info", [])}
