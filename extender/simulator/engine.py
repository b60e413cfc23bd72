"""Discrete-event simulation of Armada's simulator scenarios on the armada-bridge core.

Mirrors ``internal/scheduler/simulator/simulator.go``: job templates are submitted at their
``earliestSubmitTime`` (or when their dependencies complete), a scheduling round runs every cycle
period (10 s by default) while templates are active, a leased job runs for
``pendingDelay + runtime`` (shifted exponentials; gang runtimes have no tail), and a preempted job
is resubmitted as a new job after ``workflowManagerDelay``. Randomness comes from one seeded
``random.Random``, drawn in a fixed order, so a run is reproducible (it is not the same stream as
Go's ``math/rand``).
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from armada_bridge.core.model import (
    CLUSTER_LABEL,
    Job,
    Node,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Queue,
    SchedulingConfig,
    Taint,
    Toleration,
)
from armada_bridge.core.result import RoundResult
from armada_bridge.core.scheduler import Scheduler
from extender.simulator.spec import ClusterSpec, JobTemplateSpec, ShiftedExponential, WorkloadSpec

Sink = Callable[[dict[str, Any]], None]


@dataclass
class Template:
    spec: JobTemplateSpec
    queue: str
    id: str
    remaining_deps: set[str]
    done: int = 0
    submitted: bool = False


@dataclass
class SimJob:
    id: str
    queue: str
    template: Template
    gang_id: str | None
    attempt: int
    submitted: float
    state: str = "QUEUED"
    cluster: str | None = None
    node: str | None = None
    scheduled: float | None = None
    finished: float | None = None

    def record(self) -> dict[str, Any]:
        return {
            "type": "job",
            "id": self.id,
            "queue": self.queue,
            "state": self.state,
            "cluster": self.cluster,
            "node": self.node,
            "submitted": _t(self.submitted),
            "scheduled": _t(self.scheduled),
            "finished": _t(self.finished),
        }


def _t(v: float | None) -> float | int | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else round(v, 6)


@dataclass
class QueueTotals:
    submitted: int = 0
    succeeded: int = 0
    failed: int = 0
    preempted: int = 0
    waits: list[float] = field(default_factory=list)
    share_sum: float = 0.0
    fair_sum: float = 0.0
    share_cycles: int = 0


def build_nodes(clusters: ClusterSpec) -> list[Node]:
    nodes: list[Node] = []
    for c in clusters.clusters:
        for ti, tmpl in enumerate(c.node_templates):
            labels = dict(tmpl.labels)
            labels[CLUSTER_LABEL] = c.name
            taints = tuple(Taint(t.key, t.value, t.effect) for t in tmpl.taints)
            for i in range(tmpl.number):
                name = f"{c.name}-{ti}-{i}"
                nodes.append(
                    Node(
                        name=name,
                        cluster=c.name,
                        pool=c.pool,
                        allocatable=dict(tmpl.total_resources.resources),
                        labels=dict(labels),
                        taints=taints,
                    )
                )
    return nodes


def _affinity(spec: JobTemplateSpec) -> tuple[NodeSelectorTerm, ...]:
    aff = spec.requirements.affinity
    if aff is None or aff.node_affinity is None or aff.node_affinity.required is None:
        return ()
    return tuple(
        NodeSelectorTerm(
            tuple(NodeSelectorRequirement(r.key, r.operator, tuple(r.values)) for r in term.match_expressions)
        )
        for term in aff.node_affinity.required.node_selector_terms
    )


class Simulation:
    def __init__(
        self,
        clusters: ClusterSpec,
        workload: WorkloadSpec,
        config: SchedulingConfig,
        *,
        cycle_period: float = 10.0,
        until: float | None = None,
        sink: Sink | None = None,
    ) -> None:
        self.clusters = clusters
        self.workload = workload
        self.config = config
        self.cycle_period = cycle_period
        self.until = until
        self.sink: Sink = sink or (lambda _r: None)
        seed = workload.random_seed or 0
        self.rng = random.Random(seed)
        self.scheduler = Scheduler(config)
        for n in build_nodes(clusters):
            self.scheduler.upsert_node(n)
        self.queues: list[str] = []
        for q in workload.queues:
            weight = q.weight if q.weight > 0 else 1.0
            self.scheduler.upsert_queue(Queue(q.name, priority_factor=1.0 / weight))
            self.queues.append(q.name)
        self.templates: dict[str, Template] = {}
        self._build_templates()
        self.jobs: dict[str, SimJob] = {}
        self.totals: dict[str, QueueTotals] = {q: QueueTotals() for q in self.queues}
        self._events: list[tuple[float, int, str, Any]] = []
        self._seq = 0
        self.now = 0.0
        self.cycles = 0
        #: set when the simulation stopped because the remaining jobs can never be scheduled.
        self.stuck = False

    # ---------------------------------------------------------------- setup
    def _build_templates(self) -> None:
        for q in self.workload.queues:
            for i, spec in enumerate(q.job_templates):
                base_id = spec.id or f"{q.name}-{i}"
                if spec.repeat is not None:
                    for r in range(spec.repeat.num_times):
                        copy = spec.model_copy(
                            update={
                                "earliest_submit_time": spec.earliest_submit_time + r * spec.repeat.period,
                                "repeat": None,
                            }
                        )
                        tid = f"{base_id}-repeat-{r}"
                        self.templates[tid] = Template(copy, q.name, tid, set(spec.dependencies))
                else:
                    self.templates[base_id] = Template(spec, q.name, base_id, set(spec.dependencies))
        # Dependencies on a repeated template wait for all its repetitions.
        repeated = {
            t.spec.id or "": [tid for tid in self.templates if tid.startswith(f"{t.spec.id}-repeat-")]
            for t in self.templates.values()
            if t.spec.id
        }
        for t in self.templates.values():
            deps: set[str] = set()
            for d in t.remaining_deps:
                deps.update(repeated.get(d) or [d])
            t.remaining_deps = deps

    def _push(self, time: float, kind: str, payload: Any) -> None:
        heapq.heappush(self._events, (time, self._seq, kind, payload))
        self._seq += 1

    def _sample(self, dist: ShiftedExponential) -> float:
        tail = self.rng.expovariate(1.0 / dist.tail_mean) if dist.tail_mean > 0 else 0.0
        return dist.minimum + tail

    # ------------------------------------------------------------------ run
    def run(self) -> None:
        for t in self.templates.values():
            if not t.remaining_deps:
                self._submit_template(t, t.spec.earliest_submit_time)
        self._push(0.0, "schedule", None)
        while self._events:
            time, _seq, kind, payload = heapq.heappop(self._events)
            if self.until is not None and time > self.until:
                break
            self.now = time
            if kind == "submit":
                self._on_submit(payload)
            elif kind == "finish":
                self._on_finish(*payload)
            elif kind == "schedule":
                self._on_schedule()
        for job in sorted(self.jobs.values(), key=lambda j: (j.submitted, j.id)):
            if job.state in ("QUEUED", "RUNNING"):
                self.sink(job.record())

    def _active(self) -> bool:
        return any(t.done < t.spec.number for t in self.templates.values())

    def _submit_template(self, t: Template, at: float) -> None:
        t.submitted = True
        card = t.spec.gang_cardinality
        gang_id: str | None = None
        batch: list[tuple[str, str | None, int]] = []
        for k in range(t.spec.number):
            if card and k % card == 0:
                gang_id = f"{t.id}-g{k // card}"
            batch.append((f"{t.id}-{k}", gang_id if card else None, 0))
        self._push(at, "submit", (t, batch))

    def _on_submit(self, payload: tuple[Template, list[tuple[str, str | None, int]]]) -> None:
        t, batch = payload
        spec = t.spec
        req = spec.requirements
        gang_card = spec.gang_cardinality
        for job_id, gang_id, attempt in batch:
            sj = SimJob(job_id, t.queue, t, gang_id, attempt, submitted=self.now)
            self.jobs[job_id] = sj
            self.totals[t.queue].submitted += 1
            self.scheduler.add_job(
                Job(
                    id=job_id,
                    queue=t.queue,
                    requests=dict(req.resource_requirements.requests),
                    priority_class=spec.priority_class_name,
                    priority=spec.queue_priority,
                    submit_time=self.now,
                    node_selector=dict(req.node_selector),
                    affinity=_affinity(spec),
                    tolerations=tuple(
                        Toleration(x.key, x.operator, x.value, x.effect) for x in req.tolerations
                    ),
                    gang_id=gang_id,
                    gang_cardinality=gang_card if gang_id else 1,
                    gang_node_uniformity_label=(spec.gang_node_uniformity_label or CLUSTER_LABEL)
                    if gang_id
                    else None,
                )
            )

    def _on_schedule(self) -> None:
        result = self.scheduler.schedule_round(self.now)
        self.cycles += 1
        self._apply(result)
        self._emit_cycle(result)
        if self._active() and not self._stuck(result):
            self._push(self.now + self.cycle_period, "schedule", None)

    def _stuck(self, result: RoundResult) -> bool:
        """Nothing runs, nothing else will happen, and this round changed nothing: the remaining
        jobs can never be scheduled (Armada's simulator would cycle until its hard time limit)."""
        if result.scheduled or result.preempted or self.scheduler.has_running():
            return False
        if any(kind != "schedule" for _t, _s, kind, _p in self._events):
            return False
        self.stuck = bool(self.scheduler.queued_jobs())
        return self.stuck

    def _apply(self, result: RoundResult) -> None:
        for job_id in sorted(result.preempted, key=lambda j: (self.jobs[j].queue, j)):
            sj = self.jobs[job_id]
            sj.state = "PREEMPTED"
            sj.finished = self.now
            self.totals[sj.queue].preempted += 1
            self.sink(sj.record())
            self._resubmit(sj)
        for job_id in sorted(result.scheduled, key=lambda j: (self.jobs[j].queue, j)):
            sj = self.jobs[job_id]
            p = result.scheduled[job_id]
            sj.state = "RUNNING"
            sj.cluster, sj.node, sj.scheduled = p.cluster, p.node, self.now
            self.totals[sj.queue].waits.append(self.now - sj.submitted)
            spec = sj.template.spec
            delay = self._sample(self.clusters.pending_delay_distribution)
            fails = spec.failure_probability > 0 and self.rng.random() < spec.failure_probability
            if fails:
                runtime = self._sample(spec.failure_runtime_distribution)
            else:
                dist = spec.runtime_distribution
                if sj.gang_id is not None:  # gang members end together
                    dist = dist.model_copy(update={"tail_mean": 0.0})
                runtime = self._sample(dist)
            self._push(self.now + delay + runtime, "finish", (job_id, "FAILED" if fails else "SUCCEEDED"))

    def _resubmit(self, sj: SimJob) -> None:
        at = self.now + self._sample(self.clusters.workflow_manager_delay_distribution)
        attempt = sj.attempt + 1
        base = sj.id.rsplit("-r", 1)[0] if sj.attempt else sj.id
        new_id = f"{base}-r{attempt}"
        gang = (
            f"{sj.gang_id.rsplit('-r', 1)[0] if sj.attempt else sj.gang_id}-r{attempt}"
            if sj.gang_id
            else None
        )
        self._push(at, "submit", (sj.template, [(new_id, gang, attempt)]))

    def _on_finish(self, job_id: str, outcome: str) -> None:
        sj = self.jobs.get(job_id)
        if sj is None or sj.state != "RUNNING":
            return  # preempted meanwhile
        self.scheduler.mark_finished(job_id)
        sj.state = outcome
        sj.finished = self.now
        totals = self.totals[sj.queue]
        if outcome == "SUCCEEDED":
            totals.succeeded += 1
        else:
            totals.failed += 1
        self.sink(sj.record())
        t = sj.template
        t.done += 1
        if t.done == t.spec.number:
            for other in self.templates.values():
                if t.id in other.remaining_deps:
                    other.remaining_deps.discard(t.id)
                    if not other.remaining_deps and not other.submitted:
                        at = max(
                            self.now + other.spec.earliest_submit_time,
                            self.now + other.spec.earliest_submit_time_from_dependency_completion,
                        )
                        self._submit_template(other, at)

    def _emit_cycle(self, result: RoundResult) -> None:
        for pool in sorted(result.shares):
            queues: dict[str, Any] = {}
            for name, r in sorted(result.shares[pool].items()):
                queues[name] = {
                    "fair_share": round(r.fair_share, 6),
                    "adjusted_fair_share": round(r.adjusted_fair_share, 6),
                    "actual_share": round(r.actual_share, 6),
                    "running": r.running,
                    "scheduled": r.scheduled,
                    "preempted": r.preempted,
                }
                totals = self.totals.get(name)
                if totals is not None:
                    totals.share_sum += r.actual_share
                    totals.fair_sum += r.adjusted_fair_share
                    totals.share_cycles += 1
            self.sink({"type": "cycle", "time": _t(self.now), "pool": pool, "queues": queues})
