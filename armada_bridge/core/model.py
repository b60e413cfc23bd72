"""The scheduling core's data model: nodes, queues, jobs, priority classes, configuration.

Plain dataclasses; quantities are milli-units (see :mod:`armada_bridge.core.quantities`). The model has
no behaviour beyond small derived properties; the algorithms live in their own modules.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from armada_bridge.core.quantities import Resources

#: Every node carries this label with its cluster's name (as in Armada's simulator); it is the
#: default node-uniformity label of gangs, so a gang lands in one remote cluster.
CLUSTER_LABEL = "armadaproject.io/clusterName"

DEFAULT_POOL = "default"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"  # NoSchedule | PreferNoSchedule | NoExecute


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists
    value: str = ""
    effect: str = ""  # empty matches every effect


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist | Gt | Lt
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Requirements ANDed together; the terms of a required node affinity are ORed."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class PriorityClass:
    name: str
    priority: int = 0
    preemptible: bool = False
    #: resource -> maximum fraction of the pool one queue may hold in this class.
    maximum_resource_fraction_per_queue: Mapping[str, float] = field(default_factory=dict)


@dataclass
class Node:
    name: str
    cluster: str
    allocatable: Resources
    pool: str = DEFAULT_POOL
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False

    def effective_labels(self) -> dict[str, str]:
        labels = dict(self.labels)
        labels.setdefault(CLUSTER_LABEL, self.cluster)
        return labels


@dataclass
class Queue:
    name: str
    priority_factor: float = 1.0
    cordoned: bool = False
    #: resource -> maximum fraction of the pool this queue may hold (all priority classes).
    resource_limits: dict[str, float] = field(default_factory=dict)
    #: priority class -> resource -> fraction; overrides the class's own per-queue limit.
    resource_limits_by_priority_class: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def weight(self) -> float:
        """Armada: weight = 1/priorityFactor, or 1 when priorityFactor <= 0."""
        return 1.0 / self.priority_factor if self.priority_factor > 0 else 1.0


@dataclass
class Job:
    """One pod. Jobs sharing ``gang_id`` (within a queue) form a gang of ``gang_cardinality``."""

    id: str
    queue: str
    requests: Resources
    priority_class: str = ""
    #: Armada's per-job queue priority: lower is scheduled first within a queue.
    priority: int = 0
    submit_time: float = 0.0
    node_selector: dict[str, str] = field(default_factory=dict)
    #: required node affinity (requiredDuringSchedulingIgnoredDuringExecution) terms, ORed.
    affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    gang_id: str | None = None
    gang_cardinality: int = 1
    gang_node_uniformity_label: str | None = None
    #: capacity reservation for the whole gang (Spark style minMember 1 + minResources): the gang
    #: is admitted only where one cluster (and uniformity value) has this much free.
    gang_min_resources: Resources | None = None
    #: pools the job may run in; None = any pool.
    pools: tuple[str, ...] | None = None
    #: jobs sharing this key run in one cluster (of one pool): the first of them bound fixes it,
    #: as a gang's first member fixes the gang's; it is free again once none of them is bound.
    colocation: str | None = None

    @property
    def is_gang(self) -> bool:
        return self.gang_id is not None and (self.gang_cardinality > 1 or self.gang_min_resources is not None)

    def gang_key(self) -> str:
        """Gangs are identified per queue, as in Armada."""
        return f"{self.queue}/{self.gang_id}" if self.is_gang else f"{self.queue}//{self.id}"


class JobState(enum.StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    #: removed, finished or preempted: no longer known to the scheduler.
    GONE = "GONE"


@dataclass(frozen=True)
class SchedulingConfig:
    """The subset of Armada's SchedulingConfig the core implements (camelCase in YAML)."""

    priority_classes: Mapping[str, PriorityClass] = field(
        default_factory=lambda: {
            "armada-default": PriorityClass("armada-default", 1000, False, {"cpu": 1.0, "memory": 1.0}),
            "armada-preemptible": PriorityClass("armada-preemptible", 1000, True),
        }
    )
    default_priority_class: str = "armada-default"
    #: resource -> multiplier used in the dominant-resource-fairness cost.
    drf_resources: Mapping[str, float] = field(
        default_factory=lambda: {"cpu": 1.0, "memory": 1.0, "nvidia.com/gpu": 1.0}
    )
    #: resources the node database orders nodes by (best fit = least free first).
    indexed_resources: tuple[str, ...] = ("cpu", "memory", "nvidia.com/gpu")
    #: labels usable as gang node-uniformity labels; None = any label. The cluster label always is.
    indexed_node_labels: frozenset[str] | None = None
    maximum_resource_fraction_to_schedule: Mapping[str, float] = field(default_factory=dict)
    max_queue_lookback: int = 0  # 0 = unlimited
    maximum_scheduling_rate: float = float("inf")
    maximum_scheduling_burst: int = 0  # 0 = unlimited
    maximum_per_queue_scheduling_rate: float = float("inf")
    maximum_per_queue_scheduling_burst: int = 0  # 0 = unlimited
    protected_fraction_of_fair_share: float = 1.0
    protect_uncapped_adjusted_fair_share: bool = False
    enable_fair_share_preemption: bool = True
    enable_urgency_preemption: bool = True
    fair_share_max_iterations: int = 10

    def priority_class_of(self, job: Job) -> PriorityClass:
        name = job.priority_class or self.default_priority_class
        pc = self.priority_classes.get(name)
        if pc is None:
            pc = self.priority_classes.get(self.default_priority_class) or PriorityClass(name)
        return pc
