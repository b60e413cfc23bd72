"""`python -m vkubelet`: every RemoteCluster of the front cluster as a virtual node running its pods."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from armada_bridge import keys
from armada_bridge.kube import PODS, ApiError, Kube, auth, load_config
from armada_bridge.kube.leader import LeaderElector
from armada_bridge.kube.lifecycle import run_until_stopped
from vkubelet import certs
from vkubelet.agent import NodeEndpoint
from vkubelet.kubelet_api import KubeletApi
from vkubelet.manager import Manager
from vkubelet.metrics import METRICS
from vkubelet.relay_pods import RelaySettings
from vkubelet.relay_server import RelayServer

log = logging.getLogger("vkubelet")
LEADER_LEASE = "armada-bridge-vkubelet"


def _host_port(value: str, default_host: str = "0.0.0.0") -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    return host or default_host, int(port)


def default_node_address() -> str:
    """$VKUBELET_POD_IP (set from the downward API), else this host's address."""
    ip = os.environ.get("VKUBELET_POD_IP")
    if ip:
        return ip
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m vkubelet", description=__doc__)
    p.add_argument("--kubeconfig", help="front cluster kubeconfig (default: $KUBECONFIG, else in-cluster)")
    p.add_argument("--listen", default="0.0.0.0:10250", help="kubelet API address (TLS) [%(default)s]")
    p.add_argument(
        "--node-address",
        default=None,
        help="InternalIP the virtual nodes publish; front's kube-apiserver dials it (default: $VKUBELET_POD_IP)",
    )
    p.add_argument(
        "--tls-cert-file", type=Path, help="kubelet API serving certificate (default: self-signed)"
    )
    p.add_argument("--tls-private-key-file", type=Path)
    p.add_argument("--cert-dir", type=Path, default=None, help="where the self-signed certificate is kept")
    p.add_argument(
        "--client-ca-file",
        type=Path,
        help="CA for client certificates (default: the front cluster's, from kube-system/extension-apiserver-authentication)",
    )
    p.add_argument(
        "--metrics-listen",
        default=None,
        help="also serve /metrics over plain HTTP here (it is always on the kubelet port, authenticated)",
    )
    p.add_argument(
        "--workers", type=int, default=32, help="concurrent pod reconciles per remote cluster [%(default)s]"
    )
    p.add_argument(
        "--leader-elect",
        action="store_true",
        help="run the controllers only while holding a Lease (replicas)",
    )
    p.add_argument(
        "--leader-election-namespace",
        default=keys.SYSTEM_NAMESPACE,
        help="the bridge's namespace: the leader Lease, and the extender's decision key [%(default)s]",
    )
    p.add_argument(
        "--identity", default=f"{socket.gethostname()}-{os.getpid()}", help="leader election identity"
    )
    p.add_argument(
        "--relay-listen",
        default="",
        help="HOST:PORT of the relay endpoint relay pods hand connections to (plain TCP; the chart's "
        "0.0.0.0:10262); unset: none",
    )
    p.add_argument(
        "--relay-endpoint",
        default="",
        help="HOST:PORT at which front pods reach the relay endpoint (a Service's name); "
        "unset: pods of Relay clusters get no relay and show no address",
    )
    p.add_argument("--relay-image", default="", help="image of relay pods (with socat): the bridge's own")
    p.add_argument(
        "--relay-placement",
        type=json.loads,
        default={},
        help="JSON merged into relay pods' spec: nodeSelector, tolerations, affinity, priorityClassName",
    )
    p.add_argument(
        "--front-cidr",
        action="append",
        type=ipaddress.ip_network,
        default=[],
        help="a pod or Service range of the front cluster (repeat): a Routable cluster's pod address "
        "inside one is never shown",
    )
    p.add_argument(
        "--pod-name",
        default=os.environ.get("POD_NAME", ""),
        help="this replica's pod in the bridge's namespace, labelled while it leads (the relay endpoint's "
        "Service selects it) [$POD_NAME]",
    )
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def relay_settings(args: argparse.Namespace) -> RelaySettings | None:
    if not args.relay_endpoint:
        return None
    if not args.relay_image:
        raise SystemExit("--relay-endpoint needs --relay-image")
    host, port = _host_port(args.relay_endpoint, "")
    return RelaySettings(args.leader_election_namespace, args.relay_image, host, port, args.relay_placement)


async def _metrics_app() -> web.Application:
    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(METRICS.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    return app


async def run(args: argparse.Namespace) -> int:
    front = Kube(load_config(args.kubeconfig), timeout=30, user_agent="armada-bridge-vkubelet")
    host, port = _host_port(args.listen)
    address = args.node_address or default_node_address()
    manager = Manager(
        front,
        NodeEndpoint(address, port),
        workers=args.workers,
        bridge_namespace=args.leader_election_namespace,
        relay_settings=relay_settings(args),
        front_ranges=tuple(args.front_cidr),
    )

    def serving_certificate() -> tuple[Path, Path]:
        """The given files (read again when renewed), else a self-signed pair kept in cert_dir."""
        if args.tls_cert_file and args.tls_private_key_file:
            return Path(args.tls_cert_file), Path(args.tls_private_key_file)
        cert_dir = args.cert_dir or Path(tempfile.gettempdir()) / "armada-bridge-vkubelet"
        return certs.self_signed(cert_dir, "vkubelet", [address, "localhost", socket.gethostname()])

    cert, key = serving_certificate()
    client_ca = args.client_ca_file.read_text() if args.client_ca_file else await auth.front_client_ca(front)
    ssl_ctx = auth.server_context(cert, key, client_ca)

    elector = (
        LeaderElector(front, args.leader_election_namespace, LEADER_LEASE, args.identity)
        if args.leader_elect
        else None
    )

    def ready() -> bool:
        """The leader once it has listed its clusters; a standby at once (its work is to wait for
        the Lease: a Deployment's rollout, `helm install --wait`, would never end otherwise)."""
        return manager.clusters.synced.is_set() or (elector is not None and not elector.is_leader.is_set())

    api = KubeletApi(front, manager, ready=ready)
    kubelet = web.AppRunner(api.app(), access_log=None)
    await kubelet.setup()
    await web.TCPSite(kubelet, host, port, ssl_context=ssl_ctx).start()
    runners = [kubelet]
    if args.metrics_listen:
        mhost, mport = _host_port(args.metrics_listen)
        metrics = web.AppRunner(await _metrics_app(), access_log=None)
        await metrics.setup()
        await web.TCPSite(metrics, mhost, mport).start()
        runners.append(metrics)
    log.info("kubelet API on https://%s:%d (node address %s)", host, port, address)
    closers = []
    if args.relay_listen:
        rhost, rport = _host_port(args.relay_listen)
        closers.append(_closer(await RelayServer(manager.relay_target).start(rhost, rport)))
        log.info("relay endpoint on %s:%d", rhost, rport)

    leader_label = LeaderLabel(front, args.leader_election_namespace, args.pod_name)
    await leader_label.set(False)  # a restarted replica leads no more

    async def lead() -> None:
        await leader_label.set(True)
        await manager.run()

    return await run_until_stopped(
        lead=lead,
        elector=elector,
        always=[lambda: certs.keep_renewed(ssl_ctx, serving_certificate)],
        cleanup=[
            *(r.cleanup for r in runners),
            *closers,
            lambda: leader_label.set(False),
            front.close,
        ],
    )


class LeaderLabel:
    """The leader's pod carries keys.VKUBELET_LEADER (none without a pod name: not in a pod)."""

    def __init__(self, front: Kube, namespace: str, pod: str) -> None:
        self.front, self.namespace, self.pod = front, namespace, pod

    async def set(self, leading: bool) -> None:
        if not self.pod:
            return
        patch = {"metadata": {"labels": {keys.VKUBELET_LEADER: "true" if leading else None}}}
        try:
            await self.front.patch(PODS, self.pod, patch, self.namespace)
        except (ApiError, OSError, TimeoutError) as e:
            if leading:
                raise
            log.warning("pod %s: leader label not removed: %s", self.pod, e)


def _closer(server: asyncio.Server) -> Callable[[], Coroutine[Any, Any, None]]:
    async def close() -> None:
        server.close()
        await server.wait_closed()

    return close


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
