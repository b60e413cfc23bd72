"""`python -m extender`: the scheduler extender, admission webhook and scheduling loop."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import sys
from pathlib import Path

from aiohttp import web

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey, ensure_key
from armada_bridge.kube import ApiError, Kube, auth, load_config
from armada_bridge.kube.leader import LeaderElector
from armada_bridge.kube.lifecycle import hostport, run_until_stopped
from extender.config import load_scheduling_config
from extender.controller import Controller, Settings
from extender.dashboard.routes import Dashboard
from extender.metrics import Metrics
from extender.server import Api, make_app

log = logging.getLogger("extender")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m extender", description=__doc__)
    p.add_argument("--kubeconfig", help="front cluster kubeconfig (default: $KUBECONFIG, else in-cluster)")
    p.add_argument(
        "--listen",
        type=hostport,
        default=("127.0.0.1", 8888),
        help="every endpoint over plain HTTP without authentication: keep it on loopback (health "
        "probes, a scheduler in the same pod)",
    )
    p.add_argument(
        "--secure-listen",
        "--webhook-listen",
        type=hostport,
        default=("0.0.0.0", 9443),
        help="HTTPS: /mutate for the API server; /filter, /state, /metrics for callers "
        "the front authenticates (client certificate or token) and authorizes (SubjectAccessReview)",
    )
    p.add_argument(
        "--reuse-port",
        action="store_true",
        help="share the secure port with other replicas on this host (SO_REUSEPORT: the kernel spreads "
        "connections over the live ones, as a Service spreads them over ready pods)",
    )
    p.add_argument("--tls-cert", type=Path, help="serving certificate of the secure port (PEM)")
    p.add_argument("--tls-key", type=Path, help="serving key of the secure port (PEM)")
    p.add_argument(
        "--client-ca-file",
        type=Path,
        help="CA of client certificates on the secure port (default: the one the front publishes in "
        "kube-system/extension-apiserver-authentication)",
    )
    p.add_argument(
        "--identity", default=f"{socket.gethostname()}-{os.getpid()}", help="leader election identity"
    )
    p.add_argument("--namespace", default=keys.SYSTEM_NAMESPACE, help="namespace of the leader Lease")
    p.add_argument("--scheduler-name", help="point managed pods at this scheduler (managed Kubernetes)")
    p.add_argument(
        "--scheduling-config", type=Path, help="Armada SchedulingConfig YAML (priority classes, ...)"
    )
    p.add_argument(
        "--gang-stall-seconds",
        type=float,
        default=30.0,
        help="admit a gang one member short after this long when its minResources covers the rest",
    )
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


async def decision_key(front: Kube, namespace: str) -> DecisionKey:
    """The key that signs decisions, made by the first replica (armada_bridge.contract.decisions);
    retried while the front cluster does not answer."""
    delay = 1.0
    while True:
        try:
            return await ensure_key(front, namespace)
        except (ApiError, OSError, TimeoutError) as e:
            log.warning("decision key not read (%s: %s); retrying in %.0fs", type(e).__name__, e, delay)
            await asyncio.sleep(delay)
            delay = min(30.0, delay * 2)


async def serve(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    scheduling = load_scheduling_config(args.scheduling_config, warnings) if args.scheduling_config else None
    for w in warnings:
        log.warning("%s", w)
    front = Kube(load_config(args.kubeconfig), user_agent="armada-bridge-extender")
    metrics = Metrics()
    settings = Settings(
        identity=args.identity, gang_stall_seconds=args.gang_stall_seconds, scheduler_name=args.scheduler_name
    )
    if scheduling is not None:
        settings.scheduling = scheduling
    controller = Controller(front, settings, metrics, await decision_key(front, args.namespace))
    dashboard = Dashboard(controller)
    api = Api(controller, scheduler_name=args.scheduler_name, dashboard=dashboard)
    runner = web.AppRunner(make_app(api), access_log=None)
    await runner.setup()
    runners = [runner]
    await web.TCPSite(runner, *args.listen).start()
    if not ipaddress.ip_address(socket.gethostbyname(args.listen[0])).is_loopback:
        log.warning("--listen %s:%d serves every endpoint without authentication", *args.listen)
    if args.tls_cert and args.tls_key:
        client_ca = (
            args.client_ca_file.read_text() if args.client_ca_file else await auth.front_client_ca(front)
        )
        ctx = auth.server_context(args.tls_cert, args.tls_key, client_ca)
        secure = web.AppRunner(make_app(api, auth.Auth(front)), access_log=None)
        await secure.setup()
        await web.TCPSite(
            secure, *args.secure_listen, ssl_context=ctx, reuse_port=args.reuse_port or None
        ).start()
        runners.append(secure)
        log.info("serving on http://%s:%d (local) and https://%s:%d", *args.listen, *args.secure_listen)
    else:
        log.info("serving on http://%s:%d only (no --tls-cert/--tls-key)", *args.listen)

    elector = LeaderElector(front, args.namespace, "armada-bridge-extender", args.identity)
    return await run_until_stopped(
        lead=controller.run_rounds,
        elector=elector,
        always=[controller.inputs.run, dashboard.sample_forever],
        on_leader=lambda: metrics.leader.set(1),
        cleanup=[*(r.cleanup for r in runners), front.close],
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
