"""The extender in the dev environment: serving certificate, webhook registration, the process."""

from __future__ import annotations

import base64
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from armada_bridge import keys
from armada_bridge.certs import self_signed
from devenv.binaries import Binaries
from devenv.clients import kubectl
from devenv.components import Component
from devenv.names import FRONT
from devenv.versions import REPO_ROOT

if TYPE_CHECKING:
    from devenv.base import BaseEnvironment

WEBHOOK_NAME = "armada-bridge"
SCHEDULING_CONFIG = REPO_ROOT / "manifests" / "extender" / "scheduling-config.yaml"
SCHEDULER_CONFIG_TEMPLATE = REPO_ROOT / "manifests" / "scheduler" / "kube-scheduler-config.yaml"


def scheduler_configuration(template: Mapping[str, Any], url: str, tls: Mapping[str, str]) -> dict[str, Any]:
    """The repo's front kube-scheduler configuration (`template`, parsed) with its extender at `url`
    and with `tls` (caFile, certFile, keyFile) as the extender's tlsConfig."""
    cfg = yaml.safe_load(yaml.safe_dump(dict(template)))  # a deep copy
    for ext in cfg.get("extenders", []):
        ext["urlPrefix"] = url
        ext["tlsConfig"] = dict(tls)
    return dict(cfg)


def secure_url(env: BaseEnvironment) -> str:
    """The extender's secure port (the scheduler's and the webhook's) as the front cluster reaches it."""
    return f"https://{env.bridge_host}:{env.port('webhook')}"


def webhook_configuration(url: str, ca_pem: bytes) -> dict[str, object]:
    """Pods are created as usual when the webhook is down (failurePolicy Ignore); the extender's
    loop sets such managed pods up afterwards (docs/extender.md)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_NAME},
        "webhooks": [
            {
                "name": f"pods.{keys.GROUP}",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "NoneOnDryRun",
                "failurePolicy": "Ignore",
                "reinvocationPolicy": "IfNeeded",
                "timeoutSeconds": 5,
                "clientConfig": {"url": url, "caBundle": base64.b64encode(ca_pem).decode()},
                "rules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods"],
                        "scope": "Namespaced",
                    }
                ],
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "NotIn",
                            "values": ["kube-system", keys.SYSTEM_NAMESPACE],
                        }
                    ]
                },
            }
        ],
    }


def serving_certificate(env: BaseEnvironment) -> tuple[Path, Path]:
    """The extender's secure port certificate (self-signed: it is also the CA the API server and
    the front kube-scheduler trust it with)."""
    return self_signed(
        env.state_dir / "extender",
        "webhook",
        "/CN=armada-bridge-extender",
        ["127.0.0.1", "localhost", env.bridge_host],
    )


def replica_names(replicas: int) -> list[str]:
    """The extender's dev components: `extender`, then `extender-1`, ... (each also the name of
    its plain port in the environment's settings)."""
    return ["extender", *(f"extender-{i}" for i in range(1, replicas))]


def replica(env: BaseEnvironment, name: str, replicas: int) -> Component:
    """One extender process. Several share the secure port (`--reuse-port`: the kernel spreads the
    scheduler's and the API server's connections over the live ones, as a Service over ready pods)
    and elect a leader by their identities; each has its own plain port for probes."""
    cert, key = serving_certificate(env)
    port = env.port(name)
    return Component(
        name=name,
        argv=[
            sys.executable,
            "-m",
            "extender",
            "--kubeconfig",
            str(env.kubeconfig(FRONT)),
            "--listen",
            f"127.0.0.1:{port}",
            "--secure-listen",
            f"{env.bridge_host}:{env.port('webhook')}",
            *(["--reuse-port"] if replicas > 1 else []),
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
            "--identity",
            f"dev-{name}",
            "--scheduling-config",
            str(SCHEDULING_CONFIG),
            "--gang-stall-seconds",
            "10",
        ],
        ready_url=f"http://127.0.0.1:{port}/readyz",
    )


def setup(env: BaseEnvironment, bins: Binaries) -> None:
    """Run the extender's replicas (stopping any beyond their number) and register the webhook."""
    front = env.kubeconfig(FRONT)
    cert, _ = serving_certificate(env)
    replicas = env.extender_replicas()
    wanted = replica_names(replicas)
    for name in env.supervisor.names():
        if name.startswith("extender-") and name not in wanted:
            env.supervisor.stop(name)
    # In order: a lone `extender` holding the port without SO_REUSEPORT is restarted with it
    # before any other replica tries to bind beside it.
    components = [replica(env, name, replicas) for name in wanted]
    for component in components:
        env.supervisor.ensure(component)
    for component in components:
        env.supervisor.wait_ready(component)
    config = webhook_configuration(f"{secure_url(env)}/mutate", cert.read_bytes())
    kubectl(
        bins, front, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=yaml.safe_dump(config)
    )
