"""Chaos soak: three queues submit continuously while bridge and cluster processes are killed,
restarted and paused at random; the bridge's invariants are checked all along and at the end.

    .venv/bin/python bench/chaos.py [--minutes 30] [--seed N] [--json]

Uses the running `armada-bridge dev up` environment. Faults (seeded, each one logged):
- SIGKILL of the extender or the vkubelet, restarted a few seconds later (a Deployment's restart);
- SIGSTOP of the front kube-scheduler for 5-20 s (a hung scheduler), then SIGCONT;
- SIGSTOP of a remote cluster's kube-apiserver past its virtual node's lease (45 s), then SIGCONT;
  a control-plane process that exits meanwhile (kube-controller-manager and kube-scheduler do when
  they lose their leader lease) is started again as its supervisor would.

Invariants, each violation printed with the objects involved:
- one remote pod at most per front pod (across all remote clusters);
- a gang is in one remote cluster, and never partly placed for longer than a round's worth of
  time (`--split-seconds`);
- no remote pod outlives its front pod by more than the GC window (`--gc-seconds`);
- after the faults stop, everything converges: every live front pod placed in a remote cluster is
  Running there, and every other waits with a reason (an ArmadaWaiting Event), within
  `--converge-seconds`; every control-plane process is alive (`dev status` healthy).
Exit status 1 when any invariant was violated.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.dev import binaries, extender_setup, vkubelet_setup
from armada_bridge.dev.clients import api_client
from armada_bridge.dev.environment import Environment

REMOTES = ("remote-1", "remote-2")
QUEUES = ("chaos-a", "chaos-b", "chaos-c")
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


@dataclass
class Report:
    seed: int
    faults: Counter[str] = field(default_factory=Counter)
    pods_created: int = 0
    gangs_created: int = 0
    jobs_created: int = 0
    violations: list[str] = field(default_factory=list)
    converge_seconds: float | None = None

    def violation(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)
            print(f"[chaos] VIOLATION {what}", file=sys.stderr, flush=True)


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def job(name: str, queue: str, parallelism: int) -> dict[str, Any]:
    """A batch/v1 Job of `parallelism` pods that run 20 s each (the remote KWOK ends them)."""
    return {
        "metadata": {"name": name, "labels": {"chaos-unit": name}},
        "spec": {
            "parallelism": parallelism,
            "completions": parallelism,
            "backoffLimit": 2,
            "template": {
                "metadata": {
                    "labels": {keys.QUEUE_LABEL: queue, "chaos-unit": name},
                    "annotations": {keys.SIMULATED_RUNTIME: "20s"},
                },
                "spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                        }
                    ],
                },
            },
        },
    }


def unit(name: str, queue: str, size: int) -> list[dict[str, Any]]:
    """A single pod (size 1) or a gang of `size` pods, 250m CPU each."""
    pods = []
    for i in range(size):
        annotations = {keys.GANG_ID: name, keys.GANG_CARDINALITY: str(size)} if size > 1 else {}
        pods.append(
            {
                "metadata": {
                    "name": f"{name}-{i}" if size > 1 else name,
                    "labels": {keys.QUEUE_LABEL: queue, "chaos-unit": name},
                    "annotations": annotations,
                },
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                        }
                    ],
                },
            }
        )
    return pods


class Soak:
    def __init__(self, env: Environment, seed: int, namespace: str) -> None:
        self.env = env
        self.rng = random.Random(seed)  # the workload's
        self.fault_rng = random.Random(seed + 1)  # the faults' (another thread: its own sequence)
        self.ns = namespace
        self.report = Report(seed)
        self.stop = threading.Event()
        self.faults_on = threading.Event()
        self.apis = {c: api_client(env.kubeconfig(c)) for c in ("front", *REMOTES)}
        self.core = {c: k8s.CoreV1Api(a) for c, a in self.apis.items()}
        self.batch = k8s.BatchV1Api(self.apis["front"])
        self.bins = binaries.expected()
        self.partial_since: dict[str, float] = {}
        self.orphan_since: dict[str, float] = {}
        self.units: dict[str, list[str]] = defaultdict(list)  # queue -> live unit names, oldest first
        self.kinds_done: set[str] = set()

    # ------------------------------------------------------------ workload
    def submit_loop(self, live_units: int) -> None:
        seq = 0
        while not self.stop.is_set():
            for q in QUEUES:
                seq += 1
                draw = self.rng.random()
                size = 1 if draw < 0.4 else self.rng.randint(2, 16)
                name = f"{q[-1]}{seq}"
                try:
                    if draw > 0.85:  # a Job: its controller makes (and remakes) the pods
                        self.batch.create_namespaced_job(self.ns, job(name, q, min(size, 4)))
                        self.report.pods_created += min(size, 4)
                        self.report.jobs_created += 1
                    else:
                        for body in unit(name, q, size):
                            self.core["front"].create_namespaced_pod(self.ns, body)
                            self.report.pods_created += 1
                        self.report.gangs_created += size > 1
                    self.units[q].append(name)
                    while len(self.units[q]) > live_units:  # churn: the oldest unit goes
                        old = self.units[q].pop(0)
                        self.batch.delete_collection_namespaced_job(
                            self.ns, label_selector=f"chaos-unit={old}", propagation_policy="Background"
                        )
                        self.core["front"].delete_collection_namespaced_pod(
                            self.ns, label_selector=f"chaos-unit={old}", grace_period_seconds=0
                        )
                except ApiException as e:
                    log(f"submit {name}: {e.status} {e.reason}")
            self.stop.wait(1.0)

    # ------------------------------------------------------------ faults
    def _kill_component(self, name: str) -> bool:
        pid = self.env.supervisor.pid(name)
        if pid is None:
            return False
        os.kill(pid, signal.SIGKILL)
        self.report.faults[f"kill {name}"] += 1
        log(f"SIGKILL {name} (pid {pid})")
        self.stop.wait(self.fault_rng.uniform(1, 6))
        setup = extender_setup.setup if name == "extender" else vkubelet_setup.setup
        setup(self.env, self.bins)
        log(f"{name} restarted")
        return True

    def _pause(self, cluster: str, component: str, seconds: float) -> bool:
        kc = self.env.cluster(cluster, self.bins)
        pids = kc.component_pids()
        pid = pids.get(component)
        if pid is None:
            return False
        # How each process of the cluster was started: what its supervisor (kubelet, systemd)
        # would run again if it exits, as kube-controller-manager and kube-scheduler do when they
        # lose their leader lease while the apiserver is away.
        commands = {c: _command(p) for c, p in pids.items() if p is not None}
        self.report.faults[f"pause {cluster} {component}"] += 1
        log(f"SIGSTOP {cluster} {component} for {seconds:.0f}s")
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(seconds)
        finally:
            os.kill(pid, signal.SIGCONT)
        log(f"SIGCONT {cluster} {component}")
        self._revive_exited(cluster, kc, commands)
        return True

    def _revive_exited(self, cluster: str, kc: Any, commands: dict[str, Any], seconds: float = 30) -> None:
        """For a while, start again any process of the cluster that exited (as kube-controller-manager
        and kube-scheduler do when they lose their leader lease while the apiserver is away)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not self.stop.is_set():
            for c, p in kc.component_pids().items():
                command = commands.get(c)
                if p is None and command is not None:
                    new = _restart(command, kc.workdir / "logs" / f"{c}.log")
                    (kc.workdir / "pids" / f"{c}.pid").write_text(str(new))
                    self.report.faults[f"restart {cluster} {c} (exited)"] += 1
                    log(f"{cluster} {c} exited; restarted as pid {new}")
                    commands.pop(c)
            time.sleep(1)

    def _kill_cluster_component(self, cluster: str, component: str) -> bool:
        """SIGKILL one process of a cluster, then start it again as it was started (its
        supervisor would), after a few seconds down."""
        kc = self.env.cluster(cluster, self.bins)
        pids = kc.component_pids()
        pid = pids.get(component)
        if pid is None:
            return False
        commands = {c: _command(p) for c, p in pids.items() if p is not None}
        command = commands.pop(component)
        os.kill(pid, signal.SIGKILL)
        self.report.faults[f"kill {cluster} {component}"] += 1
        log(f"SIGKILL {cluster} {component} (pid {pid})")
        self.stop.wait(self.fault_rng.uniform(1, 5))
        new = _restart(command, kc.workdir / "logs" / f"{component}.log")
        (kc.workdir / "pids" / f"{component}.pid").write_text(str(new))
        log(f"{cluster} {component} restarted as pid {new}")
        # Only an apiserver or etcd gone takes leases away from the cluster's other processes.
        self._revive_exited(cluster, kc, commands, 30 if component in ("kube-apiserver", "etcd") else 3)
        return True

    def chaos_loop(self, mean_gap: float) -> None:
        """Faults at exponential gaps, the kinds dealt from a shuffled deck so that every kind comes
        once before any comes twice (a short run still sees each)."""
        deck: list[str] = []
        while self.faults_on.is_set() and not self.stop.is_set():
            self.stop.wait(self.fault_rng.expovariate(1 / mean_gap))
            if not self.faults_on.is_set() or self.stop.is_set():
                return
            if not deck:
                deck = list(FAULT_KINDS)
                self.fault_rng.shuffle(deck)
            kind = deck.pop()
            if kind in ("extender", "vkubelet"):
                made = self._kill_component(kind)
            elif kind == "scheduler":
                made = self._pause("front", "kube-scheduler", self.fault_rng.uniform(5, 20))
            elif kind == "kill-scheduler":
                made = self._kill_cluster_component("front", "kube-scheduler")
            elif kind == "kill-remote-apiserver":
                made = self._kill_cluster_component(self.fault_rng.choice(REMOTES), "kube-apiserver")
            elif kind == "kill-remote-etcd":
                made = self._kill_cluster_component(self.fault_rng.choice(REMOTES), "etcd")
            else:
                cluster = self.fault_rng.choice(REMOTES)
                made = self._pause(cluster, "kube-apiserver", LEASE_PAUSE + self.fault_rng.uniform(0, 15))
            if made:
                self.kinds_done.add(kind)

    # ------------------------------------------------------------ invariants
    def check(self, split_seconds: float, gc_seconds: float) -> None:
        now = time.monotonic()
        front = {p.metadata.uid: p for p in self.core["front"].list_namespaced_pod(self.ns).items}
        remote_by_uid: dict[str, list[str]] = defaultdict(list)
        for c in REMOTES:
            try:
                pods = self.core[c].list_namespaced_pod(self.ns, label_selector=keys.FRONT_UID).items
            except Exception:  # a paused remote: nothing to check there now
                continue
            for r in pods:
                uid = r.metadata.labels[keys.FRONT_UID]
                remote_by_uid[uid].append(f"{c}/{r.metadata.name}")
                live = uid in front and not front[uid].metadata.deletion_timestamp
                key = f"{c}/{r.metadata.name}/{uid}"
                if live:
                    self.orphan_since.pop(key, None)
                elif now - self.orphan_since.setdefault(key, now) > gc_seconds:
                    self.report.violation(f"remote pod {key} outlived its front pod by > {gc_seconds:.0f}s")
        for uid, where in remote_by_uid.items():
            if len(where) > 1:
                name = front[uid].metadata.name if uid in front else uid
                self.report.violation(f"front pod {name} has {len(where)} remote pods: {where}")
        gangs: dict[str, list[Any]] = defaultdict(list)
        for p in front.values():
            gang = (p.metadata.annotations or {}).get(keys.GANG_ID)
            if gang and p.status.phase not in ("Succeeded", "Failed") and not p.metadata.deletion_timestamp:
                gangs[gang].append(p)
        for gang, members in gangs.items():
            clusters = {(m.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) for m in members}
            placed = clusters - {None}
            if len(placed) > 1:
                self.report.violation(f"gang {gang} in several clusters: {sorted(str(c) for c in placed)}")
            size = int((members[0].metadata.annotations or {}).get(keys.GANG_CARDINALITY, "1"))
            if placed and (None in clusters) and len(members) >= size:
                since = self.partial_since.setdefault(gang, now)
                if now - since > split_seconds:
                    names = sorted(
                        m.metadata.name
                        for m in members
                        if not (m.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
                    )
                    self.report.violation(
                        f"gang {gang} partly placed for > {split_seconds:.0f}s (unplaced {names})"
                    )
            else:
                self.partial_since.pop(gang, None)

    def converged(self) -> list[str]:
        """What is not settled yet: live front pods neither Running remotely nor waiting with a reason."""
        problems = []
        remote = {}
        for c in REMOTES:
            for r in self.core[c].list_namespaced_pod(self.ns, label_selector=keys.FRONT_UID).items:
                remote[r.metadata.labels[keys.FRONT_UID]] = r
        events = {
            e.involved_object.uid
            for e in self.core["front"].list_namespaced_event(self.ns).items
            if e.reason == "ArmadaWaiting"
        }
        for p in self.core["front"].list_namespaced_pod(self.ns).items:
            if p.metadata.deletion_timestamp or p.status.phase in ("Succeeded", "Failed"):
                continue
            if p.status.phase == "Running":
                if p.metadata.uid not in remote:
                    problems.append(f"{p.metadata.name} Running without a remote pod")
            elif (
                not (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) and p.metadata.uid not in events
            ):
                problems.append(f"{p.metadata.name} {p.status.phase}, unplaced, with no ArmadaWaiting Event")
            elif (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER):
                problems.append(f"{p.metadata.name} placed but {p.status.phase}, not Running")
        return problems


class _Kept(Exception):
    """The run failed and its namespace and queues are kept to be looked at."""


def _command(pid: int) -> tuple[list[str], str, dict[str, str]]:
    """argv, working directory and environment of a running process."""
    proc = Path(f"/proc/{pid}")
    argv = [a.decode() for a in proc.joinpath("cmdline").read_bytes().split(b"\0") if a]
    env = dict(
        kv.decode().split("=", 1) for kv in proc.joinpath("environ").read_bytes().split(b"\0") if b"=" in kv
    )
    return argv, os.readlink(proc / "cwd"), env


def _restart(command: tuple[list[str], str, dict[str, str]], log_file: Path) -> int:
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
    return proc.pid


def run(
    env: Environment,
    *,
    minutes: float,
    seed: int,
    live_units: int = 12,
    mean_fault_gap: float = 20.0,
    every_kind: bool = False,
    keep_failed: bool = False,
    split_seconds: float = 30.0,
    gc_seconds: float = 90.0,
    converge_seconds: float = 180.0,
) -> Report:
    ns = f"chaos-{uuid.uuid4().hex[:6]}"
    soak = Soak(env, seed, ns)
    custom = k8s.CustomObjectsApi(soak.apis["front"])
    soak.core["front"].create_namespace({"metadata": {"name": ns}})
    for q in QUEUES:
        try:
            custom.create_cluster_custom_object(
                keys.GROUP,
                "v1alpha1",
                "queues",
                {"apiVersion": keys.API_VERSION, "kind": "Queue", "metadata": {"name": q}},
            )
        except ApiException as e:
            if e.status != 409:
                raise
    log(f"seed {seed}, namespace {ns}, {minutes} min of faults")
    soak.faults_on.set()
    threads = [
        threading.Thread(target=soak.submit_loop, args=(live_units,), daemon=True),
        threading.Thread(target=soak.chaos_loop, args=(mean_fault_gap,), daemon=True),
    ]
    for t in threads:
        t.start()
    start = time.monotonic()
    end = start + minutes * 60
    # With every_kind, faults go on past `minutes` until each kind has come once (a run of a few
    # minutes may otherwise draw only kills); bounded, in case a fault cannot be made at all.
    last = end + (max(5 * 60.0, minutes * 60) if every_kind else 0)

    def faulting() -> bool:
        now = time.monotonic()
        return now < end or (now < last and soak.kinds_done != set(FAULT_KINDS))

    try:
        while faulting():
            try:
                soak.check(split_seconds, gc_seconds)
            except Exception as e:  # an API answer lost to a fault: check again next time
                log(f"check: {type(e).__name__}: {e}")
            time.sleep(2)
        soak.faults_on.clear()
        threads[1].join()
        soak.stop.set()
        threads[0].join()
        # Every process back (a fault may have ended with one down), then convergence.
        extender_setup.setup(env, soak.bins)
        vkubelet_setup.setup(env, soak.bins)
        t0 = time.monotonic()
        problems = ["not checked yet"]
        while time.monotonic() - t0 < converge_seconds:
            try:
                soak.check(split_seconds, gc_seconds)
                problems = soak.converged()
                problems += [f"{s.name}: {s.detail}" for s in env.status() if not s.healthy]
            except Exception as e:
                problems = [f"{type(e).__name__}: {e}"]
            if not problems:
                soak.report.converge_seconds = time.monotonic() - t0
                break
            time.sleep(3)
        for p in problems[:20]:
            soak.report.violation(f"not converged after {converge_seconds:.0f}s: {p}")
    finally:
        soak.stop.set()
        soak.faults_on.clear()
        try:
            if keep_failed and soak.report.violations:
                log(f"violations: namespace {ns} kept for a look (delete it when done)")
                raise _Kept
            soak.core["front"].delete_namespace(ns)
            for q in QUEUES:
                custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", q)
        except ApiException as e:
            log(f"cleanup: {e.status} {e.reason}")
        except _Kept:
            pass
        for a in soak.apis.values():
            a.close()
    return soak.report


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--mean-fault-gap", type=float, default=20.0, help="mean seconds between faults")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--keep", action="store_true", help="keep the namespace and queues of a run with violations"
    )
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    r = run(
        Environment(),
        minutes=args.minutes,
        seed=seed,
        mean_fault_gap=args.mean_fault_gap,
        keep_failed=args.keep,
    )
    out = {
        "seed": r.seed,
        "minutes": args.minutes,
        "faults": dict(sorted(r.faults.items())),
        "pods_created": r.pods_created,
        "gangs_created": r.gangs_created,
        "jobs_created": r.jobs_created,
        "violations": r.violations,
        "converge_seconds": r.converge_seconds,
    }
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"seed {r.seed}: {args.minutes} min, faults {out['faults']}")
        print(f"  pods created {r.pods_created} ({r.gangs_created} gangs), converged in {r.converge_seconds}")
        print(f"  violations: {len(r.violations)}")
        for v in r.violations:
            print(f"    {v}")
    sys.exit(1 if r.violations else 0)


if __name__ == "__main__":
    main()
