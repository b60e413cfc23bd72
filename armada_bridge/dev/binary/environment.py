"""The local multi-cluster environment: cluster `front` and clusters `remote-1` … `remote-N`.

Each cluster is real etcd + kube-apiserver + kube-controller-manager + kube-scheduler processes on
loopback (kwokctl binary runtime); remote clusters get KWOK-simulated nodes. Everything lives under
one state directory, so `down` can prove it left nothing behind.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.dev import binaries as binaries_mod
from armada_bridge.dev.base import (
    BRIDGE_PORTS,
    DEFAULT_NODES,
    DEFAULT_WORKERS,
    FRONT_FEATURE_GATES,
    FRONT_RUNTIME_CONFIG,
    BaseEnvironment,
    ClusterError,
    ClusterStatus,
    log,
    node_ready,
)
from armada_bridge.dev.binary.kwok_cluster import PORT_OPTIONS, KwokCluster
from armada_bridge.dev.bridge import bridge, extender_setup, vkubelet_setup
from armada_bridge.dev.clients import api_client
from armada_bridge.dev.kwok import kwok_exec
from armada_bridge.dev.kwok import nodes as nodes_mod
from armada_bridge.dev.kwok.stages import remote_stages
from armada_bridge.dev.names import FRONT, remote_name
from armada_bridge.dev.operators import operators
from armada_bridge.dev.ports import free_ports
from armada_bridge.dev.procs import kill_and_wait


class Environment(BaseEnvironment):
    """The binary provider: every cluster real processes on loopback (kwokctl), KWOK nodes."""

    def __init__(self, state_dir: Path | None = None) -> None:
        super().__init__(state_dir)
        self.kwok_workdir = self.state_dir / "kwok"

    def front_api_server(self) -> str:
        # Remote pods reach the front apiserver where the vkubelet does: loopback.
        return self.cluster(FRONT).server()

    def remote_kubeconfigs(self) -> dict[str, Path]:
        out = {}
        for name in self.cluster_names():
            kubeconfig = self.cluster(name).kubeconfig
            if name != FRONT and kubeconfig.is_file():
                out[name] = kubeconfig
        return out

    def cluster_names(self) -> list[str]:
        workers = int(self.settings().get("workers", 0))
        names = [FRONT] + [remote_name(i) for i in range(1, workers + 1)]
        # Clusters left over from an earlier, larger environment are still ours.
        clusters_dir = self.kwok_workdir / "clusters"
        if clusters_dir.is_dir():
            names += sorted(p.name for p in clusters_dir.iterdir() if p.is_dir() and p.name not in names)
        return names

    def cluster(self, name: str, bins: binaries_mod.Binaries | None = None) -> KwokCluster:
        bins = bins or binaries_mod.expected()
        if name == FRONT:
            return KwokCluster(
                name=name,
                kwok_workdir=self.kwok_workdir,
                binaries=bins,
                kube_scheduler_config=self.state_dir / "front-kube-scheduler-config.yaml",
                # The front KWOK controller only fakes the small front node; virtual nodes are the
                # vkubelet's, never KWOK's.
                # kube-apiserver authenticates to the vkubelet's kubelet API (kubectl logs).
                # Interleaved: kwokctl v0.8.0 indexes its per-component patches by argument
                # position, so the k-th component must first appear at position k.
                extra_args=[
                    a
                    for pair in zip(
                        [
                            "kwok-controller=manage-all-nodes=false",
                            f"kwok-controller=manage-nodes-with-annotation-selector="
                            f"{keys.KWOK_NODE_ANNOTATION}={keys.KWOK_NODE_ANNOTATION_VALUE}",
                        ],
                        vkubelet_setup.front_apiserver_args(self.kwok_workdir / "clusters" / FRONT),
                        strict=True,
                    )
                    for a in pair
                ],
                feature_gates=",".join(f"{k}={str(v).lower()}" for k, v in FRONT_FEATURE_GATES.items()),
                runtime_config=",".join(f"{k}={v}" for k, v in FRONT_RUNTIME_CONFIG.items()),
            )
        # Remote clusters: KWOK serves container logs, attach and port-forward, so these work on
        # front pods; their nodes' kubelet port is kwok-exec's, which serves exec (once `up` chose
        # its port) and passes the rest to KWOK.
        exec_port = self.settings().get("ports", {}).get(kwok_exec.name(name))
        return KwokCluster(
            name=name,
            kwok_workdir=self.kwok_workdir,
            binaries=bins,
            extra_args=kwok_exec.kwokctl_args(exec_port) if exec_port else [],
            extra_config=[*vkubelet_setup.remote_kwok_config(self.state_dir), *remote_stages()],
        )

    def kubeconfig(self, name: str) -> Path:
        c = self.cluster(name)
        if not c.kubeconfig.is_file():
            known = ", ".join(self.cluster_names()) or "none (run `armada-bridge dev up`)"
            raise ClusterError(f"no cluster named {name!r}; clusters: {known}")
        return c.kubeconfig

    # ---------------------------------------------------------------- up
    def up(
        self,
        workers: int = DEFAULT_WORKERS,
        nodes: int = DEFAULT_NODES,
        operator_names: Sequence[str] = (),
        extender_replicas: int | None = None,
    ) -> list[ClusterStatus]:
        """Start (or reuse, or repair) the environment; also run `operator_names` and every operator
        an earlier `up` started (armada_bridge.dev.operators.operators). `extender_replicas` (kept from the
        last `up` when None, else 1): more than one runs the extender highly available, its
        replicas electing a leader and sharing the port the scheduler and the webhook call."""
        if workers < 1 or nodes < 1 or (extender_replicas is not None and extender_replicas < 1):
            raise ValueError("--workers, --nodes and --extender-replicas must be at least 1")
        started = time.monotonic()
        self.check_provider()
        bins = binaries_mod.ensure()
        with self._lock():
            previous = self.settings()
            wanted = [FRONT] + [remote_name(i) for i in range(1, workers + 1)]
            for name in self.cluster_names():
                if name not in wanted:
                    log(f"{name}: not part of a {workers}-remote environment, deleting")
                    self.supervisor.stop(kwok_exec.name(name))
                    self.cluster(name, bins).delete()
            # Every port this run may need, drawn at once so no two are the same: the bridge's own
            # (kept for the environment's life) and each cluster's, should it have to be (re)created.
            replicas = extender_replicas or int(previous.get("extender_replicas", 1))
            fresh = iter(free_ports(len(BRIDGE_PORTS) + replicas + (len(PORT_OPTIONS) + 1) * len(wanted)))
            ports = previous.get("ports") or {name: next(fresh) for name in BRIDGE_PORTS}
            for replica in extender_setup.replica_names(replicas)[1:]:  # each its own plain port
                ports.setdefault(replica, next(fresh))
            for name in wanted[1:]:  # each remote cluster's kwok-exec, the kubelet port of its nodes
                ports.setdefault(kwok_exec.name(name), next(fresh))
            cluster_ports = {n: [next(fresh) for _ in PORT_OPTIONS] for n in wanted}
            self.settings_file.write_text(
                json.dumps(
                    {"workers": workers, "nodes": nodes, "extender_replicas": replicas, "ports": ports}
                )
            )
            self._write_scheduler_config(ports["webhook"])
            for name in wanted:
                c = self.cluster(name, bins)
                stamp = c.workdir / "armada-bridge-definition"
                if c.exists() and (not stamp.is_file() or stamp.read_text() != c.definition()):
                    log(f"{name}: its definition changed, recreating it")
                    c.delete()
            if previous.get("nodes") not in (None, nodes):
                log(f"node count changed {previous.get('nodes')} -> {nodes}: recreating remote clusters")
                for name in wanted[1:]:
                    self.cluster(name, bins).delete()

            def bring_up(name: str) -> None:
                c = self.cluster(name, bins)
                ok, detail = c.health()
                if ok:
                    log(f"{name}: running, reused")
                else:
                    if c.exists() or c.pids():
                        log(f"{name}: unhealthy ({detail}), recreating")
                        c.delete()
                    t0 = time.monotonic()
                    log(
                        f"{name}: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok"
                    )
                    try:
                        c.create(cluster_ports[name])
                    except ClusterError as e:
                        # Most often a port taken between our choice and the bind: once more, anew.
                        log(f"{name}: start failed, retrying with other ports: {str(e).splitlines()[0]}")
                        c.delete()
                        c.create()
                    c.wait_healthy(60)
                    (c.workdir / "armada-bridge-definition").write_text(c.definition())
                    log(f"{name}: control plane ready in {time.monotonic() - t0:.1f}s")
                if name != FRONT:
                    server = kwok_exec.component(
                        c, ports[kwok_exec.name(name)], vkubelet_setup.remote_exec_dir(self.state_dir)
                    )
                    self.supervisor.ensure(server)
                    self.supervisor.wait_ready(server)
                manifests = nodes_mod.front_nodes() if name == FRONT else nodes_mod.remote_nodes(name, nodes)
                self._ensure_nodes(c.kubeconfig, manifests)
                log(f"{name}: {len(manifests)} node(s) Ready")

            with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
                for future in [pool.submit(bring_up, n) for n in wanted]:
                    future.result()
            bridge.install(self, bins)
            operators.install(self, bins, list(dict.fromkeys([*operators.enabled(self), *operator_names])))
        log(f"environment up in {time.monotonic() - started:.1f}s (state: {self.state_dir})")
        return self.status()

    def ensure_operators(self, names: Sequence[str]) -> None:
        """Install and run `names` in the running environment (kept when already running)."""
        with self._lock():
            operators.install(self, binaries_mod.expected(), names)

    def _write_scheduler_config(self, secure_port: int) -> None:
        """The repo's front scheduler configuration, pointed at the local extender's secure port."""
        cfg = extender_setup.scheduler_configuration(
            yaml.safe_load(extender_setup.SCHEDULER_CONFIG_TEMPLATE.read_text()),
            f"https://{self.bridge_host}:{secure_port}",
            extender_setup.scheduler_tls(self),
        )
        target = self.state_dir / "front-kube-scheduler-config.yaml"
        text = yaml.safe_dump(cfg, sort_keys=False)
        if not target.is_file() or target.read_text() != text:
            target.write_text(text)

    @staticmethod
    def _ensure_nodes(kubeconfig: Path, manifests: list[dict[str, Any]], timeout: float = 60) -> None:
        with api_client(kubeconfig) as api:
            core = k8s.CoreV1Api(api)
            for m in manifests:
                try:
                    core.create_node(m)
                except ApiException as e:
                    if e.status != 409:
                        raise
            names = {m["metadata"]["name"] for m in manifests}
            deadline = time.monotonic() + timeout
            while True:
                ready = {n.metadata.name for n in core.list_node().items if node_ready(n)}
                if names <= ready:
                    return
                if time.monotonic() > deadline:
                    raise ClusterError(f"nodes not Ready after {timeout:.0f}s: {sorted(names - ready)}")
                time.sleep(0.5)

    # ---------------------------------------------------------------- status / down
    def status(self) -> list[ClusterStatus]:
        out = []
        for name in self.cluster_names():
            c = self.cluster(name)
            ok, detail = c.health()
            if ok and name != FRONT and self.supervisor.pid(kwok_exec.name(name)) is None:
                ok, detail = False, f"{kwok_exec.name(name)} (its nodes' kubelet port) not running"
            server, ready, total = "", 0, 0
            if ok:
                server = c.server()
                try:
                    with api_client(c.kubeconfig) as api:
                        items = k8s.CoreV1Api(api).list_node(_request_timeout=5).items
                    total, ready = len(items), sum(node_ready(n) for n in items)
                except Exception as e:
                    ok, detail = False, f"listing nodes failed: {e}"
            out.append(ClusterStatus(name, ok, detail, server, ready, total))
        return out

    def down(self) -> None:
        with self._lock():
            self.supervisor.stop_all()
            names = self.cluster_names()
            with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
                list(pool.map(lambda n: self.cluster(n).delete(), names))
            stuck = kill_and_wait(self.pids())
            if stuck:
                raise ClusterError(f"processes {stuck} survived SIGKILL")
        shutil.rmtree(self.state_dir, ignore_errors=True)
        log(f"environment down; removed {self.state_dir}")
