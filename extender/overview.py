"""What the bridge decided, read from the front cluster's objects: queues, remote clusters, gangs
and lone pods (units), and one pod's story. Pure: plain-dict objects in, dataclasses out.

One reading for every reader: `armada-bridge queues | clusters | gangs | why` (cli/views.py)
lists the objects with the API and prints these as text; the dashboard (extender/dashboard/)
reads them from the extender's informer caches and serves them as JSON.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from armada_bridge import keys
from armada_bridge.contract.pods import TERMINAL_PHASES, PodSpecError, pod_requests
from armada_bridge.core import quantities as rs
from armada_bridge.objects import ObjView
from extender import intent, protocols
from extender.events import WAITING
from extender.protocols import volcano
from extender.protocols.base import GangSpec, IntentError

#: the states of a unit (a gang, or a pod of no gang), as `armada-bridge gangs` shows them.
STATES = ("Waiting", "Admitted", "Running")


# --------------------------------------------------------------------------- queues
@dataclass(frozen=True)
class QueueRow:
    name: str
    priority_factor: float
    fair_share: float
    adjusted_fair_share: float
    actual_share: float
    queued: int
    running: int
    cordoned: bool
    allocated: dict[str, str]


def queue_rows(queues: Iterable[ObjView]) -> list[QueueRow]:
    """Each Queue with the shares and counts the extender's leader wrote in its status."""
    out = []
    for q in sorted(queues, key=lambda q: q["metadata"]["name"]):
        spec, st = q.get("spec") or {}, q.get("status") or {}
        out.append(
            QueueRow(
                name=q["metadata"]["name"],
                priority_factor=float(spec.get("priorityFactor", 1)),
                fair_share=float(st.get("fairShare", 0)),
                adjusted_fair_share=float(st.get("adjustedFairShare", 0)),
                actual_share=float(st.get("actualShare", 0)),
                queued=int(st.get("queuedGangs", 0)),
                running=int(st.get("runningGangs", 0)),
                cordoned=bool(spec.get("cordoned")),
                allocated=dict(st.get("allocated") or {}),
            )
        )
    return out


# --------------------------------------------------------------------------- pods
@dataclass(frozen=True)
class PodView:
    """One front pod as the extender reads it: its queue (None: not managed) and gang."""

    namespace: str
    name: str
    uid: str
    phase: str
    created: str
    queue: str | None
    gang: GangSpec | None
    #: why its gang cannot be read (it waits), else ""
    error: str
    cluster: str | None
    node: str | None
    bound_to: str | None
    requests: dict[str, int] = field(default_factory=dict)
    #: which protocol named the queue (extender.intent's precedence)
    queue_source: intent.QueueSource = intent.QueueSource.NONE

    @property
    def running(self) -> bool:
        return self.phase == "Running"


def read_pod(
    pod: ObjView, podgroups: Mapping[str, ObjView | None], namespace_labels: Mapping[str, str]
) -> PodView:
    """`podgroups`: protocol name -> the PodGroup the pod names under it (None: not found)."""
    md, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    ann = md.get("annotations") or {}
    queue, source = intent.queue_of(
        pod, volcano_podgroup=podgroups.get(volcano.NAME), namespace_labels=namespace_labels
    )
    gang, error = None, ""
    try:
        gang = protocols.gang_of(pod, podgroups)
    except IntentError as e:
        error = str(e)
    try:
        requests = pod_requests(dict(pod))
    except PodSpecError:
        requests = {}
    return PodView(
        namespace=md.get("namespace") or "",
        name=md["name"],
        uid=md.get("uid") or "",
        phase=status.get("phase") or "Pending",
        created=md.get("creationTimestamp") or "",
        queue=queue,
        queue_source=source,
        gang=gang,
        error=error,
        cluster=ann.get(keys.ASSIGNED_CLUSTER) or None,
        node=ann.get(keys.ASSIGNED_REMOTE_NODE) or None,
        bound_to=spec.get("nodeName") or None,
        requests=requests,
    )


def read_pods(
    pods: Iterable[ObjView],
    podgroups: Mapping[str, Mapping[tuple[str, str], ObjView]],
    namespace_labels: Mapping[str, Mapping[str, str]],
) -> list[PodView]:
    """Every pod, with `podgroups` protocol -> (namespace, name) -> PodGroup and the namespaces'
    labels by name."""
    out = []
    for p in pods:
        ns = p["metadata"].get("namespace") or ""
        named = {
            proto: podgroups.get(proto, {}).get((ns, n)) for proto, n in protocols.podgroup_names(p).items()
        }
        out.append(read_pod(p, named, namespace_labels.get(ns, {})))
    return out


# --------------------------------------------------------------------------- units
@dataclass(frozen=True)
class Unit:
    """What the core schedules as one: a gang, or a managed pod of no gang."""

    namespace: str
    #: the gang key (``armada/<gangId>``, ``volcano/<podgroup>``, ...) or the pod's name
    name: str
    kind: str  # "gang" | "pod"
    queue: str
    present: int
    size: int
    reservation: bool
    clusters: tuple[str, ...]
    state: str  # one of STATES
    created: str  # the earliest member's creationTimestamp
    reason: str | None  # why it waits (None: not waiting, or not known here)
    pods: tuple[str, ...]


def units(pods: Iterable[PodView], reasons: Mapping[str, str] | None = None) -> list[Unit]:
    """Live managed pods grouped into units. `reasons`: pod UID -> why it waits (the core's
    reason, where known); a pod whose gang cannot be read waits for that reason."""
    reasons = reasons or {}
    groups: dict[tuple[str, str, str], list[PodView]] = defaultdict(list)
    for p in pods:
        if p.queue is None or p.phase in TERMINAL_PHASES:
            continue
        if p.gang is not None:
            groups[(p.namespace, "gang", p.gang.key)].append(p)
        else:
            groups[(p.namespace, "pod", p.name)].append(p)
    out = []
    for (ns, kind, name), members in sorted(groups.items()):
        clusters = tuple(sorted({m.cluster for m in members if m.cluster}))
        running = sum(m.running for m in members)
        state = "Running" if running == len(members) else ("Admitted" if clusters else "Waiting")
        gang = members[0].gang
        reason = None
        if state == "Waiting":
            reason = next((m.error for m in members if m.error), None) or next(
                (reasons[m.uid] for m in members if m.uid in reasons), None
            )
        out.append(
            Unit(
                namespace=ns,
                name=name,
                kind=kind,
                queue=str(members[0].queue),
                present=len(members),
                size=gang.min_member if gang else 1,
                reservation=bool(gang and gang.min_resources),
                clusters=clusters,
                state=state,
                created=min((m.created for m in members if m.created), default=""),
                reason=reason,
                pods=tuple(sorted(m.name for m in members)),
            )
        )
    return out


def filter_units(
    rows: Iterable[Unit],
    *,
    queue: str | None = None,
    namespace: str | None = None,
    state: str | None = None,
    kind: str | None = None,
) -> list[Unit]:
    """The units matching every filter given (an empty or None filter matches all)."""
    return [
        u
        for u in rows
        if (not queue or u.queue == queue)
        and (not namespace or u.namespace == namespace)
        and (not state or u.state == state)
        and (not kind or u.kind == kind)
    ]


# --------------------------------------------------------------------------- clusters
@dataclass(frozen=True)
class ClusterRow:
    name: str
    ready: str  # the Ready condition's status: True, False, Unknown
    reason: str
    message: str
    nodes: int
    allocatable: dict[str, str]
    pods: int
    cordoned: bool
    #: when the vkubelet last reached the remote cluster (status.lastSyncTime)
    last_heartbeat: str
    #: queue -> resource -> quantity, of the live front pods admitted to this cluster
    allocated_by_queue: dict[str, dict[str, str]]


def cluster_rows(clusters: Iterable[ObjView], pods: Iterable[PodView] = ()) -> list[ClusterRow]:
    used: dict[str, dict[str, rs.Resources]] = defaultdict(dict)
    for p in pods:
        if p.cluster and p.queue is not None and p.phase not in TERMINAL_PHASES:
            rs.add_into(used[p.cluster].setdefault(p.queue, {}), p.requests)
    out = []
    for rc in sorted(clusters, key=lambda r: r["metadata"]["name"]):
        name = rc["metadata"]["name"]
        st = rc.get("status") or {}
        ready: ObjView = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), {})
        out.append(
            ClusterRow(
                name=name,
                ready=str(ready.get("status", "Unknown")),
                reason=str(ready.get("reason", "")),
                message=str(ready.get("message", "")),
                nodes=int(st.get("nodeCount", 0)),
                allocatable=_for_people(st.get("allocatable") or {}),
                pods=int(st.get("pods", 0)),
                cordoned=bool((rc.get("spec") or {}).get("cordoned")),
                last_heartbeat=str(st.get("lastSyncTime") or ""),
                allocated_by_queue={
                    q: {k: rs.format_quantity(k, v) for k, v in sorted(r.items()) if v}
                    for q, r in sorted(used.get(name, {}).items())
                },
            )
        )
    return out


def _for_people(quantities: ObjView) -> dict[str, str]:
    """A status's quantities rounded for people, zeros left out (those that do not parse, as given)."""
    try:
        return rs.for_people(rs.parse_resources(quantities))
    except ValueError:
        return {str(k): str(v) for k, v in quantities.items()}


# --------------------------------------------------------------------------- one pod's story
@dataclass(frozen=True)
class EventLine:
    time: str
    type: str
    reason: str
    message: str
    pod: str  # the pod it is about (a gang's story has its members')


def event_time(e: ObjView) -> str:
    """An Event's latest time, as core/v1 Events carry it (RFC 3339; sorts in time order)."""
    md = e.get("metadata") or {}
    return str(
        e.get("lastTimestamp")
        or e.get("eventTime")
        or e.get("firstTimestamp")
        or md.get("creationTimestamp")
        or ""
    )


def event_lines(events: Iterable[ObjView]) -> list[EventLine]:
    """core/v1 Events, oldest first."""
    lines = [
        EventLine(
            time=event_time(e),
            type=str(e.get("type") or ""),
            reason=str(e.get("reason") or ""),
            message=str(e.get("message") or ""),
            pod=str((e.get("involvedObject") or {}).get("name") or ""),
        )
        for e in events
    ]
    return sorted(lines, key=lambda line: _instant(line.time))


def _instant(value: str) -> datetime:
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return t if t.tzinfo else t.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Story:
    """`armada-bridge why POD`: where the pod went, or why it waits, and what happened to it."""

    pod: PodView
    #: the last `WAITING` (ArmadaWaiting) Event's message, while it is not admitted
    waiting: str | None
    #: the front scheduler's own PodScheduled message, while it is not scheduled
    scheduler: tuple[str, ...]
    events: tuple[EventLine, ...]


def story(pod: ObjView, view: PodView, events: Iterable[ObjView]) -> Story:
    """`pod` and its :func:`read_pod` view; `events`: the core/v1 Events about it."""
    lines = event_lines(events)
    waiting = [e for e in lines if e.reason == WAITING]
    scheduler = tuple(
        str(c["message"])
        for c in (pod.get("status") or {}).get("conditions") or []
        if c.get("type") == "PodScheduled" and c.get("status") != "True" and c.get("message")
    )
    return Story(
        pod=view,
        waiting=waiting[-1].message if waiting and not view.cluster else None,
        scheduler=scheduler,
        events=tuple(lines),
    )
