"""Prometheus metrics of the extender (served on /metrics)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from armada_bridge.core.result import RoundResult


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        self.round_seconds = Histogram(
            "armada_bridge_round_seconds",
            "Duration of one scheduling round (sync + core + decisions)",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=r,
        )
        self.request_seconds = Histogram(
            "armada_bridge_extender_request_seconds",
            "Latency of extender and webhook HTTP requests",
            ["endpoint"],
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1),
            registry=r,
        )
        self.request_errors = Counter(
            "armada_bridge_extender_request_errors_total",
            "Requests answered with an error (4xx/5xx)",
            ["endpoint", "code"],
            registry=r,
        )
        self.binds = Counter(
            "armada_bridge_extender_binds_total",
            "Pods kube-scheduler asked the extender to bind (/bind): bound, or refused (the answer says "
            "why and the scheduler tries the pod again)",
            ["result"],
            registry=r,
        )
        self.webhook_errors = Counter(
            "armada_bridge_webhook_errors_total", "Admission reviews that could not be processed", registry=r
        )
        self.admitted = Counter(
            "armada_bridge_pods_admitted_total", "Pods admitted to a remote cluster", ["queue"], registry=r
        )
        self.preempted = Counter(
            "armada_bridge_pods_preempted_total", "Pods preempted", ["queue"], registry=r
        )
        self.gangs_queued = Gauge(
            "armada_bridge_gangs_queued", "Gangs (or single pods) waiting", ["queue"], registry=r
        )
        self.gangs_running = Gauge(
            "armada_bridge_gangs_running", "Gangs (or single pods) admitted or running", ["queue"], registry=r
        )
        self.oldest_wait = Gauge(
            "armada_bridge_gang_oldest_wait_seconds",
            "How long the longest-waiting gang (or single pod) of a queue has waited, since its first "
            "pod was created (0: none waits)",
            ["queue"],
            registry=r,
        )
        self._gang_queues: set[str] = set()
        self.fair_share = Gauge(
            "armada_bridge_queue_fair_share", "Fair share of a queue", ["queue"], registry=r
        )
        self.adjusted_fair_share = Gauge(
            "armada_bridge_queue_adjusted_fair_share",
            "Demand-capped adjusted fair share",
            ["queue"],
            registry=r,
        )
        self.actual_share = Gauge(
            "armada_bridge_queue_actual_share", "Actual share of a queue", ["queue"], registry=r
        )
        self.leader = Gauge("armada_bridge_extender_leader", "1 while this replica leads", registry=r)
        self.round_errors = Counter(
            "armada_bridge_extender_round_errors_total",
            "Scheduling rounds (stage round) and steps of the periodic status pass (stage status) that "
            "failed; the loop backs off and carries on",
            ["stage"],
            registry=r,
        )
        self.events_lost = Counter(
            "armada_bridge_extender_events_lost_total",
            "Events on pods not written: dropped (too many waiting to be written) or failed (the write "
            "failed); a pod's waiting reason is posted again by the next round",
            ["cause"],
            registry=r,
        )
        self.events_queued = Gauge(
            "armada_bridge_extender_events_queued",
            "Events on pods waiting to be written: they are written in the background, behind the pods' "
            "own writes, so under a burst on a loaded front API server they reach kubectl describe late",
            registry=r,
        )
        self.informer_handler_errors = Counter(
            "armada_bridge_extender_informer_handler_errors_total",
            "Informer events a handler failed on (what they changed is picked up by the periodic resync)",
            ["informer"],
            registry=r,
        )

    def observe_round(self, result: RoundResult) -> None:
        for report in result.queue_shares().values():
            self.fair_share.labels(queue=report.queue).set(report.fair_share)
            self.adjusted_fair_share.labels(queue=report.queue).set(report.adjusted_fair_share)
            self.actual_share.labels(queue=report.queue).set(report.actual_share)

    def observe_gangs(
        self, queued: dict[str, int], running: dict[str, int], oldest_wait: dict[str, float] | None = None
    ) -> None:
        """Per queue: units waiting and running, and the longest wait. A queue seen before and
        absent now (its pods all gone) reads 0, not what it held last."""
        waits = oldest_wait or {}
        queues = set(queued) | set(running) | set(waits)
        for q in queues | self._gang_queues:
            self.gangs_queued.labels(queue=q).set(queued.get(q, 0))
            self.gangs_running.labels(queue=q).set(running.get(q, 0))
            self.oldest_wait.labels(queue=q).set(waits.get(q, 0.0))
        self._gang_queues |= queues
