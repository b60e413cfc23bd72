"""The extender's endpoints as an attacker on the network sees them (issue 13): the secure port
answers /filter, /bind, /state, /metrics and the dashboard only to callers the front cluster authenticates
and authorizes; the plain port is on loopback only; health and /mutate stay open (the API server
presents no client identity)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client as k8s

from devenv.names import FRONT
from devenv.processes.environment import Environment
from extender.__main__ import parse_args

Api = Callable[[str], k8s.ApiClient]
BODIES = {
    "/filter": {"Pod": {"metadata": {"name": "p", "namespace": "default", "uid": "u"}}, "NodeNames": []},
    # No such pod: an authorized caller gets the bind's error (and nothing is bound).
    "/bind": {"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "remote-1"},
}


def call(
    env: Environment,
    method: str,
    path: str,
    *,
    token: str | None = None,
    client_cert: tuple[Path, Path] | None = None,
) -> int:
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE  # loopback, the dev certificate
    if client_cert is not None:
        ctx.load_cert_chain(*map(str, client_cert))
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = json.dumps(BODIES[path]).encode() if method == "POST" else None
    req = urllib.request.Request(
        f"https://127.0.0.1:{env.port('webhook')}{path}", data=body, headers=headers, method=method
    )
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@pytest.fixture
def stranger_token(namespace: str, cluster_api: Api) -> str:
    """A front ServiceAccount with no grant on the extender's URLs."""
    core = k8s.CoreV1Api(cluster_api(FRONT))
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "stranger"}})
    review = core.create_namespaced_service_account_token(
        "stranger", namespace, {"spec": {"expirationSeconds": 600}}
    )
    return str(review.status.token)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/filter"),
        ("POST", "/bind"),
        ("GET", "/state"),
        ("GET", "/metrics"),
        ("GET", "/dashboard/"),
        ("GET", "/dashboard/api/units"),
        ("GET", "/dashboard/static/app.js"),
    ],
)
def test_protected_endpoints_refuse_anonymous_and_unauthorized_callers(
    dev_env: Environment, stranger_token: str, method: str, path: str
) -> None:
    assert call(dev_env, method, path) == 401
    assert call(dev_env, method, path, token="not-a-token") == 401
    assert call(dev_env, method, path, token=stranger_token) == 403
    pki = dev_env.cluster(FRONT).workdir / "pki"  # the front's admin: authenticated and authorized
    assert call(dev_env, method, path, client_cert=(pki / "admin.crt", pki / "admin.key")) == 200


def test_a_client_certificate_of_another_ca_is_refused(dev_env: Environment) -> None:
    pki = dev_env.cluster("remote-1").workdir / "pki"  # a real certificate, of the wrong cluster
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        call(dev_env, "GET", "/state", client_cert=(pki / "admin.crt", pki / "admin.key"))


def test_health_stays_open(dev_env: Environment) -> None:
    assert call(dev_env, "GET", "/healthz") == 200


def test_the_unauthenticated_port_is_on_loopback_by_default() -> None:
    assert parse_args([]).listen == ("127.0.0.1", 8888)
