"""Prometheus metrics of the vkubelet (served at /metrics on the metrics address)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self) -> None:
        r = self.registry
        self.sync_seconds = Histogram(
            "vkubelet_pod_sync_seconds",
            "Time of one pod reconcile (front pod to remote pod and back)",
            ["cluster"],
            registry=r,
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.bind_to_running_seconds = Histogram(
            "vkubelet_bind_to_running_seconds",
            "From the front pod's PodScheduled condition to the front pod showing Running",
            ["cluster"],
            registry=r,
            buckets=(0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
        )
        self.pods = Gauge(
            "vkubelet_pods", "Front pods bound to a virtual node, by phase", ["cluster", "phase"], registry=r
        )
        self.remote_errors = Counter(
            "vkubelet_remote_api_errors_total",
            "Failed calls to a remote cluster's API",
            ["cluster", "op"],
            registry=r,
        )
        self.mirrored = Gauge(
            "vkubelet_mirrored_objects",
            "Objects mirrored into a remote cluster",
            ["cluster", "kind"],
            registry=r,
        )
        self.mirror_ops = Counter(
            "vkubelet_mirror_operations_total",
            "Mirror creates, updates and deletes",
            ["cluster", "kind", "op"],
            registry=r,
        )
        self.events_dropped = Counter(
            "vkubelet_remote_events_dropped_total",
            "Remote pod Events not reflected to the front because too many were waiting",
            ["cluster"],
            registry=r,
        )
        self.cluster_ready = Gauge(
            "vkubelet_remote_cluster_ready", "1 while the remote API answers", ["cluster"], registry=r
        )
        self.informer_handler_errors = Counter(
            "vkubelet_informer_handler_errors_total",
            "Informer events a handler raised on (lost to that handler until the next resync)",
            ["informer"],
            registry=r,
        )
        self.queue_depth = Gauge(
            "vkubelet_pod_queue_depth", "Pods waiting for a reconcile", ["cluster"], registry=r
        )
        self.relay_connections = Counter(
            "vkubelet_relay_connections_total",
            "Connections relay pods handed to the relay endpoint, by the HTTP status answered",
            ["status"],
            registry=r,
        )
        self.relay_open = Gauge("vkubelet_relay_connections_open", "Relayed connections open now", registry=r)
        self.relay_pods = Gauge(
            "vkubelet_relay_pods", "Relay pods of front pods bound to a virtual node", registry=r
        )

    def handler_failed(self, informer: str) -> None:
        """An informer's handler raised (armada_bridge.kube.informer: `on_handler_error`)."""
        self.informer_handler_errors.labels(informer=informer).inc()

    def forget(self, cluster: str) -> None:
        """Drop a removed cluster's series."""
        for metric in (self.sync_seconds, self.bind_to_running_seconds, self.cluster_ready, self.queue_depth):
            with contextlib.suppress(KeyError):
                metric.remove(cluster)


METRICS = Metrics()
