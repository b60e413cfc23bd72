"""`armada-bridge dev up --provider kind`: front + remote-1..N as kind clusters on the environment's
own Docker network, the bridge (extender + webhook, vkubelet) as processes on the host.

- The host's address on that network (its gateway) is where the bridge serves the front cluster:
  the front kube-scheduler calls the extender there, the front kube-apiserver the webhook and the
  vkubelet's kubelet API (`kubectl logs|exec` on front pods).
- The front cluster's CA is made here before the cluster (kubeadm uses a CA it finds), so the
  front kube-scheduler's client certificate for the extender, its configuration and the extender's
  CA are files the front node mounts when it is created.
- Remote clusters run pods for real on `--nodes` kind worker nodes each (no KWOK): their capacity
  is what Docker gives those containers.
- Remote pods reach the front API at the front's control-plane container on the network.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from armada_bridge import certs
from devenv import binaries as binaries_mod
from devenv import versions
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
)
from devenv.bridge import bridge, extender_setup
from devenv.kind import kind as kind_mod
from devenv.kind.kind_cluster import KindCluster, ensure_network, remove_network
from devenv.names import FRONT, remote_name
from devenv.ports import free_ports, release
from devenv.processes.environment import Environment
from devenv.procs import kill_and_wait

PROVIDER = "kind"
# Worker nodes per remote cluster unless `--nodes` says otherwise: each is a container with its
# own kubelet and containerd, far heavier than a KWOK node.
DEFAULT_NODES = 1
# The front kube-scheduler's identity towards the extender (CN the user, O its groups), as the
# binary provider's front presents its admin certificate.
SCHEDULER_SUBJECT = "/O=system:masters/CN=armada-bridge-front-scheduler"
NODES_READY_SECONDS = 300
# A node image to use instead of kindest/node:<KUBERNETES_VERSION> (say, one made with
# `kind build node-image <version>` where kind publishes no image for the pinned release).
NODE_IMAGE_ENV = "ARMADA_BRIDGE_KIND_NODE_IMAGE"


class KindEnvironment(BaseEnvironment):
    provider = PROVIDER
    up_command = "armada-bridge dev up --provider kind"

    def __init__(self, state_dir: Path | None = None) -> None:
        super().__init__(state_dir)
        self.env_id = kind_mod.environment_id(self.state_dir)
        self.kind_dir = self.state_dir / "kind"

    # ---------------------------------------------------------------- layout
    @property
    def bridge_host(self) -> str:
        return str(self.settings().get("host") or "127.0.0.1")

    @property
    def network(self) -> str:
        return kind_mod.network_name(self.env_id)

    def front_api_server(self) -> str:
        return kind_mod.internal_server(kind_mod.cluster_name(self.env_id, FRONT))

    def clusters_dir(self) -> Path:
        return self.kind_dir / "clusters"

    def cluster(self, name: str) -> KindCluster:
        return KindCluster(
            name=name,
            kind_name=kind_mod.cluster_name(self.env_id, name),
            workdir=self.clusters_dir() / name,
            network=self.network,
            kind=str(self.settings().get("kind_binary") or "kind"),
            kubectl=str(binaries_mod.expected().kubectl),
        )

    def front_files(self) -> kind_mod.FrontFiles:
        ca = self.kind_dir / "front-ca"
        return kind_mod.FrontFiles(
            mount_dir=self.kind_dir / "front-node", ca_cert=ca / "ca.crt", ca_key=ca / "ca.key"
        )

    def _write_front_files(self) -> str:
        """The front node's mounted files (CA, the scheduler's client certificate and
        configuration, the extender's CA); returns their contents, part of the front's definition."""
        files = self.front_files()
        ca = certs.certificate_authority(files.ca_cert.parent, "ca", "/CN=armada-bridge-front-ca")
        certs.client_certificate(files.mount_dir, "scheduler-client", SCHEDULER_SUBJECT, ca)
        extender_cert, _ = extender_setup.serving_certificate(self)
        shutil.copyfile(extender_cert, files.mount_dir / kind_mod.EXTENDER_CA_FILE)
        template = yaml.safe_load(extender_setup.SCHEDULER_CONFIG_TEMPLATE.read_text())
        cfg = extender_setup.scheduler_configuration(
            template, extender_setup.secure_url(self), kind_mod.scheduler_tls_in_node()
        )
        scheduler_config = yaml.safe_dump(kind_mod.front_scheduler_config(cfg), sort_keys=False)
        (files.mount_dir / kind_mod.SCHEDULER_CONFIG_FILE).write_text(scheduler_config)
        return "\n".join(
            p.read_text()
            for p in (
                files.ca_cert,
                files.mount_dir / kind_mod.SCHEDULER_CERT_FILE,
                files.mount_dir / kind_mod.EXTENDER_CA_FILE,
                files.mount_dir / kind_mod.SCHEDULER_CONFIG_FILE,
            )
        )

    # ---------------------------------------------------------------- up
    def _up(self, o: UpOptions) -> list[ClusterStatus]:
        """Start (or reuse, or repair) the kind environment: remote clusters first (kind waits for
        their nodes), then the front, then the bridge, then the front's node (Ready once its
        CNI's pods ran, which its scheduler places only with the extender up)."""
        if o.host_bridge is False:
            raise ValueError("--without-bridge is for the binary provider")
        if o.operator_names:
            raise ValueError(
                "--operators is not available with --provider kind yet (the operators run on the host, "
                "where their webhooks listen on loopback, out of the kind API server's reach); "
                "use the default provider for them"
            )
        kind_mod.require_docker()
        v = versions.load()
        kind_binary = kind_mod.require_kind(v.kind)
        self.check_provider()
        started = time.monotonic()
        bins = binaries_mod.ensure_kubectl(v)
        with self._lock():
            previous = self.settings()
            wanted = [FRONT] + [remote_name(i) for i in range(1, o.workers + 1)]
            host = ensure_network(self.network)
            replicas = o.extender_replicas or int(previous.get("extender_replicas", 1))
            fresh = iter(free_ports(len(BRIDGE_PORTS) + replicas + len(wanted), holder=self.state_dir))
            ports = bridge_ports(previous, fresh)
            for replica in extender_setup.replica_names(replicas)[1:]:
                ports.setdefault(replica, next(fresh))
            api_ports = dict(previous.get("api_ports") or {})
            for name in wanted:
                api_ports.setdefault(name, next(fresh))
            settings: dict[str, Any] = {
                "provider": PROVIDER,
                "workers": o.workers,
                "nodes": o.nodes,
                "extender_replicas": replicas,
                "ports": ports,
                "api_ports": api_ports,
                "host": host,
                "kind_binary": kind_binary,
            }
            self.settings_file.write_text(json.dumps(settings))
            for name in self.cluster_names():
                if name not in wanted:
                    log(f"{name}: not part of a {o.workers}-remote environment, deleting")
                    self.cluster(name).delete()
            front_files = self._write_front_files()
            image = os.environ.get(NODE_IMAGE_ENV) or kind_mod.node_image(v.kubernetes)
            for name in [*wanted[1:], FRONT]:
                c = self.cluster(name)
                if name == FRONT:
                    config = kind_mod.front_cluster_config(
                        c.kind_name,
                        image,
                        api_ports[name],
                        self.front_files(),
                        FRONT_FEATURE_GATES,
                        FRONT_RUNTIME_CONFIG,
                    )
                else:
                    config = kind_mod.remote_cluster_config(c.kind_name, image, api_ports[name], o.nodes)
                text = kind_mod.to_yaml(config)
                definition = text + (front_files if name == FRONT else "")
                if c.exists():
                    if c.created_from(definition) and c.health()[0]:
                        log(f"{name}: running, reused")
                        continue
                    log(f"{name}: unhealthy or its definition changed, recreating")
                    c.delete()
                t0 = time.monotonic()
                log(f"{name}: kind create cluster {c.kind_name} ({image})")
                c.create(text, definition, wait_seconds=None if name == FRONT else NODES_READY_SECONDS)
                log(f"{name}: created in {time.monotonic() - t0:.1f}s")
            bridge.install(self, bins)
            self.cluster(FRONT).wait_nodes_ready(NODES_READY_SECONDS)
        log(f"environment up in {time.monotonic() - started:.1f}s (state: {self.state_dir})")
        return self.status()

    # ---------------------------------------------------------------- status / down
    def status(self) -> list[ClusterStatus]:
        if not self.settings():
            return []
        out = []
        for name in self.cluster_names():
            c = self.cluster(name)
            ok, detail = c.health()
            out.append(cluster_status(name, ok, detail, c))
        return out

    def down(self) -> None:
        with self._lock():
            self.supervisor.stop_all()
            if shutil.which("docker") and shutil.which(str(self.settings().get("kind_binary") or "kind")):
                for name in self.cluster_names():
                    self.cluster(name).delete()
                remove_network(self.network)
            elif self.settings():
                log(
                    "docker or kind missing: the kind clusters (if any) were left; `kind get clusters` lists them"
                )
            stuck = kill_and_wait(self.pids())
            if stuck:
                raise ClusterError(f"processes {stuck} survived SIGKILL")
        shutil.rmtree(self.state_dir, ignore_errors=True)
        release(self.state_dir)
        log(f"environment down; removed {self.state_dir}")


def open_environment(state_dir: Path | None = None, provider: str | None = None) -> BaseEnvironment:
    """The environment in `state_dir` for `provider` (default: the provider that made it, else binary)."""
    env = Environment(state_dir)
    made_by = provider or env.settings().get("provider", env.provider)
    return KindEnvironment(env.state_dir) if made_by == PROVIDER else env
