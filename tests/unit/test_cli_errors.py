"""The CLI's failures: one line and an exit status per kind, a traceback only for bugs; the namespace
kubectl would use."""

from __future__ import annotations

import json
from pathlib import Path

import urllib3.exceptions
from kubernetes.client.rest import ApiException
from kubernetes.config.config_exception import ConfigException

from cli.errors import NotFound, Status, failure
from cli.views import context_namespace


def _api(status: int, message: str) -> ApiException:
    e = ApiException(status=status, reason="Reason")
    e.body = json.dumps({"kind": "Status", "message": message})
    return e


def test_each_failure_has_its_status_and_one_line(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.yaml")
    pool = urllib3.HTTPSConnectionPool("10.0.0.1", 6443)
    refused = urllib3.exceptions.MaxRetryError(
        pool, "/api", urllib3.exceptions.NewConnectionError(pool, "Failed to establish a new connection")
    )
    cases = [
        (ConfigException("Invalid kube-config file. No configuration found."), Status.KUBECONFIG),
        (refused, Status.UNREACHABLE),
        (_api(403, 'pods is forbidden: User "u" cannot list resource "pods"'), Status.FORBIDDEN),
        (_api(401, "Unauthorized"), Status.FORBIDDEN),
        (_api(404, 'pods "x" not found'), Status.NOT_FOUND),
        (NotFound("no pod ns/x"), Status.NOT_FOUND),
        (_api(500, "etcd is down"), Status.ERROR),
        (ValueError("name the remote clusters to remove, or give --all"), Status.ERROR),
        (ModuleNotFoundError("No module named 'devenv'", name="devenv"), Status.ERROR),  # the image
    ]
    for e, status in cases:
        f = failure(e, missing)
        assert f is not None and f.status is status, (e, f)
        assert f.message and "\n" not in f.message, f
    kubeconfig = failure(cases[0][0], missing)
    assert kubeconfig is not None and kubeconfig.message == f"kubeconfig {missing}: no such file"
    unreachable = failure(refused)
    assert unreachable is not None and "https://10.0.0.1:6443" in unreachable.message
    forbidden = failure(cases[2][0])
    assert forbidden is not None and forbidden.message.startswith("pods is forbidden")
    assert failure(KeyError("a bug")) is None  # a bug keeps its traceback
    assert failure(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None


def test_the_namespace_is_the_contexts(tmp_path: Path) -> None:
    path = tmp_path / "config"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "team", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
                    {"name": "plain", "context": {"cluster": "c", "user": "u"}},
                ],
                "current-context": "team",
            }
        )
    )
    assert context_namespace(str(path)) == "team-a"
    assert context_namespace(str(path), "plain") == "default"
