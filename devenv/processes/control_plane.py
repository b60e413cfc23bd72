"""One local cluster made of real control-plane processes, managed through kwokctl's binary runtime.

kwokctl starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and (optionally) the
KWOK controller as plain processes under a work directory of ours; this class creates, checks and
deletes one such cluster.
"""

from __future__ import annotations

import os
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from devenv.base import ClusterError
from devenv.binaries import Binaries
from devenv.ports import LOOPBACK, free_ports
from devenv.procs import alive, kill_and_wait, pids_under

# The ports kwokctl's binary runtime needs per cluster (KwokctlConfiguration option names).
PORT_OPTIONS = (
    "etcdPort",
    "etcdPeerPort",
    "kubeApiserverPort",
    "kubeControllerManagerPort",
    "kubeSchedulerPort",
    "kwokControllerPort",
)


def interleaved(args: list[str]) -> list[str]:
    """kwokctl `--extra-args` (`component=flag=value`) in the order kwokctl v0.8.0 needs: it indexes
    its per-component patches by argument position, so the k-th component must first appear at
    position k. Round-robin over the components, in the order they first appear."""
    by_component: dict[str, list[str]] = {}
    for a in args:
        by_component.setdefault(a.split("=", 1)[0], []).append(a)
    out = []
    while any(by_component.values()):
        for queue in by_component.values():
            if queue:
                out.append(queue.pop(0))
    return out


@dataclass
class ControlPlane:
    name: str
    kwok_workdir: Path
    binaries: Binaries
    kube_scheduler_config: Path | None = None
    kwok_controller: bool = True
    extra_args: list[str] = field(default_factory=list)
    extra_config: list[dict[str, Any]] = field(default_factory=list)
    feature_gates: str = ""  # kwokctl --kube-feature-gates (all components)
    runtime_config: str = ""  # kwokctl --kube-runtime-config (kube-apiserver)
    # A host address, besides loopback, where pods reach this cluster's API (the front's, at the pod
    # network's gateway, when there are real nodes): kube-apiserver then listens on every address
    # and advertises this one; every other component stays on loopback.
    pod_facing_address: str = ""
    # More addresses kube-apiserver's certificate names (the front's: its `kubernetes` Service's
    # ClusterIP, where its in-cluster clients reach it).
    extra_sans: tuple[str, ...] = ()

    @property
    def workdir(self) -> Path:
        return self.kwok_workdir / "clusters" / self.name

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KWOK_WORKDIR"] = str(self.kwok_workdir)
        env["KWOK_KUBECTL_BINARY"] = str(self.binaries.kubectl)
        env["KWOK_KUBE_BINARY_PREFIX"] = str(self.binaries.kubernetes_dir)
        return env

    def _kwokctl(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.binaries.kwokctl), *args, "--name", self.name]
        try:
            return subprocess.run(
                cmd, env=self._env(), capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as e:
            raise ClusterError(f"cluster {self.name}: `{' '.join(cmd[:3])}` took over {timeout:.0f}s") from e

    def exists(self) -> bool:
        return (self.workdir / "kwok.yaml").is_file()

    @property
    def config_file(self) -> Path:
        return self.kwok_workdir / f"{self.name}.kwokctl.yaml"

    def _write_config(self, port_numbers: list[int]) -> None:
        """Our KwokctlConfiguration: loopback only, ports chosen by us; plus any extra documents."""
        ports = dict(zip(PORT_OPTIONS, port_numbers, strict=True))
        main = {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokctlConfiguration",
            "options": {
                "bindAddress": LOOPBACK,
                "kubeApiserverCertSANs": [
                    LOOPBACK,
                    *([self.pod_facing_address] if self.pod_facing_address else []),
                    *self.extra_sans,
                ],
                **ports,
            },
        }
        self.kwok_workdir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(yaml.safe_dump_all([main, *self.extra_config], sort_keys=False))

    def port(self, option: str) -> int:
        """The port this cluster was created with for `option` (one of PORT_OPTIONS)."""
        main = next(yaml.safe_load_all(self.config_file.read_text()))
        return int(main["options"][option])

    def create(self, ports: list[int] | None = None, wait_seconds: int = 90) -> None:
        """Start the cluster; `ports` (len(PORT_OPTIONS) free loopback ports) default to fresh ones."""
        b = self.binaries
        self._write_config(ports or free_ports(len(PORT_OPTIONS)))
        args = [
            f"--config={self.config_file}",
            "create",
            "cluster",
            "--runtime=binary",
            "--kubeconfig=",
            f"--wait={wait_seconds}s",
            f"--kube-apiserver-binary={b.kube_apiserver}",
            f"--kube-controller-manager-binary={b.kube_controller_manager}",
            f"--kube-scheduler-binary={b.kube_scheduler}",
            f"--etcd-binary={b.etcd}",
            f"--kwok-controller-binary={b.kwok}",
            "--disable-qps-limits",
        ]
        if self.feature_gates:
            args.append(f"--kube-feature-gates={self.feature_gates}")
        if self.runtime_config:
            args.append(f"--kube-runtime-config={self.runtime_config}")
        if not self.kwok_controller:
            args.append("--disable=kwok-controller")
        if self.kube_scheduler_config is not None:
            args.append(f"--kube-scheduler-config={self.kube_scheduler_config}")
        extra_args = self.extra_args
        if self.pod_facing_address:
            extra_args = interleaved(
                [
                    *extra_args,
                    "kube-apiserver=bind-address=0.0.0.0",
                    f"kube-apiserver=advertise-address={self.pod_facing_address}",
                ]
            )
        for extra in extra_args:
            args.append(f"--extra-args={extra}")
        cmd = [str(self.binaries.kwokctl), *args, "--name", self.name]
        proc = subprocess.Popen(
            cmd, env=self._env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        deadline = time.monotonic() + wait_seconds + 30
        # kwokctl waits for the API server for the whole --wait when a component died at start
        # (say, a port taken meanwhile): watch the components and fail at once, naming the culprit.
        while proc.poll() is None:
            dead = [c for c, pid in self.component_pids().items() if pid is None]
            if dead or time.monotonic() > deadline:
                proc.kill()
                proc.communicate()
                why = f"{', '.join(dead)} exited at start" if dead else f"not ready after {wait_seconds}s"
                raise ClusterError(
                    f"cluster {self.name}: {why}:\n{self.log_tail(dead[0] if dead else 'kube-apiserver')}"
                )
            time.sleep(0.2)
        output = proc.communicate()[0] or ""
        if proc.returncode != 0:
            tail = "\n".join(output.strip().splitlines()[-15:])
            raise ClusterError(
                f"cluster {self.name}: kwokctl create failed (exit {proc.returncode}):\n{tail}"
            )

    def definition(self) -> str:
        """Everything that shapes the cluster when created (not its ports): recreate it when this changes."""
        parts = [*self.extra_args, self.feature_gates, self.runtime_config, repr(self.extra_config)]
        if self.pod_facing_address:
            parts.append(self.pod_facing_address)
        parts += self.extra_sans
        if self.kube_scheduler_config is not None and self.kube_scheduler_config.is_file():
            parts.append(self.kube_scheduler_config.read_text())
        return "\n".join(parts)

    def reconfigure_scheduler(self, extenders: list[dict[str, Any]]) -> None:
        """Give the running kube-scheduler these extenders, as an admin edits a control plane's
        scheduler configuration: kwokctl's copy of it is changed and the scheduler restarted (kwokctl
        starts what is not running). The cluster's definition is left as created."""
        path = self.workdir / "scheduler.yaml"
        cfg = yaml.safe_load(path.read_text())
        cfg["extenders"] = extenders
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        pid = self.component_pids().get("kube-scheduler")
        if pid and kill_and_wait([pid]):
            raise ClusterError(f"{self.name}: kube-scheduler (pid {pid}) survived SIGKILL")
        # kwokctl skips a component whose process still exists: a killed one may be a zombie until
        # whoever adopted it reaps it.
        deadline = time.monotonic() + 30
        while self.component_pids().get("kube-scheduler") in (None, pid):
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{self.name}: kube-scheduler did not start again:\n{self.log_tail('kube-scheduler')}"
                )
            self._kwokctl("start", "cluster")
            time.sleep(0.5)

    def log_tail(self, component: str, lines: int = 10) -> str:
        try:
            text = (self.workdir / "logs" / f"{component}.log").read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.strip().splitlines()[-lines:])

    def delete(self) -> None:
        """Stop every process of this cluster, wait until they are gone, remove its work directory."""
        ours = self.pids()
        if self.exists():
            self._kwokctl("delete", "cluster", timeout=60)
        # kwokctl may leave a process behind when the cluster was half dead: finish the job, and
        # wait, so no port of ours is still open when this returns.
        stuck = kill_and_wait(sorted(set(ours) | set(self.pids())))
        if stuck:
            raise ClusterError(f"cluster {self.name}: processes {stuck} survived SIGKILL")
        if self.workdir.exists():
            subprocess.run(["rm", "-rf", str(self.workdir)], check=False)
        self.config_file.unlink(missing_ok=True)

    def pids(self) -> list[int]:
        """Live processes whose command line names this cluster's work directory."""
        return pids_under(self.workdir)

    def component_pids(self) -> dict[str, int | None]:
        """Component name -> pid if that process is alive, from kwokctl's pid files. A process that
        exited but was not reaped yet (a zombie of whoever started it) counts as gone."""
        out: dict[str, int | None] = {}
        for pid_file in sorted((self.workdir / "pids").glob("*.pid")):
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                pid = 0
            out[pid_file.stem] = pid if pid > 0 and alive(pid) else None
        return out

    def server(self) -> str:
        cfg = yaml.safe_load(self.kubeconfig.read_text())
        return str(cfg["clusters"][0]["cluster"]["server"])

    def readyz(self, timeout: float = 3) -> tuple[bool, str]:
        """Ask kube-apiserver /readyz with the admin credentials; (ok, detail)."""
        if not self.kubeconfig.is_file():
            return False, "no kubeconfig"
        try:
            cfg = yaml.safe_load(self.kubeconfig.read_text())
            cluster = cfg["clusters"][0]["cluster"]
            user = cfg["users"][0]["user"]
            ctx = ssl.create_default_context(cafile=_abs(self.kubeconfig, cluster["certificate-authority"]))
            ctx.load_cert_chain(
                _abs(self.kubeconfig, user["client-certificate"]), _abs(self.kubeconfig, user["client-key"])
            )
            with urllib.request.urlopen(f"{cluster['server']}/readyz", context=ctx, timeout=timeout) as r:
                body = r.read().decode()
            return r.status == 200, body.strip()
        except Exception as e:  # any failure means "not healthy"; the detail says why
            return False, f"{type(e).__name__}: {e}"

    def health(self) -> tuple[bool, str]:
        comps = self.component_pids()
        if not comps:
            return False, "not created"
        dead = [c for c, pid in comps.items() if pid is None]
        if dead:
            return False, f"dead: {', '.join(dead)}"
        ok, detail = self.readyz()
        return ok, "ok" if ok else f"apiserver not ready: {detail[:200]}"

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        detail = ""
        while time.monotonic() < deadline:
            ok, detail = self.health()
            if ok:
                return
            time.sleep(0.5)
        raise ClusterError(f"cluster {self.name} not healthy after {timeout:.0f}s: {detail}")

    def describe(self) -> dict[str, object]:
        return {"name": self.name, "workdir": str(self.workdir), "pids": self.component_pids()}


def _abs(kubeconfig: Path, path: str) -> str:
    p = Path(path)
    return str(p if p.is_absolute() else kubeconfig.parent / p)
