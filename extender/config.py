"""The extender's scheduling configuration: Armada's SchedulingConfig YAML (the keys the core
implements; Armada's others accepted with a warning), read into the core's
:class:`~armada_bridge.core.model.SchedulingConfig`. The simulator reads the same files.

Also the reading of YAML input files, with errors that name the file, the key and what was
expected (shared with the simulator's cluster and workload files).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from armada_bridge.core.model import PriorityClass, SchedulingConfig

M = TypeVar("M", bound=BaseModel)


class InputError(Exception):
    """A bad input file; the message is meant for the user as is."""


def _location(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _describe(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", "invalid"))
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return msg


def read_yaml(path: str | Path, what: str) -> Any:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError as exc:
        raise InputError(f"{p}: {what} file not found") from exc
    except OSError as exc:
        raise InputError(f"{p}: cannot read {what} file: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{p}: not valid YAML: {exc}") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise InputError(f"{p}: expected a YAML mapping at the top level of the {what} file")
    return data


def validate(model: type[M], data: Any, path: str | Path, what: str) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        lines = [f"{path}: invalid {what}:"]
        for err in exc.errors():
            loc = tuple(
                p for p in err.get("loc", ()) if not (isinstance(p, str) and p.startswith("function-"))
            )
            lines.append(f"  {_location(loc)}: {_describe(dict(err))} (got {err.get('input')!r})")
        raise InputError("\n".join(lines)) from exc


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PriorityClassSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    priority: int = 0
    preemptible: bool = False
    maximum_resource_fraction_per_queue: dict[str, float] = Field(
        default_factory=dict, alias="maximumResourceFractionPerQueue"
    )


class DrfResourceSpec(_Strict):
    name: str
    multiplier: float = 0.0


class IndexedResourceSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str


class PoolConfigSpec(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    name: str
    protected_fraction_of_fair_share: float | None = Field(None, alias="protectedFractionOfFairShare")


def _rate(v: Any) -> float:
    if isinstance(v, str):
        t = v.strip().lower()
        if t in ("+inf", "inf", "infinity", "+infinity"):
            return math.inf
        try:
            return float(t)
        except ValueError as exc:
            raise ValueError("expected a number or +Inf") from exc
    if isinstance(v, bool):
        raise ValueError("expected a number or +Inf")
    f = float(v)
    return math.inf if f >= 2**62 else f


def _burst(v: Any) -> int:
    if isinstance(v, bool):
        raise ValueError("expected an integer")
    if isinstance(v, str) and v.strip().lower() in ("+inf", "inf"):
        return 0
    i = int(v)
    return 0 if i >= 2**62 else i  # Armada's MaxInt64 means unlimited


class SchedulingConfigSpec(BaseModel):
    """The SchedulingConfig keys the core implements; other Armada keys are accepted and ignored."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    priority_classes: dict[str, PriorityClassSpec] | None = Field(None, alias="priorityClasses")
    default_priority_class_name: str | None = Field(None, alias="defaultPriorityClassName")
    dominant_resource_fairness_resources_to_consider: list[str] = Field(
        default_factory=list, alias="dominantResourceFairnessResourcesToConsider"
    )
    experimental_dominant_resource_fairness_resources_to_consider: list[DrfResourceSpec] = Field(
        default_factory=list, alias="experimentalDominantResourceFairnessResourcesToConsider"
    )
    indexed_resources: list[IndexedResourceSpec] = Field(default_factory=list, alias="indexedResources")
    indexed_node_labels: list[str] | None = Field(None, alias="indexedNodeLabels")
    maximum_resource_fraction_to_schedule: dict[str, float] = Field(
        default_factory=dict, alias="maximumResourceFractionToSchedule"
    )
    max_queue_lookback: int = Field(0, alias="maxQueueLookback", ge=0)
    maximum_scheduling_rate: float = Field(math.inf, alias="maximumSchedulingRate")
    maximum_scheduling_burst: int = Field(0, alias="maximumSchedulingBurst")
    maximum_per_queue_scheduling_rate: float = Field(math.inf, alias="maximumPerQueueSchedulingRate")
    maximum_per_queue_scheduling_burst: int = Field(0, alias="maximumPerQueueSchedulingBurst")
    protected_fraction_of_fair_share: float | None = Field(None, alias="protectedFractionOfFairShare", ge=0)
    pools: list[PoolConfigSpec] = Field(default_factory=list)
    preemption: dict[str, Any] | None = None

    @field_validator("maximum_scheduling_rate", "maximum_per_queue_scheduling_rate", mode="before")
    @classmethod
    def _rates(cls, v: Any) -> float:
        return _rate(v)

    @field_validator("maximum_scheduling_burst", "maximum_per_queue_scheduling_burst", mode="before")
    @classmethod
    def _bursts(cls, v: Any) -> int:
        return _burst(v)

    @model_validator(mode="after")
    def _drf(self) -> SchedulingConfigSpec:
        if (
            self.dominant_resource_fairness_resources_to_consider
            and self.experimental_dominant_resource_fairness_resources_to_consider
        ):
            raise ValueError(
                "only one of dominantResourceFairnessResourcesToConsider and "
                "experimentalDominantResourceFairnessResourcesToConsider may be set"
            )
        return self


#: Armada's testfixtures.TestPriorityClasses plus the two classes of its shipped configs.
DEFAULT_PRIORITY_CLASSES = {
    "priority-0": PriorityClass("priority-0", 0, True),
    "priority-1": PriorityClass("priority-1", 1, True),
    "priority-2": PriorityClass("priority-2", 2, True),
    "priority-3": PriorityClass("priority-3", 3, False),
    "armada-default": PriorityClass("armada-default", 30000, False),
    "armada-preemptible": PriorityClass("armada-preemptible", 30000, True),
}

DEFAULT_CONFIG = SchedulingConfig(
    priority_classes=DEFAULT_PRIORITY_CLASSES,
    default_priority_class="armada-default",
    drf_resources={"cpu": 1.0, "memory": 1.0, "nvidia.com/gpu": 1.0, "ephemeral-storage": 1.0},
    protected_fraction_of_fair_share=0.0,  # Go zero value, as in Armada's simulator tests
)

_IGNORED_OK = {
    "supportedResourceTypes",
    "nodeEvictionProbability",
    "nodeOversubscriptionEvictionProbability",
    "nodeIdLabel",
    "executorTimeout",
    "maxUnacknowledgedJobsPerExecutor",
    "indexedTaints",
    "wellKnownNodeTypes",
    "floatingResources",
    "maxRetries",
    "priorityClassNameOverride",
}


def load_scheduling_config(path: str | Path | None, warnings: list[str]) -> SchedulingConfig:
    """The core's SchedulingConfig from an Armada SchedulingConfig YAML (or the default)."""
    if path is None:
        return DEFAULT_CONFIG
    data = read_yaml(path, "SchedulingConfig")
    spec = validate(SchedulingConfigSpec, data, path, "SchedulingConfig")
    extra = dict(spec.model_extra or {})
    legacy = spec.preemption or {}
    if legacy:
        warnings.append(
            f"{path}: 'preemption' is an obsolete SchedulingConfig key; its priorityClasses, "
            "defaultPriorityClass and protectedFractionOfFairShare are used"
        )
        try:
            legacy_spec = SchedulingConfigSpec.model_validate(
                {
                    k: v
                    for k, v in {
                        "priorityClasses": legacy.get("priorityClasses"),
                        "defaultPriorityClassName": legacy.get("defaultPriorityClass"),
                        "protectedFractionOfFairShare": legacy.get("protectedFractionOfFairShare"),
                    }.items()
                    if v is not None
                }
            )
        except Exception as exc:
            raise InputError(f"{path}: preemption: {exc}") from exc
        spec = spec.model_copy(
            update={
                "priority_classes": spec.priority_classes or legacy_spec.priority_classes,
                "default_priority_class_name": spec.default_priority_class_name
                or legacy_spec.default_priority_class_name,
                "protected_fraction_of_fair_share": spec.protected_fraction_of_fair_share
                if spec.protected_fraction_of_fair_share is not None
                else legacy_spec.protected_fraction_of_fair_share,
            }
        )
    for key in sorted(extra):
        if key not in _IGNORED_OK:
            warnings.append(f"{path}: key '{key}' is not used by the armada-bridge core; ignored")
    pcs = DEFAULT_PRIORITY_CLASSES
    if spec.priority_classes:
        pcs = {
            name: PriorityClass(
                name, pc.priority, pc.preemptible, dict(pc.maximum_resource_fraction_per_queue)
            )
            for name, pc in spec.priority_classes.items()
        }
    default_pc = spec.default_priority_class_name or DEFAULT_CONFIG.default_priority_class
    if default_pc not in pcs:
        raise InputError(
            f"{path}: defaultPriorityClassName: {default_pc!r} is not one of priorityClasses {sorted(pcs)}"
        )
    if spec.dominant_resource_fairness_resources_to_consider:
        drf = {r: 1.0 for r in spec.dominant_resource_fairness_resources_to_consider}
    elif spec.experimental_dominant_resource_fairness_resources_to_consider:
        drf = {
            r.name: (r.multiplier if r.multiplier > 0 else 1.0)
            for r in spec.experimental_dominant_resource_fairness_resources_to_consider
        }
    else:
        drf = dict(DEFAULT_CONFIG.drf_resources)
    protected = spec.protected_fraction_of_fair_share
    if protected is None:
        protected = 0.0
    indexed = tuple(r.name for r in spec.indexed_resources) or DEFAULT_CONFIG.indexed_resources
    return SchedulingConfig(
        priority_classes=pcs,
        default_priority_class=default_pc,
        drf_resources=drf,
        indexed_resources=indexed,
        indexed_node_labels=frozenset(spec.indexed_node_labels)
        if spec.indexed_node_labels is not None
        else None,
        maximum_resource_fraction_to_schedule=dict(spec.maximum_resource_fraction_to_schedule),
        max_queue_lookback=spec.max_queue_lookback,
        maximum_scheduling_rate=spec.maximum_scheduling_rate,
        maximum_scheduling_burst=spec.maximum_scheduling_burst,
        maximum_per_queue_scheduling_rate=spec.maximum_per_queue_scheduling_rate,
        maximum_per_queue_scheduling_burst=spec.maximum_per_queue_scheduling_burst,
        protected_fraction_of_fair_share=protected,
    )
