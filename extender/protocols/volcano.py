"""Volcano: annotation ``scheduling.k8s.io/group-name`` names a ``scheduling.volcano.sh/v1beta1``
PodGroup (minMember, minResources, queue, priorityClassName); and the PodGroup Volcano's
controller makes for a batch/v1 Job annotated ``scheduling.volcano.sh/group-min-member``.

Status as Volcano writes it (phases and condition names from volcano-sh/apis
``pkg/apis/scheduling/v1beta1/types.go``, phase logic after the scheduler's
``getPodGroupPhase``/``jobStatus``): Pending -> Inqueue -> Running / Unknown / Completed.
``Inqueue`` means "controllers can start to create pods": training-operator v1 creates no pod
before it, so a gang the bridge has *admitted* (decision made, capacity reserved) is Inqueue even
with no pod yet; :func:`should_enqueue` decides admission from queue state and whether
``minResources`` fits. Inqueue is sticky, as in Volcano. The Volcano PodGroup CRD has no status
subresource: its status is written with a patch of the object itself.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.pods import pod_requests
from armada_bridge.core.quantities import fits, format_quantity, format_resources, scale
from armada_bridge.kube.resources import VOLCANO_PODGROUPS
from armada_bridge.objects import ObjView
from extender.protocols.base import (
    PODGROUP_KIND,
    GangProtocol,
    GangSpec,
    GangState,
    IntentError,
    MemberCounts,
    StatusInputs,
    annotations_of,
    condition,
    metadata,
    min_member_gang,
    named_podgroup,
    normalize_min_resources,
    spec_of,
    to_int,
)

NAME = "volcano"
#: the queue of a PodGroup that names none, as Volcano defaults it.
DEFAULT_QUEUE = "default"
#: Volcano's auto PodGroups are named ``podgroup-<owner uid>`` (helpers.GeneratePodgroupName).
PODGROUP_PREFIX = "podgroup-"


def podgroup_name(pod: ObjView) -> str | None:
    return annotations_of(pod).get(keys.VOLCANO_GROUP_NAME_ANNOTATION) or None


def read(pod: ObjView, name: str | None, podgroup: ObjView | None) -> GangSpec:
    ref, spec = named_podgroup(VOLCANO_PODGROUPS, name, pod, podgroup)
    return min_member_gang(NAME, ref, spec, priority_class_name=spec.get("priorityClassName") or None)


def named_queue(podgroup: ObjView) -> str | None:
    """The queue a Volcano PodGroup names, None where it names none or Volcano's ``default`` (the
    CRD fills that in, and operators write it, where nobody named a queue: extender.intent)."""
    queue = spec_of(podgroup).get("queue")
    return queue if isinstance(queue, str) and queue and queue != DEFAULT_QUEUE else None


def queue_of(podgroup: ObjView, namespace_queue: str | None) -> str:
    """The queue a Volcano PodGroup's gang runs in: the one it names, else its namespace's
    (``namespace_queue``), else Volcano's ``default``."""
    return named_queue(podgroup) or namespace_queue or DEFAULT_QUEUE


# --------------------------------------------------------------------------- status
class VolcanoPhase(enum.StrEnum):
    PENDING = "Pending"
    INQUEUE = "Inqueue"
    RUNNING = "Running"
    UNKNOWN = "Unknown"
    COMPLETED = "Completed"


# Volcano condition types and reasons (volcano-sh/apis v1beta1 and the scheduler's gang plugin).
VOLCANO_UNSCHEDULABLE = "Unschedulable"
VOLCANO_SCHEDULED = "Scheduled"
VOLCANO_NOT_ENOUGH_RESOURCES = "NotEnoughResources"
VOLCANO_NOT_ENOUGH_TASKS = "NotEnoughTasks"
#: the reason Volcano's gang plugin writes on the Scheduled condition (sic, not CamelCase).
VOLCANO_SCHEDULED_REASON = "tasks in gang are ready to be scheduled"


@dataclass(frozen=True)
class EnqueueDecision:
    inqueue: bool
    reason: str
    message: str


def should_enqueue(
    *,
    queue_exists: bool,
    queue_name: str,
    queue_cordoned: bool = False,
    min_resources: Mapping[str, int] | None,
    room_by_domain: Mapping[str, Mapping[str, int]],
    queue_headroom: Mapping[str, int] | None = None,
) -> EnqueueDecision:
    """Whether a Volcano PodGroup may go Inqueue (its operator may then create the pods).

    ``room_by_domain``: resources per placement domain (a remote cluster, or one value of the
    gang's node-uniformity label) the gang could get there; ``queue_headroom``: what the queue may
    still take under its limits (None: unlimited). Like Volcano's enqueue action, a PodGroup
    without ``minResources`` is always enqueueable (pod-level gang scheduling follows); one with
    ``minResources`` goes Inqueue only when some single domain can hold all of it.
    """
    if not queue_exists:
        return EnqueueDecision(False, "QueueNotFound", f"queue {queue_name} does not exist")
    if queue_cordoned:
        return EnqueueDecision(False, "QueueCordoned", f"queue {queue_name} is cordoned")
    if not min_resources:
        return EnqueueDecision(True, "Enqueued", "no minResources: enqueued")
    if queue_headroom is not None and not fits(min_resources, queue_headroom):
        return EnqueueDecision(
            False,
            VOLCANO_NOT_ENOUGH_RESOURCES,
            f"queue {queue_name} limits leave {format_resources(queue_headroom)}; "
            f"the gang needs {format_resources(min_resources)}",
        )
    for domain in sorted(room_by_domain):
        if fits(min_resources, room_by_domain[domain]):
            return EnqueueDecision(True, "Enqueued", f"minResources fit in {domain}")
    return EnqueueDecision(
        False,
        VOLCANO_NOT_ENOUGH_RESOURCES,
        f"no cluster has {format_resources(min_resources)} for the gang, free or in use",
    )


def phase_of(
    gang_state: GangState, counts: MemberCounts, *, min_member: int, previous_phase: str | None = None
) -> VolcanoPhase:
    """Volcano's ``getPodGroupPhase``: Unknown when some run while the rest cannot be placed;
    Running (or Completed when all scheduled ones finished) once minMember are scheduled;
    Inqueue when admitted (and it stays Inqueue, as in Volcano); else Pending."""
    min_member = max(1, min_member)
    if counts.running and gang_state is GangState.WAITING:
        return VolcanoPhase.UNKNOWN
    if counts.scheduled >= min_member:
        return VolcanoPhase.COMPLETED if counts.scheduled == counts.completed else VolcanoPhase.RUNNING
    if gang_state is not GangState.WAITING or previous_phase == VolcanoPhase.INQUEUE:
        return VolcanoPhase.INQUEUE
    return VolcanoPhase.PENDING


def status_of(
    gang_state: GangState,
    members: Iterable[ObjView],
    *,
    min_member: int,
    now: str,
    message: str = "",
    previous: ObjView | None = None,
) -> dict[str, Any]:
    """The Volcano PodGroup ``status`` for a gang in ``gang_state`` with these member pods.

    ``message``: why a waiting gang waits (the core's reason); ``now``: RFC 3339 timestamp for
    conditions that change. Waiting: ``Unschedulable`` True (reason ``NotEnoughTasks`` while fewer
    than minMember pods exist, else ``NotEnoughResources``); admitted or running: ``Scheduled``
    True with Volcano's reason. The other condition, when present, is set False so the two agree.
    """
    previous = previous or {}
    old_conditions = [c for c in previous.get("conditions") or [] if isinstance(c, Mapping)]
    counts = MemberCounts.of(members)
    min_member = max(1, min_member)
    phase = phase_of(gang_state, counts, min_member=min_member, previous_phase=previous.get("phase"))
    conditions = [
        c for c in old_conditions if c.get("type") not in (VOLCANO_UNSCHEDULABLE, VOLCANO_SCHEDULED)
    ]
    has_old = {c.get("type") for c in old_conditions}
    if gang_state is GangState.WAITING:
        reason = VOLCANO_NOT_ENOUGH_TASKS if counts.total < min_member else VOLCANO_NOT_ENOUGH_RESOURCES
        unready = max(0, min_member - counts.scheduled)
        text = f"{unready}/{counts.total} tasks in gang unschedulable: pod group is not ready, {min_member} minAvailable"
        if message:
            text += f"; {message}"
        conditions.append(condition(old_conditions, VOLCANO_UNSCHEDULABLE, "True", reason, text, now))
        if VOLCANO_SCHEDULED in has_old:
            conditions.append(condition(old_conditions, VOLCANO_SCHEDULED, "False", reason, "", now))
    else:
        if VOLCANO_UNSCHEDULABLE in has_old:
            conditions.append(
                condition(old_conditions, VOLCANO_UNSCHEDULABLE, "False", VOLCANO_SCHEDULED, "", now)
            )
        conditions.append(
            condition(old_conditions, VOLCANO_SCHEDULED, "True", VOLCANO_SCHEDULED_REASON, "", now)
        )
    status: dict[str, Any] = {"phase": str(phase), "conditions": conditions}
    counts.into(status)
    return status


def status(inputs: StatusInputs, podgroup: ObjView, members: Sequence[ObjView]) -> ObjView:
    """A Volcano PodGroup goes Inqueue when its queue can take it and one cluster can hold its
    minResources at all (free, or in use by jobs it may preempt: as Volcano's overcommit plugin
    admits against capacity, not idle room), before its pods exist: training-operator creates
    pods only then, and only pods can make room by preemption. The gang itself still runs only
    whole, where the core places it."""
    spec = spec_of(podgroup)
    state, reason = inputs.gang_state(members)
    previous = podgroup.get("status") or {}
    if state is GangState.WAITING and previous.get("phase") in (None, "", "Pending"):
        queue = queue_of(podgroup, inputs.namespace_queue(str(metadata(podgroup).get("namespace") or "")))
        exists, cordoned = inputs.queue(queue)
        decision = should_enqueue(
            queue_exists=exists,
            queue_name=queue,
            queue_cordoned=cordoned,
            min_resources=normalize_min_resources(spec.get("minResources"), "minResources"),
            room_by_domain=inputs.capacity_by_cluster,
        )
        if decision.inqueue:
            state = GangState.ADMITTED
        elif not members:
            reason = decision.message
    return status_of(
        state,
        members,
        min_member=int(spec.get("minMember") or 1),
        now=inputs.now,
        message=reason,
        previous=previous,
    )


# --------------------------------------------------------------------------- auto PodGroups of Jobs
def _controller_uid(obj: ObjView) -> str | None:
    for ref in metadata(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def auto_podgroup_name(pod: ObjView) -> str:
    """The name Volcano gives a workload's auto PodGroup (``helpers.GeneratePodgroupName``):
    ``podgroup-<controller owner UID>``, or ``podgroup-<pod UID>`` for a pod without controller."""
    return PODGROUP_PREFIX + (_controller_uid(pod) or str(metadata(pod).get("uid", "")))


def job_podgroup(job: ObjView) -> dict[str, Any] | None:
    """The PodGroup the Volcano controller would create for a batch/v1 Job's pods, or None.

    As ``buildPodGroupFromPod`` (volcano-sh/volcano ``pkg/controllers/podgroup/
    pg_controller_handler.go``) does for a Job annotated ``scheduling.volcano.sh/group-min-member``:
    name ``podgroup-<Job UID>``, owned by the Job; ``minMember`` from the annotation (1 when it is
    not a non-negative integer, as upstream); ``minResources`` = one pod's requests x minMember;
    ``priorityClassName`` of the pod template; ``queue`` from the template annotation
    ``scheduling.volcano.sh/queue-name`` (absent: Volcano's ``default``); annotations with a
    ``scheduling.volcano.sh/`` prefix inherited from the Job and the template, template winning;
    phase Pending. Deviation: ``minResources`` holds the request names only, not upstream's quota
    accounting names (``pods``, ``count/pods``, ``requests.*``, ``limits.*``) the scheduler ignores.

    None: not a batch/v1 Job, not annotated, or its pods already name a PodGroup.
    """
    # Items of a List (informer caches) carry no kind/apiVersion: only a different one disqualifies.
    if job.get("kind", "Job") != "Job" or job.get("apiVersion", "batch/v1") != "batch/v1":
        return None
    annotations = annotations_of(job)
    if keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION not in annotations:
        return None
    md = metadata(job)
    uid = md.get("uid")
    if not uid:
        raise IntentError(f"Job {md.get('namespace', '')}/{md.get('name', '')} has no metadata.uid")
    template = spec_of(job).get("template") or {}
    template_annotations = annotations_of(template)
    if template_annotations.get(keys.VOLCANO_GROUP_NAME_ANNOTATION):
        return None
    try:
        min_member = to_int(annotations[keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION], "group-min-member")
    except IntentError:
        min_member = 1  # upstream logs and keeps 1
    pod_spec = spec_of(template)
    requests = pod_requests({"spec": pod_spec})
    prefix = f"{VOLCANO_PODGROUPS.group}/"
    inherited = {k: v for k, v in annotations.items() if k.startswith(prefix)}
    inherited.update({k: v for k, v in template_annotations.items() if k.startswith(prefix)})
    spec: dict[str, Any] = {
        "minMember": min_member,
        "minResources": _format_quantities(scale(requests, min_member)),
    }
    if pod_spec.get("priorityClassName"):
        spec["priorityClassName"] = pod_spec["priorityClassName"]
    if template_annotations.get(keys.VOLCANO_QUEUE_NAME_ANNOTATION):
        spec["queue"] = template_annotations[keys.VOLCANO_QUEUE_NAME_ANNOTATION]
    return {
        "apiVersion": VOLCANO_PODGROUPS.api_version,
        "kind": PODGROUP_KIND,
        "metadata": {
            "name": PODGROUP_PREFIX + str(uid),
            "namespace": md.get("namespace", ""),
            "annotations": inherited,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": md.get("name", ""),
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def job_pod_annotations(job: ObjView) -> dict[str, str]:
    """The annotation Volcano patches onto the pods of a Job it auto-groups ({} when it does not)."""
    pg = job_podgroup(job)
    if pg is None:
        return {}
    return {keys.VOLCANO_GROUP_NAME_ANNOTATION: pg["metadata"]["name"]}


def _format_quantities(vector: Mapping[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, vector[name]) for name in sorted(vector)}


PROTOCOL = GangProtocol(NAME, read, VOLCANO_PODGROUPS, podgroup_name, status, status_subresource=False)
