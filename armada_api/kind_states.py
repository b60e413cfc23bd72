"""Where a kind of object states how it is, as data: the administrator's configuration of the
accepted kinds (``--object-kinds-file``; manifests/armada-api/object-kinds.yaml ships it for the
seed operators), never code per kind. Pure.

Most kinds state their end by a status condition, which every kind is read for
(:func:`armada_api.object_events.own_state`). Some state it in a field of their own: a
SparkApplication's ``status.applicationState.state`` (``COMPLETED``, ``FAILED``), a RayJob's
``status.jobDeploymentStatus`` and ``status.jobStatus``. A kind's entry lists such fields as
**rules**, read in order: the first rule whose field holds a value it names decides (the object
succeeded, failed or is running); a value it does not name leaves the decision to the next rule,
then to the conditions. So a RayJob whose deployment is ``Retrying`` is running whatever its last
Ray job's status says, and one whose deployment is ``Complete`` is decided by ``status.jobStatus``::

    - resource: rayjobs.ray.io
      state:
        - field: status.jobDeploymentStatus
          failed: [Failed]
          running: [Running, Retrying]
          message: status.message
        - field: status.jobStatus
          succeeded: [SUCCEEDED]
          failed: [FAILED, STOPPED]
          message: status.message
          time: status.endTime
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from armada_bridge.objects import ObjView

Outcome = Literal["succeeded", "failed", "running"]
OUTCOMES: tuple[Outcome, ...] = ("succeeded", "failed", "running")


class KindsError(ValueError):
    """The kinds' configuration is not valid (the server does not start with it)."""


def _path(text: str) -> tuple[str, ...]:
    """A dotted field path (``status.applicationState.state``) as its keys."""
    keys = tuple(text.split(".")) if text else ()
    if any(not k for k in keys):
        raise ValueError(f"{text!r} is not a dotted field path")
    return keys


def value_at(obj: ObjView, path: tuple[str, ...]) -> Any:
    """The value at `path` in `obj` (None where any key along it is missing)."""
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True)
class StateRule:
    """One field where a kind states its state, and what its values mean."""

    field: tuple[str, ...]
    #: value -> what it means (values not named mean nothing: the next rule decides)
    outcomes: Mapping[str, Outcome]
    #: the field that says why it failed (else the rule says which value it read)
    message: tuple[str, ...] = ()
    #: the field that says when it ended (RFC 3339; else the job's previous event's time)
    time: tuple[str, ...] = ()

    def read(self, obj: ObjView) -> tuple[Outcome, str, Any] | None:
        """What the object states by this rule: (outcome, why, when), or None (no decision)."""
        value = value_at(obj, self.field)
        outcome = self.outcomes.get(value) if isinstance(value, str) else None
        if outcome is None:
            return None
        why = value_at(obj, self.message) if self.message else None
        return outcome, str(why or f"{'.'.join(self.field)} is {value}"), value_at(obj, self.time)


@dataclass(frozen=True)
class ObjectKind:
    """An accepted kind of object: its resource (``plural``, ``group``) and its state rules."""

    plural: str
    group: str
    rules: tuple[StateRule, ...] = ()

    @property
    def name(self) -> str:
        """plural.group, as --object-kinds and kubectl name a resource."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def stated(obj: ObjView, rules: tuple[StateRule, ...]) -> tuple[Outcome, str, Any] | None:
    """The first decision of the rules, in order (None: none decides)."""
    for rule in rules:
        decided = rule.read(obj)
        if decided is not None:
            return decided
    return None


# ------------------------------------------------------------------ the configuration's format
class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    field: str
    succeeded: list[str] = []
    failed: list[str] = []
    running: list[str] = []
    message: str = ""
    time: str = ""

    @model_validator(mode="after")
    def _check(self) -> _Rule:
        for path in (self.field, self.message, self.time):
            _path(path)
        if not self.field:
            raise ValueError("a rule needs a field")
        named = [v for outcome in OUTCOMES for v in getattr(self, outcome)]
        twice = sorted({v for v in named if named.count(v) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} named for more than one outcome of {self.field}")
        if not named:
            raise ValueError(f"the rule of {self.field} names no value")
        return self

    def rule(self) -> StateRule:
        outcomes = {v: o for o in OUTCOMES for v in getattr(self, o)}
        return StateRule(_path(self.field), outcomes, _path(self.message), _path(self.time))


class _Kind(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    resource: str
    state: list[_Rule] = []

    def kind(self) -> ObjectKind:
        return named(self.resource, tuple(r.rule() for r in self.state))


def named(resource: str, rules: tuple[StateRule, ...] = ()) -> ObjectKind:
    """The kind of `resource`, named ``plural.group`` (``jobs.batch``), with its state rules."""
    plural, _, group = resource.partition(".")
    if not plural:
        raise KindsError(f"{resource!r} is not plural.group")
    return ObjectKind(plural, group, rules)


def parse_kinds(text: str) -> list[ObjectKind]:
    """``plural.group,...`` (e.g. ``jobsets.jobset.x-k8s.io``; ``jobs.batch``): kinds read by their
    status conditions only."""
    return [named(word) for word in (w.strip() for w in text.split(",")) if word]


def load_kinds(text: str) -> list[ObjectKind]:
    """The kinds of a configuration file (YAML: a list of ``{resource, state: [rules]}``)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise KindsError(f"the object kinds are not YAML: {e}") from None
    if not isinstance(data, list):
        raise KindsError("the object kinds must be a list of {resource: plural.group, state: [...]}")
    try:
        kinds = [_Kind.model_validate(entry).kind() for entry in data]
    except ValidationError as e:
        raise KindsError(f"the object kinds are not valid: {e}") from None
    return merged(kinds)


def merged(kinds: list[ObjectKind]) -> list[ObjectKind]:
    """One entry per resource (a kind named twice is an error: which rules would hold?)."""
    names = [k.name for k in kinds]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise KindsError(f"object kinds named twice: {', '.join(twice)}")
    return kinds
