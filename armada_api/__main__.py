"""`python -m armada_api`: Armada's gRPC API (Submit, QueueService, Event, Jobs) in front of the bridge."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from armada_api.front import Front
from armada_api.kind_states import KindsError, ObjectKind, load_kinds, merged, parse_kinds
from armada_api.server import ListenError, make_server
from armada_bridge.kube import Kube, load_config
from armada_bridge.kube.lifecycle import hostport, run_until_stopped

log = logging.getLogger("armada_api")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m armada_api", description=__doc__)
    p.add_argument(
        "--kubeconfig",
        help="the front cluster: its address and CA for the callers' requests, and the server's own "
        "read-only identity (default: $KUBECONFIG, else in-cluster)",
    )
    p.add_argument(
        "--listen",
        type=hostport,
        default=("127.0.0.1", 50051),
        help="gRPC address (plaintext: loopback only)",
    )
    p.add_argument("--tls-cert", type=Path, help="serving certificate (PEM)")
    p.add_argument("--tls-key", type=Path, help="serving key (PEM)")
    p.add_argument(
        "--client-certificates-listen",
        type=hostport,
        metavar="HOST:PORT",
        help="a second gRPC address, for callers with a client certificate that --client-ca signed: "
        "each acts as its certificate's user (CN) and groups (O), which the server impersonates "
        "(its identity then needs `impersonate` on them: manifests/armada-api/client-certificates.yaml)",
    )
    p.add_argument(
        "--client-ca", type=Path, help="the front's client CA (kube-apiserver's --client-ca-file), PEM"
    )
    p.add_argument(
        "--object-kinds",
        type=parse_kinds,
        default=[],
        metavar="PLURAL.GROUP,...",
        help="the kinds of object a job may carry instead of a pod spec (annotation "
        "bridge.armadaproject.io/object), e.g. jobsets.jobset.x-k8s.io,pytorchjobs.kubeflow.org, read "
        "for their end by their status conditions; the server's identity needs get/list/watch on "
        "them (default: none)",
    )
    p.add_argument(
        "--object-kinds-file",
        type=Path,
        metavar="FILE",
        help="more such kinds, YAML: a list of {resource: plural.group, state: [rules]}, where a rule "
        "names a status field and its values that mean succeeded, failed or running (for kinds that "
        "state their end in a field of their own: manifests/armada-api/object-kinds.yaml)",
    )
    p.add_argument("--log-level", default="INFO")
    return p.parse_args(argv)


def object_kinds(args: argparse.Namespace) -> list[ObjectKind]:
    """The accepted kinds: --object-kinds and --object-kinds-file's (KindsError: not valid)."""
    from_file = load_kinds(args.object_kinds_file.read_text()) if args.object_kinds_file else []
    return merged([*args.object_kinds, *from_file])


async def serve(args: argparse.Namespace) -> int:
    try:
        kinds = object_kinds(args)
    except (KindsError, OSError) as e:
        log.error("%s", e)
        return 2
    own = Kube(load_config(args.kubeconfig), user_agent="armada-bridge-armada-api")
    front = Front(own, load_config(args.kubeconfig, credentials=False))
    try:
        server, port, certificates_port = make_server(
            front,
            *args.listen,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            object_kinds=kinds,
            client_certificates=args.client_certificates_listen,
            client_ca=args.client_ca,
        )
    except ListenError as e:
        log.error("%s", e)
        return 2
    await server.start()
    log.info("serving Armada's Submit, QueueService, Event and Jobs on %s:%d", args.listen[0], port)
    if certificates_port is not None:
        log.info(
            "callers with client certificates: %s:%d", args.client_certificates_listen[0], certificates_port
        )

    async def serving() -> None:
        await asyncio.Event().wait()  # until a signal: then `stop` ends the calls in progress

    async def stop() -> None:
        await server.stop(grace=5)
        await own.close()

    return await run_until_stopped(lead=serving, cleanup=[stop])


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    sys.exit(asyncio.run(serve(args)))


if __name__ == "__main__":
    main()
