"""The Spark operator (SparkApplication): its pod webhook and its controller, which runs
`spark-submit` from the pinned `pyspark` package, with Volcano gangs."""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import yaml

from armada_bridge.objects import Obj
from devenv import versions as versions_mod
from devenv.binaries import cache_root
from devenv.components import Component
from devenv.operators.operator import Operator, Setup

# Its pod webhook is its own process. It reads its serving pair from a Secret in this namespace: in
# its cert-manager mode (`--enable-cert-manager`: certificate made elsewhere, no CA injection into
# webhook configurations by name) that Secret holds the dev operators' CA and serving pair, and the
# webhooks are registered by URL like the other operators'.
NAMESPACE = "spark-operator"
WEBHOOK_SECRET = "spark-operator-webhook-certs"


def spark_home(v: versions_mod.Versions | None = None) -> Path:
    """SPARK_HOME for its spark-submit: the `pyspark` package of its own virtualenv
    (hack/build-operators.sh links it as `spark-home`)."""
    return cache_root() / "bin" / f"pyspark-{(v or versions_mod.load()).pyspark}" / "spark-home"


class SparkOperator(Operator):
    @property
    def components(self) -> tuple[str, ...]:
        return (f"{self.component}-webhook", self.component)

    def needs(self) -> list[Path]:
        return [self.dir, spark_home().parent]

    def prepare(self, s: Setup) -> None:
        s.namespace(NAMESPACE)
        s.secret(WEBHOOK_SECRET, NAMESPACE)

    def webhook_configuration(self, doc: Obj) -> Obj | None:
        """Its kustomization limits the webhooks to the job namespace `default`, a placeholder to
        adjust; its Helm chart leaves the selector out when the job namespaces are all of them
        (`spark.jobNamespaces: [""]`), as here: the controller runs without `--namespaces`. Its pod
        webhook still selects only the pods the operator launched (its objectSelector)."""
        webhooks = [
            {k: v for k, v in wh.items() if k != "namespaceSelector"} for wh in doc.get("webhooks") or []
        ]
        return {**doc, "webhooks": webhooks}

    def processes(self, s: Setup) -> list[Component]:
        """Its pod webhook (which also gives driver and executor pods the batch scheduler's name),
        then its controller with the Volcano batch scheduler. The controller execs
        `$SPARK_HOME/bin/spark-submit`, which finds the API server through
        KUBERNETES_SERVICE_HOST/PORT (as in a pod) and its credentials through KUBECONFIG."""
        server = urllib.parse.urlsplit(
            yaml.safe_load(s.front.read_text())["clusters"][0]["cluster"]["server"]
        )
        webhook = Component(
            name=self.components[0],
            argv=[
                self.executable,
                *("webhook", "start"),
                f"--kubeconfig={s.front}",
                f"--webhook-port={s.ports['webhook']}",
                f"--webhook-cert-dir={s.state_file('spark-operator-certs')}",
                "--enable-cert-manager",
                f"--webhook-secret-name={WEBHOOK_SECRET}",
                f"--webhook-secret-namespace={NAMESPACE}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{s.ports['webhook-health']}",
            ],
            env=s.kube_env,
            ready_url=s.ready_url("webhook-health"),
        )
        controller = Component(
            name=self.components[1],
            argv=[
                self.executable,
                *("controller", "start"),
                f"--kubeconfig={s.front}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{s.ports['health']}",
                "--enable-batch-scheduler",
                "--default-batch-scheduler=volcano",
            ],
            env={
                **s.kube_env,
                "SPARK_HOME": str(spark_home()),
                "KUBERNETES_SERVICE_HOST": server.hostname or "127.0.0.1",
                "KUBERNETES_SERVICE_PORT": str(server.port or 443),
            },
            ready_url=s.ready_url("health"),
        )
        return [webhook, controller]


def operators(versions: Mapping[str, str]) -> list[Operator]:
    ports = ("health", "webhook", "webhook-health")
    return [
        SparkOperator(
            "spark-operator",
            versions["spark-operator"],
            "spark-operator",
            ("config/crd/bases/*.yaml",),
            "config/webhook",
            ports,
        )
    ]
