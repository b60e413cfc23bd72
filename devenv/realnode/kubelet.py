"""kubelet of the pinned release (`hack/build-binaries.sh node`) for one real node: its
configuration, its kubeconfig (a client certificate the remote cluster's CA signs for
`system:node:<name>`, so the Node authorizer applies), its command line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from armada_bridge import keys
from devenv.clients import certificate_kubeconfig
from devenv.components import Component
from devenv.network import dns


def configuration(
    *,
    address: str,
    port: int,
    healthz_port: int,
    cgroup_root: str,
    client_ca: Path,
    runtime_socket: Path,
    pod_logs: Path,
    reserved: dict[str, str],
    max_pods: int,
    cluster_dns: str,
) -> dict[str, Any]:
    """The KubeletConfiguration of a real node on this kind of host (docs/vkubelet.md, real nodes)."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "address": address,
        "port": port,
        "readOnlyPort": 0,
        "healthzBindAddress": address,
        "healthzPort": healthz_port,
        # The hosts are cgroup v1; 1.37 refuses v1 unless told (the v1 code is still there).
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": cgroup_root,
        "cgroupsPerQOS": True,
        "enforceNodeAllocatable": ["pods"],
        "containerRuntimeEndpoint": f"unix://{runtime_socket}",
        "podLogsDir": str(pod_logs),
        # Only the remote kube-apiserver (a client certificate of the cluster's CA) may use the
        # kubelet API, and what it may do is asked of that API server.
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(client_ca)},
        },
        "authorization": {"mode": "Webhook"},
        "clusterDomain": dns.CLUSTER_DOMAIN,
        "clusterDNS": [cluster_dns],
        "systemReserved": reserved,
        "maxPods": max_pods,
        # Images are imported, never pulled: never collect them, never evict for disk.
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        # No disk signal: under disk pressure kubelet would free room by removing every image not in
        # use, the sandbox's too, and none can be pulled back (the host's disk is shared anyway).
        "evictionHard": {"memory.available": "100Mi"},
        "serializeImagePulls": False,
        "registerWithTaints": [
            {"key": keys.DEV_REAL_NODE_TAINT_KEY, "effect": keys.DEV_REAL_NODE_TAINT_EFFECT}
        ],
    }


def kubeconfig(node: str, server: str, ca: tuple[Path, Path], directory: Path) -> Path:
    """A kubeconfig for kubelet `node` against `server`, its client certificate signed by `ca`."""
    subject = f"/O=system:nodes/CN=system:node:{node}"
    return certificate_kubeconfig(directory / "kubelet.kubeconfig", server, ca, subject, "kubelet-client")


def component(
    binary: Path,
    node: str,
    node_dir: Path,
    config: dict[str, Any],
    kubeconfig_file: Path,
    netns: Path,
) -> Component:
    """kubelet of `node`, in its cluster's network namespace `netns`, at the configuration's address
    (its node address); everything it writes under `node_dir`."""
    cfg = node_dir / "kubelet.yaml"
    text = yaml.safe_dump(config, sort_keys=False)
    if not cfg.is_file() or cfg.read_text() != text:
        cfg.write_text(text)
    return Component(
        name=f"kubelet-{node}",
        argv=[
            str(binary),
            f"--config={cfg}",
            f"--kubeconfig={kubeconfig_file}",
            f"--root-dir={node_dir / 'kubelet'}",
            f"--cert-dir={node_dir / 'kubelet-pki'}",
            f"--hostname-override={node}",
            f"--node-ip={config['address']}",
            "--v=1",
        ],
        ready_url=f"http://{config['address']}:{config['healthzPort']}/healthz",
        follows_code=False,
        # A cluster made anew has a new CA: its kubelet starts again, with a certificate of it.
        inputs=text + Path(config["authentication"]["x509"]["clientCAFile"]).read_text(),
        netns=netns,
    )
