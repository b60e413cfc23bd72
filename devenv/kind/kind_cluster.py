"""One kind cluster of the environment, through the kind CLI: created from a configuration
(devenv.kind.kind), checked, deleted. Its files live under the environment's state directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml

from devenv.base import ClusterError


@dataclass(frozen=True)
class KindCluster:
    name: str  # the environment's name for it: front, remote-1, ...
    kind_name: str  # kind's (devenv.kind.kind.cluster_name)
    workdir: Path
    network: str  # the environment's Docker network
    kind: str = "kind"  # the kind CLI
    kubectl: str = "kubectl"

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    @property
    def config_file(self) -> Path:
        return self.workdir / "kind-config.yaml"

    def _run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KIND_EXPERIMENTAL_DOCKER_NETWORK": self.network}
        try:
            return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"cluster {self.name}: `{' '.join(argv[:3])}` took over {timeout:.0f}s") from e

    def exists(self) -> bool:
        r = self._run([self.kind, "get", "clusters"], timeout=60)
        return self.kind_name in r.stdout.split()

    @property
    def stamp(self) -> Path:
        return self.workdir / "armada-bridge-definition"

    def created_from(self, definition: str) -> bool:
        """True when the cluster was created from this very definition (its configuration and the
        files it mounts): else it is to be made anew."""
        return self.stamp.is_file() and self.stamp.read_text() == definition

    def create(self, config_text: str, definition: str, wait_seconds: int | None) -> None:
        """`kind create cluster` from `config_text`; wait for its nodes when `wait_seconds` is given
        (the front cannot: its scheduler places even kindnet's pods only once the extender runs)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.stamp.unlink(missing_ok=True)
        self.config_file.write_text(config_text)
        argv = [
            self.kind, "create", "cluster", "--name", self.kind_name,
            "--config", str(self.config_file), "--kubeconfig", str(self.kubeconfig),
        ]  # fmt: skip
        if wait_seconds:
            argv.append(f"--wait={wait_seconds}s")
        r = self._run(argv, timeout=600 + (wait_seconds or 0))
        if r.returncode != 0:
            tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
            raise ClusterError(
                f"cluster {self.name}: kind create cluster failed (exit {r.returncode}):\n{tail}"
            )
        self.stamp.write_text(definition)

    def delete(self) -> None:
        if self.exists():
            r = self._run([self.kind, "delete", "cluster", "--name", self.kind_name], timeout=300)
            if r.returncode != 0:
                raise ClusterError(f"cluster {self.name}: kind delete cluster failed: {r.stderr.strip()}")
        shutil.rmtree(self.workdir, ignore_errors=True)

    def server(self) -> str:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        return str(cfg["clusters"][0]["cluster"]["server"])

    def kubectl_run(self, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return self._run([self.kubectl, "--kubeconfig", str(self.kubeconfig), *args], timeout=timeout)

    def health(self) -> tuple[bool, str]:
        if not self.kubeconfig.is_file():
            return False, "not created"
        try:
            r = self.kubectl_run("get", "--raw", "/readyz", "--request-timeout=5s", timeout=15)
        except ClusterError as e:
            return False, str(e)
        if r.returncode != 0:
            return False, f"apiserver not ready: {(r.stderr or r.stdout).strip()[:200]}"
        return True, "ok"

    def wait_nodes_ready(self, timeout: float) -> None:
        r = self.kubectl_run(
            "wait",
            "--for=condition=Ready",
            "nodes",
            "--all",
            f"--timeout={timeout:.0f}s",
            timeout=timeout + 30,
        )
        if r.returncode != 0:
            raise ClusterError(
                f"cluster {self.name}: nodes not Ready after {timeout:.0f}s: {r.stderr.strip()}"
            )


def _docker(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)


def ensure_network(name: str) -> str:
    """Make the Docker network `name` unless it exists; return the host's IPv4 address on it (its
    gateway), where containers on it reach processes of the host."""
    fmt = "{{range .IPAM.Config}}{{.Gateway}} {{end}}"
    r = _docker("network", "inspect", name, "--format", fmt)
    if r.returncode != 0:
        made = _docker("network", "create", "--driver", "bridge", name)
        if made.returncode != 0:
            raise ClusterError(f"docker network create {name} failed: {made.stderr.strip()}")
        r = _docker("network", "inspect", name, "--format", fmt)
    gateways = [g for g in r.stdout.split() if "." in g]
    if r.returncode != 0 or not gateways:
        raise ClusterError(f"docker network {name}: no IPv4 gateway ({(r.stderr or r.stdout).strip()})")
    return gateways[0]


def remove_network(name: str) -> None:
    _docker("network", "rm", name)
