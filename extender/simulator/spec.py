"""Pydantic models of Armada's simulator inputs (``internal/scheduler/simulator/simulator.proto``).

Keys are camelCase as in Armada's YAML files. ClusterSpec accepts both layouts Armada has used:
``clusters: [{name, pool, nodeTemplates}]`` (current) and
``pools: [{name, clusterGroups: [{clusters: [...]}]}]`` (older files such as ``cpu_1_1_2.yaml``).
Unknown keys are errors in cluster and workload files (they are almost always typos); the
SchedulingConfig (extender/config.py) accepts Armada's many keys the core does not use, with a warning.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from armada_bridge.core.quantities import QuantityError, parse_quantity

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_SECONDS = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: Any) -> float:
    """Go duration ("1h30m", "36s", "5m") or a number of seconds (90, "720000") -> seconds."""
    if isinstance(value, bool):
        raise ValueError("expected a duration such as 30s, 5m or 1h30m")
    if isinstance(value, int | float):
        if value < 0 or not math.isfinite(value):
            raise ValueError("expected a non-negative duration")
        return float(value)
    text = str(value).strip()
    if text in ("0", ""):
        return 0.0
    if _SECONDS.fullmatch(text):
        return float(text)  # a bare number: seconds (e.g. --until 720000)
    pos = 0
    total = 0.0
    for m in _DURATION_PART.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f"{value!r} is not a duration (expected e.g. 30s, 5m, 1h30m)")
    return total


def _quantity(value: Any) -> int:
    try:
        return parse_quantity(value)
    except QuantityError as exc:
        raise ValueError(str(exc)) from exc


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ShiftedExponential(_Strict):
    minimum: float = 0.0
    tail_mean: float = Field(0.0, alias="tailMean")

    @field_validator("minimum", "tail_mean", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


def _no_delay() -> ShiftedExponential:
    return ShiftedExponential.model_validate({})


class TaintSpec(_Strict):
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    @field_validator("effect")
    @classmethod
    def _effect(cls, v: str) -> str:
        if v not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError("expected NoSchedule, PreferNoSchedule or NoExecute")
        return v


class ResourceListSpec(_Strict):
    resources: dict[str, int] = Field(default_factory=dict)

    @field_validator("resources", mode="before")
    @classmethod
    def _quantities(cls, v: Any) -> dict[str, int]:
        if not isinstance(v, dict):
            raise ValueError("expected a mapping of resource name to quantity")
        return {str(k): _quantity(q) for k, q in v.items()}


class NodeTemplateSpec(_Strict):
    number: int = Field(ge=0)
    taints: list[TaintSpec] = Field(default_factory=list)
    labels: dict[str, str] = Field(default_factory=dict)
    total_resources: ResourceListSpec = Field(alias="totalResources")


class ClusterEntry(_Strict):
    name: str = Field(min_length=1)
    pool: str = ""
    node_templates: list[NodeTemplateSpec] = Field(default_factory=list, alias="nodeTemplates")


class ClusterGroupSpec(_Strict):
    clusters: list[ClusterEntry] = Field(default_factory=list)


class PoolSpec(_Strict):
    name: str = Field(min_length=1)
    cluster_groups: list[ClusterGroupSpec] = Field(default_factory=list, alias="clusterGroups")


class ClusterSpec(_Strict):
    name: str = ""
    clusters: list[ClusterEntry] = Field(default_factory=list)
    pools: list[PoolSpec] = Field(default_factory=list)
    workflow_manager_delay_distribution: ShiftedExponential = Field(
        default_factory=_no_delay, alias="workflowManagerDelayDistribution"
    )
    pending_delay_distribution: ShiftedExponential = Field(
        default_factory=_no_delay, alias="pendingDelayDistribution"
    )

    @model_validator(mode="after")
    def _flatten(self) -> ClusterSpec:
        for pool in self.pools:
            for group in pool.cluster_groups:
                for c in group.clusters:
                    self.clusters.append(c.model_copy(update={"pool": c.pool or pool.name}))
        self.pools = []
        seen: set[str] = set()
        for c in self.clusters:
            if not c.pool:
                raise ValueError(f"cluster {c.name} has no pool set")
            if c.name in seen:
                raise ValueError(f"duplicate cluster name: {c.name}")
            seen.add(c.name)
        if not self.clusters:
            raise ValueError("no clusters (expected clusters: [...] or pools: [{clusterGroups: ...}])")
        return self


class NodeSelectorRequirementSpec(_Strict):
    key: str
    operator: str
    values: list[str] = Field(default_factory=list)

    @field_validator("operator")
    @classmethod
    def _op(cls, v: str) -> str:
        if v not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"):
            raise ValueError("expected In, NotIn, Exists, DoesNotExist, Gt or Lt")
        return v


class NodeSelectorTermSpec(_Strict):
    match_expressions: list[NodeSelectorRequirementSpec] = Field(
        default_factory=list, alias="matchExpressions"
    )
    match_fields: list[NodeSelectorRequirementSpec] = Field(default_factory=list, alias="matchFields")


class NodeSelectorSpec(_Strict):
    node_selector_terms: list[NodeSelectorTermSpec] = Field(default_factory=list, alias="nodeSelectorTerms")


class NodeAffinitySpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    required: NodeSelectorSpec | None = Field(None, alias="requiredDuringSchedulingIgnoredDuringExecution")


class AffinitySpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    node_affinity: NodeAffinitySpec | None = Field(None, alias="nodeAffinity")


class TolerationSpec(_Strict):
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = Field(None, alias="tolerationSeconds")


class ResourceRequirementsSpec(_Strict):
    requests: dict[str, int] = Field(default_factory=dict)
    limits: dict[str, int] = Field(default_factory=dict)

    @field_validator("requests", "limits", mode="before")
    @classmethod
    def _quantities(cls, v: Any) -> dict[str, int]:
        if v is None:
            return {}
        if not isinstance(v, dict):
            raise ValueError("expected a mapping of resource name to quantity")
        return {str(k): _quantity(q) for k, q in v.items()}


def _no_resources() -> ResourceRequirementsSpec:
    return ResourceRequirementsSpec.model_validate({})


class PodRequirementsSpec(_Strict):
    resource_requirements: ResourceRequirementsSpec = Field(
        default_factory=_no_resources, alias="resourceRequirements"
    )
    node_selector: dict[str, str] = Field(default_factory=dict, alias="nodeSelector")
    tolerations: list[TolerationSpec] = Field(default_factory=list)
    affinity: AffinitySpec | None = None
    annotations: dict[str, str] = Field(default_factory=dict)
    priority: int = 0
    preemption_policy: str = Field("", alias="preemptionPolicy")


def _no_requirements() -> PodRequirementsSpec:
    return PodRequirementsSpec.model_validate({})


class RepeatSpec(_Strict):
    num_times: int = Field(alias="numTimes", gt=0)
    period: float

    @field_validator("period", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)


class JobTemplateSpec(_Strict):
    number: int = Field(ge=0)
    id: str = ""
    job_set: str = Field("", alias="jobSet")
    queue_priority: int = Field(0, alias="queuePriority", ge=0)
    priority_class_name: str = Field("", alias="priorityClassName")
    requirements: PodRequirementsSpec = Field(default_factory=_no_requirements)
    dependencies: list[str] = Field(default_factory=list)
    earliest_submit_time: float = Field(0.0, alias="earliestSubmitTime")
    earliest_submit_time_from_dependency_completion: float = Field(
        0.0, alias="earliestSubmitTimeFromDependencyCompletion"
    )
    runtime_distribution: ShiftedExponential = Field(default_factory=_no_delay, alias="runtimeDistribution")
    gang_cardinality: int = Field(0, alias="gangCardinality", ge=0)
    gang_node_uniformity_label: str = Field("", alias="gangNodeUniformityLabel")
    repeat: RepeatSpec | None = None
    failure_probability: float = Field(0.0, alias="failureProbability", ge=0.0, le=1.0)
    failure_runtime_distribution: ShiftedExponential = Field(
        default_factory=_no_delay, alias="failureRuntimeDistribution"
    )

    @field_validator("earliest_submit_time", "earliest_submit_time_from_dependency_completion", mode="before")
    @classmethod
    def _duration(cls, v: Any) -> float:
        return parse_duration(v)

    @model_validator(mode="after")
    def _gang(self) -> JobTemplateSpec:
        if self.gang_cardinality and self.number % self.gang_cardinality:
            raise ValueError(
                f"number ({self.number}) is not exactly divisible by gangCardinality ({self.gang_cardinality})"
            )
        return self


class QueueSpec(_Strict):
    name: str = Field(min_length=1)
    weight: float = 1.0
    job_templates: list[JobTemplateSpec] = Field(default_factory=list, alias="jobTemplates")


class WorkloadSpec(_Strict):
    name: str = ""
    random_seed: int = Field(0, alias="randomSeed")
    queues: list[QueueSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> WorkloadSpec:
        names = [q.name for q in self.queues]
        if len(names) != len(set(names)):
            raise ValueError(f"duplicate queue name in {names}")
        ids = [t.id for q in self.queues for t in q.job_templates if t.id]
        if len(ids) != len(set(ids)):
            raise ValueError(f"duplicate job template ids in {ids}")
        known = set(ids)
        for q in self.queues:
            for t in q.job_templates:
                for dep in t.dependencies:
                    if dep not in known:
                        raise ValueError(
                            f"job template {t.id or '?'} of queue {q.name} depends on unknown template {dep}"
                        )
        return self
