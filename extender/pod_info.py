"""What the extender knows of one managed front pod, beyond the core's job."""

from __future__ import annotations

from dataclasses import dataclass

from armada_bridge.core import model
from extender.owners import Root
from extender.protocols.base import GangSpec, PodGroupRef


@dataclass
class PodInfo:
    key: str  # "namespace/name"
    uid: str
    queue: str
    gang: GangSpec | None
    root: Root | None
    job: model.Job
    placed: tuple[str, str] | None  # (cluster, remote node) from the pod's annotations
    invalid: str | None = None  # why the pod's intent cannot be read (it waits for a fix)
    bound: bool = False  # spec.nodeName is set
    bound_at: float | None = None  # wall time its PodScheduled condition turned True
    placed_at: float = 0.0  # monotonic time of the decision (or of the last nudge)
    missing: PodGroupRef | None = None  # the PodGroup it names that does not exist (yet)
    set_up: bool = True  # False: the admission webhook never saw it (it was down)
    gates: tuple[str, ...] = ()  # its scheduling gates' names (ours until the decision lifts it)
