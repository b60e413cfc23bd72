"""The released operators in the dev environment, unchanged: their CRDs (server-side apply), their
own webhook configurations (rendered from their modules, pointed by URL at the local process, with
the dev operators' CA), and each operator as supervised processes against the front cluster with
its gang mode on. hack/build-operators.sh builds them into the cache, keyed by version; each
operator's own ways are its module's (devenv.operators.catalog)."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from armada_bridge.certs import ca_and_serving
from armada_bridge.objects import Obj
from devenv import versions
from devenv.base import BaseEnvironment, log
from devenv.binaries import Binaries, cache_root
from devenv.clients import kubectl, wait_established
from devenv.names import FRONT
from devenv.operators.catalog import catalog
from devenv.operators.operator import Operator, Setup
from devenv.ports import free_ports

BUILD_SCRIPT = versions.REPO_ROOT / "hack" / "build-operators.sh"
# The dev operators' CA and serving certificate, one for all: the names the operators' certificate
# rotators check the CA for, and the hosts their webhooks are called at.
CA_NAMES = ["training-operator-ca", "jobset-ca", "kubeflow-trainer-ca"]
SERVICE_HOSTS = [
    "kubeflow-trainer-controller-manager.kubeflow-system.svc",
    "127.0.0.1",
    "localhost",
    "training-operator.kubeflow.svc",
    "jobset-webhook-service.jobset-system.svc",
]
# Two operators, one CRD name: `mpijobs.kubeflow.org` is the MPI operator's MPIJob
# kubeflow.org/v2beta1 and the training operator's kubeflow.org/v1, with different schemas and no
# conversion. The front serves one of them at a time, the one named last: installing one stops the
# other and replaces the CRD, refusing while objects of the other's exist.
RIVALS = {"mpi-operator": "training-operator-mpijob", "training-operator-mpijob": "mpi-operator"}
SHARED_CRD = "mpijobs.kubeflow.org"
# The operator each needs running first: Trainer v2 runs a TrainJob as a JobSet.
NEEDS = {"trainer": "jobset"}


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
def _state_file(env: BaseEnvironment) -> Path:
    return env.state_dir / "operators.json"


def enabled(env: BaseEnvironment) -> list[str]:
    f = _state_file(env)
    return list(json.loads(f.read_text()).get("enabled", [])) if f.is_file() else []


def _ports(env: BaseEnvironment, ops: Iterable[Operator]) -> dict[str, dict[str, int]]:
    """Each operator's loopback ports, drawn once and kept for the environment's life."""
    f = _state_file(env)
    state = json.loads(f.read_text()) if f.is_file() else {"enabled": [], "ports": {}}
    ops = list(ops)
    need = [(o.name, p) for o in ops for p in o.ports if p not in state["ports"].get(o.name, {})]
    for (name, port_name), port in zip(
        need, free_ports(len(need), holder=env.state_dir) if need else [], strict=True
    ):
        state["ports"].setdefault(name, {})[port_name] = port
    state["enabled"] = sorted(set(state["enabled"]) | {o.name for o in ops})
    f.write_text(json.dumps(state))
    return dict(state["ports"])


def _disable(env: BaseEnvironment, name: str) -> None:
    """`name` no longer among the operators later `dev up` runs start."""
    f = _state_file(env)
    if f.is_file():
        state = json.loads(f.read_text())
        state["enabled"] = [n for n in state.get("enabled", []) if n != name]
        f.write_text(json.dumps(state))


# ------------------------------------------------------------------ install
def plan(names: Sequence[str]) -> list[str]:
    """The operators to install for `names`, in order, each once: what one needs before it (NEEDS),
    and of two rivals for one CRD the one named last."""
    first = [[NEEDS[name], name] if name in NEEDS else [name] for name in names]
    expanded = list(dict.fromkeys(n for names_ in first for n in names_))
    return [n for i, n in enumerate(expanded) if RIVALS.get(n) not in expanded[i + 1 :]]


def install(env: BaseEnvironment, bins: Binaries, names: Sequence[str]) -> None:
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
    for o in ops:
        t0 = time.monotonic()
        if o.name in RIVALS:
            _displace(env, bins, front, known[RIVALS[o.name]], replaced[o.name])
        setup = Setup(env, bins, front, ports.get(o.name, {}), certs)
        crds = o.crd_files()
        setup.apply(*(_applicable(_load_crd(p)) for p in crds))
        wait_established(bins, front, _files(crds), timeout=90)
        o.prepare(setup)
        docs = webhook_configurations(bins, o, setup.ports.get("webhook"), certs["ca.crt"].read_bytes())
        if docs:  # none of the kinds it serves has a webhook (MPIJob v1)
            setup.apply(*docs)
        started = _start(env, o, setup)
        _wait_webhooks_served(env, o, docs, certs["ca.crt"], timeout=60)
        verb = "started" if started else "running, reused"
        log(f"operator {o.name} {o.version}: {verb} ({time.monotonic() - t0:.1f}s)")


def _start(env: BaseEnvironment, o: Operator, setup: Setup) -> bool:
    """Its processes started (or found running, unchanged) and ready; whether any was started."""
    started = False
    for c in o.processes(setup):
        _, started_now = env.supervisor.ensure(c)
        started = started or started_now
        env.supervisor.wait_ready(c, timeout=90)
        if c.ready_url is None and started_now:
            # Nothing to poll (the MPI operator, cert-manager's CA injector): give a fatal start,
            # such as the MPI operator's fixed :8080 being taken by another environment's, the
            # time to show.
            time.sleep(2)
            if env.supervisor.pid(c.name) is None:
                raise RuntimeError(f"{c.name} exited at start:\n{env.supervisor.tail(c.name)}")
    return started


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


def _displace(
    env: BaseEnvironment, bins: Binaries, front: Path, rival: Operator, replaced: list[str]
) -> None:
    """Make way for the operator `rival` competes with: `rival` stopped and no longer started by
    `dev up`, and its SHARED_CRD deleted where the front serves it (`replaced`: its versions, from
    `_rival_crd`)."""
    for c in rival.components:
        env.supervisor.stop(c)
    _disable(env, rival.name)
    if replaced:
        kubectl(bins, front, "delete", "crd", SHARED_CRD, "--wait=true", timeout=120)
        log(f"{SHARED_CRD}: {rival.name}'s {'/'.join(replaced)} deleted, {rival.name} stopped")


def _load_crd(path: Path) -> Obj:
    # libyaml's loader: these CRDs are large (600 KB).
    return dict(yaml.load(path.read_text(), Loader=yaml.CSafeLoader))


def _applicable(crd: Obj) -> Obj:
    """The CRD as applied: without labels whose values are a Helm chart's template expressions
    (cert-manager's module keeps its CRDs as its chart's templates)."""
    meta = crd["metadata"]
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if "{{" not in str(v)}
    return {**crd, "metadata": {**meta, "labels": labels}}


def webhook_configurations(bins: Binaries, o: Operator, port: int | None, ca_pem: bytes) -> list[Obj]:
    """The operator's own webhook configurations (its kustomization rendered, so selectors, rules
    and failure policies are upstream's, as its module adjusts them: Operator.webhook_configuration),
    each webhook pointed at https://127.0.0.1:port; none without a webhook directory."""
    if o.webhook_dir is None:
        return []
    assert port is not None, f"{o.name} has webhooks and no webhook port"
    out = subprocess.run(
        [str(bins.kubectl), "kustomize", str(o.module / o.webhook_dir)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    docs = []
    for found in yaml.safe_load_all(out):
        if not found or not found.get("kind", "").endswith("WebhookConfiguration"):
            continue
        name = found["metadata"]["name"]
        if name.endswith("-webhook-configuration"):  # kubebuilder's generic names: make them ours
            found["metadata"]["name"] = f"{o.name}-{name}"
        doc = o.webhook_configuration(found)
        if doc is None:
            continue
        for wh in doc.get("webhooks") or []:
            service = wh["clientConfig"].pop("service", {})
            wh["clientConfig"] = {
                "url": f"https://127.0.0.1:{port}{service.get('path', '/')}",
                "caBundle": base64.b64encode(ca_pem).decode(),
            }
        docs.append(doc)
    return docs


def _wait_webhooks_served(
    env: BaseEnvironment, o: Operator, docs: list[Obj], ca: Path, timeout: float
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


# ------------------------------------------------------------------ status
@dataclass(frozen=True)
class OperatorStatus:
    name: str
    version: str
    running: bool
    pid: int | None
    log: Path


def status(env: BaseEnvironment) -> list[OperatorStatus]:
    known = catalog()
    out = []
    for name in enabled(env):
        o = known[name]
        pids = [env.supervisor.pid(c) for c in o.components]
        pid = env.supervisor.pid(o.component)
        running = all(p is not None for p in pids)
        out.append(OperatorStatus(name, o.version, running, pid, env.supervisor.log_file(o.component)))
    return out
