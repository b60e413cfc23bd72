"""The local multi-cluster environment of the binary provider: cluster `front` and clusters
`remote-1` … `remote-N`.

Each cluster is real etcd + kube-apiserver + kube-controller-manager + kube-scheduler processes on
loopback (kwokctl binary runtime); remote clusters get KWOK-simulated nodes (devenv.simulated)
and real nodes (devenv.realnode) on one pod network (devenv.network).
Everything lives under one state directory, so `down` can prove it left nothing behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv import binaries as binaries_mod
from devenv.base import (
    BRIDGE_PORTS,
    FRONT_FEATURE_GATES,
    FRONT_RUNTIME_CONFIG,
    BaseEnvironment,
    ClusterError,
    ClusterStatus,
    UpOptions,
    bridge_ports,
    cluster_status,
    log,
    wait_nodes_ready,
)
from devenv.bridge import bridge, extender_setup, vkubelet_setup
from devenv.clients import api_client
from devenv.images import build as images
from devenv.images import oci, recipes
from devenv.names import FRONT, remote_name
from devenv.network import api_port, podnet
from devenv.operators import install as operator_setup
from devenv.ports import LOOPBACK, free_ports, release
from devenv.processes.control_plane import PORT_OPTIONS, ControlPlane, interleaved
from devenv.procs import kill_and_wait
from devenv.realnode import node as realnode
from devenv.realnode.node import RealNodes
from devenv.simulated import kwok_exec
from devenv.simulated import nodes as nodes_mod
from devenv.simulated.stages import remote_stages

# Each cluster's KWOK controller fakes only the nodes made as KWOK nodes (never virtual or real ones).
KWOK_NODES_ONLY = [
    "kwok-controller=manage-all-nodes=false",
    f"kwok-controller=manage-nodes-with-annotation-selector={keys.KWOK_NODE_ANNOTATION}={keys.KWOK_NODE_ANNOTATION_VALUE}",
]
DEFAULT_REAL_NODES = 1
# How long `up` waits for a control plane whose every process runs to answer before recreating it.
SLOW_CONTROL_PLANE = 60.0
# kube-apiserver reaches real nodes' kubelets (logs, exec) at their address: no DNS names them.
KUBELETS_BY_ADDRESS = "kube-apiserver=kubelet-preferred-address-types=InternalIP,Hostname"
# One instance of each, and nothing here starts one again that exits: with leader election (their
# default) a controller-manager or scheduler that cannot renew its lease in 10 s on a loaded machine
# exits, and then namespaces are never deleted and `up` finds the cluster broken. (The front
# scheduler's configuration file, manifests/scheduler/, says the same.)
CONTROLLER_MANAGER_ALONE = "kube-controller-manager=leader-elect=false"
SCHEDULER_ALONE = "kube-scheduler=leader-elect=false"


@dataclass
class _Plan:
    """What one `up` makes: its clusters, their real nodes and what those run, the ports drawn,
    and the choices an earlier `up` recorded (`previous`, its settings)."""

    previous: dict[str, Any]
    bins: binaries_mod.Binaries
    workers: int
    nodes: int
    wanted: list[str]  # the clusters, the front first
    replicas: int
    per_cluster: int
    with_bridge: bool
    planned: list[realnode.RealNode]
    node_bins: binaries_mod.NodeBinaries | None
    images: dict[str, Path]
    network: podnet.PodNetwork | None
    ports: dict[str, int] = field(default_factory=dict)
    cluster_ports: dict[str, list[int]] = field(default_factory=dict)
    front_services: str = ""

    def draw_ports(self, holder: Path) -> None:
        """Every port this run may need, drawn at once for the environment `holder` so no two are
        the same: the bridge's own (kept for the environment's life) and each cluster's, should it
        have to be (re)created."""
        wanted, planned = self.wanted, self.planned
        fresh = iter(
            free_ports(
                len(BRIDGE_PORTS)
                + self.replicas
                + (len(PORT_OPTIONS) + 1) * len(wanted)
                + len(realnode.PORT_KINDS) * len(planned)
                + len(wanted),
                holder=holder,
            )
        )
        ports = bridge_ports(self.previous, fresh)
        for replica in extender_setup.replica_names(self.replicas)[1:]:  # each its own plain port
            ports.setdefault(replica, next(fresh))
        for name in wanted[1:]:  # each remote cluster's kwok-exec, the kubelet port of its nodes
            ports.setdefault(kwok_exec.name(name), next(fresh))
        for n in planned:  # each real node's kubelet, kubelet healthz and runtime streaming ports
            for port_name in realnode.port_names(n):
                ports.setdefault(port_name, next(fresh))
        for name in {n.cluster for n in planned}:  # the readiness port of its cluster's DNS
            ports.setdefault(f"coredns-ready-{name}", next(fresh))
        self.ports = ports
        self.cluster_ports = {n: [next(fresh) for _ in PORT_OPTIONS] for n in wanted}

    @property
    def remote_real_nodes(self) -> int:
        return len([n for n in self.planned if n.cluster != FRONT])


class Environment(BaseEnvironment):
    """The binary provider: every cluster real processes on this host (kwokctl), KWOK nodes, and real
    nodes (kubelet + containerd) in the remote clusters."""

    def __init__(self, state_dir: Path | None = None) -> None:
        super().__init__(state_dir)
        self.kwok_workdir = self.state_dir / "kwok"

    def front_api_server(self) -> str:
        # Remote pods reach the front apiserver where the vkubelet does (loopback: KWOK pods never
        # call it), or at the host's address on the pod network when there are real nodes.
        return self._pod_facing(self.cluster(FRONT).server())

    def front_ranges(self) -> tuple[str, ...]:
        network, services = self.pod_network(), self.settings().get("front_services")
        return (network.subnet, services) if network and services else ()

    def ensure_node_images(self, keys: Sequence[str]) -> None:
        """The images `keys` (recipe keys; built if missing) on every remote real node: those
        imported on demand (devenv.images.recipes.Recipe.on_demand); one caller at a time (tests
        side by side ask for the same images)."""
        real = self.real_nodes()
        if real is None:
            return
        with self._lock():
            archives = {a: oci.image_name(a) for a in images.ensure_all(list(keys)).values()}
            for name in real.existing():
                if not name.startswith(f"{FRONT}-"):
                    imported = real.import_images(name, archives)
                    if imported:
                        log(f"{name}: imported {', '.join(p.name for p in imported)}")

    def host_for_front_pods(self) -> str:
        network = self.pod_network()
        return network.host_address if network else ""

    def _pod_facing(self, server: str) -> str:
        """A cluster's API server URL as pods (and whatever runs on the pod network) reach it."""
        network = self.pod_network()
        return server.replace(f"//{LOOPBACK}:", f"//{network.host_address}:") if network else server

    def pod_network(self) -> podnet.PodNetwork | None:
        """The environment's pod network, when it has real nodes."""
        chosen = self.settings().get("pod_network")
        return podnet.PodNetwork(**chosen) if chosen else None

    def real_nodes(self) -> RealNodes | None:
        network = self.pod_network()
        return RealNodes(self.state_dir, self.supervisor, network) if network else None

    def clusters_dir(self) -> Path:
        return self.kwok_workdir / "clusters"

    def cluster(self, name: str, bins: binaries_mod.Binaries | None = None) -> ControlPlane:
        bins = bins or binaries_mod.expected()
        network = self.pod_network()
        if name == FRONT:
            services = self.settings().get("front_services")
            return ControlPlane(
                name=name,
                kwok_workdir=self.kwok_workdir,
                binaries=bins,
                kube_scheduler_config=self.state_dir / "front-kube-scheduler-config.yaml",
                # The front KWOK controller only fakes the small front node; virtual nodes are the
                # vkubelet's, never KWOK's.
                # kube-apiserver authenticates to the vkubelet's kubelet API (kubectl logs).
                extra_args=interleaved(
                    [
                        *KWOK_NODES_ONLY,
                        *vkubelet_setup.front_apiserver_args(self.clusters_dir() / FRONT),
                        KUBELETS_BY_ADDRESS,
                        CONTROLLER_MANAGER_ALONE,
                        # Its Services' range, which the host reaches through its real node's router.
                        *([f"kube-apiserver=service-cluster-ip-range={services}"] if services else []),
                    ]
                ),
                # Pods of real nodes reach the front API where the pod network meets the host, and
                # the front's own pods at its `kubernetes` Service.
                pod_facing_address=network.host_address if network else "",
                extra_sans=(podnet.api_service_address(services),) if services else (),
                feature_gates=",".join(f"{k}={str(v).lower()}" for k, v in FRONT_FEATURE_GATES.items()),
                runtime_config=",".join(f"{k}={v}" for k, v in FRONT_RUNTIME_CONFIG.items()),
            )
        # Remote clusters: KWOK serves container logs, attach and port-forward, so these work on
        # front pods; their nodes' kubelet port is kwok-exec's, which serves exec (once `up` chose
        # its port) and passes the rest to KWOK. KWOK leaves the real nodes to their kubelets, which
        # kube-apiserver reaches at their InternalIP with a client certificate of the cluster's CA.
        exec_port = self.settings().get("ports", {}).get(kwok_exec.name(name))
        pki = self.clusters_dir() / name / "pki"
        return ControlPlane(
            name=name,
            kwok_workdir=self.kwok_workdir,
            binaries=bins,
            extra_args=interleaved(
                [
                    *(kwok_exec.kwokctl_args(exec_port) if exec_port else []),
                    *KWOK_NODES_ONLY,
                    KUBELETS_BY_ADDRESS,
                    f"kube-apiserver=kubelet-client-certificate={pki / 'admin.crt'}",
                    f"kube-apiserver=kubelet-client-key={pki / 'admin.key'}",
                    CONTROLLER_MANAGER_ALONE,
                    SCHEDULER_ALONE,
                ]
            ),
            extra_config=[*vkubelet_setup.remote_kwok_config(self.state_dir), *remote_stages()],
            # Its kube-proxy reaches it from the cluster's network namespace.
            pod_facing_address=network.host_address if network else "",
        )

    # ---------------------------------------------------------------- up
    def _up(self, o: UpOptions) -> list[ClusterStatus]:
        """Every cluster (control planes in parallel, then their KWOK and real nodes), the bridge on
        the host, the operators."""
        started = time.monotonic()
        self.check_provider()
        bins = binaries_mod.ensure()
        with self._lock():
            plan = self._plan(bins, o)
            self._delete_clusters_beyond(plan)
            self._record(plan)
            self._write_scheduler_config(plan.ports["webhook"] if plan.with_bridge else None)
            self._delete_changed_clusters(plan)
            with ThreadPoolExecutor(max_workers=len(plan.wanted)) as pool:
                for future in [pool.submit(self._bring_up, name, plan) for name in plan.wanted]:
                    future.result()
            if plan.with_bridge:
                bridge.install(self, bins)
            operator_setup.install(
                self, bins, list(dict.fromkeys([*operator_setup.enabled(self), *o.operator_names]))
            )
        log(f"environment up in {time.monotonic() - started:.1f}s (state: {self.state_dir})")
        return self.status()

    def _plan(self, bins: binaries_mod.Binaries, o: UpOptions) -> _Plan:
        """What this `up` makes, the choices an earlier one made kept where not given; the real
        nodes it no longer wants removed, and what the ones it wants run on built."""
        previous = self.settings()
        per_cluster = (
            int(previous.get("real_nodes", DEFAULT_REAL_NODES)) if o.real_nodes is None else o.real_nodes
        )
        with_bridge = bool(previous.get("host_bridge", True)) if o.host_bridge is None else o.host_bridge
        if previous and with_bridge != bool(previous.get("host_bridge", True)):
            raise ClusterError(
                "the environment was made "
                + ("with" if previous.get("host_bridge", True) else "without")
                + " the bridge's host processes: `armada-bridge dev down` first"
            )
        network = self.pod_network()
        if network and o.network and o.network != network.mode:
            raise ClusterError(
                f"the environment's pod network is {network.mode}: `armada-bridge dev down` first"
            )
        wanted = [FRONT] + [remote_name(i) for i in range(1, o.workers + 1)]
        planned = realnode.plan(wanted[1:], per_cluster)
        self._remove_real_nodes_beyond(planned)
        if planned:
            realnode.require_host()
        plan = _Plan(
            previous=previous,
            bins=bins,
            workers=o.workers,
            nodes=o.nodes,
            wanted=wanted,
            replicas=o.extender_replicas or int(previous.get("extender_replicas", 1)),
            per_cluster=per_cluster,
            with_bridge=with_bridge,
            planned=planned,
            node_bins=binaries_mod.ensure_node() if planned else None,
            images=images.ensure_all(list(recipes.started_with())) if planned else {},
            network=(network or podnet.choose(self.state_dir, o.network or podnet.ISOLATED))
            if planned
            else None,
        )
        plan.draw_ports(self.state_dir)
        return plan

    def _delete_clusters_beyond(self, plan: _Plan) -> None:
        for name in self.cluster_names():
            if name not in plan.wanted:
                log(f"{name}: not part of a {plan.workers}-remote environment, deleting")
                self.supervisor.stop(kwok_exec.name(name))
                self.cluster(name, plan.bins).delete()

    def _record(self, plan: _Plan) -> None:
        """The environment's settings, as later commands read them; with a pod network, the host
        as found noted before anything changes it (and the bridge before the front listens on its
        gateway)."""
        settings: dict[str, Any] = {
            "workers": plan.workers,
            "nodes": plan.nodes,
            "extender_replicas": plan.replicas,
            "real_nodes": plan.per_cluster,
            "host_bridge": plan.with_bridge,
            "ports": plan.ports,
        }
        if plan.network:
            settings["pod_network"] = dataclasses.asdict(plan.network)
            settings["front_services"] = plan.previous.get("front_services") or podnet.choose_service_range(
                plan.network
            )
            plan.front_services = settings["front_services"]
            RealNodes(self.state_dir, self.supervisor, plan.network).prepare()
        self.settings_file.write_text(json.dumps(settings))

    def _delete_changed_clusters(self, plan: _Plan) -> None:
        """Clusters whose definition changed, and the remote clusters when the node count did, go
        (to be made again)."""
        for name in plan.wanted:
            c = self.cluster(name, plan.bins)
            stamp = c.workdir / "armada-bridge-definition"
            if c.exists() and (not stamp.is_file() or stamp.read_text() != c.definition()):
                log(f"{name}: its definition changed, recreating it")
                c.delete()
        if plan.previous.get("nodes") not in (None, plan.nodes):
            log(
                f"node count changed {plan.previous.get('nodes')} -> {plan.nodes}: recreating remote clusters"
            )
            for name in plan.wanted[1:]:
                self.cluster(name, plan.bins).delete()

    def _bring_up(self, name: str, plan: _Plan) -> None:
        """One cluster: its control plane, its simulated nodes, and its real nodes."""
        c = self.cluster(name, plan.bins)
        self._control_plane(c, plan.cluster_ports[name])
        if name != FRONT:
            server = kwok_exec.component(
                c, plan.ports[kwok_exec.name(name)], vkubelet_setup.remote_exec_dir(self.state_dir)
            )
            self.supervisor.ensure(server)
            self.supervisor.wait_ready(server)
        manifests = nodes_mod.front_nodes() if name == FRONT else nodes_mod.remote_nodes(name, plan.nodes)
        self._ensure_nodes(c.kubeconfig, manifests)
        log(f"{name}: {len(manifests)} node(s) Ready")
        if name == FRONT and plan.network:
            relay = api_port.component(
                plan.network.host_address, urlsplit(c.server()).port or 443, self.state_dir
            )
            self.supervisor.ensure(relay)
            self.supervisor.wait_ready(relay)
        mine = [n for n in plan.planned if n.cluster == name]
        if mine:
            self._bring_up_real_nodes(c, mine, plan)

    def _control_plane(self, c: ControlPlane, ports: list[int]) -> None:
        """A cluster's control plane running: reused when healthy, else (re)made."""
        ok, detail = c.health()
        if not ok and (pids := c.component_pids()) and None not in pids.values():
            # Every process runs: an API server slow to answer on a loaded machine is not broken,
            # and recreating the cluster would lose every object in it. Given time first.
            log(f"{c.name}: {detail}; every process runs, waiting for it")
            try:
                c.wait_healthy(SLOW_CONTROL_PLANE)
                ok = True
            except ClusterError as e:
                detail = str(e)
        if ok:
            log(f"{c.name}: running, reused")
            return
        if c.exists() or c.pids():
            log(f"{c.name}: unhealthy ({detail}), recreating")
            c.delete()
        t0 = time.monotonic()
        log(f"{c.name}: starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok")
        try:
            c.create(ports)
        except ClusterError as e:
            # Most often a port taken between our choice and the bind: once more, anew.
            log(f"{c.name}: start failed, retrying with other ports: {str(e).splitlines()[0]}")
            c.delete()
            c.create()
        c.wait_healthy(60)
        (c.workdir / "armada-bridge-definition").write_text(c.definition())
        log(f"{c.name}: control plane ready in {time.monotonic() - t0:.1f}s")

    def _bring_up_real_nodes(self, c: ControlPlane, mine: list[realnode.RealNode], plan: _Plan) -> None:
        """A cluster's real nodes Ready, with its network namespace, DNS and Services."""
        real = self.real_nodes()
        if real is None or plan.node_bins is None:
            return
        pod_facing_server = self._pod_facing(c.server())
        cluster_net, cluster_dns = real.ensure_cluster(
            c.name,
            plan.wanted.index(c.name),
            c.kubeconfig,
            plan.ports[f"coredns-ready-{c.name}"],
            plan.node_bins.coredns,
        )
        for n in mine:
            wanted_images = realnode.images_for(n) or recipes.started_with()
            real.ensure(
                n,
                server=pod_facing_server,
                pki=c.workdir / "pki",
                ports=plan.ports,
                reserved=realnode.reserved_for(n, plan.remote_real_nodes),
                images={a: oci.image_name(a) for key, a in plan.images.items() if key in wanted_images},
                kubelet_binary=plan.node_bins.kubelet,
                cluster_net=cluster_net,
                cluster_dns=cluster_dns,
            )
        wait_nodes_ready(c.kubeconfig, {n.name for n in mine}, 120, "real nodes")
        log(f"{c.name}: {len(mine)} real node(s) Ready: {', '.join(n.name for n in mine)}")
        real.ensure_services(
            cluster_net, pod_facing_server, c.workdir / "pki", mine[0].name, plan.node_bins.kube_proxy
        )
        if c.name == FRONT:  # its control plane calls Services (webhooks, an extender) and pods
            cluster_net.route_from_host(plan.front_services)
            if plan.network and plan.network.outside:  # isolated: the front's pods, the host's only
                cluster_net.route_from_host(plan.network.subnet)
        log(f"{c.name}: Services (kube-proxy) ready")

    def _remove_real_nodes_beyond(self, planned: list[realnode.RealNode]) -> None:
        """Tear down the real nodes an earlier `up` started that `planned` no longer has (all of
        them, with the pod network and the host's tunables, when it has none)."""
        real = self.real_nodes()
        if real is None:
            return
        keep = {n.name for n in planned}
        if not keep:
            problems = real.teardown_all()
        else:
            problems = [p for name in real.existing() if name not in keep for p in real.teardown(name)]
            for cluster in {n.rsplit("-real-", 1)[0] for n in real.existing()} - {n.cluster for n in planned}:
                real.teardown_cluster(cluster)  # no real node left in it
        for name in [n for n in real.existing() if n not in keep]:
            log(f"{name}: not wanted any more, removed")
            shutil.rmtree(real.dir / name, ignore_errors=True)
            cluster = name.rsplit("-real-", 1)[0]
            # A cluster that is gone has no node to remove.
            with contextlib.suppress(Exception), api_client(self.cluster(cluster).kubeconfig) as api:
                k8s.CoreV1Api(api).delete_node(name, _request_timeout=5)
        if problems:
            raise ClusterError("removing real nodes left things behind: " + "; ".join(problems))

    def ensure_operators(self, names: Sequence[str]) -> None:
        """Install and run `names` in the running environment (kept when already running)."""
        with self._lock():
            operator_setup.install(self, binaries_mod.expected(), names)

    def point_front_scheduler_at(self, url: str, ca_pem: str, server_name: str) -> None:
        """The front kube-scheduler calls the extender at `url` (an installed bridge's Service, at
        its ClusterIP: the scheduler runs on the host, like a control plane's, outside cluster DNS),
        checking its certificate for `server_name` (the Service's DNS name, which the certificate
        names) against `ca_pem`, and presenting the front's admin certificate; the repo's
        configuration otherwise (manifests/scheduler/kube-scheduler-config.yaml)."""
        ca = self.state_dir / "front-extender-ca.crt"
        ca.write_text(ca_pem)
        pki = self.cluster(FRONT).workdir / "pki"
        tls = {
            "caFile": str(ca),
            "certFile": str(pki / "admin.crt"),
            "keyFile": str(pki / "admin.key"),
            "serverName": server_name,
        }
        template = yaml.safe_load(extender_setup.SCHEDULER_CONFIG_TEMPLATE.read_text())
        self.cluster(FRONT).reconfigure_scheduler(
            extender_setup.scheduler_configuration(template, url, tls)["extenders"]
        )

    def front_scheduler_without_extender(self) -> None:
        """The front kube-scheduler on its own again (an installed bridge's extender gone)."""
        self.cluster(FRONT).reconfigure_scheduler([])

    def _scheduler_tls(self) -> dict[str, str]:
        """The front kube-scheduler's extender tlsConfig: it trusts the extender's certificate and
        presents the front's admin client certificate, which the extender checks with the front."""
        cert, _ = extender_setup.serving_certificate(self)
        pki = self.cluster(FRONT).workdir / "pki"
        return {"caFile": str(cert), "certFile": str(pki / "admin.crt"), "keyFile": str(pki / "admin.key")}

    def _write_scheduler_config(self, secure_port: int | None) -> None:
        """The repo's front scheduler configuration, pointed at the local extender's secure port
        (without the extender when None: no bridge runs on the host)."""
        template = yaml.safe_load(extender_setup.SCHEDULER_CONFIG_TEMPLATE.read_text())
        if secure_port is None:
            cfg = {k: v for k, v in template.items() if k != "extenders"}
        else:
            cfg = extender_setup.scheduler_configuration(
                template, f"https://{self.bridge_host}:{secure_port}", self._scheduler_tls()
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
        wait_nodes_ready(kubeconfig, {m["metadata"]["name"] for m in manifests}, timeout)

    # ---------------------------------------------------------------- status / down
    def status(self) -> list[ClusterStatus]:
        out = []
        real = self.real_nodes()
        for name in self.cluster_names():
            c = self.cluster(name)
            ok, detail = c.health()
            if ok and name != FRONT and self.supervisor.pid(kwok_exec.name(name)) is None:
                ok, detail = False, f"{kwok_exec.name(name)} (its nodes' kubelet port) not running"
            for process in real.processes(name) if ok and real else []:
                if self.supervisor.pid(process) is None:
                    ok, detail = False, f"{process} (a real node's) not running"
            out.append(cluster_status(name, ok, detail, c))
        return out

    def down(self) -> None:
        with self._lock():
            real = self.real_nodes()
            # Real nodes first: their containers, mounts, cgroups, pod network, the host's tunables.
            # Whatever fails there, the rest still goes down; it is reported at the end.
            try:
                problems = real.teardown_all() if real else []
            except Exception as e:  # any failure: reported once the rest is down
                problems = [f"{type(e).__name__}: {e}"]
            self.supervisor.stop_all()
            names = self.cluster_names()
            with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
                list(pool.map(lambda n: self.cluster(n).delete(), names))
            stuck = kill_and_wait(self.pids())
            if stuck:
                raise ClusterError(f"processes {stuck} survived SIGKILL")
            if problems:
                raise ClusterError("the real nodes left things on the host: " + "; ".join(problems))
        shutil.rmtree(self.state_dir, ignore_errors=True)
        release(self.state_dir)
        log(f"environment down; removed {self.state_dir}")
