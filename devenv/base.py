"""What every provider's local environment has: a state directory with its settings, the bridge's
processes on this host and the ports chosen for them, and the names and defaults they share."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client as k8s

from devenv.clients import api_client
from devenv.components import Supervisor
from devenv.names import FRONT, remote_name
from devenv.procs import pids_under


class ClusterError(RuntimeError):
    pass


DEFAULT_WORKERS = 2
DEFAULT_NODES = 4
# Loopback ports of the bridge's processes, chosen once per environment: the front cluster's
# scheduler configuration and webhook configuration name them.
BRIDGE_PORTS = ("extender", "webhook", "kubelet", "relay")


def bridge_ports(previous: dict[str, Any], fresh: Iterator[int]) -> dict[str, int]:
    """The bridge's ports an environment keeps for its life (its settings' `ports`), each one it
    lacks (made before that port was added) drawn from `fresh`."""
    ports = dict(previous.get("ports") or {})
    for name in BRIDGE_PORTS:
        ports.setdefault(name, next(fresh))
    return ports


# The native Workload API (scheduling.k8s.io PodGroup, pod spec.schedulingGroup) is beta and off by
# default in 1.37: the front serves it so its gang protocol works (both providers).
FRONT_FEATURE_GATES = {"GenericWorkload": True}
FRONT_RUNTIME_CONFIG = {"scheduling.k8s.io/v1beta1": "true"}
# The provider `dev up` made an environment with, as recorded in its settings (absent: binary).
PROVIDER = "binary"


def default_state_dir() -> Path:
    return Path(
        os.environ.get("ARMADA_BRIDGE_STATE", Path.home() / ".local" / "state" / "armada-bridge" / "dev")
    )


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    healthy: bool
    detail: str
    server: str
    nodes_ready: int
    nodes_total: int


@dataclass(frozen=True)
class UpOptions:
    """What `dev up` is asked; None: as the last `up` chose, else the default."""

    workers: int = DEFAULT_WORKERS  # remote clusters
    nodes: int = DEFAULT_NODES  # KWOK nodes per remote cluster
    # The released operators to run (devenv.operators), beside every one an earlier `up` started.
    operator_names: tuple[str, ...] = ()
    # More than one runs the extender highly available, its replicas electing a leader and sharing
    # the port the scheduler and the webhook call (default 1).
    extender_replicas: int | None = None
    # Real nodes per remote cluster (devenv.realnode), 0 for none (default 1).
    real_nodes: int | None = None
    # The bridge's processes on the host, wired into the front (default); False leaves the front
    # without a bridge (and its scheduler without the extender), to install it as an admin does (its
    # image and chart on the front's real node: docs/install.md).
    host_bridge: bool | None = None
    # The real nodes' pod networks (devenv.network.podnet): "isolated" (default) or "flat"; kept.
    network: str | None = None


def log(msg: str) -> None:
    print(f"[dev] {msg}", file=sys.stderr, flush=True)


class BaseEnvironment:
    """What every provider's environment has: a state directory with its settings, the bridge's
    processes (extender, vkubelet) on this host, and the ports chosen for them. The bridge's setup
    (devenv.bridge.bridge) needs only this."""

    provider = PROVIDER
    #: what makes the environment, as a message that finds no cluster says
    up_command = "armada-bridge dev up"

    def __init__(self, state_dir: Path | None = None) -> None:
        self.state_dir = (state_dir or default_state_dir()).resolve()
        self.settings_file = self.state_dir / "environment.json"
        self.supervisor = Supervisor(self.state_dir)

    # ---------------------------------------------------------------- layout
    def settings(self) -> dict[str, Any]:
        if self.settings_file.is_file():
            return dict(json.loads(self.settings_file.read_text()))
        return {}

    @property
    def bridge_host(self) -> str:
        """The host address the bridge's processes serve the front cluster on (the extender's secure
        port, the vkubelet's kubelet API): loopback, unless the front runs elsewhere."""
        return "127.0.0.1"

    def front_ranges(self) -> tuple[str, ...]:
        """The front's pod and Service ranges, where they are real (with real nodes)."""
        return ()

    def host_for_front_pods(self) -> str:
        """The host address the front's real pods reach the bridge's processes at ("" when the
        front runs no real pod: then no relay pods are made)."""
        return ""

    def front_api_server(self) -> str:
        """The front kube-apiserver as remote pods reach it (RemoteCluster spec.frontAPI)."""
        raise NotImplementedError

    def cluster(self, name: str) -> _Cluster:
        """Cluster `name` (front, remote-1, ...), made or not."""
        raise NotImplementedError

    def clusters_dir(self) -> Path:
        """The folder holding a folder per cluster the provider made."""
        raise NotImplementedError

    def cluster_names(self) -> list[str]:
        """The front, remote-1 … remote-N as `up` recorded them, and clusters left over from an
        earlier, larger environment (still ours)."""
        workers = int(self.settings().get("workers", 0))
        names = [FRONT] + [remote_name(i) for i in range(1, workers + 1)]
        clusters_dir = self.clusters_dir()
        if clusters_dir.is_dir():
            names += sorted(p.name for p in clusters_dir.iterdir() if p.is_dir() and p.name not in names)
        return names

    def kubeconfig(self, name: str) -> Path:
        """The admin kubeconfig of cluster `name` (front, remote-1, ...); ClusterError if none."""
        path = self.cluster(name).kubeconfig
        if not path.is_file():
            known = ", ".join(self.cluster_names()) or f"none (run `{self.up_command}`)"
            raise ClusterError(f"no cluster named {name!r}; clusters: {known}")
        return path

    def remote_kubeconfigs(self) -> dict[str, Path]:
        """Remote cluster name -> its admin kubeconfig, for the remote clusters that have one."""
        out = {}
        for name in self.cluster_names():
            kubeconfig = self.cluster(name).kubeconfig
            if name != FRONT and kubeconfig.is_file():
                out[name] = kubeconfig
        return out

    def up(
        self,
        workers: int = DEFAULT_WORKERS,
        nodes: int = DEFAULT_NODES,
        operator_names: Sequence[str] = (),
        extender_replicas: int | None = None,
        real_nodes: int | None = None,
        host_bridge: bool | None = None,
        network: str | None = None,
    ) -> list[ClusterStatus]:
        """Start (or reuse, or repair) the environment as its provider does (UpOptions)."""
        if workers < 1 or nodes < 1 or (extender_replicas is not None and extender_replicas < 1):
            raise ValueError("--workers, --nodes and --extender-replicas must be at least 1")
        if real_nodes is not None and real_nodes < 0:
            raise ValueError("--real-nodes must be 0 or more")
        return self._up(
            UpOptions(
                workers, nodes, tuple(operator_names), extender_replicas, real_nodes, host_bridge, network
            )
        )

    def _up(self, o: UpOptions) -> list[ClusterStatus]:
        raise NotImplementedError

    def status(self) -> list[ClusterStatus]:
        raise NotImplementedError

    def down(self) -> None:
        raise NotImplementedError

    def check_provider(self) -> None:
        """Refuse to `up` an environment another provider made (its clusters are not ours to manage)."""
        settings = self.settings()
        made_by = settings.get("provider", PROVIDER) if settings else self.provider
        if made_by != self.provider:
            raise ClusterError(
                f"the environment in {self.state_dir} was made with --provider {made_by}: "
                f"`armada-bridge dev up --provider {made_by}` to use it, `armada-bridge dev down` to remove "
                "it, or another state directory (ARMADA_BRIDGE_STATE)"
            )

    @contextlib.contextmanager
    def _lock(self) -> Iterator[None]:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / ".lock", "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def extender_replicas(self) -> int:
        return int(self.settings().get("extender_replicas", 1))

    def port(self, name: str) -> int:
        """A port of the bridge's own processes (BRIDGE_PORTS), fixed for the environment's life."""
        return int(self.settings()["ports"][name])

    def pids(self) -> list[int]:
        """Every live process whose command line names this environment's state directory."""
        return pids_under(self.state_dir)


def reports_ready(node: Any) -> bool:
    """The node (a client object) has reported Ready: what `up` waits for. Unlike the scheduler's
    view (armada_bridge.contract.capacity.node_ready), a node that reports nothing yet is not."""
    for cond in node.status.conditions or []:
        if cond.type == "Ready":
            return bool(cond.status == "True")
    return False


class _Cluster(Protocol):
    @property
    def kubeconfig(self) -> Path: ...

    def server(self) -> str: ...


def cluster_status(name: str, ok: bool, detail: str, cluster: _Cluster) -> ClusterStatus:
    """A cluster's status from its own health check (`ok`, `detail`): when healthy, its API server
    and how many of its nodes are Ready; one whose nodes cannot be listed is not healthy."""
    server, ready, total = "", 0, 0
    if ok:
        server = cluster.server()
        try:
            with api_client(cluster.kubeconfig) as api:
                items = k8s.CoreV1Api(api).list_node(_request_timeout=5).items
            total, ready = len(items), sum(reports_ready(n) for n in items)
        except Exception as e:
            ok, detail = False, f"listing nodes failed: {e}"
    return ClusterStatus(name, ok, detail, server, ready, total)


def wait_nodes_ready(kubeconfig: Path, names: set[str], timeout: float, what: str = "nodes") -> None:
    """Wait until the nodes `names` are registered and Ready in the cluster of `kubeconfig`."""
    deadline = time.monotonic() + timeout
    with api_client(kubeconfig) as api:
        core = k8s.CoreV1Api(api)
        while True:
            ready = {n.metadata.name for n in core.list_node().items if reports_ready(n)}
            if names <= ready:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} not Ready after {timeout:.0f}s: {sorted(names - ready)}")
            time.sleep(0.5)
