"""Chaos soak: three queues submit continuously while bridge and cluster processes are killed,
restarted and paused at random; the bridge's invariants are checked all along and at the end.

    .venv/bin/python bench/chaos.py [--minutes 30] [--seed N] [--json]

Uses the running `armada-bridge dev up` environment; with `dev up --extender-replicas 2` the
extender runs highly available and the faults kill one replica or both. Workload: singles and gangs
of 2-16 pods (preemptible), Jobs, and the released operators' objects where they run (PyTorchJob,
RayCluster: Volcano PodGroups), sized to ask for more than the remotes hold (`--load`), so that fair
share decides and preempts. Faults (seeded, each one logged):
- SIGKILL of an extender replica (or of every one) or of the vkubelet, restarted a few seconds later
  (a Deployment's restart);
- SIGSTOP of the front kube-scheduler for 5-20 s (a hung scheduler), then SIGCONT;
- SIGSTOP of a remote cluster's kube-apiserver past its virtual node's lease (45 s), then SIGCONT;
  a control-plane process that exits meanwhile (kube-controller-manager and kube-scheduler do when
  they lose their leader lease) is started again as its supervisor would.

Invariants, each violation printed with the objects involved:
- one remote pod at most per front pod (across all remote clusters);
- a gang (Armada annotations or a Volcano PodGroup) is in one remote cluster, and never partly
  placed for longer than a round's worth of time (`--split-seconds`);
- no remote pod outlives its front pod by more than the GC window (`--gc-seconds`);
- the front never shows a pod Running whose remote pod is gone (its cluster answering) for longer
  than the outage bound (`--outage-seconds`);
- after the faults stop, each queue tops its work up to `--load`/3 of the remotes' CPU again, then
  everything converges within `--converge-seconds`: every live front pod
  placed in a remote cluster is Running there, every other waits with a reason (an ArmadaWaiting
  Event), every Failed one says why; no queue stays below its fair share (its demand-capped share
  of the remotes' CPU) by a waiting unit that could run: one that fits whole in one cluster, on
  free room or on what fair-share preemption would give it in Armada's order (`fair_shares`);
  every control-plane process is alive (`dev status` healthy).
Each invariant's runs (judged on a full look at the clusters) and errors (an API answer lost to a
fault, a remote cluster that did not answer, a check that broke) are counted and printed (in
`--json`: `invariants`); an invariant that never ran is a violation: a check that never ran proves
nothing. Exit status 1 when any invariant was violated.
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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from armada_bridge import keys
from armada_bridge.contract.capacity import allocatable, free, open_to_all, running_on_node
from armada_bridge.contract.pods import (
    admitted_pod_usage,
    pod_requests,
    pod_usage,
    scheduled_at,
    scheduling_gates,
)
from armada_bridge.core.quantities import Resources, add_into
from cli import views
from devenv import binaries
from devenv.bridge import extender_setup, vkubelet_setup
from devenv.clients import api_client
from devenv.operators.install import enabled
from devenv.operators.samples import adapt, sample
from devenv.processes.environment import Environment

REMOTES = ("remote-1", "remote-2")
QUEUES = ("chaos-a", "chaos-b", "chaos-c")
LEASE_PAUSE = 45.0
PREEMPTIBLE = "armada-preemptible"
MEAN_UNIT_PODS = 5.0  # singles 40 %, gangs of 2-16 45 %, Jobs and operator objects of 2-4 15 %
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
ONE_REMOTE_POD = "one remote pod per front pod"
GANG_WHOLE = "gangs whole, in one cluster"
REMOTE_GC = "no remote pod outlives its front pod"
FRONT_TRUTH = "no front pod Running without its remote pod"
CONVERGED = "converged"
CHECKED_ALONG = (ONE_REMOTE_POD, GANG_WHOLE, REMOTE_GC, FRONT_TRUTH)
INVARIANTS = (*CHECKED_ALONG, CONVERGED)
T = TypeVar("T")


def fault_kinds(extender_replicas: int) -> tuple[str, ...]:
    return HA_FAULT_KINDS if extender_replicas > 1 else FAULT_KINDS


class NotAnswered(Exception):
    """A remote cluster did not answer: an invariant over every cluster was judged only in part."""


@dataclass
class Tally:
    """How many times each invariant was judged (runs) and could not be (errors: an API answer lost
    to a fault, a remote cluster that did not answer, a check that broke). Pure. An invariant that
    never ran is a violation: a check that never ran proves nothing."""

    names: tuple[str, ...] = INVARIANTS
    runs: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    last_error: dict[str, str] = field(default_factory=dict)

    def run(self, name: str, check: Callable[[], T]) -> T | None:
        """`check()`, counted: its result, or None when it raised (an error, judged again next time)."""
        try:
            result = check()
        except Exception as e:
            self.failed(name, e)
            return None
        self.runs[name] += 1
        return result

    def failed(self, name: str, e: BaseException) -> None:
        self.errors[name] += 1
        error = f"{type(e).__name__}: {e}"[:300]
        if self.last_error.get(name) != error:
            log(f"check {name!r}: {error}")
        self.last_error[name] = error

    def counts(self) -> dict[str, dict[str, Any]]:
        return {
            n: {"runs": self.runs[n], "errors": self.errors[n], "last_error": self.last_error.get(n)}
            for n in self.names
        }

    def never_ran(self) -> list[str]:
        return [
            f"invariant {n!r} never ran ({self.errors[n]} errors, the last: {self.last_error.get(n)})"
            for n in self.names
            if not self.runs[n]
        ]


@dataclass
class Report:
    seed: int
    faults: Counter[str] = field(default_factory=Counter)
    pods_created: int = 0
    gangs_created: int = 0
    jobs_created: int = 0
    operator_objects: Counter[str] = field(default_factory=Counter)
    shares: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: when a queue was below its fair share: what `armada-bridge queues` and `why` said then
    diagnosis: str = ""
    violations: list[str] = field(default_factory=list)
    converge_seconds: float | None = None
    tally: Tally = field(default_factory=Tally)

    def violation(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)
            print(f"[chaos] VIOLATION {what}", file=sys.stderr, flush=True)

    def judge(self) -> None:
        """The end of the soak: an invariant that never ran is a violation too."""
        for what in self.tally.never_ran():
            self.violation(what)


def log(msg: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _resources(cpu: str) -> dict[str, Any]:
    return {"requests": {"cpu": cpu, "memory": "256Mi"}}


def job(name: str, queue: str, parallelism: int, cpu: str) -> dict[str, Any]:
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
                    "containers": [{"name": "main", "image": "busybox", "resources": _resources(cpu)}],
                },
            },
        },
    }


def unit(name: str, queue: str, size: int, cpu: str) -> list[dict[str, Any]]:
    """A single pod (size 1) or a gang of `size` pods, preemptible, running until deleted."""
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
                    "priorityClassName": PREEMPTIBLE,
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "main", "image": "busybox", "resources": _resources(cpu)}],
                },
            }
        )
    return pods


@dataclass(frozen=True)
class Kind:
    """A released operator's object the soak submits when that operator runs."""

    operator: str
    group: str
    version: str
    plural: str
    make: Any  # (name, namespace, queue, size, cpu) -> object


def _pytorchjob(name: str, ns: str, queue: str, size: int, cpu: str) -> dict[str, Any]:
    """training-operator's own sample: master + workers, running 30 s (then the job succeeds)."""
    (obj,) = sample("training-operator", "examples/pytorch/simple.yaml")
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = size - 1
    return _named(adapt(obj, ns, cpu=cpu, memory="256Mi", runtime="30s", queue=queue), name)


def _raycluster(name: str, ns: str, queue: str, size: int, cpu: str) -> dict[str, Any]:
    """KubeRay's own sample: head + workers, running until deleted."""
    (obj,) = sample("kuberay", "config/samples/ray-cluster.sample.yaml")
    obj["spec"]["workerGroupSpecs"][0].update(replicas=size - 1, minReplicas=size - 1)
    return _named(adapt(obj, ns, cpu=cpu, memory="256Mi", queue=queue), name)


def _named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"]["name"] = name
    obj["metadata"].setdefault("labels", {})["chaos-unit"] = name
    return obj


OPERATOR_KINDS = (
    Kind("training-operator", "kubeflow.org", "v1", "pytorchjobs", _pytorchjob),
    Kind("kuberay", "ray.io", "v1", "rayclusters", _raycluster),
)


class Soak:
    def __init__(self, env: Environment, seed: int, namespace: str, load: float) -> None:
        self.env = env
        self.rng = random.Random(seed)  # the workload's
        self.fault_rng = random.Random(seed + 1)  # the faults' (another thread: its own sequence)
        self.ns = namespace
        self.report = Report(seed)
        self.stop = threading.Event()  # the workload and the faults
        self.done = threading.Event()  # the soak (the supervisor runs until then)
        self.faults_on = threading.Event()
        self.held: set[tuple[str, str]] = set()  # processes a fault keeps down for now
        self.killed: set[tuple[str, str]] = set()  # killed by a fault, not started again yet
        self.apis = {c: api_client(env.kubeconfig(c)) for c in ("front", *REMOTES)}
        self.core = {c: k8s.CoreV1Api(a) for c, a in self.apis.items()}
        self.batch = k8s.BatchV1Api(self.apis["front"])
        self.custom = k8s.CustomObjectsApi(self.apis["front"])
        self.bins = binaries.expected()
        self.replicas = extender_setup.replica_names(env.extender_replicas())
        self.kinds = fault_kinds(len(self.replicas))
        running = set(enabled(env))
        self.operator_kinds = [k for k in OPERATOR_KINDS if k.operator in running]
        self.load = load
        self.cpu = "250m"  # sized to the remotes by size_to_capacity()
        self.full_capacity = 0.0  # the remotes' CPU before the faults (size_to_capacity)
        self.partial_since: dict[str, float] = {}
        self.orphan_since: dict[str, float] = {}
        self.lost_since: dict[str, float] = {}
        self.units: dict[str, list[str]] = defaultdict(list)  # queue -> live unit names, oldest first
        self.kinds_done: set[str] = set()

    def capacity_cpu(self) -> float:
        """CPU of the remote clusters' Ready nodes open to the soak's pods (not the tainted real ones)."""
        total = 0.0
        for c in REMOTES:
            for n in self._raw(c, "list_node"):
                if open_to_all(n):
                    total += float(parse_quantity(n["status"]["allocatable"]["cpu"]))
        return total

    def size_to_capacity(self, live_units: int) -> None:
        """Each pod's CPU such that the live units of the three queues ask for `load` times the
        remotes' CPU: fair share, not arrival order, decides who runs."""
        pods = len(QUEUES) * live_units * MEAN_UNIT_PODS
        self.full_capacity = self.capacity_cpu()
        self.cpu = f"{max(50, int(self.load * self.full_capacity * 1000 / pods))}m"

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
                    if draw > 0.85 and self.operator_kinds and self.rng.random() < 0.5:
                        kind = self.rng.choice(self.operator_kinds)
                        n = min(size, 4)
                        obj = kind.make(name, self.ns, q, n, self.cpu)
                        self.custom.create_namespaced_custom_object(
                            kind.group, kind.version, self.ns, kind.plural, obj
                        )
                        self.report.operator_objects[kind.plural] += 1
                        self.report.pods_created += n  # made by the operator
                    elif draw > 0.85:  # a Job: its controller makes (and remakes) the pods
                        self.batch.create_namespaced_job(self.ns, job(name, q, min(size, 4), self.cpu))
                        self.report.pods_created += min(size, 4)
                        self.report.jobs_created += 1
                    else:
                        for body in unit(name, q, size, self.cpu):
                            self.core["front"].create_namespaced_pod(self.ns, body)
                            self.report.pods_created += 1
                        self.report.gangs_created += size > 1
                    self.units[q].append(name)
                    while len(self.units[q]) > live_units:  # churn: the oldest unit goes
                        self._delete_unit(self.units[q].pop(0))
                except ApiException as e:
                    log(f"submit {name}: {e.status} {e.reason}")
            self.stop.wait(1.0)

    def top_up(self) -> None:
        """After the faults: each queue submits more units (singles and gangs of 2-8, preemptible)
        until its units that run until deleted ask for `load`/3 of the remotes' CPU again
        (preempted units are gone, Jobs and operators' objects end), so that
        fair share, not what the faults left, decides the end state the convergence check judges."""
        # The remotes' nodes as before the faults (a remote just restarted has NotReady nodes for a
        # while): sized on fewer, the queues would ask for less than the remotes hold.
        deadline = time.monotonic() + 120
        while (capacity := self.capacity_cpu()) < self.full_capacity and time.monotonic() < deadline:
            time.sleep(2)
        if capacity < self.full_capacity:
            log(f"the remotes offer {capacity:.0f} CPU of {self.full_capacity:.0f} 120 s after the faults")
        capacity = max(capacity, self.full_capacity)
        # Only what runs until deleted counts: a Job's pods and an operator's end on their own, and
        # the queues would end up asking for less than the remotes hold.
        live = [
            p
            for p in self._raw("front", "list_namespaced_pod", self.ns)
            if _live(p) and not p["metadata"].get("ownerReferences")
        ]
        target = self.load * capacity / len(QUEUES)
        cpu = float(parse_quantity(self.cpu))
        for q in QUEUES:
            demand = sum(
                _cpu(p) for p in live if (p["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL) == q
            )
            added = 0
            while demand < target:
                size = 1 if self.rng.random() < 0.5 else self.rng.randint(2, 8)
                name = f"{q[-1]}top{added}"
                for body in unit(name, q, size, self.cpu):
                    self.core["front"].create_namespaced_pod(self.ns, body)
                self.report.pods_created += size
                demand += size * cpu
                added += 1
            log(f"{q}: {added} units added, asking {demand:.0f} of {capacity:.0f} CPU")

    def _delete_unit(self, name: str) -> None:
        selector = f"chaos-unit={name}"
        for kind in self.operator_kinds:
            self.custom.delete_collection_namespaced_custom_object(
                kind.group, kind.version, self.ns, kind.plural, label_selector=selector
            )
        self.batch.delete_collection_namespaced_job(
            self.ns, label_selector=selector, propagation_policy="Background"
        )
        self.core["front"].delete_collection_namespaced_pod(
            self.ns, label_selector=selector, grace_period_seconds=0
        )

    # ------------------------------------------------------------ faults
    def _kill_components(self, names: list[str]) -> bool:
        """SIGKILL bridge processes (extender replicas, the vkubelet) together, then start them
        again a few seconds later, as their Deployment would."""
        pids = {n: self.env.supervisor.pid(n) for n in names}
        if not any(pids.values()):
            return False
        for name, pid in pids.items():
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                log(f"SIGKILL {name} (pid {pid})")
        if len(names) > 1:
            self.report.faults["kill every extender replica"] += 1
        else:
            self.report.faults[f"kill {'extender' if names[0] in self.replicas else names[0]}"] += 1
        self.stop.wait(self.fault_rng.uniform(1, 6))
        vkubelet = "vkubelet" in names
        (vkubelet_setup.setup if vkubelet else extender_setup.setup)(self.env, self.bins)
        log(f"{', '.join(names)} restarted")
        return True

    def _pause(self, cluster: str, component: str, seconds: float) -> bool:
        pid = self.env.cluster(cluster, self.bins).component_pids().get(component)
        if pid is None:
            return False
        self.report.faults[f"pause {cluster} {component}"] += 1
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
        pid = self.env.cluster(cluster, self.bins).component_pids().get(component)
        if pid is None:
            return False
        self.held.add((cluster, component))
        self.killed.add((cluster, component))
        try:
            os.kill(pid, signal.SIGKILL)
            self.report.faults[f"kill {cluster} {component}"] += 1
            log(f"SIGKILL {cluster} {component} (pid {pid})")
            self.stop.wait(self.fault_rng.uniform(1, 5))
        finally:
            self.held.discard((cluster, component))
        return True

    def supervise_loop(self) -> None:
        """What kubelet (static pods) or systemd does for a control plane: start again, as it was
        started, every process that exits — kube-controller-manager and kube-scheduler do when they
        lose their leader lease while their apiserver is away — or that a fault killed (once the
        fault lets it: `held`). Runs until the soak ends, convergence included."""
        clusters = {c: self.env.cluster(c, self.bins) for c in ("front", *REMOTES)}
        commands = {
            (c, comp): _command(pid)
            for c, kc in clusters.items()
            for comp, pid in kc.component_pids().items()
            if pid is not None
        }
        while not self.done.wait(1.0):
            for (c, comp), command in commands.items():
                kc = clusters[c]
                if (c, comp) in self.held or kc.component_pids().get(comp) is not None:
                    continue
                new = _restart(command, kc.workdir / "logs" / f"{comp}.log")
                (kc.workdir / "pids" / f"{comp}.pid").write_text(str(new))
                if (c, comp) in self.killed:
                    self.killed.discard((c, comp))
                else:
                    self.report.faults[f"restart {c} {comp} (exited)"] += 1
                log(f"{c} {comp} started again as pid {new}")

    def chaos_loop(self, mean_gap: float) -> None:
        """Faults at exponential gaps, the kinds dealt from a shuffled deck so that every kind comes
        once before any comes twice (a short run still sees each)."""
        deck: list[str] = []
        while self.faults_on.is_set() and not self.stop.is_set():
            self.stop.wait(self.fault_rng.expovariate(1 / mean_gap))
            if not self.faults_on.is_set() or self.stop.is_set():
                return
            if not deck:
                deck = list(self.kinds)
                self.fault_rng.shuffle(deck)
            kind = deck.pop()
            if kind == "extender":  # one replica (the only one without HA)
                made = self._kill_components([self.fault_rng.choice(self.replicas)])
            elif kind == "extenders":
                made = self._kill_components(self.replicas)
            elif kind == "vkubelet":
                made = self._kill_components(["vkubelet"])
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
    def _gangs(self, pods: list[Any]) -> dict[str, tuple[int, list[Any]]]:
        """Live gangs: name -> (cardinality, members), by Armada's annotations or a Volcano
        PodGroup (the operators' protocol; its minMember is the cardinality)."""
        min_member = {
            g["metadata"]["name"]: int(g["spec"].get("minMember") or 1)
            for g in self.custom.list_namespaced_custom_object(
                "scheduling.volcano.sh", "v1beta1", self.ns, "podgroups"
            )["items"]
        }
        gangs: dict[str, tuple[int, list[Any]]] = {}
        for p in pods:
            if p.status.phase in ("Succeeded", "Failed") or p.metadata.deletion_timestamp:
                continue
            a = p.metadata.annotations or {}
            if keys.GANG_ID in a:
                name, size = a[keys.GANG_ID], int(a.get(keys.GANG_CARDINALITY, "1"))
            elif a.get(keys.VOLCANO_GROUP_NAME_ANNOTATION) in min_member:
                name = a[keys.VOLCANO_GROUP_NAME_ANNOTATION]
                size = min_member[name]
            else:
                continue
            gangs.setdefault(name, (size, []))[1].append(p)
        return gangs

    def check(self, split_seconds: float, gc_seconds: float, outage_seconds: float) -> None:
        """One look at the clusters, every invariant judged on it and counted in the tally."""
        now = time.monotonic()
        tally = self.report.tally
        try:
            pods = self.core["front"].list_namespaced_pod(self.ns).items
        except Exception as e:  # an API answer lost to a fault: nothing judged this time
            for name in CHECKED_ALONG:
                tally.failed(name, e)
            return
        remote: dict[str, list[Any]] = {}
        silent: list[str] = []
        for c in REMOTES:
            try:
                remote[c] = self.core[c].list_namespaced_pod(self.ns, label_selector=keys.FRONT_UID).items
            except Exception:  # a paused remote: judged without it (not a full run)
                silent.append(c)
        tally.run(ONE_REMOTE_POD, lambda: self._one_remote_pod(pods, remote, silent))
        tally.run(REMOTE_GC, lambda: self._remote_gc(now, pods, remote, silent, gc_seconds))
        tally.run(FRONT_TRUTH, lambda: self._front_truth(now, pods, remote, silent, outage_seconds))
        tally.run(GANG_WHOLE, lambda: self._gangs_whole(now, pods, split_seconds))

    def _one_remote_pod(self, pods: list[Any], remote: dict[str, list[Any]], silent: list[str]) -> None:
        front = {p.metadata.uid: p for p in pods}
        for uid, where in _by_front_uid(remote).items():
            if len(where) > 1:
                name = front[uid].metadata.name if uid in front else uid
                self.report.violation(f"front pod {name} has {len(where)} remote pods: {where}")
        _answered(silent)

    def _remote_gc(
        self, now: float, pods: list[Any], remote: dict[str, list[Any]], silent: list[str], gc_seconds: float
    ) -> None:
        front = {p.metadata.uid: p for p in pods}
        for c, items in remote.items():
            for r in items:
                uid = r.metadata.labels[keys.FRONT_UID]
                live = uid in front and not front[uid].metadata.deletion_timestamp
                key = f"{c}/{r.metadata.name}/{uid}"
                if live:
                    self.orphan_since.pop(key, None)
                elif now - self.orphan_since.setdefault(key, now) > gc_seconds:
                    self.report.violation(f"remote pod {key} outlived its front pod by > {gc_seconds:.0f}s")
        _answered(silent)

    def _front_truth(
        self,
        now: float,
        pods: list[Any],
        remote: dict[str, list[Any]],
        silent: list[str],
        outage_seconds: float,
    ) -> None:
        """Running in the front, nothing in the (answering) remote."""
        remote_by_uid = _by_front_uid(remote)
        for p in pods:
            cluster = (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
            if p.status.phase == "Running" and cluster in remote and p.metadata.uid not in remote_by_uid:
                if now - self.lost_since.setdefault(p.metadata.uid, now) > outage_seconds:
                    self.report.violation(
                        f"front pod {p.metadata.name} Running, its remote pod in {cluster} gone "
                        f"for > {outage_seconds:.0f}s"
                    )
            else:
                self.lost_since.pop(p.metadata.uid, None)
        _answered(silent)

    def _gangs_whole(self, now: float, pods: list[Any], split_seconds: float) -> None:
        for gang, (size, members) in self._gangs(pods).items():
            clusters = {(m.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) for m in members}
            placed = clusters - {None}
            if len(placed) > 1:
                self.report.violation(f"gang {gang} in several clusters: {sorted(str(c) for c in placed)}")
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
        """What is not settled yet: live front pods neither Running remotely nor waiting with a
        reason, Failed ones that do not say why, queues below their fair share."""
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
        pods = self.core["front"].list_namespaced_pod(self.ns).items
        for p in pods:
            if p.metadata.deletion_timestamp or p.status.phase == "Succeeded":
                continue
            placed = (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
            if p.status.phase == "Failed":
                if not (p.status.reason or p.status.message):
                    problems.append(f"{p.metadata.name} Failed without a reason")
            elif p.status.phase == "Running":
                if p.metadata.uid not in remote:
                    problems.append(f"{p.metadata.name} Running without a remote pod")
            elif not placed and p.metadata.uid not in events:
                problems.append(f"{p.metadata.name} {p.status.phase}, unplaced, with no ArmadaWaiting Event")
            elif placed:
                state = pod_state(p, remote.get(p.metadata.uid))
                problems.append(f"{p.metadata.name} placed but {p.status.phase}, not Running ({state})")
        everywhere = self._raw("front", "list_pod_for_all_namespaces")
        soak = [p for p in everywhere if p["metadata"]["namespace"] == self.ns]
        members = {g: (size, [m.metadata.uid for m in ms]) for g, (size, ms) in self._gangs(pods).items()}
        shares = fair_shares(
            soak, members, self.capacity_cpu(), self._free(everywhere), self._other_queues(everywhere)
        )
        self.report.shares = shares
        below = [
            f"queue {q} holds {s['allocated']:.1f} CPU, below its fair share {s['fair']:.1f} "
            f"(asks {s['demand']:.1f}; a waiting unit of {s['fitting']:.1f} CPU fits in {s['fitting_cluster']}, "
            f"where {s['room']:.1f} CPU is free or held by pods fair-share preemption gives it)"
            for q, s in shares.items()
            if s["fitting"] and s["allocated"] + s["fitting"] <= s["fair"] + 1e-6
        ]
        self.report.diagnosis = self._diagnose(shares) if below else ""
        return problems + below

    def _raw(self, cluster: str, call: str, *args: Any) -> list[dict[str, Any]]:
        """A list call's items as Kubernetes JSON (what armada_bridge.contract reads)."""
        resp = getattr(self.core[cluster], call)(*args, _preload_content=False)
        return list(json.loads(resp.data)["items"])

    def _free(self, front: list[dict[str, Any]]) -> dict[str, dict[str, Resources]]:
        """cluster -> usable remote node -> what is free on it: its allocatable minus every pod
        admitted there (the bridge's, orphans awaiting GC, anyone's) and the front pods the bridge
        placed there whose remote pod is not created yet (their room is taken all the same)."""
        out: dict[str, dict[str, Resources]] = {}
        created: set[str] = set()
        for c in REMOTES:
            nodes = {n["metadata"]["name"]: n for n in self._raw(c, "list_node") if open_to_all(n)}
            used: dict[str, Resources] = defaultdict(dict)
            for p in self._raw(c, "list_pod_for_all_namespaces"):
                uid = (p["metadata"].get("labels") or {}).get(keys.FRONT_UID)
                if uid:
                    created.add(uid)
                if running_on_node(p) and p["spec"]["nodeName"] in nodes:
                    add_into(used[p["spec"]["nodeName"]], admitted_pod_usage(p))
            out[c] = {name: free(allocatable(n), used[name]) for name, n in nodes.items()}
        for p in front:
            where = placement(p)
            if where and p["metadata"]["uid"] not in created and _live(p, deleting=True):
                cluster, node = where
                if node in out.get(cluster, {}):
                    out[cluster][node] = free(out[cluster][node], pod_usage(p))
        return out

    def _other_queues(self, front: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
        """queue -> (CPU asked, CPU placed) of the bridge's pods outside the soak's namespace: an
        environment reused from the demo or other tests holds remote room the soak's queues do not
        get (the demo's gang alone holds 32 CPU), and those queues have fair shares of their own."""
        ns_labels = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {}
            for n in self._raw("front", "list_namespace")
        }
        out: dict[str, tuple[float, float]] = {}
        for p in front:
            md = p["metadata"]
            if md["namespace"] == self.ns or not _live(p):
                continue
            placed = placement(p) is not None
            if not (placed or keys.SCHEDULING_GATE in scheduling_gates(p)):
                continue  # not the bridge's
            q = (md.get("labels") or {}).get(keys.QUEUE_LABEL) or ns_labels.get(md["namespace"], {}).get(
                keys.QUEUE_LABEL, "(other)"
            )
            asked, held = out.get(q, (0.0, 0.0))
            out[q] = (asked + _cpu(p), held + (_cpu(p) if placed else 0.0))
        return out

    def _diagnose(self, shares: dict[str, dict[str, Any]]) -> str:
        """What the bridge itself says about the queues and about each queue's smallest waiting
        unit (the record a fair-share shortfall needs to be explained)."""
        api = self.apis["front"]
        try:
            out = [views.queues(api)]
            for q, s in shares.items():
                pod = s.get("fitting_pod") or s.get("smallest_waiting_pod")
                if pod:
                    out.append(f"{q}: armada-bridge why {pod}")
                    out.append(views.why(api, pod, self.ns))
            return "\n".join(out)
        except Exception as e:  # a diagnosis must not end the soak
            return f"diagnosis failed: {type(e).__name__}: {e}"


def _by_front_uid(remote: dict[str, list[Any]]) -> dict[str, list[str]]:
    """front pod UID -> its remote pods ("cluster/name"), over the clusters that answered."""
    out: dict[str, list[str]] = defaultdict(list)
    for c, items in remote.items():
        for r in items:
            out[r.metadata.labels[keys.FRONT_UID]].append(f"{c}/{r.metadata.name}")
    return out


def _answered(silent: list[str]) -> None:
    """A check over every remote cluster ran in full only if each answered."""
    if silent:
        raise NotAnswered(f"{', '.join(silent)} did not answer")


def pod_state(p: Any, remote: Any | None = None) -> str:
    """What a front pod that should run says of itself (and its remote pod, if given): where it
    was placed and bound, its gates, its conditions; the record a stuck pod needs."""
    md, spec, st = p.metadata, p.spec, p.status
    ann = md.annotations or {}
    gates = [g.name for g in spec.scheduling_gates or []]
    conds = [
        f"{c.type}={c.status}" + (f"({c.reason}: {c.message})" if c.status == "False" and c.message else "")
        for c in st.conditions or []
    ]
    parts = [
        f"phase {st.phase}",
        f"cluster {ann.get(keys.ASSIGNED_CLUSTER, '-')}",
        f"node {spec.node_name or '-'}",
        f"gates {gates}",
        f"conditions {conds}",
    ]
    if st.message:
        parts.append(f"message {st.message!r}")
    if remote is not None:
        rconds = [f"{c.type}={c.status}" for c in remote.status.conditions or []]
        parts.append(
            f"remote {remote.metadata.namespace}/{remote.metadata.name} {remote.status.phase} {rconds}"
        )
    elif ann.get(keys.ASSIGNED_CLUSTER):
        parts.append("no remote pod")
    return ", ".join(parts)


def _cpu(pod: dict[str, Any]) -> float:
    return pod_requests(pod).get("cpu", 0) / 1000


def _live(pod: dict[str, Any], deleting: bool = False) -> bool:
    """Not finished, and not being deleted (unless `deleting`: a pod being deleted keeps its room)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return deleting or not pod["metadata"].get("deletionTimestamp")


def placement(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(remote cluster, remote node) the bridge placed a front pod on, None while it waits."""
    ann = pod["metadata"].get("annotations") or {}
    cluster = ann.get(keys.ASSIGNED_CLUSTER)
    return (cluster, ann.get(keys.ASSIGNED_REMOTE_NODE) or "") if cluster else None


def fits(pods: list[Resources], nodes: list[Resources], victims: list[Resources] | None = None) -> bool:
    """Every pod's usage on some node, each node's room shared by the pods put there (first fit,
    the largest CPU first: a judge that may miss a packing, never one that overfills a node). A pod
    that fits on no node's free room may also take the room of that node's `victims` (what pods
    that may be preempted for it hold there; same order as `nodes`)."""
    left = [dict(n) for n in nodes]
    prey = [dict(v) for v in victims] if victims is not None else [{} for _ in nodes]
    for usage in sorted(pods, key=lambda u: -u.get("cpu", 0)):
        spot = next((n for n in left if all(n.get(k, 0) >= x for k, x in usage.items())), None)
        if spot is not None:
            for k, x in usage.items():
                spot[k] -= x
            continue
        for n, v in zip(left, prey, strict=True):
            short = {k: max(0, x - n.get(k, 0)) for k, x in usage.items()}
            if all(v.get(k, 0) >= x for k, x in short.items()):
                for k, x in usage.items():
                    n[k] = n.get(k, 0) - x + short[k]
                    v[k] = v.get(k, 0) - short[k]
                break
        else:
            return False
    return True


@dataclass
class _Evicted:
    """A unit (gang or single pod) of preemptible placed pods, as fair-share eviction takes it."""

    bound: tuple[str, str]  # (when its first member was bound, that member's name)
    cpu: float = 0.0
    pods: list[tuple[str, str, Resources]] = field(default_factory=list)  # (cluster, node, usage)


def fair_shares(
    pods: list[dict[str, Any]],
    gangs: dict[str, tuple[int, list[str]]],
    capacity: float,
    free_nodes: dict[str, dict[str, Resources]],
    others: dict[str, tuple[float, float]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per queue of the soak (`pods`: its front pods, Kubernetes JSON; `gangs`: name ->
    (cardinality, member uids)): CPU asked (live pods), allocated (placed), its fair share of
    `capacity` (equal weights, capped by demand, the rest shared out again: Armada's adjusted fair
    share, among the soak's queues and the `others`: queue -> (asked, placed) outside the soak), the
    CPU of its smallest waiting unit (a single pod, or a whole gang), and of its smallest waiting
    unit that fits in one remote cluster now (`fitting`, 0 if none), with `room`: that cluster's
    free CPU plus what fair-share preemption may take there.

    A unit fits on the nodes' free room (`free_nodes`: cluster -> node -> resources free), or on
    that and the room of pods fair-share preemption would give it, as the core (and Armada) does
    it: the preemptible pods of queues above their fair share are evicted, and each such queue
    takes its units back (longest bound first) while its cost with the next one stays below the
    cost of the queue the unit belongs to with that unit, or with any unit ahead of it in its queue
    (oldest first) that was tried before it and did not fit; the unit may take the room of what
    is not taken back by then."""
    demand: dict[str, float] = defaultdict(float)
    allocated: dict[str, float] = defaultdict(float)
    for q, (asked, held) in (others or {}).items():
        if q not in QUEUES:
            demand[q], allocated[q] = asked, held
    evictable: dict[str, dict[str, _Evicted]] = defaultdict(dict)  # queue -> unit -> its placed pods
    waiting: dict[str, dict[str, list[Resources]]] = defaultdict(lambda: defaultdict(list))  # queue -> unit
    order: dict[str, tuple[str, str]] = {}  # unit -> (its oldest member's creation, that member's name)
    member_of = {uid: g for g, (_, uids) in gangs.items() for uid in uids}
    complete = {g for g, (size, uids) in gangs.items() if len(uids) >= size}
    for p in pods:
        q = str((p["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL) or "")
        if q not in QUEUES or not _live(p):
            continue
        demand[q] += _cpu(p)
        where = placement(p)
        u = member_of.get(p["metadata"]["uid"], p["metadata"]["uid"])
        if where:
            allocated[q] += _cpu(p)
            if (p.get("spec") or {}).get("priorityClassName") == PREEMPTIBLE:
                when = scheduled_at(p) or str(p["metadata"].get("creationTimestamp") or "")
                bound = (when, p["metadata"]["name"])
                e = evictable[q].setdefault(u, _Evicted(bound))
                e.bound = min(e.bound, bound)
                e.cpu += _cpu(p)
                e.pods.append((*where, pod_usage(p)))
        else:
            if u in gangs and u not in complete:
                continue  # a gang not whole yet is not schedulable
            waiting[q][u].append(pod_usage(p))
            seen = (str(p["metadata"].get("creationTimestamp") or ""), p["metadata"]["name"])
            order[u] = min(order.get(u, seen), seen)
    fair: dict[str, float] = {}
    left, open_queues = capacity, sorted(demand, key=lambda q: demand[q])
    while open_queues:  # water-filling: the smallest demand first
        q = open_queues.pop(0)
        fair[q] = min(demand[q], left / (len(open_queues) + 1))
        left -= fair[q]
    evicted = [q for q in QUEUES if q in demand and allocated[q] > fair[q] + 1e-6]

    def victims(q: str, turn: float) -> dict[tuple[str, str], Resources]:
        """(cluster, node) -> what the evicted pods not taken back yet hold there when a unit of
        `q` is tried at `turn` (the CPU its queue would hold with it)."""
        out: dict[tuple[str, str], Resources] = defaultdict(dict)
        for r in evicted:
            if r == q:
                continue
            tally = allocated[r] - sum(e.cpu for e in evictable[r].values())
            back = True
            for e in sorted(evictable[r].values(), key=lambda e: e.bound):
                # the lower cost goes first; on a tie, the queue name
                back = back and (tally + e.cpu < turn - 1e-9 or (abs(tally + e.cpu - turn) <= 1e-9 and r < q))
                if back:
                    tally += e.cpu
                    continue
                for cluster, node, usage in e.pods:
                    add_into(out[cluster, node], usage)
        return out

    out: dict[str, dict[str, Any]] = {}
    for q in sorted(demand):
        if q not in QUEUES:
            continue
        fitting: tuple[float, str, str, float] | None = None  # CPU, a pod of it, cluster, room
        turn = allocated[q]  # the highest cost at which a unit of q was tried so far
        for u in sorted(waiting[q], key=order.__getitem__):
            usages = waiting[q][u]
            cpu = sum(x.get("cpu", 0) for x in usages) / 1000
            turn = max(turn, allocated[q] + cpu)
            prey = victims(q, turn)
            for c in sorted(free_nodes):
                nodes = free_nodes[c]
                theirs = [prey.get((c, n), {}) for n in nodes]
                if fits(usages, list(nodes.values()), theirs):
                    if fitting is None or cpu < fitting[0]:
                        room = sum(x.get("cpu", 0) for x in [*nodes.values(), *theirs]) / 1000
                        fitting = (cpu, order[u][1], c, room)
                    break
        units = sorted(waiting[q].items(), key=lambda kv: (sum(x.get("cpu", 0) for x in kv[1]), order[kv[0]]))
        out[q] = {
            "demand": demand[q],
            "allocated": allocated[q],
            "fair": fair[q],
            "smallest_waiting": sum(x.get("cpu", 0) for x in units[0][1]) / 1000 if units else 0.0,
            "smallest_waiting_pod": order[units[0][0]][1] if units else "",
            "fitting": fitting[0] if fitting else 0.0,
            "fitting_pod": fitting[1] if fitting else "",
            "fitting_cluster": fitting[2] if fitting else "",
            "room": fitting[3] if fitting else 0.0,
        }
    return out


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
    # Reaped when it exits, as a supervisor does: a zombie would look alive to the next revival.
    threading.Thread(target=proc.wait, daemon=True).start()
    return proc.pid


def run(
    env: Environment,
    *,
    minutes: float,
    seed: int,
    live_units: int = 12,
    load: float = 1.3,
    mean_fault_gap: float = 20.0,
    every_kind: bool = False,
    keep_failed: bool = False,
    split_seconds: float = 30.0,
    gc_seconds: float = 90.0,
    outage_seconds: float = 60.0,
    converge_seconds: float = 180.0,
) -> Report:
    ns = f"chaos-{uuid.uuid4().hex[:6]}"
    soak = Soak(env, seed, ns, load)
    custom = soak.custom
    soak.size_to_capacity(live_units)
    soak.core["front"].create_namespace({"metadata": {"name": ns}})
    for q in QUEUES:
        try:
            custom.create_cluster_custom_object(
                keys.GROUP,
                "v1alpha1",
                "queues",
                {
                    "apiVersion": keys.API_VERSION,
                    "kind": "Queue",
                    "metadata": {"name": q},
                    "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}},
                },
            )
        except ApiException as e:
            if e.status != 409:
                raise
    log(
        f"seed {seed}, namespace {ns}, {minutes} min of faults {sorted(soak.kinds)}; pods of {soak.cpu} "
        f"CPU asking {load:.1f}x the remotes; operator objects: "
        f"{[k.plural for k in soak.operator_kinds] or 'none (no operator runs)'}"
    )
    soak.faults_on.set()
    threads = [
        threading.Thread(target=soak.submit_loop, args=(live_units,), daemon=True),
        threading.Thread(target=soak.chaos_loop, args=(mean_fault_gap,), daemon=True),
        threading.Thread(target=soak.supervise_loop, daemon=True),
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
        return now < end or (now < last and soak.kinds_done != set(soak.kinds))

    try:
        while faulting():
            soak.check(split_seconds, gc_seconds, outage_seconds)  # counts its runs and errors
            time.sleep(2)
        soak.faults_on.clear()
        threads[1].join()
        soak.stop.set()
        threads[0].join()
        # Every process back (a fault may have ended with one down), then convergence.
        extender_setup.setup(env, soak.bins)
        vkubelet_setup.setup(env, soak.bins)
        soak.top_up()
        t0 = time.monotonic()
        problems = ["not checked yet"]
        while time.monotonic() - t0 < converge_seconds:
            began = time.monotonic()
            soak.check(split_seconds, gc_seconds, outage_seconds)
            got = soak.report.tally.run(
                CONVERGED,
                lambda: soak.converged() + [f"{s.name}: {s.detail}" for s in env.status() if not s.healthy],
            )
            problems = got if got is not None else [str(soak.report.tally.last_error[CONVERGED])]
            took = time.monotonic() - began
            if not problems:
                soak.report.converge_seconds = time.monotonic() - t0
                log(
                    f"converged {soak.report.converge_seconds:.0f}s after the top-up (that check took {took:.0f}s)"
                )
                break
            log(f"not converged yet ({len(problems)} problems, check took {took:.0f}s): {problems[0][:300]}")
            time.sleep(3)
        for p in problems[:20]:
            soak.report.violation(f"not converged after {converge_seconds:.0f}s: {p}")
        soak.report.judge()
    finally:
        soak.stop.set()
        soak.done.set()
        soak.faults_on.clear()
        try:
            if keep_failed and soak.report.violations:
                log(f"violations: namespace {ns} kept for a look (delete it when done)")
                raise _Kept
            soak.core["front"].delete_namespace(ns)
            for q in QUEUES:
                custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", q)
            # Gone everywhere before returning: until its pods are, they hold room others count on.
            deadline = time.monotonic() + 300
            for c in ("front", *REMOTES):
                while time.monotonic() < deadline:
                    try:
                        soak.core[c].read_namespace(ns)
                    except ApiException as e:
                        if e.status == 404:
                            break
                    time.sleep(1)
        except ApiException as e:
            log(f"cleanup: {e.status} {e.reason}")
        except _Kept:
            pass
        for a in soak.apis.values():
            a.close()
    return soak.report


def output(r: Report, minutes: float, *, as_json: bool) -> str:
    """What a run prints: JSON, or lines for people; both with each invariant's runs and errors."""
    out = {
        "seed": r.seed,
        "minutes": minutes,
        "faults": dict(sorted(r.faults.items())),
        "pods_created": r.pods_created,
        "gangs_created": r.gangs_created,
        "jobs_created": r.jobs_created,
        "operator_objects": dict(r.operator_objects),
        "shares_at_end": r.shares,
        "invariants": r.tally.counts(),
        "violations": r.violations,
        "converge_seconds": r.converge_seconds,
        # what the bridge itself said when a queue was found below its share (queues, why)
        "diagnosis": r.diagnosis,
    }
    if as_json:
        return json.dumps(out, indent=2)
    lines = [
        f"seed {r.seed}: {minutes} min, faults {out['faults']}",
        f"  pods created {r.pods_created} ({r.gangs_created} gangs, {r.jobs_created} Jobs, "
        f"operator objects {dict(r.operator_objects)}), converged in {r.converge_seconds}",
    ]
    for q, sh in r.shares.items():
        lines.append(
            f"  {q}: asks {sh['demand']:.1f} CPU, fair share {sh['fair']:.1f}, holds {sh['allocated']:.1f}"
        )
    lines.append("  invariants:")
    for name, c in r.tally.counts().items():
        last = f" (the last: {c['last_error']})" if c["last_error"] else ""
        lines.append(f"    {name}: {c['runs']} runs, {c['errors']} errors{last}")
    lines.append(f"  violations: {len(r.violations)}")
    lines += [f"    {v}" for v in r.violations]
    if r.diagnosis:
        lines.append(f"  the bridge's view then:\n{r.diagnosis}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--mean-fault-gap", type=float, default=20.0, help="mean seconds between faults")
    p.add_argument("--load", type=float, default=1.3, help="CPU the live work asks, times the remotes' CPU")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--keep", action="store_true", help="keep the namespace and queues of a run with violations"
    )
    p.add_argument("--split-seconds", type=float, default=30.0, help="how long a gang may be partly placed")
    p.add_argument(
        "--gc-seconds", type=float, default=90.0, help="how long a remote pod may outlive its front pod"
    )
    p.add_argument(
        "--outage-seconds",
        type=float,
        default=60.0,
        help="how long a front pod may be Running with no remote pod",
    )
    p.add_argument("--converge-seconds", type=float, default=180.0, help="how long convergence may take")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    r = run(
        Environment(),
        minutes=args.minutes,
        seed=seed,
        mean_fault_gap=args.mean_fault_gap,
        load=args.load,
        keep_failed=args.keep,
        split_seconds=args.split_seconds,
        gc_seconds=args.gc_seconds,
        outage_seconds=args.outage_seconds,
        converge_seconds=args.converge_seconds,
    )
    print(output(r, args.minutes, as_json=args.json))
    sys.exit(1 if r.violations else 0)


if __name__ == "__main__":
    main()
