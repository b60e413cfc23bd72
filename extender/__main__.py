"""`python -m extender`: the scheduler extender, admission webhook and scheduling loop."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import ssl
import sys
from pathlib import Path

from aiohttp import web

from armada_bridge import keys
from armada_bridge.kube import Kube, load_config
from armada_bridge.kube.leader import LeaderElector
from armada_bridge.kube.lifecycle import run_until_stopped
from extender.config import load_scheduling_config
from extender.controller import Controller, Settings
from extender.metrics import Metrics
from extender.server import Api, make_app

log = logging.getLogger("extender")


def _hostport(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host, int(port)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m extender", description=__doc__)
    p.add_argument("--kubeconfig", help="front cluster kubeconfig (default: $KUBECONFIG, else in-cluster)")
    p.add_argument("--listen", type=_hostport, default=("0.0.0.0", 8888), help="extender + metrics (HTTP)")
    p.add_argument(
        "--webhook-listen", type=_hostport, default=("0.0.0.0", 9443), help="admission webhook (HTTPS)"
    )
    p.add_argument("--tls-cert", type=Path, help="webhook serving certificate (PEM)")
    p.add_argument("--tls-key", type=Path, help="webhook serving key (PEM)")
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


async def serve(args: argparse.Namespace) -> int:
    warnings: list[str] = []
    scheduling = load_scheduling_config(args.scheduling_config, warnings) if args.scheduling_config else None
    for w in warnings:
        log.warning("%s", w)
    front = Kube(load_config(args.kubeconfig), user_agent="armada-bridge-extender")
    metrics = Metrics()
    settings = Settings(identity=args.identity, gang_stall_seconds=args.gang_stall_seconds)
    if scheduling is not None:
        settings.scheduling = scheduling
    controller = Controller(front, settings, metrics)
    api = Api(controller, scheduler_name=args.scheduler_name)
    runner = web.AppRunner(make_app(api), access_log=None)
    await runner.setup()
    sites = [web.TCPSite(runner, *args.listen)]
    if args.tls_cert and args.tls_key:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(args.tls_cert, args.tls_key)
        sites.append(web.TCPSite(runner, *args.webhook_listen, ssl_context=ctx))
    for site in sites:
        await site.start()
    log.info("serving extender on %s:%d%s", *args.listen, " and webhook (TLS)" if len(sites) > 1 else "")

    elector = LeaderElector(front, args.namespace, "armada-bridge-extender", args.identity)
    return await run_until_stopped(
        lead=controller.run_rounds,
        elector=elector,
        always=[controller.inputs.run],
        on_leader=lambda: metrics.leader.set(1),
        cleanup=[runner.cleanup, front.close],
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
