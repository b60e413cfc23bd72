"""Talking to the environment's clusters: kubectl and a Python client of a kubeconfig."""

from __future__ import annotations

import base64
import subprocess
import time
from pathlib import Path

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from armada_bridge import certs
from devenv.binaries import Binaries


def api_client(kubeconfig: Path) -> k8s.ApiClient:
    return k8s_config.new_client_from_config(config_file=str(kubeconfig))


def certificate_kubeconfig(path: Path, server: str, ca: tuple[Path, Path], subject: str, stem: str) -> Path:
    """A kubeconfig at `path` for `server`, whose user is a client certificate for `subject`
    (e.g. `/O=system:nodes/CN=system:node:n1`) signed by the cluster's `ca` (certificate, key),
    kept beside it as `<stem>.crt`/`.key`; rewritten only when it changes."""
    cert, key = certs.client_certificate(path.parent, stem, subject, ca)
    body = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": {"server": server, "certificate-authority": str(ca[0])}}],
        "users": [{"name": stem, "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": stem, "context": {"cluster": "cluster", "user": stem}}],
        "current-context": stem,
    }
    text = yaml.safe_dump(body, sort_keys=False)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path


def token_kubeconfig(kubeconfig: Path, token: str, path: Path, namespace: str | None = None) -> Path:
    """A kubeconfig at `path` for the cluster of `kubeconfig` (its server; its CA, inlined) whose
    user is the bearer `token` alone (no client certificate): what a ServiceAccount sees; its
    context's `namespace` where given."""
    admin = yaml.safe_load(kubeconfig.read_text())
    cluster = dict(admin["clusters"][0]["cluster"])
    ca = cluster.pop("certificate-authority", None)
    if ca:
        ca_path = Path(ca) if Path(ca).is_absolute() else kubeconfig.parent / ca
        cluster["certificate-authority-data"] = base64.b64encode(ca_path.read_bytes()).decode()
    body = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "token", "user": {"token": token}}],
        "contexts": [
            {
                "name": "token",
                "context": {
                    "cluster": "cluster",
                    "user": "token",
                    **({"namespace": namespace} if namespace else {}),
                },
            }
        ],
        "current-context": "token",
    }
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def kubectl_argv(bins: Binaries, kubeconfig: Path, *args: str) -> list[str]:
    """The command line of kubectl `args` on the cluster of `kubeconfig`."""
    return [str(bins.kubectl), "--kubeconfig", str(kubeconfig), *args]


def run_kubectl(
    bins: Binaries, kubeconfig: Path, *args: str, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """kubectl on the cluster of `kubeconfig`, whatever it answers."""
    return subprocess.run(
        kubectl_argv(bins, kubeconfig, *args),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def kubectl(
    bins: Binaries, kubeconfig: Path, *args: str, timeout: float = 60, stdin: str | None = None
) -> str:
    """kubectl's output; RuntimeError with what it said when it fails."""
    r = run_kubectl(bins, kubeconfig, *args, timeout=timeout, stdin=stdin)
    if r.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout


def wait_established(bins: Binaries, kubeconfig: Path, files: list[str], timeout: float = 60) -> None:
    """Wait until the CRDs in `files` (kubectl -f arguments) are served. `kubectl wait` fails at
    once on a CRD whose status has no conditions yet, so it is asked again until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            kubectl(bins, kubeconfig, "wait", "--for=condition=Established", "--timeout=20s", *files)
            return
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
