"""One released operator in the dev environment: what it is (its build, CRDs, webhook configurations,
loopback ports) and what each kind of operator does differently (its processes, what it needs in the
front before they start, its webhooks), as methods a module per operator overrides. The catalogue
(devenv.operators.catalog) lists them; devenv.operators.install installs them."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from armada_bridge.objects import Obj
from devenv.base import BaseEnvironment
from devenv.binaries import Binaries, cache_root
from devenv.clients import kubectl
from devenv.components import Component

# controller-runtime's default serving-certificate directory, which training-operator v1 and Trainer
# v2 fix in their code (pkg/cert/cert.go, pkg/util/cert/cert.go `certDir`): both read the dev
# operators' serving pair there.
DEFAULT_CERT_DIR = Path("/tmp/k8s-webhook-server/serving-certs")


@dataclass(frozen=True)
class Setup:
    """What an operator's installation works with: the environment, kubectl, the front's admin
    kubeconfig, the operator's own loopback ports and the dev operators' CA and serving pair
    (`ca.crt`, `tls.crt`, `tls.key`)."""

    env: BaseEnvironment
    bins: Binaries
    front: Path
    ports: dict[str, int]
    certs: dict[str, Path]

    def apply(self, *docs: Obj) -> None:
        """Server-side apply of `docs`, taking over fields another manager set."""
        listed = {"apiVersion": "v1", "kind": "List", "items": list(docs)}
        kubectl(
            self.bins, self.front, "apply", "--server-side", "--force-conflicts", "-f", "-",
            stdin=json.dumps(listed), timeout=120,
        )  # fmt: skip

    def namespace(self, name: str) -> None:
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def secret(
        self, name: str, namespace: str, keys: tuple[str, ...] = ("ca.crt", "tls.crt", "tls.key")
    ) -> None:
        """A Secret of the dev operators' CA and serving pair (`keys` of them)."""
        data = {k: base64.b64encode(self.certs[k].read_bytes()).decode() for k in keys}
        self.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "data": data,
            }
        )

    def default_cert_dir(self) -> None:
        """The serving pair in controller-runtime's default directory, rewritten only when it changed."""
        DEFAULT_CERT_DIR.mkdir(parents=True, exist_ok=True)
        for name in ("tls.crt", "tls.key"):
            target = DEFAULT_CERT_DIR / name
            if not target.is_file() or target.read_bytes() != self.certs[name].read_bytes():
                target.write_bytes(self.certs[name].read_bytes())

    def state_file(self, name: str) -> Path:
        """A file of the environment's operators' state (configurations, certificates)."""
        path = self.env.state_dir / "operators" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def controller_config(self, name: str, api_version: str, **fields: Any) -> Path:
        """A controller-runtime Configuration file `name` of the operator's: leader election and
        metrics off, health probes on its `health` port, and `fields`."""
        config = self.state_file(name)
        body = {
            "apiVersion": api_version,
            "kind": "Configuration",
            "leaderElection": {"leaderElect": False},
            "metrics": {"bindAddress": "0"},
            "health": {"healthProbeBindAddress": f"127.0.0.1:{self.ports['health']}"},
            **fields,
        }
        config.write_text(yaml.safe_dump(body))
        return config

    @property
    def kube_env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.front)}

    def ready_url(self, port: str, path: str = "/readyz") -> str:
        return f"http://127.0.0.1:{self.ports[port]}{path}"


@dataclass(frozen=True)
class Operator:
    name: str
    version: str
    binary: str
    crds: tuple[str, ...]  # globs under the module copy
    webhook_dir: str | None  # kustomize directory of its webhook configurations, under the module copy
    ports: tuple[str, ...]  # loopback ports of its own
    # The build it runs (hack/build-operators.sh's name), when another entry's.
    build: str = ""

    @property
    def dir(self) -> Path:
        return cache_root() / "bin" / f"{self.build or self.name}-{self.version}"

    @property
    def module(self) -> Path:
        """Where its CRDs and samples are: a copy of parts of its Go module."""
        return self.dir / "module"

    @property
    def component(self) -> str:
        return f"operator-{self.name}"

    @property
    def components(self) -> tuple[str, ...]:
        """The names of its processes."""
        return (self.component,)

    def needs(self) -> list[Path]:
        """The builds it runs from (each complete when it holds `.complete`)."""
        return [self.dir]

    def built(self) -> bool:
        return all((d / ".complete").is_file() for d in self.needs())

    def crd_files(self) -> list[Path]:
        files = sorted({p for g in self.crds for p in self.module.glob(g)})
        return [p for p in files if p.name != "kustomization.yaml"]

    @property
    def executable(self) -> str:
        return str(self.dir / self.binary)

    def prepare(self, s: Setup) -> None:
        """What it needs in the front (namespaces, configuration, certificates) or on this host
        before its webhooks are registered and its processes start: nothing."""

    def webhook_configuration(self, doc: Obj) -> Obj | None:
        """One of its webhook configurations as registered (None: left out): upstream's."""
        return doc

    def processes(self, s: Setup) -> list[Component]:
        """Its processes, in the order they start."""
        raise NotImplementedError(self.name)
