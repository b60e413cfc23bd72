"""Cluster DNS for the dev remote clusters that have real nodes: CoreDNS (built from its module by
`hack/build-binaries.sh coredns`), one per cluster, serving `cluster.local` from that cluster's own
Services and pods, so that the names an operator writes (a headless Service, `pod.service`)
resolve where its pods run. Each listens on port 53 of an address of its own on the host's bridge
(devenv.network.podnet); the cluster's kubelets hand that address to their pods."""

from __future__ import annotations

from pathlib import Path

from devenv.components import Component
from devenv.network.podnet import PodNetwork

CLUSTER_DOMAIN = "cluster.local"
FIRST_DNS_HOST = 10  # cluster k's DNS is the network's address number 10 + k (all below node blocks)


def address(network: PodNetwork, cluster_index: int) -> str:
    """The DNS address of cluster number `cluster_index` (the front 0, the remote clusters 1, 2, ...)."""
    return network.service_address(FIRST_DNS_HOST + cluster_index)


def corefile(listen: str, kubeconfig: Path, ready_port: int) -> str:
    """Only the cluster's own names: nothing is forwarded off the machine."""
    return f"""{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {listen}
    errors
    ready 127.0.0.1:{ready_port}
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {kubeconfig}
        pods insecure
    }}
    cache 5
}}
"""


def component(
    binary: Path, cluster: str, listen: str, kubeconfig: Path, ready_port: int, workdir: Path
) -> Component:
    workdir.mkdir(parents=True, exist_ok=True)
    conf = workdir / f"Corefile-{cluster}"
    text = corefile(listen, kubeconfig, ready_port)
    if not conf.is_file() or conf.read_text() != text:
        conf.write_text(text)
    return Component(
        name=f"coredns-{cluster}",
        argv=[str(binary), "-conf", str(conf)],
        ready_url=f"http://127.0.0.1:{ready_port}/ready",
        follows_code=False,
        # A cluster made anew (another port) rewrites its kubeconfig: CoreDNS restarts to follow it.
        inputs=text + kubeconfig.read_text(),
    )
