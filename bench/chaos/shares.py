"""The fair-share judge: what each of the soak's queues asks, holds and should hold, and whether a
waiting unit of a queue below its share could run (as the core and Armada would place it)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.pods import pod_requests, pod_usage, scheduled_at
from armada_bridge.core.quantities import Resources, add_into
from bench.chaos.context import PREEMPTIBLE, QUEUES


def cpu_of(pod: dict[str, Any]) -> float:
    return pod_requests(pod).get("cpu", 0) / 1000


def live(pod: dict[str, Any], deleting: bool = False) -> bool:
    """Not finished, and not being deleted (unless `deleting`: a pod being deleted keeps its room)."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return deleting or not pod["metadata"].get("deletionTimestamp")


def placement(pod: dict[str, Any]) -> tuple[str, str] | None:
    """(remote cluster, remote node) the bridge placed a front pod on, None while it waits."""
    ann = pod["metadata"].get("annotations") or {}
    cluster = ann.get(keys.ASSIGNED_CLUSTER)
    return (cluster, ann.get(keys.ASSIGNED_REMOTE_NODE) or "") if cluster else None


def fits(pods: list[Resources], nodes: list[Resources], victims: list[Resources] | None = None) -> bool:
    """Every pod's usage on some node, each node's room shared by the pods put there (first fit,
    the largest CPU first: a judge that may miss a packing, never one that overfills a node). A pod
    that fits on no node's free room may also take the room of that node's `victims` (what pods
    that may be preempted for it hold there; same order as `nodes`)."""
    left = [dict(n) for n in nodes]
    prey = [dict(v) for v in victims] if victims is not None else [{} for _ in nodes]
    for usage in sorted(pods, key=lambda u: -u.get("cpu", 0)):
        spot = next((n for n in left if all(n.get(k, 0) >= x for k, x in usage.items())), None)
        if spot is not None:
            for k, x in usage.items():
                spot[k] -= x
            continue
        for n, v in zip(left, prey, strict=True):
            short = {k: max(0, x - n.get(k, 0)) for k, x in usage.items()}
            if all(v.get(k, 0) >= x for k, x in short.items()):
                for k, x in usage.items():
                    n[k] = n.get(k, 0) - x + short[k]
                    v[k] = v.get(k, 0) - short[k]
                break
        else:
            return False
    return True


@dataclass
class _Evicted:
    """A unit (gang or single pod) of preemptible placed pods, as fair-share eviction takes it."""

    bound: tuple[str, str]  # (when its first member was bound, that member's name)
    cpu: float = 0.0
    pods: list[tuple[str, str, Resources]] = field(default_factory=list)  # (cluster, node, usage)


def fair_shares(
    pods: list[dict[str, Any]],
    gangs: dict[str, tuple[int, list[str]]],
    capacity: float,
    free_nodes: dict[str, dict[str, Resources]],
    others: dict[str, tuple[float, float]] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per queue of the soak (`pods`: its front pods, Kubernetes JSON; `gangs`: name ->
    (cardinality, member uids)): CPU asked (live pods), allocated (placed), its fair share of
    `capacity` (equal weights, capped by demand, the rest shared out again: Armada's adjusted fair
    share, among the soak's queues and the `others`: queue -> (asked, placed) outside the soak), the
    CPU of its smallest waiting unit (a single pod, or a whole gang), and of its smallest waiting
    unit that fits in one remote cluster now (`fitting`, 0 if none), with `room`: that cluster's
    free CPU plus what fair-share preemption may take there.

    A unit fits on the nodes' free room (`free_nodes`: cluster -> node -> resources free), or on
    that and the room of pods fair-share preemption would give it, as the core (and Armada) does
    it: the preemptible pods of queues above their fair share are evicted, and each such queue
    takes its units back (longest bound first) while its cost with the next one stays below the
    cost of the queue the unit belongs to with that unit, or with any unit ahead of it in its queue
    (oldest first) that was tried before it and did not fit; the unit may take the room of what
    is not taken back by then."""
    demand: dict[str, float] = defaultdict(float)
    allocated: dict[str, float] = defaultdict(float)
    for q, (asked, held) in (others or {}).items():
        if q not in QUEUES:
            demand[q], allocated[q] = asked, held
    evictable: dict[str, dict[str, _Evicted]] = defaultdict(dict)  # queue -> unit -> its placed pods
    waiting: dict[str, dict[str, list[Resources]]] = defaultdict(lambda: defaultdict(list))  # queue -> unit
    order: dict[str, tuple[str, str]] = {}  # unit -> (its oldest member's creation, that member's name)
    member_of = {uid: g for g, (_, uids) in gangs.items() for uid in uids}
    complete = {g for g, (size, uids) in gangs.items() if len(uids) >= size}
    for p in pods:
        q = str((p["metadata"].get("labels") or {}).get(keys.QUEUE_LABEL) or "")
        if q not in QUEUES or not live(p):
            continue
        demand[q] += cpu_of(p)
        where = placement(p)
        u = member_of.get(p["metadata"]["uid"], p["metadata"]["uid"])
        if where:
            allocated[q] += cpu_of(p)
            if (p.get("spec") or {}).get("priorityClassName") == PREEMPTIBLE:
                when = scheduled_at(p) or str(p["metadata"].get("creationTimestamp") or "")
                bound = (when, p["metadata"]["name"])
                e = evictable[q].setdefault(u, _Evicted(bound))
                e.bound = min(e.bound, bound)
                e.cpu += cpu_of(p)
                e.pods.append((*where, pod_usage(p)))
        else:
            if u in gangs and u not in complete:
                continue  # a gang not whole yet is not schedulable
            waiting[q][u].append(pod_usage(p))
            seen = (str(p["metadata"].get("creationTimestamp") or ""), p["metadata"]["name"])
            order[u] = min(order.get(u, seen), seen)
    fair: dict[str, float] = {}
    left, open_queues = capacity, sorted(demand, key=lambda q: demand[q])
    while open_queues:  # water-filling: the smallest demand first
        q = open_queues.pop(0)
        fair[q] = min(demand[q], left / (len(open_queues) + 1))
        left -= fair[q]
    evicted = [q for q in QUEUES if q in demand and allocated[q] > fair[q] + 1e-6]

    def victims(q: str, turn: float) -> dict[tuple[str, str], Resources]:
        """(cluster, node) -> what the evicted pods not taken back yet hold there when a unit of
        `q` is tried at `turn` (the CPU its queue would hold with it)."""
        out: dict[tuple[str, str], Resources] = defaultdict(dict)
        for r in evicted:
            if r == q:
                continue
            tally = allocated[r] - sum(e.cpu for e in evictable[r].values())
            back = True
            for e in sorted(evictable[r].values(), key=lambda e: e.bound):
                # the lower cost goes first; on a tie, the queue name
                back = back and (tally + e.cpu < turn - 1e-9 or (abs(tally + e.cpu - turn) <= 1e-9 and r < q))
                if back:
                    tally += e.cpu
                    continue
                for cluster, node, usage in e.pods:
                    add_into(out[cluster, node], usage)
        return out

    out: dict[str, dict[str, Any]] = {}
    for q in sorted(demand):
        if q not in QUEUES:
            continue
        fitting: tuple[float, str, str, float] | None = None  # CPU, a pod of it, cluster, room
        turn = allocated[q]  # the highest cost at which a unit of q was tried so far
        for u in sorted(waiting[q], key=order.__getitem__):
            usages = waiting[q][u]
            cpu = sum(x.get("cpu", 0) for x in usages) / 1000
            turn = max(turn, allocated[q] + cpu)
            prey = victims(q, turn)
            for c in sorted(free_nodes):
                nodes = free_nodes[c]
                theirs = [prey.get((c, n), {}) for n in nodes]
                if fits(usages, list(nodes.values()), theirs):
                    if fitting is None or cpu < fitting[0]:
                        room = sum(x.get("cpu", 0) for x in [*nodes.values(), *theirs]) / 1000
                        fitting = (cpu, order[u][1], c, room)
                    break
        units = sorted(waiting[q].items(), key=lambda kv: (sum(x.get("cpu", 0) for x in kv[1]), order[kv[0]]))
        out[q] = {
            "demand": demand[q],
            "allocated": allocated[q],
            "fair": fair[q],
            "smallest_waiting": sum(x.get("cpu", 0) for x in units[0][1]) / 1000 if units else 0.0,
            "smallest_waiting_pod": order[units[0][0]][1] if units else "",
            "fitting": fitting[0] if fitting else 0.0,
            "fitting_pod": fitting[1] if fitting else "",
            "fitting_cluster": fitting[2] if fitting else "",
            "room": fitting[3] if fitting else 0.0,
        }
    return out
