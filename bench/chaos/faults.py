"""The faults: bridge processes killed and restarted as their Deployment would, a control plane's
processes paused or killed and started again as their supervisor would, at random (seeded) gaps."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

from bench.chaos.context import REMOTES, SoakContext
from bench.chaos.report import log
from devenv.bridge import extender_setup, vkubelet_setup

LEASE_PAUSE = 45.0
FAULT_KINDS = (
    "extender",
    "vkubelet",
    "scheduler",
    "remote",
    "kill-scheduler",
    "kill-remote-apiserver",
    "kill-remote-etcd",
)
HA_FAULT_KINDS = (*FAULT_KINDS, "extenders")
#: The invariants: the first four judged all along (Soak.check), the last at the end.


def fault_kinds(extender_replicas: int) -> tuple[str, ...]:
    return HA_FAULT_KINDS if extender_replicas > 1 else FAULT_KINDS


class Faults:
    def __init__(self, ctx: SoakContext, seed: int) -> None:
        self.ctx = ctx
        self.rng = random.Random(seed + 1)  # the faults' (another thread: its own sequence)
        self.replicas = extender_setup.replica_names(ctx.env.extender_replicas())
        self.kinds = fault_kinds(len(self.replicas))
        self.kinds_done: set[str] = set()
        self.held: set[tuple[str, str]] = set()  # processes a fault keeps down for now
        self.killed: set[tuple[str, str]] = set()  # killed by a fault, not started again yet

    def _kill_components(self, names: list[str]) -> bool:
        """SIGKILL bridge processes (extender replicas, the vkubelet) together, then start them
        again a few seconds later, as their Deployment would."""
        pids = {n: self.ctx.env.supervisor.pid(n) for n in names}
        if not any(pids.values()):
            return False
        for name, pid in pids.items():
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                log(f"SIGKILL {name} (pid {pid})")
        if len(names) > 1:
            self.ctx.report.faults["kill every extender replica"] += 1
        else:
            self.ctx.report.faults[f"kill {'extender' if names[0] in self.replicas else names[0]}"] += 1
        self.ctx.stop.wait(self.rng.uniform(1, 6))
        vkubelet = "vkubelet" in names
        (vkubelet_setup.setup if vkubelet else extender_setup.setup)(self.ctx.env, self.ctx.bins)
        log(f"{', '.join(names)} restarted")
        return True

    def _pause(self, cluster: str, component: str, seconds: float) -> bool:
        pid = self.ctx.env.cluster(cluster, self.ctx.bins).component_pids().get(component)
        if pid is None:
            return False
        self.ctx.report.faults[f"pause {cluster} {component}"] += 1
        log(f"SIGSTOP {cluster} {component} for {seconds:.0f}s")
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)
        log(f"SIGCONT {cluster} {component}")
        return True

    def _kill_cluster_component(self, cluster: str, component: str) -> bool:
        """SIGKILL one process of a cluster; the supervisor starts it again a few seconds later."""
        pid = self.ctx.env.cluster(cluster, self.ctx.bins).component_pids().get(component)
        if pid is None:
            return False
        self.held.add((cluster, component))
        self.killed.add((cluster, component))
        try:
            os.kill(pid, signal.SIGKILL)
            self.ctx.report.faults[f"kill {cluster} {component}"] += 1
            log(f"SIGKILL {cluster} {component} (pid {pid})")
            self.ctx.stop.wait(self.rng.uniform(1, 5))
        finally:
            self.held.discard((cluster, component))
        return True

    def supervise_loop(self) -> None:
        """What kubelet (static pods) or systemd does for a control plane: start again, as it was
        started, every process that exits — kube-controller-manager and kube-scheduler do when they
        lose their leader lease while their apiserver is away — or that a fault killed (once the
        fault lets it: `held`). Runs until the soak ends, convergence included."""
        clusters = {c: self.ctx.env.cluster(c, self.ctx.bins) for c in ("front", *REMOTES)}
        commands = {
            (c, comp): process_command(pid)
            for c, kc in clusters.items()
            for comp, pid in kc.component_pids().items()
            if pid is not None
        }
        while not self.ctx.done.wait(1.0):
            for (c, comp), command in commands.items():
                kc = clusters[c]
                if (c, comp) in self.held or kc.component_pids().get(comp) is not None:
                    continue
                new = restart_process(command, kc.workdir / "logs" / f"{comp}.log")
                (kc.workdir / "pids" / f"{comp}.pid").write_text(str(new))
                if (c, comp) in self.killed:
                    self.killed.discard((c, comp))
                else:
                    self.ctx.report.faults[f"restart {c} {comp} (exited)"] += 1
                log(f"{c} {comp} started again as pid {new}")

    def chaos_loop(self, mean_gap: float) -> None:
        """Faults at exponential gaps, the kinds dealt from a shuffled deck so that every kind comes
        once before any comes twice (a short run still sees each)."""
        deck: list[str] = []
        while self.ctx.faults_on.is_set() and not self.ctx.stop.is_set():
            self.ctx.stop.wait(self.rng.expovariate(1 / mean_gap))
            if not self.ctx.faults_on.is_set() or self.ctx.stop.is_set():
                return
            if not deck:
                deck = list(self.kinds)
                self.rng.shuffle(deck)
            kind = deck.pop()
            if kind == "extender":  # one replica (the only one without HA)
                made = self._kill_components([self.rng.choice(self.replicas)])
            elif kind == "extenders":
                made = self._kill_components(self.replicas)
            elif kind == "vkubelet":
                made = self._kill_components(["vkubelet"])
            elif kind == "scheduler":
                made = self._pause("front", "kube-scheduler", self.rng.uniform(5, 20))
            elif kind == "kill-scheduler":
                made = self._kill_cluster_component("front", "kube-scheduler")
            elif kind == "kill-remote-apiserver":
                made = self._kill_cluster_component(self.rng.choice(REMOTES), "kube-apiserver")
            elif kind == "kill-remote-etcd":
                made = self._kill_cluster_component(self.rng.choice(REMOTES), "etcd")
            else:
                cluster = self.rng.choice(REMOTES)
                made = self._pause(cluster, "kube-apiserver", LEASE_PAUSE + self.rng.uniform(0, 15))
            if made:
                self.kinds_done.add(kind)


def process_command(pid: int) -> tuple[list[str], str, dict[str, str]]:
    """argv, working directory and environment of a running process."""
    proc = Path(f"/proc/{pid}")
    argv = [a.decode() for a in proc.joinpath("cmdline").read_bytes().split(b"\0") if a]
    env = dict(
        kv.decode().split("=", 1) for kv in proc.joinpath("environ").read_bytes().split(b"\0") if b"=" in kv
    )
    return argv, os.readlink(proc / "cwd"), env


def restart_process(command: tuple[list[str], str, dict[str, str]], log_file: Path) -> int:
    argv, cwd, env = command
    with log_file.open("ab") as out:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    # Reaped when it exits, as a supervisor does: a zombie would look alive to the next revival.
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc.pid
