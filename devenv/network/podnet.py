"""The dev environment's pod networks, in one of two shapes (`dev up --network`):

- isolated (the default), as clusters usually are: each cluster's pods on a network of its own,
  every cluster with the same pod range (`subnet`), no route from one cluster's pods to another's.
  Each cluster's network namespace (devenv.network.services) is joined to the host by a veth pair
  of its own, on a link network of its own (`outside`, one /24 each); the host keeps its forwarding
  off, so what a cluster's pods send the host reaches the host's own addresses only: the API servers,
  the clusters' DNS and the bridge's processes listen at `host_address` (the API servers' "load
  balancer"), on a bridge of the host's with no port. The host routes the front's pod and Service
  ranges to the front's namespace (its control plane calls webhooks, an extender, pods' proxies);
  the remote clusters' pods it does not reach at all.
- flat: one IPv4 network for the pods of every cluster, as in production setups where pod
  addresses are routable across clusters. A Linux bridge on the host holds the network's first
  address (where pods reach the host); each cluster's namespace hangs off it by a veth pair, so
  every pod reaches every other pod and the host at layer 2.

Either way each real node gives its pods addresses from a block of its own inside `subnet` (CNI
`bridge` + `host-local`, Debian's containernetworking-plugins): blocks are numbered across the
environment, so a pod's address tells its node (and the teardown finds its sandboxes by them).
Nothing is written to the host's iptables; what a cluster's namespace needs (NAT, filters) lives and
dies with it.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CNI_BIN_DIR = Path("/usr/lib/cni")  # Debian's containernetworking-plugins
NETWORK_NAME = "armada-bridge"
PREFIX = 16
NODE_BLOCK = 256  # addresses per real node
SERVICE_PREFIX = 24  # the front cluster's Service range
LINK_PREFIX = 24  # isolated: the host's addresses, and each cluster's link to the host
FLAT, ISOLATED = "flat", "isolated"
MODES = (ISOLATED, FLAT)


class NetworkError(RuntimeError):
    pass


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and r.returncode != 0:
        raise NetworkError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


@dataclass(frozen=True)
class PodNetwork:
    bridge: str  # the host bridge's name (at most 15 characters)
    subnet: str  # e.g. 10.123.0.0/16: every cluster's pods (flat: all on one network)
    # Isolated: a /16 of the host's addresses (its first /24) and the clusters' links (one /24
    # each, after it); "" for a flat network.
    outside: str = ""

    @property
    def mode(self) -> str:
        return ISOLATED if self.outside else FLAT

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.subnet)

    @property
    def gateway(self) -> str:
        """The subnet's first address: flat, the host's on its bridge; isolated, each cluster's
        router, in its namespace."""
        return str(self.network.network_address + 1)

    def _outside(self, link: int, host: int) -> str:
        return str(ipaddress.IPv4Network(self.outside).network_address + 256 * link + host)

    @property
    def host_address(self) -> str:
        """Where pods reach the host's processes (API servers, the bridge's): the load balancer's
        address, as it were."""
        return self._outside(0, 1) if self.outside else self.gateway

    @property
    def host_prefix(self) -> int:
        """The prefix of the host's addresses on its bridge."""
        return LINK_PREFIX if self.outside else PREFIX

    def host_side(self, index: int) -> str:
        """Isolated: the host's address on cluster `index`'s link (the cluster's default route)."""
        return self._outside(index + 1, 1)

    def cluster_side(self, index: int) -> str:
        """Isolated: cluster `index`'s address on its link: its nodes' address."""
        return self._outside(index + 1, 2)

    def service_address(self, number: int) -> str:
        """The host's address number `number` on its bridge (a service of the host's pods reach,
        such as a cluster's DNS)."""
        if self.outside:
            return self._outside(0, number)
        return str(self.network.network_address + number)

    def node_range(self, index: int) -> tuple[str, str]:
        """First and last pod address of real node number `index` (0, 1, ...): its own block."""
        base = self.network.network_address + NODE_BLOCK * (index + 1)
        if base + NODE_BLOCK > self.network.broadcast_address:
            raise NetworkError(f"no address block left in {self.subnet} for real node {index}")
        return str(base + 1), str(base + NODE_BLOCK - 2)

    def cni_config(self, index: int, data_dir: Path, bridge: str, gateway: str) -> dict[str, Any]:
        """The CNI configuration list of real node `index`: its pods on `bridge`, their default
        route through `gateway`; host-local keeps its leases in `data_dir`."""
        first, last = self.node_range(index)
        return {
            "cniVersion": "0.4.0",
            "name": NETWORK_NAME,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": bridge,
                    "isGateway": True,
                    "isDefaultGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "dataDir": str(data_dir),
                        "ranges": [
                            [
                                {
                                    "subnet": self.subnet,
                                    "rangeStart": first,
                                    "rangeEnd": last,
                                    "gateway": gateway,
                                }
                            ]
                        ],
                    },
                },
                {"type": "loopback"},
            ],
        }

    def write_cni_config(self, index: int, conf_dir: Path, data_dir: Path, bridge: str, gateway: str) -> None:
        conf_dir.mkdir(parents=True, exist_ok=True)
        (conf_dir / f"10-{NETWORK_NAME}.conflist").write_text(
            json.dumps(self.cni_config(index, data_dir, bridge, gateway), indent=1)
        )

    # ------------------------------------------------------------------ the host's side
    def exists(self) -> bool:
        return ip("link", "show", "dev", self.bridge, check=False).returncode == 0

    def create(self) -> None:
        """The bridge with the host's address, up (kept when it is there)."""
        if not self.exists():
            ip("link", "add", "name", self.bridge, "type", "bridge")
        self.add_address(self.host_address)
        ip("link", "set", "dev", self.bridge, "up")

    def add_address(self, address: str) -> None:
        """Give the host `address` of this network on the bridge (a service of the host's that pods
        reach, such as a cluster's DNS); kept when it is there."""
        addresses = json.loads(ip("-j", "addr", "show", "dev", self.bridge).stdout or "[]")
        if address not in {a.get("local") for link in addresses for a in link.get("addr_info", [])}:
            ip("addr", "add", f"{address}/{self.host_prefix}", "dev", self.bridge)

    def delete(self) -> None:
        """Remove the pods' network namespaces still on this network, then the bridge."""
        self.delete_namespaces()
        if self.exists():
            ip("link", "delete", "dev", self.bridge)

    def namespaces(self, block: tuple[str, str] | None = None) -> list[str]:
        """Named network namespaces (containerd's `cni-...`) holding an address of this network, or
        of one node's `block` of it (first and last address)."""
        first, last = block or (str(self.network.network_address), str(self.network.broadcast_address))
        low, high = ipaddress.ip_address(first), ipaddress.ip_address(last)
        listed = json.loads(ip("-j", "netns", "list", check=False).stdout or "[]")
        out = []
        for entry in listed:
            name = entry.get("name", "")
            links = json.loads(ip("-j", "-n", name, "addr", "show", check=False).stdout or "[]")
            addresses = [a.get("local", "") for link in links for a in link.get("addr_info", [])]
            if any(_between(a, low, high) for a in addresses):
                out.append(name)
        return out

    def delete_namespaces(self, block: tuple[str, str] | None = None) -> None:
        """Remove the pods' network namespaces left on this network (or one node's block of it);
        their veths go with them."""
        for namespace in self.namespaces(block):
            ip("netns", "delete", namespace, check=False)

    @staticmethod
    def block_of(conf_dir: Path) -> tuple[str, str] | None:
        """The address block a node's CNI configuration (written by `write_cni_config`) hands out."""
        try:
            conf = json.loads((conf_dir / f"10-{NETWORK_NAME}.conflist").read_text())
            ((pool,),) = conf["plugins"][0]["ipam"]["ranges"]
            return str(pool["rangeStart"]), str(pool["rangeEnd"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None


def _between(
    address: str,
    low: ipaddress.IPv4Address | ipaddress.IPv6Address,
    high: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> bool:
    try:
        a = ipaddress.ip_address(address)
    except ValueError:
        return False
    return a.version == low.version and low <= a <= high  # type: ignore[operator]


def _host_routes() -> list[ipaddress.IPv4Network]:
    """Every IPv4 destination the host routes (its own addresses included), default left out."""
    routes = json.loads(ip("-j", "route", "show", "table", "all", check=False).stdout or "[]")
    taken = []
    for r in routes:
        dst = r.get("dst", "")
        if dst in ("", "default") or ":" in dst:
            continue
        try:
            taken.append(ipaddress.IPv4Network(dst if "/" in dst else f"{dst}/32", strict=False))
        except ValueError:
            continue
    return taken


def _free_sixteens(seed: int, taken: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
    """The /16s of 10.64.0.0/10 that no network of `taken` overlaps, in an order picked by `seed`."""
    candidates = (ipaddress.IPv4Network(f"10.{64 + (seed + i) % 64}.0.0/{PREFIX}") for i in range(64))
    return [c for c in candidates if not any(c.overlaps(t) for t in taken)]


def choose(state_dir: Path, mode: str = ISOLATED) -> PodNetwork:
    """A pod network for the environment in `state_dir`: a /16 in 10.64.0.0/10 that no route of the
    host covers or overlaps (and isolated, another for the host's side), picked from the
    directory's hash (so two environments differ)."""
    seed = int(hashlib.sha256(str(state_dir).encode()).hexdigest(), 16)
    free = _free_sixteens(seed, _host_routes())
    wanted = 2 if mode == ISOLATED else 1
    if len(free) < wanted:
        raise NetworkError(
            "no free /16 for the pod network in 10.64.0.0/10: every one overlaps a route of the host"
        )
    bridge = f"abr-{seed % 16**8:08x}"[:15]
    return PodNetwork(bridge=bridge, subnet=str(free[0]), outside=str(free[1]) if mode == ISOLATED else "")


def choose_service_range(network: PodNetwork) -> str:
    """The front cluster's Service (ClusterIP) range: a /24 outside the pod network (its pods send
    what is not on their network to their gateway, where kube-proxy is) that no route of the host
    overlaps, the host reaching it through the front's router (services.ClusterNetwork)."""
    taken = [
        *_host_routes(),
        network.network,
        *([ipaddress.IPv4Network(network.outside)] if network.outside else []),
    ]
    seed = int(hashlib.sha256(network.subnet.encode()).hexdigest(), 16)
    free = _free_sixteens(seed, taken)
    if not free:
        raise NetworkError("no free /16 in 10.64.0.0/10 for the front cluster's Services")
    return str(next(free[0].subnets(new_prefix=SERVICE_PREFIX)))


def api_service_address(service_range: str) -> str:
    """The ClusterIP of the `kubernetes` Service in `service_range`: kube-apiserver gives it the
    range's first address."""
    return str(ipaddress.IPv4Network(service_range).network_address + 1)
