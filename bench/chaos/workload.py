"""What the soak's queues submit: singles and gangs of pods, Jobs, and the released operators' objects
where they run, sized to ask for more than the remotes hold."""

from __future__ import annotations

import random
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from kubernetes.client.rest import ApiException
from kubernetes.utils import parse_quantity

from armada_bridge import keys
from bench.chaos.context import PREEMPTIBLE, QUEUES, SoakContext
from bench.chaos.report import log
from bench.chaos.served import SERVED_LABEL
from bench.chaos.shares import cpu_of, live
from devenv.operators.install import enabled
from devenv.operators.samples import adapt, sample
from devenv.pods import busybox, busybox_pod

MEAN_UNIT_PODS = 5.0  # singles 40 %, gangs of 2-16 45 %, Jobs and operator objects of 2-4 15 %


MEMORY = "256Mi"  # of each pod


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
                    "containers": [busybox(cpu, MEMORY)],
                },
            },
        },
    }


def unit(name: str, queue: str, size: int, cpu: str, *, served: bool = False) -> list[dict[str, Any]]:
    """A single pod (size 1) or a gang of `size` pods, preemptible, running until deleted; with
    `served`, selected by the front Service of bench.chaos.served (it gets a relay)."""
    annotations = {keys.GANG_ID: name, keys.GANG_CARDINALITY: str(size)} if size > 1 else {}
    labels = {keys.QUEUE_LABEL: queue, "chaos-unit": name, **({SERVED_LABEL: "yes"} if served else {})}
    return [
        busybox_pod(
            f"{name}-{i}" if size > 1 else name,
            cpu=cpu,
            memory=MEMORY,
            labels=labels,
            annotations=annotations,
            priorityClassName=PREEMPTIBLE,
            terminationGracePeriodSeconds=0,
        )
        for i in range(size)
    ]


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
    return _named(adapt(obj, ns, cpu=cpu, memory=MEMORY, runtime="30s", queue=queue), name)


def _raycluster(name: str, ns: str, queue: str, size: int, cpu: str) -> dict[str, Any]:
    """KubeRay's own sample: head + workers, running until deleted."""
    (obj,) = sample("kuberay", "config/samples/ray-cluster.sample.yaml")
    obj["spec"]["workerGroupSpecs"][0].update(replicas=size - 1, minReplicas=size - 1)
    return _named(adapt(obj, ns, cpu=cpu, memory=MEMORY, queue=queue), name)


def _named(obj: dict[str, Any], name: str) -> dict[str, Any]:
    obj["metadata"]["name"] = name
    obj["metadata"].setdefault("labels", {})["chaos-unit"] = name
    return obj


OPERATOR_KINDS = (
    Kind("training-operator", "kubeflow.org", "v1", "pytorchjobs", _pytorchjob),
    Kind("kuberay", "ray.io", "v1", "rayclusters", _raycluster),
)


class Workload:
    def __init__(self, ctx: SoakContext, seed: int, load: float) -> None:
        self.ctx = ctx
        self.rng = random.Random(seed)  # the workload's
        running = set(enabled(ctx.env))
        self.operator_kinds = [k for k in OPERATOR_KINDS if k.operator in running]
        self.load = load
        self.cpu = "250m"  # sized to the remotes by size_to_capacity()
        self.full_capacity = 0.0  # the remotes' CPU before the faults (size_to_capacity)
        self.units: dict[str, list[str]] = defaultdict(list)  # queue -> live unit names, oldest first

    def size_to_capacity(self, live_units: int) -> None:
        """Each pod's CPU such that the live units of the three queues ask for `load` times the
        remotes' CPU: fair share, not arrival order, decides who runs."""
        pods = len(QUEUES) * live_units * MEAN_UNIT_PODS
        self.full_capacity = self.ctx.capacity_cpu()
        self.cpu = f"{max(50, int(self.load * self.full_capacity * 1000 / pods))}m"

    def submit_loop(self, live_units: int) -> None:
        seq = 0
        while not self.ctx.stop.is_set():
            for q in QUEUES:
                seq += 1
                draw = self.rng.random()
                size = 1 if draw < 0.4 else self.rng.randint(2, 16)
                name = f"{q[-1]}{seq}"
                try:
                    if draw > 0.85 and self.operator_kinds and self.rng.random() < 0.5:
                        kind = self.rng.choice(self.operator_kinds)
                        n = min(size, 4)
                        obj = kind.make(name, self.ctx.ns, q, n, self.cpu)
                        self.ctx.custom.create_namespaced_custom_object(
                            kind.group, kind.version, self.ctx.ns, kind.plural, obj
                        )
                        self.ctx.report.operator_objects[kind.plural] += 1
                        self.ctx.report.pods_created += n  # made by the operator
                    elif draw > 0.85:  # a Job: its controller makes (and remakes) the pods
                        self.ctx.batch.create_namespaced_job(
                            self.ctx.ns, job(name, q, min(size, 4), self.cpu)
                        )
                        self.ctx.report.pods_created += min(size, 4)
                        self.ctx.report.jobs_created += 1
                    else:
                        for body in unit(name, q, size, self.cpu, served=size == 1 and seq % 3 == 0):
                            self.ctx.core["front"].create_namespaced_pod(self.ctx.ns, body)
                            self.ctx.report.pods_created += 1
                        self.ctx.report.gangs_created += size > 1
                    self.units[q].append(name)
                    while len(self.units[q]) > live_units:  # churn: the oldest unit goes
                        self.delete_unit(self.units[q].pop(0))
                except ApiException as e:
                    log(f"submit {name}: {e.status} {e.reason}")
            self.ctx.stop.wait(1.0)

    def top_up(self) -> None:
        """After the faults: each queue submits more units (singles and gangs of 2-8, preemptible)
        until its units that run until deleted ask for `load`/3 of the remotes' CPU again
        (preempted units are gone, Jobs and operators' objects end), so that
        fair share, not what the faults left, decides the end state the convergence check judges."""
        # The remotes' nodes as before the faults (a remote just restarted has NotReady nodes for a
        # while): sized on fewer, the queues would ask for less than the remotes hold.
        deadline = time.monotonic() + 120
        while (capacity := self.ctx.capacity_cpu()) < self.full_capacity and time.monotonic() < deadline:
            time.sleep(2)
        if capacity < self.full_capacity:
            log(f"the remotes offer {capacity:.0f} CPU of {self.full_capacity:.0f} 120 s after the faults")
        capacity = max(capacity, self.full_capacity)
        # Only what runs until deleted counts: a Job's pods and an operator's end on their own, and
        # the queues would end up asking for less than the remotes hold.
        lasting = [
            p
            for p in self.ctx.raw("front", "list_namespaced_pod", self.ctx.ns)
            if live(p) and not p["metadata"].get("ownerReferences")
        ]
        target = self.load * capacity / len(QUEUES)
        cpu = float(parse_quantity(self.cpu))
        for q in QUEUES:
            demand = sum(
                cpu_of(p) for p in lasting if (p["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL) == q
            )
            added = 0
            while demand < target:
                size = 1 if self.rng.random() < 0.5 else self.rng.randint(2, 8)
                name = f"{q[-1]}top{added}"
                for body in unit(name, q, size, self.cpu):
                    self.ctx.core["front"].create_namespaced_pod(self.ctx.ns, body)
                self.ctx.report.pods_created += size
                demand += size * cpu
                added += 1
            log(f"{q}: {added} units added, asking {demand:.0f} of {capacity:.0f} CPU")

    def delete_unit(self, name: str) -> None:
        selector = f"chaos-unit={name}"
        for kind in self.operator_kinds:
            self.ctx.custom.delete_collection_namespaced_custom_object(
                kind.group, kind.version, self.ctx.ns, kind.plural, label_selector=selector
            )
        self.ctx.batch.delete_collection_namespaced_job(
            self.ctx.ns, label_selector=selector, propagation_policy="Background"
        )
        self.ctx.core["front"].delete_collection_namespaced_pod(
            self.ctx.ns, label_selector=selector, grace_period_seconds=0
        )
