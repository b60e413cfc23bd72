"""What a front pod asks for — its queue and its gang — read from protocols operators already speak.

Pure: plain dicts in (objects as the API server sends them), dataclasses out. No code here knows
any operator's kind; each protocol is a PodGroup object or a few pod labels/annotations:

=============  ==========================================  =========================================
protocol       how a pod joins                              where the gang is described
=============  ==========================================  =========================================
armada         annotation ``armadaproject.io/gangId``       ``gangCardinality``,
                                                            ``gangNodeUniformityLabel`` annotations
workload       field ``spec.schedulingGroup.podGroupName``  native PodGroup ``scheduling.k8s.io``
                                                            (v1alpha2/v1alpha3/v1beta1):
                                                            ``spec.schedulingPolicy.gang.minCount``,
                                                            ``spec.schedulingConstraints.topology``
volcano        annotation ``scheduling.k8s.io/group-name``  PodGroup ``scheduling.volcano.sh/v1beta1``:
                                                            minMember, minResources, queue,
                                                            priorityClassName
coscheduling   label ``scheduling.x-k8s.io/pod-group``      PodGroup ``scheduling.x-k8s.io/v1alpha1``:
                                                            minMember, minResources,
                                                            scheduleTimeoutSeconds
kueue          label ``kueue.x-k8s.io/pod-group-name``      annotation
                                                            ``kueue.x-k8s.io/pod-group-total-count``
=============  ==========================================  =========================================

**Gang precedence** (a pod that speaks several protocols): the first in the table above wins —
armada, workload, volcano, coscheduling, kueue. Armada's annotations are the bridge's own, explicit
intent; the native ``schedulingGroup`` is an immutable first-class pod field; Volcano and
scheduler-plugins PodGroups are written by operators (Volcano first: it also carries the queue);
a Kueue pod group is a quota-admission group, so it counts only when no scheduler-level gang
exists. A native PodGroup with the ``basic`` policy is not a gang and falls through to the next
protocol.

**Queue precedence** (:func:`queue_of`): pod label ``armadaproject.io/queue``; else the pod's Volcano
PodGroup ``spec.queue`` (``default`` when empty, as Volcano defaults it); else the pod's Volcano
queue label ``volcano.sh/queue-name`` or annotation ``scheduling.volcano.sh/queue-name``; else the
pod label ``kueue.x-k8s.io/queue-name``; else the namespace label ``armadaproject.io/queue``. None
of these: the bridge does not manage the pod.

A pod that names a PodGroup the caller could not find raises :class:`PodGroupMissing`: the pod
must wait (Volcano and Coscheduling do not schedule such pods either) rather than run alone.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.pods import pod_requests
from armada_bridge.core.quantities import QuantityError, Resources, format_quantity, parse_quantity, scale

Obj = Mapping[str, Any]

VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_API_VERSION = f"{VOLCANO_GROUP}/v1beta1"
COSCHEDULING_GROUP = "scheduling.x-k8s.io"
COSCHEDULING_API_VERSION = f"{COSCHEDULING_GROUP}/v1alpha1"
WORKLOAD_GROUP = "scheduling.k8s.io"
#: the native PodGroup versions read (v1alpha2 in 1.36, v1alpha3/v1beta1 in 1.37); field names agree.
WORKLOAD_VERSIONS = ("v1beta1", "v1alpha3", "v1alpha2")
WORKLOAD_API_VERSION = f"{WORKLOAD_GROUP}/{WORKLOAD_VERSIONS[0]}"
PODGROUP_KIND = "PodGroup"

#: Volcano's queue when a PodGroup names none (volcano-sh/apis ``DefaultQueue``; CRD default).
VOLCANO_DEFAULT_QUEUE = "default"
#: Name prefix of PodGroups the Volcano controller creates for workloads (``PodgroupNamePrefix``).
VOLCANO_PODGROUP_PREFIX = "podgroup-"


class IntentError(ValueError):
    """A pod's (or PodGroup's) gang/queue intent is malformed; the message says what and where."""


class PodGroupMissing(IntentError):
    """The pod names a PodGroup that was not supplied (not created yet, or never): it must wait."""

    def __init__(self, ref: PodGroupRef) -> None:
        self.ref = ref
        super().__init__(
            f"pod references {ref.kind} {ref.namespace}/{ref.name} ({ref.api_version}), which does not "
            "exist (yet); the pod waits for it"
        )


class Protocol(enum.StrEnum):
    ARMADA = "armada"
    WORKLOAD = "workload"
    VOLCANO = "volcano"
    COSCHEDULING = "coscheduling"
    KUEUE = "kueue"


#: Gang protocols in precedence order (see the module docstring).
GANG_PRECEDENCE: tuple[Protocol, ...] = (
    Protocol.ARMADA,
    Protocol.WORKLOAD,
    Protocol.VOLCANO,
    Protocol.COSCHEDULING,
    Protocol.KUEUE,
)


class QueueSource(enum.StrEnum):
    POD_LABEL = "pod-label"
    VOLCANO_PODGROUP = "volcano-podgroup"
    VOLCANO_POD = "volcano-pod"
    KUEUE_LABEL = "kueue-label"
    NAMESPACE_LABEL = "namespace-label"
    NONE = "none"


@dataclass(frozen=True)
class PodGroupRef:
    """The object that backs a gang, so its status can be written."""

    api_version: str
    kind: str
    name: str
    namespace: str

    @property
    def group(self) -> str:
        return self.api_version.partition("/")[0]


@dataclass(frozen=True)
class PodGroupRefs:
    """PodGroup names a pod references, per protocol (None: it references none of that kind)."""

    volcano: str | None = None
    coscheduling: str | None = None
    workload: str | None = None


@dataclass(frozen=True)
class GangSpec:
    """A gang as one protocol describes it.

    ``min_resources`` is in the core's milli-units (:mod:`armada_bridge.core.quantities`). A gang with
    ``min_member == 1`` and ``min_resources`` is a capacity reservation (Spark style), not a 1-pod
    gang: see :attr:`is_reservation`.
    """

    #: unique within the namespace, prefixed by protocol: ``volcano/<pg>``, ``armada/<gangId>``, ...
    key: str
    protocol: Protocol
    min_member: int
    min_resources: Resources | None = None
    node_uniformity_label: str | None = None
    schedule_timeout_seconds: int | None = None
    podgroup_ref: PodGroupRef | None = None
    #: the PodGroup's priorityClassName (Volcano, native), used when the pod names none.
    priority_class_name: str | None = None

    @property
    def is_reservation(self) -> bool:
        return self.min_member <= 1 and bool(self.min_resources)


# --------------------------------------------------------------------------- small accessors
def _metadata(obj: Obj | None) -> Obj:
    md = (obj or {}).get("metadata")
    return md if isinstance(md, Mapping) else {}


def labels_of(obj: Obj | None) -> Mapping[str, str]:
    labels = _metadata(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def annotations_of(obj: Obj | None) -> Mapping[str, str]:
    annotations = _metadata(obj).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def _spec(obj: Obj | None) -> Obj:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _where(pod: Obj) -> str:
    md = _metadata(pod)
    return f"pod {md.get('namespace', '')}/{md.get('name', '')}"


def _int(value: Any, what: str, *, minimum: int = 0) -> int:
    """An integer from an int or a decimal string (annotations are strings)."""
    if isinstance(value, bool):
        raise IntentError(f"{what} must be an integer, not {value!r}")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        number = int(value.strip())
    else:
        raise IntentError(f"{what} must be an integer, not {value!r}")
    if number < minimum:
        raise IntentError(f"{what} must be at least {minimum}, not {number}")
    return number


def normalize_min_resources(values: Any, what: str) -> Resources | None:
    """A PodGroup's ``minResources`` as the core's resource vector (None when absent or all zero).

    PodGroups the Volcano controller creates itself hold quota-style names (``pods``,
    ``count/pods``, ``requests.cpu``, ``limits.cpu``; see ``GetPodQuotaUsage``): ``requests.X``
    counts as ``X`` where ``X`` is absent, and the pod-count and limit entries are dropped, so only
    what nodes offer is compared.
    """
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise IntentError(f"{what} must be a map of resource name to quantity, not {values!r}")
    out: Resources = {}
    requests: Resources = {}
    for name, raw in values.items():
        name = str(name)
        try:
            qty = parse_quantity(raw)
        except QuantityError as e:
            raise IntentError(f"{what}[{name}]: {e}") from None
        if name == "pods" or name.startswith(("count/", "limits.")):
            continue
        if name.startswith("requests."):
            requests[name.removeprefix("requests.")] = qty
        elif qty:
            out[name] = qty
    for name, qty in requests.items():
        if name not in out and qty:
            out[name] = qty
    return out or None


# --------------------------------------------------------------------------- references
def podgroup_refs(pod: Obj) -> PodGroupRefs:
    """Which PodGroup each protocol's keys on the pod name, so the caller can look them up."""
    workload = _spec(pod).get("schedulingGroup")
    workload_name = workload.get("podGroupName") if isinstance(workload, Mapping) else None
    return PodGroupRefs(
        volcano=annotations_of(pod).get(keys.VOLCANO_GROUP_NAME_ANNOTATION) or None,
        coscheduling=labels_of(pod).get(keys.COSCHEDULING_POD_GROUP_LABEL) or None,
        workload=workload_name if isinstance(workload_name, str) and workload_name else None,
    )


def _ref(api_version: str, name: str, pod: Obj, podgroup: Obj | None) -> PodGroupRef:
    actual = (podgroup or {}).get("apiVersion")
    return PodGroupRef(
        api_version=actual if isinstance(actual, str) and actual else api_version,
        kind=PODGROUP_KIND,
        name=name,
        namespace=str(_metadata(pod).get("namespace", "")),
    )


def _check_podgroup(
    podgroup: Obj, group: str, ref: PodGroupRef, versions: tuple[str, ...] | None = None
) -> None:
    api_version = podgroup.get("apiVersion")
    if api_version is None:  # typed clients and informers may strip it; trust the caller
        return
    g, _, v = str(api_version).partition("/")
    if g != group or (versions is not None and v not in versions):
        raise IntentError(
            f"{ref.kind} {ref.namespace}/{ref.name}: expected apiVersion {group}/..., got {api_version}"
        )


# --------------------------------------------------------------------------- queue
def queue_of(
    pod: Obj, *, volcano_podgroup: Obj | None, namespace_labels: Mapping[str, str]
) -> tuple[str | None, str]:
    """(queue, source) of a pod; (None, "none") when no protocol names one: the pod is not managed."""
    labels, annotations = labels_of(pod), annotations_of(pod)
    if labels.get(keys.QUEUE_LABEL):
        return labels[keys.QUEUE_LABEL], QueueSource.POD_LABEL
    if volcano_podgroup is not None and annotations.get(keys.VOLCANO_GROUP_NAME_ANNOTATION):
        queue = _spec(volcano_podgroup).get("queue")
        return (
            queue if isinstance(queue, str) and queue else VOLCANO_DEFAULT_QUEUE
        ), QueueSource.VOLCANO_PODGROUP
    for value in (
        labels.get(keys.VOLCANO_QUEUE_NAME_LABEL),
        annotations.get(keys.VOLCANO_QUEUE_NAME_ANNOTATION),
    ):
        if value:
            return value, QueueSource.VOLCANO_POD
    if labels.get(keys.KUEUE_QUEUE_NAME_LABEL):
        return labels[keys.KUEUE_QUEUE_NAME_LABEL], QueueSource.KUEUE_LABEL
    if namespace_labels.get(keys.QUEUE_LABEL):
        return namespace_labels[keys.QUEUE_LABEL], QueueSource.NAMESPACE_LABEL
    return None, QueueSource.NONE


# --------------------------------------------------------------------------- gangs, per protocol
def _armada_gang(pod: Obj) -> GangSpec | None:
    annotations = annotations_of(pod)
    gang_id = annotations.get(keys.GANG_ID)
    if not gang_id:
        return None
    where = _where(pod)
    raw = annotations.get(keys.GANG_CARDINALITY)
    if raw is None:
        raise IntentError(f"{where}: annotation {keys.GANG_ID} is set but {keys.GANG_CARDINALITY} is missing")
    cardinality = _int(raw, f"{where}: annotation {keys.GANG_CARDINALITY}", minimum=1)
    return GangSpec(
        key=f"{Protocol.ARMADA}/{gang_id}",
        protocol=Protocol.ARMADA,
        min_member=cardinality,
        node_uniformity_label=annotations.get(keys.GANG_NODE_UNIFORMITY_LABEL) or None,
    )


def _workload_gang(pod: Obj, name: str, podgroup: Obj | None) -> GangSpec | None:
    ref = _ref(WORKLOAD_API_VERSION, name, pod, podgroup)
    if podgroup is None:
        raise PodGroupMissing(ref)
    _check_podgroup(podgroup, WORKLOAD_GROUP, ref, WORKLOAD_VERSIONS)
    spec = _spec(podgroup)
    policy = spec.get("schedulingPolicy") or {}
    gang = policy.get("gang") if isinstance(policy, Mapping) else None
    if not isinstance(gang, Mapping):
        return None  # "basic" policy: no gang semantics
    what = f"{ref.kind} {ref.namespace}/{name} spec.schedulingPolicy.gang.minCount"
    min_count = _int(gang.get("minCount", 1), what, minimum=1)
    topology = (spec.get("schedulingConstraints") or {}).get("topology") or []
    label = None
    if topology and isinstance(topology[0], Mapping):
        label = topology[0].get("key") or None
    return GangSpec(
        key=f"{Protocol.WORKLOAD}/{name}",
        protocol=Protocol.WORKLOAD,
        min_member=min_count,
        node_uniformity_label=label,
        podgroup_ref=ref,
        priority_class_name=spec.get("priorityClassName") or None,
    )


def _volcano_gang(pod: Obj, name: str, podgroup: Obj | None) -> GangSpec:
    ref = _ref(VOLCANO_API_VERSION, name, pod, podgroup)
    if podgroup is None:
        raise PodGroupMissing(ref)
    _check_podgroup(podgroup, VOLCANO_GROUP, ref)
    spec = _spec(podgroup)
    what = f"{ref.kind} {ref.namespace}/{name}"
    return GangSpec(
        key=f"{Protocol.VOLCANO}/{name}",
        protocol=Protocol.VOLCANO,
        min_member=max(1, _int(spec.get("minMember", 1), f"{what} spec.minMember")),
        min_resources=normalize_min_resources(spec.get("minResources"), f"{what} spec.minResources"),
        podgroup_ref=ref,
        priority_class_name=spec.get("priorityClassName") or None,
    )


def _coscheduling_gang(pod: Obj, name: str, podgroup: Obj | None) -> GangSpec:
    ref = _ref(COSCHEDULING_API_VERSION, name, pod, podgroup)
    if podgroup is None:
        raise PodGroupMissing(ref)
    _check_podgroup(podgroup, COSCHEDULING_GROUP, ref)
    spec = _spec(podgroup)
    what = f"{ref.kind} {ref.namespace}/{name}"
    timeout = spec.get("scheduleTimeoutSeconds")
    return GangSpec(
        key=f"{Protocol.COSCHEDULING}/{name}",
        protocol=Protocol.COSCHEDULING,
        min_member=max(1, _int(spec.get("minMember", 1), f"{what} spec.minMember")),
        min_resources=normalize_min_resources(spec.get("minResources"), f"{what} spec.minResources"),
        schedule_timeout_seconds=(
            None if timeout is None else _int(timeout, f"{what} spec.scheduleTimeoutSeconds")
        ),
        podgroup_ref=ref,
    )


def _kueue_gang(pod: Obj) -> GangSpec | None:
    group = labels_of(pod).get(keys.KUEUE_POD_GROUP_NAME_LABEL)
    if not group:
        return None
    where = _where(pod)
    raw = annotations_of(pod).get(keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION)
    if raw is None:
        raise IntentError(
            f"{where}: label {keys.KUEUE_POD_GROUP_NAME_LABEL} is set but annotation "
            f"{keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION} is missing"
        )
    total = _int(raw, f"{where}: annotation {keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION}", minimum=1)
    return GangSpec(key=f"{Protocol.KUEUE}/{group}", protocol=Protocol.KUEUE, min_member=total)


def gang_of(
    pod: Obj,
    *,
    volcano_podgroup: Obj | None,
    coscheduling_podgroup: Obj | None,
    workload_podgroup: Obj | None,
) -> GangSpec | None:
    """The pod's gang under the first protocol it speaks (precedence: :data:`GANG_PRECEDENCE`).

    None: the pod speaks no gang protocol. Raises :class:`PodGroupMissing` when the winning
    protocol's PodGroup was not supplied, :class:`IntentError` when the intent is malformed.
    """
    refs = podgroup_refs(pod)
    gang = _armada_gang(pod)
    if gang is not None:
        return gang
    if refs.workload:
        gang = _workload_gang(pod, refs.workload, workload_podgroup)
        if gang is not None:
            return gang
    if refs.volcano:
        return _volcano_gang(pod, refs.volcano, volcano_podgroup)
    if refs.coscheduling:
        return _coscheduling_gang(pod, refs.coscheduling, coscheduling_podgroup)
    return _kueue_gang(pod)


# --------------------------------------------------------------------------- Volcano auto PodGroups
def _controller_uid(obj: Obj) -> str | None:
    for ref in _metadata(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("uid"):
            return str(ref["uid"])
    return None


def volcano_podgroup_name(pod: Obj) -> str:
    """The name Volcano gives a workload's auto PodGroup (``helpers.GeneratePodgroupName``):
    ``podgroup-<controller owner UID>``, or ``podgroup-<pod UID>`` for a pod without controller."""
    return VOLCANO_PODGROUP_PREFIX + (_controller_uid(pod) or str(_metadata(pod).get("uid", "")))


def volcano_job_podgroup(job: Obj) -> dict[str, Any] | None:
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
    md = _metadata(job)
    uid = md.get("uid")
    if not uid:
        raise IntentError(f"Job {md.get('namespace', '')}/{md.get('name', '')} has no metadata.uid")
    template = _spec(job).get("template") or {}
    template_annotations = annotations_of(template)
    if template_annotations.get(keys.VOLCANO_GROUP_NAME_ANNOTATION):
        return None
    try:
        min_member = _int(annotations[keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION], "group-min-member")
    except IntentError:
        min_member = 1  # upstream logs and keeps 1
    pod_spec = _spec(template)
    requests = pod_requests({"spec": pod_spec})
    prefix = f"{VOLCANO_GROUP}/"
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
        "apiVersion": VOLCANO_API_VERSION,
        "kind": PODGROUP_KIND,
        "metadata": {
            "name": VOLCANO_PODGROUP_PREFIX + str(uid),
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


def volcano_job_pod_annotations(job: Obj) -> dict[str, str]:
    """The annotation Volcano patches onto the pods of a Job it auto-groups ({} when it does not)."""
    pg = volcano_job_podgroup(job)
    if pg is None:
        return {}
    return {keys.VOLCANO_GROUP_NAME_ANNOTATION: pg["metadata"]["name"]}


def _format_quantities(vector: Mapping[str, int]) -> dict[str, str]:
    return {name: format_quantity(name, vector[name]) for name in sorted(vector)}
