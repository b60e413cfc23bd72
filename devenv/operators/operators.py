"""The released operators in the dev environment, unchanged: their CRDs (server-side apply), their
own webhook configurations (rendered from their modules, pointed by URL at the local process, with
the dev operators' CA), and each operator as a supervised process against the front cluster with
its gang mode on. hack/build-operators.sh builds them into the cache, keyed by version.
"""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from armada_bridge.certs import ca_and_serving
from devenv import versions
from devenv.binaries import Binaries, cache_root
from devenv.clients import kubectl, wait_established
from devenv.components import Component
from devenv.names import FRONT
from devenv.ports import free_ports

if TYPE_CHECKING:
    from devenv.processes.environment import Environment

BUILD_SCRIPT = versions.REPO_ROOT / "hack" / "build-operators.sh"
# What `--operators all` runs (hack/build-operators.sh builds the same set by default).
ALL = (
    "training-operator",
    "kuberay",
    "mpi-operator",
    "jobset",
    "argo",
    "dask",
    "trainer",
    "spark-operator",
    "training-operator-mxjob",
)
# controller-runtime's default serving-certificate directory, which training-operator v1 and Trainer
# v2 fix in their code (pkg/cert/cert.go, pkg/util/cert/cert.go `certDir`): both read the dev
# operators' serving pair there. training-operator's certificate rotator
# (open-policy-agent/cert-controller) cannot be turned off: it also wants the Secret below, and
# checks the CA for the name `training-operator-ca`.
DEFAULT_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")
TRAINING_OPERATOR_NAMESPACE = "kubeflow"
# The MPI operator cannot turn leader election off: its Lease lives in this namespace.
MPI_OPERATOR_LOCK_NAMESPACE = "mpi-operator"
# Its monitoring server binds :8080 whatever the flags say, so only one may run on a machine.
# Argo's workflow controller reads its ConfigMap from its own namespace; it serves /healthz (and
# pprof) on :6060, fixed, so only one may run on a machine too.
ARGO_NAMESPACE = "argo"
ARGO_HEALTH = "http://127.0.0.1:6060/healthz"
# Its configuration (it exits without one): metrics servers off, so no port of theirs is taken.
ARGO_CONFIG = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "workflow-controller-configmap", "namespace": ARGO_NAMESPACE},
    "data": {"metricsConfig": "enabled: false\n", "telemetryConfig": "enabled: false\n"},
}
# The Spark operator's pod webhook is its own process. It reads its serving pair from a Secret in
# this namespace: in its cert-manager mode (`--enable-cert-manager`: certificate made elsewhere,
# no CA injection into webhook configurations by name) that Secret holds the dev operators' CA and
# serving pair, and the webhooks are registered by URL like the other operators'.
SPARK_OPERATOR_NAMESPACE = "spark-operator"
SPARK_WEBHOOK_SECRET = "spark-operator-webhook-certs"
CA_NAMES = ["training-operator-ca", "jobset-ca", "kubeflow-trainer-ca"]
SERVICE_HOSTS = [
    "kubeflow-trainer-controller-manager.kubeflow-system.svc",
    "127.0.0.1",
    "localhost",
    f"training-operator.{TRAINING_OPERATOR_NAMESPACE}.svc",
    "jobset-webhook-service.jobset-system.svc",
]
# The Kubeflow training operator v1 runs as several processes, each serving some job kinds (its
# `--enable-scheme`s): v1.9.4 all but MPIJob; v1.8.1, the last release with MXJob (v1.9 removed it),
# MXJob only; and v1.9.4 again for MPIJob v1, in place of the MPI operator (below).
TRAINING_OPERATOR_SCHEMES = ("pytorchjob", "tfjob", "xgboostjob", "paddlejob", "jaxjob")
# Two operators, one CRD name: `mpijobs.kubeflow.org` is the MPI operator's MPIJob
# kubeflow.org/v2beta1 and the training operator's kubeflow.org/v1, with different schemas and no
# conversion. The front serves one of them at a time, the one named last: installing one stops the
# other and replaces the CRD, refusing while objects of the other's exist.
RIVALS = {"mpi-operator": "training-operator-mpijob", "training-operator-mpijob": "mpi-operator"}
SHARED_CRD = "mpijobs.kubeflow.org"


@dataclass(frozen=True)
class Operator:
    name: str
    version: str
    binary: str
    crds: tuple[str, ...]  # globs under the module copy
    webhook_dir: str | None  # kustomize directory of its webhook configurations, under the module copy
    ports: tuple[str, ...]  # loopback ports of its own
    # A Kubeflow training operator v1: the job kinds it serves (`--enable-scheme`); its CRDs and
    # webhooks are theirs only.
    schemes: tuple[str, ...] = ()
    # The build it runs (hack/build-operators.sh's name), when another entry's.
    build: str = ""

    @property
    def dir(self) -> Path:
        return cache_root() / "bin" / f"{self.build or self.name}-{self.version}"

    @property
    def module(self) -> Path:
        """Where its CRDs and samples are: a copy of parts of its Go module, or for the Dask
        operator (a Python package) the installed package."""
        if self.name == "dask":
            return next(self.dir.glob("venv/lib/python3*/site-packages/dask_kubernetes"), self.dir)
        return self.dir / "module"

    @property
    def component(self) -> str:
        return f"operator-{self.name}"

    @property
    def components(self) -> tuple[str, ...]:
        """Its processes: the Spark operator's pod webhook runs beside its controller, and
        cert-manager's CA injector beside its controller."""
        if self.name == "spark-operator":
            return (f"{self.component}-webhook", self.component)
        if self.name == "cert-manager":
            return (self.component, f"{self.component}-cainjector")
        return (self.component,)

    def built(self) -> bool:
        """Built, with what it needs beside its binary (Spark for the Spark operator)."""
        needs = [self.dir] + ([spark_home().parent] if self.name == "spark-operator" else [])
        return all((d / ".complete").is_file() for d in needs)

    def crd_files(self) -> list[Path]:
        files = sorted({p for g in self.crds for p in self.module.glob(g)})
        return [p for p in files if p.name != "kustomization.yaml"]


def spark_home(v: versions.Versions | None = None) -> Path:
    """SPARK_HOME for the Spark operator's spark-submit: the `pyspark` package of its own
    virtualenv (hack/build-operators.sh links it as `spark-home`)."""
    return cache_root() / "bin" / f"pyspark-{(v or versions.load()).pyspark}" / "spark-home"


def training_operator(name: str, version: str, schemes: tuple[str, ...], build: str = "") -> Operator:
    """A training operator v1 process serving `schemes`: those kinds' CRDs and webhooks."""
    crds = tuple(f"manifests/base/crds/kubeflow.org_{s}s.yaml" for s in schemes)
    webhooks = "manifests/base/webhook"
    return Operator(name, version, "training-operator", crds, webhooks, ("health", "webhook"), schemes, build)


def catalog(v: versions.Versions | None = None) -> dict[str, Operator]:
    ops = (v or versions.load()).operators
    return {
        o.name: o
        for o in (
            training_operator("training-operator", ops["training-operator"], TRAINING_OPERATOR_SCHEMES),
            training_operator("training-operator-mxjob", ops["training-operator-mxjob"], ("mxjob",)),
            training_operator(
                "training-operator-mpijob", ops["training-operator"], ("mpijob",), build="training-operator"
            ),
            Operator(
                "kuberay", ops["kuberay"], "kuberay-operator", ("config/crd/bases/*.yaml",), None, ("health",)
            ),
            Operator(
                "mpi-operator",
                ops["mpi-operator"],
                "mpi-operator",
                ("manifests/base/kubeflow.org_*.yaml",),
                None,
                (),
            ),
            Operator(
                "jobset",
                ops["jobset"],
                "jobset-controller",
                ("config/components/crd/bases/*.yaml",),
                "config/components/webhook",
                ("health", "webhook"),
            ),
            Operator(
                "trainer",
                ops["trainer"],
                "trainer-controller-manager",
                ("manifests/base/crds/*.yaml",),
                "manifests/base/webhook",
                ("health", "webhook", "status"),
            ),
            Operator(
                "argo", ops["argo"], "workflow-controller", ("manifests/base/crds/minimal/*.yaml",), None, ()
            ),
            Operator(
                "dask",
                ops["dask"],
                "venv/bin/python",
                ("operator/deployment/helm/dask-kubernetes-operator/crds/*.yaml",),
                None,
                ("health",),
            ),
            Operator(
                "cert-manager",
                ops["cert-manager"],
                "controller",
                ("deploy/crds/crd-*.yaml",),
                None,
                ("metrics",),
            ),
            Operator(
                "spark-operator",
                ops["spark-operator"],
                "spark-operator",
                ("config/crd/bases/*.yaml",),
                "config/webhook",
                ("health", "webhook", "webhook-health"),
            ),
        )
    }


def parse(spec: str) -> list[str]:
    """`all` or a comma-separated list of operator names (checked)."""
    names = list(ALL) if spec.strip() == "all" else [n.strip() for n in spec.split(",") if n.strip()]
    known = catalog()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown operator(s) {', '.join(unknown)}; known: {', '.join(known)} or all")
    return names


def log(msg: str) -> None:
    print(f"[dev] {msg}", file=sys.stderr, flush=True)


def ensure_built(ops: Sequence[Operator]) -> None:
    missing = [o for o in ops if not o.built()]
    if not missing:
        return
    names = list(dict.fromkeys(o.build or o.name for o in missing))
    log(f"building operators {', '.join(names)} into {cache_root()} (first run only)")
    result = subprocess.run(["bash", str(BUILD_SCRIPT), *names], stdout=subprocess.DEVNULL, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{BUILD_SCRIPT} failed (exit {result.returncode}); its output above names the step"
        )


# ------------------------------------------------------------------ state
def _state_file(env: Environment) -> Path:
    return env.state_dir / "operators.json"


def enabled(env: Environment) -> list[str]:
    f = _state_file(env)
    return list(json.loads(f.read_text()).get("enabled", [])) if f.is_file() else []


def _ports(env: Environment, ops: Iterable[Operator]) -> dict[str, dict[str, int]]:
    """Each operator's loopback ports, drawn once and kept for the environment's life."""
    f = _state_file(env)
    state = json.loads(f.read_text()) if f.is_file() else {"enabled": [], "ports": {}}
    ops = list(ops)
    need = [(o.name, p) for o in ops for p in o.ports if p not in state["ports"].get(o.name, {})]
    for (name, port_name), port in zip(need, free_ports(len(need)) if need else [], strict=True):
        state["ports"].setdefault(name, {})[port_name] = port
    state["enabled"] = sorted(set(state["enabled"]) | {o.name for o in ops})
    f.write_text(json.dumps(state))
    return dict(state["ports"])


def _disable(env: Environment, name: str) -> None:
    """`name` no longer among the operators later `dev up` runs start."""
    f = _state_file(env)
    if f.is_file():
        state = json.loads(f.read_text())
        state["enabled"] = [n for n in state.get("enabled", []) if n != name]
        f.write_text(json.dumps(state))


# ------------------------------------------------------------------ install
def plan(names: Sequence[str]) -> list[str]:
    """The operators to install for `names`, in order, each once: the JobSet controller before
    Trainer v2 (which runs a TrainJob as a JobSet), and of two rivals for one CRD the one named last."""
    expanded = list(
        dict.fromkeys(n for name in names for n in (["jobset", name] if name == "trainer" else [name]))
    )
    return [n for i, n in enumerate(expanded) if RIVALS.get(n) not in expanded[i + 1 :]]


def install(env: Environment, bins: Binaries, names: Sequence[str]) -> None:
    """Install and start the named operators (idempotent: what already runs unchanged is kept)."""
    if not names:
        return

    known = catalog()
    ops = [known[n] for n in plan(names)]
    ensure_built(ops)
    front = env.kubeconfig(FRONT)
    # Before anything changes: whose SHARED_CRD each rival replaces (refused while it has objects).
    replaced = {o.name: _rival_crd(bins, front, o, known[RIVALS[o.name]]) for o in ops if o.name in RIVALS}
    ports = _ports(env, ops)
    certs = ca_and_serving(cache_root() / "dev-operators-ca", CA_NAMES, SERVICE_HOSTS)
    for ns in (
        TRAINING_OPERATOR_NAMESPACE,
        MPI_OPERATOR_LOCK_NAMESPACE,
        ARGO_NAMESPACE,
        SPARK_OPERATOR_NAMESPACE,
    ):
        doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        kubectl(bins, front, "apply", "--server-side", "-f", "-", stdin=json.dumps(doc))
    for o in ops:
        t0 = time.monotonic()
        crds = o.crd_files()
        if o.name in RIVALS:
            _displace(env, bins, front, known[RIVALS[o.name]], replaced[o.name])
        apply_server_side = ("apply", "--server-side", "--force-conflicts")
        listed = {"apiVersion": "v1", "kind": "List", "items": [_applicable(_load_crd(p)) for p in crds]}
        kubectl(bins, front, *apply_server_side, "-f", "-", stdin=json.dumps(listed), timeout=120)
        wait_established(bins, front, _files(crds), timeout=90)
        if o.schemes:
            _training_operator_certs(bins, front, certs)
        if o.name == "trainer":
            _default_cert_dir(certs)
        if o.name == "argo":
            kubectl(bins, front, *apply_server_side, "-f", "-", stdin=json.dumps(ARGO_CONFIG))
        if o.name == "spark-operator":
            kubectl(
                bins, front, *apply_server_side, "-f", "-", stdin=json.dumps(_spark_webhook_secret(certs))
            )
        docs = []
        if o.webhook_dir:
            docs = webhook_configurations(bins, o, ports[o.name]["webhook"], certs["ca.crt"].read_bytes())
            if docs:  # none of the kinds it serves has a webhook (MPIJob v1)
                kubectl(bins, front, *apply_server_side, "-f", "-", stdin=yaml.safe_dump_all(docs))
        started = False
        for c in components(env, o, ports.get(o.name, {}), front, certs):
            _, started_now = env.supervisor.ensure(c)
            started = started or started_now
            env.supervisor.wait_ready(c, timeout=90)
            if c.ready_url is None and started_now:
                # Nothing to poll (the MPI operator, cert-manager's CA injector): give a fatal
                # start, such as the MPI operator's fixed :8080 being taken by another
                # environment's, the time to show.
                time.sleep(2)
                if env.supervisor.pid(c.name) is None:
                    raise RuntimeError(f"{c.name} exited at start:\n{env.supervisor.tail(c.name)}")
        _wait_webhooks_served(env, o, docs, certs["ca.crt"], timeout=60)
        verb = "started" if started else "running, reused"
        log(f"operator {o.name} {o.version}: {verb} ({time.monotonic() - t0:.1f}s)")


def _files(paths: Iterable[Path]) -> list[str]:
    return [a for p in paths for a in ("-f", str(p))]


def _rival_crd(bins: Binaries, front: Path, o: Operator, rival: Operator) -> list[str]:
    """The versions of the rival's SHARED_CRD that `o`'s replaces, where the front serves the
    rival's ([] where it serves `o`'s or none). Refused while objects of the rival's kind exist:
    deleting its CRD would delete them."""
    (mine,) = [d for d in map(_load_crd, o.crd_files()) if d["metadata"]["name"] == SHARED_CRD]
    ours = sorted(v["name"] for v in mine["spec"]["versions"] if v.get("served"))
    served = sorted(
        kubectl(
            bins,
            front,
            *("get", "crd", SHARED_CRD, "--ignore-not-found"),
            "-o=jsonpath={.spec.versions[?(@.served==true)].name}",
        ).split()
    )
    if not served or served == ours:
        return []
    listing = "-o=jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}{' '}{end}"
    left = kubectl(bins, front, "get", SHARED_CRD, "--all-namespaces", listing).split()
    if left:
        raise RuntimeError(
            f"{o.name} cannot run: {SHARED_CRD} serves {rival.name}'s {'/'.join(served)}, and replacing "
            f"it would delete its {len(left)} object(s) ({', '.join(left[:5])}); delete them first"
        )
    return served


def _displace(env: Environment, bins: Binaries, front: Path, rival: Operator, replaced: list[str]) -> None:
    """Make way for the operator `rival` competes with: `rival` stopped and no longer started by
    `dev up`, and its SHARED_CRD deleted where the front serves it (`replaced`: its versions, from
    `_rival_crd`)."""
    for c in rival.components:
        env.supervisor.stop(c)
    _disable(env, rival.name)
    if replaced:
        kubectl(bins, front, "delete", "crd", SHARED_CRD, "--wait=true", timeout=120)
        log(f"{SHARED_CRD}: {rival.name}'s {'/'.join(replaced)} deleted, {rival.name} stopped")


def _load_crd(path: Path) -> dict[str, Any]:
    # libyaml's loader: these CRDs are large (600 KB).
    return dict(yaml.load(path.read_text(), Loader=yaml.CSafeLoader))


def _applicable(crd: dict[str, Any]) -> dict[str, Any]:
    """The CRD as applied: without labels whose values are a Helm chart's template expressions
    (cert-manager's module keeps its CRDs as its chart's templates)."""
    meta = crd["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if "{{" not in str(v)}
    return {**crd, "metadata": {**meta, "labels": labels}}


def _training_operator_certs(bins: Binaries, front: Path, certs: dict[str, Path]) -> None:

    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "training-operator-webhook-cert", "namespace": TRAINING_OPERATOR_NAMESPACE},
        "data": {k: base64.b64encode(p.read_bytes()).decode() for k, p in certs.items()},
    }
    kubectl(bins, front, "apply", "--server-side", "--force-conflicts", "-f", "-", stdin=json.dumps(secret))
    _default_cert_dir(certs)


def _spark_webhook_secret(certs: dict[str, Path]) -> dict[str, Any]:
    """The Secret the Spark operator's webhook reads in its cert-manager mode: the dev operators'
    CA and serving pair (SAN 127.0.0.1, where its webhooks are registered)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SPARK_WEBHOOK_SECRET, "namespace": SPARK_OPERATOR_NAMESPACE},
        "data": {
            k: base64.b64encode(certs[k].read_bytes()).decode() for k in ("ca.crt", "tls.crt", "tls.key")
        },
    }


def _default_cert_dir(certs: dict[str, Path]) -> None:
    DEFAULT_CERT_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        target = DEFAULT_CERT_DIR / name
        if not target.is_file() or target.read_bytes() != certs[name].read_bytes():
            target.write_bytes(certs[name].read_bytes())


def webhook_configurations(bins: Binaries, o: Operator, port: int, ca_pem: bytes) -> list[dict[str, Any]]:
    """The operator's own webhook configurations (its kustomization rendered, so selectors, rules
    and failure policies are upstream's), each webhook pointed at https://127.0.0.1:port. A training
    operator's are those of the kinds it serves, in a configuration named after it (upstream's name
    for `training-operator`, which its certificate rotator keeps)."""
    assert o.webhook_dir is not None
    out = subprocess.run(
        [str(bins.kubectl), "kustomize", str(o.module / o.webhook_dir)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    docs = []
    for doc in yaml.safe_load_all(out):
        if not doc or not doc.get("kind", "").endswith("WebhookConfiguration"):
            continue
        name = doc["metadata"]["name"]
        if name.endswith("-webhook-configuration"):  # kubebuilder's generic names: make them ours
            doc["metadata"]["name"] = f"{o.name}-{name}"
        if o.schemes:
            kinds = {f"{s}s" for s in o.schemes}
            doc["metadata"]["name"] = f"validator.{o.name}.kubeflow.org"
            doc["webhooks"] = [
                wh
                for wh in doc["webhooks"]
                if {r for rule in wh["rules"] for r in rule["resources"]} <= kinds
            ]
            if not doc["webhooks"]:
                continue
        for wh in doc.get("webhooks") or []:
            if o.name == "spark-operator":
                # Its kustomization limits the webhooks to the job namespace `default`, a
                # placeholder to adjust; its Helm chart leaves the selector out when the job
                # namespaces are all of them (`spark.jobNamespaces: [""]`), as here: the controller
                # runs without `--namespaces`. Its pod webhook still selects only the pods the
                # operator launched (its objectSelector).
                wh.pop("namespaceSelector", None)
            service = wh["clientConfig"].pop("service", {})
            wh["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{service.get('path', '/')}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            }
        docs.append(doc)
    return docs


def _wait_webhooks_served(
    env: Environment, o: Operator, docs: list[dict[str, Any]], ca: Path, timeout: float
) -> None:
    """Wait until each of its webhooks' URLs is served. Ready is not enough: training-operator
    v1.9.4 reports ready once its webhook server listens, and registers its handlers afterwards, in a
    goroutine that first sets up its controllers (cmd/training-operator.v1/main.go,
    setupControllers), so a job created in between is refused with a 404 ("the server could not find
    the requested resource"). An empty review is answered by a registered handler (with its error,
    HTTP 200) and 404 by the server without one."""
    urls = sorted({wh["clientConfig"]["url"] for doc in docs for wh in doc.get("webhooks") or []})
    context = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + timeout
    for url in urls:
        while True:
            request = urllib.request.Request(url, data=b"", method="POST")
            try:
                with urllib.request.urlopen(request, timeout=2, context=context):
                    break
            except urllib.error.HTTPError as e:
                if e.code != 404:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                tail = "\n\n".join(env.supervisor.tail(name) for name in o.components)
                raise RuntimeError(f"{o.name}: its webhook {url} not served after {timeout:.0f}s:\n{tail}")
            time.sleep(0.2)


def components(
    env: Environment, o: Operator, ports: dict[str, int], front: Path, certs: dict[str, Path]
) -> list[Component]:
    """Its processes, in the order they start."""
    if o.name == "spark-operator":
        return _spark_operator(env, o, ports, front)
    if o.name == "cert-manager":
        return _cert_manager(o, ports, front)
    return [component(env, o, ports, front, certs)]


def _cert_manager(o: Operator, ports: dict[str, int], front: Path) -> list[Component]:
    """Its controller (issuers, certificates; its metrics server is what answers when it is up)
    and its CA injector (caBundles of annotated webhook configurations), leader election off."""
    controller = Component(
        name=o.components[0],
        argv=[
            str(o.dir / o.binary),
            f"--kubeconfig={front}",
            "--leader-elect=false",
            f"--metrics-listen-address=127.0.0.1:{ports['metrics']}",
        ],
        env={"KUBECONFIG": str(front)},
        ready_url=f"http://127.0.0.1:{ports['metrics']}/metrics",
    )
    cainjector = Component(
        name=o.components[1],
        argv=[str(o.dir / "cainjector"), f"--kubeconfig={front}", "--leader-elect=false"],
        env={"KUBECONFIG": str(front)},
    )
    return [controller, cainjector]


def _spark_operator(env: Environment, o: Operator, ports: dict[str, int], front: Path) -> list[Component]:
    """Its pod webhook (which also gives driver and executor pods the batch scheduler's name), then
    its controller with the Volcano batch scheduler. The controller execs
    `$SPARK_HOME/bin/spark-submit`, which finds the API server through KUBERNETES_SERVICE_HOST/PORT
    (as in a pod) and its credentials through KUBECONFIG."""
    binary = str(o.dir / o.binary)
    cert_dir = env.state_dir / "operators" / "spark-operator-certs"
    server = urllib.parse.urlsplit(yaml.safe_load(front.read_text())["clusters"][0]["cluster"]["server"])
    webhook = Component(
        name=o.components[0],
        argv=[
            binary,
            "webhook",
            "start",
            f"--kubeconfig={front}",
            f"--webhook-port={ports['webhook']}",
            f"--webhook-cert-dir={cert_dir}",
            "--enable-cert-manager",
            f"--webhook-secret-name={SPARK_WEBHOOK_SECRET}",
            f"--webhook-secret-namespace={SPARK_OPERATOR_NAMESPACE}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{ports['webhook-health']}",
        ],
        env={"KUBECONFIG": str(front)},
        ready_url=f"http://127.0.0.1:{ports['webhook-health']}/readyz",
    )
    controller = Component(
        name=o.components[1],
        argv=[
            binary,
            "controller",
            "start",
            f"--kubeconfig={front}",
            "--metrics-bind-address=0",
            f"--health-probe-bind-address=127.0.0.1:{ports['health']}",
            "--enable-batch-scheduler",
            "--default-batch-scheduler=volcano",
        ],
        env={
            "KUBECONFIG": str(front),
            "SPARK_HOME": str(spark_home()),
            "KUBERNETES_SERVICE_HOST": server.hostname or "127.0.0.1",
            "KUBERNETES_SERVICE_PORT": str(server.port or 443),
        },
        ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
    )
    return [webhook, controller]


def component(
    env: Environment, o: Operator, ports: dict[str, int], front: Path, certs: dict[str, Path]
) -> Component:
    binary = str(o.dir / o.binary)
    kube = {"KUBECONFIG": str(front)}
    if o.schemes:
        return Component(
            name=o.component,
            argv=[
                binary,
                f"--kubeconfig={front}",
                "--metrics-bind-address=0",
                f"--health-probe-bind-address=127.0.0.1:{ports['health']}",
                f"--webhook-server-port={ports['webhook']}",
                "--gang-scheduler-name=volcano",
                *[f"--enable-scheme={s}" for s in o.schemes],
            ],
            env={**kube, "MY_POD_NAMESPACE": TRAINING_OPERATOR_NAMESPACE},
            ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
        )
    if o.name == "kuberay":
        return Component(
            name=o.component,
            argv=[
                binary,
                f"--kubeconfig={front}",
                "--enable-leader-election=false",
                "--metrics-addr=0",
                f"--health-probe-bind-address=127.0.0.1:{ports['health']}",
                "--batch-scheduler=volcano",
                "--log-stdout-encoder=console",
                # It follows Ray through the head's dashboard Service, whose pods run remotely:
                # through the front API server's service proxy (the front reaches pod addresses).
                "--use-kubernetes-proxy",
            ],
            env=kube,
            ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
        )
    if o.name == "mpi-operator":
        return Component(
            name=o.component,
            argv=[
                binary,
                f"--kubeConfig={front}",
                f"--lock-namespace={MPI_OPERATOR_LOCK_NAMESPACE}",
                "--monitoring-port=0",
                "--gang-scheduling=volcano",
            ],
            env=kube,
            # Its health server is fixed on :8080 and shared by whatever else listens there.
            ready_url=None,
        )
    if o.name == "jobset":
        cert_dir = env.state_dir / "operators" / "jobset-certs"
        cert_dir.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            (cert_dir / name).write_bytes(certs[name].read_bytes())
        config = env.state_dir / "operators" / "jobset-config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.jobset.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "webhook": {"port": ports["webhook"], "host": "127.0.0.1", "certDir": str(cert_dir)},
                    "metrics": {"bindAddress": "0"},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
                }
            )
        )
        return Component(
            name=o.component,
            argv=[binary, f"--kubeconfig={front}", f"--config={config}"],
            env=kube,
            ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
        )
    if o.name == "trainer":
        config = env.state_dir / "operators" / "trainer-config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.trainer.kubeflow.org/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "certManagement": {"enable": False},
                    "webhook": {"port": ports["webhook"], "host": "127.0.0.1"},
                    "metrics": {"bindAddress": "0"},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{ports['health']}"},
                    "statusServer": {"port": ports["status"]},
                }
            )
        )
        return Component(
            name=o.component,
            argv=[binary, f"--kubeconfig={front}", f"--config={config}"],
            env=kube,
            ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
        )
    if o.name == "argo":
        return Component(
            name=o.component,
            argv=[binary, f"--kubeconfig={front}", f"--namespace={ARGO_NAMESPACE}", "--loglevel=info"],
            env={**kube, "LEADER_ELECTION_DISABLE": "true"},
            ready_url=ARGO_HEALTH,
        )
    if o.name == "dask":
        liveness = f"http://127.0.0.1:{ports['health']}/healthz"
        return Component(
            name=o.component,
            argv=[
                binary,  # the virtualenv's python, so the command line is what was run
                "-m",
                "kopf",
                "run",
                "-m",
                "dask_kubernetes.operator.controller",
                "--standalone",
                "--all-namespaces",
                f"--liveness={liveness}",
            ],
            env=kube,
            ready_url=liveness,
        )
    raise AssertionError(o.name)


# ------------------------------------------------------------------ status
@dataclass(frozen=True)
class OperatorStatus:
    name: str
    version: str
    running: bool
    pid: int | None
    log: Path


def status(env: Environment) -> list[OperatorStatus]:
    known = catalog()
    out = []
    for name in enabled(env):
        o = known[name]
        pids = [env.supervisor.pid(c) for c in o.components]
        pid = env.supervisor.pid(o.component)
        running = all(p is not None for p in pids)
        out.append(OperatorStatus(name, o.version, running, pid, env.supervisor.log_file(o.component)))
    return out
