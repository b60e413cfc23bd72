"""The gRPC server: Armada's Submit, QueueService, Event and Jobs on one port, plaintext only on loopback."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

import grpc
from armada_client.armada import event_pb2_grpc, job_pb2_grpc, submit_pb2_grpc

from armada_api.event_stream import JobSetEvents
from armada_api.front import Front
from armada_api.job_status import JobStatus
from armada_api.kind_states import ObjectKind
from armada_api.object_kinds import ObjectKinds
from armada_api.queue_calls import Queues
from armada_api.services import EventService, JobsService, QueueService, SubmitService
from armada_api.submit import Jobs


class ListenError(ValueError):
    pass


def is_loopback(host: str) -> bool:
    return ipaddress.ip_address(socket.gethostbyname(host)).is_loopback


def make_server(
    front: Front,
    host: str,
    port: int,
    *,
    tls_cert: Path | None = None,
    tls_key: Path | None = None,
    object_kinds: list[ObjectKind] | None = None,
    client_certificates: tuple[str, int] | None = None,
    client_ca: Path | None = None,
) -> tuple[grpc.aio.Server, int, int | None]:
    """The server with its four services, bound (not started); the port it got (0 picks a free one),
    and the port for callers with client certificates. `object_kinds`: the kinds of object a job
    may carry (armada_api.kind_states). `client_certificates`: a second address, TLS with the
    serving certificate, where every caller presents a certificate that `client_ca` (the front's
    client CA) signed, and acts as its user (gRPC cannot ask for a certificate without requiring
    one, so token callers keep the first port)."""
    server = grpc.aio.server()
    queues = Queues(front)
    jobs = Jobs(front, ObjectKinds(front.own, object_kinds or []))
    submit_pb2_grpc.add_SubmitServicer_to_server(SubmitService(jobs, queues), server)
    submit_pb2_grpc.add_QueueServiceServicer_to_server(QueueService(queues, jobs), server)
    event_pb2_grpc.add_EventServicer_to_server(EventService(JobSetEvents(front, jobs)), server)
    job_pb2_grpc.add_JobsServicer_to_server(JobsService(JobStatus(front, jobs)), server)

    address = f"{host}:{port}"
    if tls_cert and tls_key:
        credentials = grpc.ssl_server_credentials([(tls_key.read_bytes(), tls_cert.read_bytes())])
        bound = server.add_secure_port(address, credentials)
    elif is_loopback(host):
        bound = server.add_insecure_port(address)
    else:
        raise ListenError(f"{address} is not loopback: callers' tokens need TLS (--tls-cert, --tls-key)")
    if client_certificates is None:
        return server, bound, None
    if not (tls_cert and tls_key and client_ca):
        raise ListenError("client certificates need TLS (--tls-cert, --tls-key) and the front's --client-ca")
    mutual = grpc.ssl_server_credentials(
        [(tls_key.read_bytes(), tls_cert.read_bytes())],
        root_certificates=client_ca.read_bytes(),
        require_client_auth=True,
    )
    host, port = client_certificates
    return server, bound, server.add_secure_port(f"{host}:{port}", mutual)
