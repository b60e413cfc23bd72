"""The soak's invariants, judged on one look at the clusters each time (counted in the report's
tally), and its end state: converged, no queue below its fair share by a unit that could run."""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.capacity import allocatable, free, open_to_all, running_on_node
from armada_bridge.contract.pods import admitted_pod_usage, pod_usage, scheduling_gates
from armada_bridge.core.quantities import Resources, add_into
from bench.chaos import served
from bench.chaos.context import REMOTES, SoakContext
from bench.chaos.report import (
    CHECKED_ALONG,
    FRONT_TRUTH,
    GANG_WHOLE,
    NO_REMOTE_ADDRESS,
    ONE_REMOTE_POD,
    REMOTE_GC,
    SERVED,
    NotAnswered,
)
from bench.chaos.shares import cpu_of, fair_shares, live, placement
from cli import views


class Invariants:
    def __init__(self, ctx: SoakContext) -> None:
        self.ctx = ctx
        self.partial_since: dict[str, float] = {}
        self.orphan_since: dict[str, float] = {}
        self.lost_since: dict[str, float] = {}
        self.relay_addresses: dict[str, set[str]] = defaultdict(set)  # front pod UID -> its relays' ever
        self.unexplained_since: dict[str, float] = {}  # front pod UID -> shows no relay's address since
        self.unreached_since: float | None = None
        self.unreached: str | None = None  # what the last look's fetch through a relay found wrong

    def _gangs(self, pods: list[Any]) -> dict[str, tuple[int, list[Any]]]:
        """Live gangs: name -> (cardinality, members), by Armada's annotations or a Volcano
        PodGroup (the operators' protocol; its minMember is the cardinality)."""
        min_member = {
            g["metadata"]["name"]: int(g["spec"].get("minMember") or 1)
            for g in self.ctx.custom.list_namespaced_custom_object(
                "scheduling.volcano.sh", "v1beta1", self.ctx.ns, "podgroups"
            )["items"]
        }
        gangs: dict[str, tuple[int, list[Any]]] = {}
        for p in pods:
            if not _live(p):
                continue
            a = p.metadata.annotations or {}
            if keys.GANG_ID in a:
                name, size = a[keys.GANG_ID], int(a.get(keys.GANG_CARDINALITY, "1"))
            elif a.get(keys.VOLCANO_GROUP_NAME_ANNOTATION) in min_member:
                name = a[keys.VOLCANO_GROUP_NAME_ANNOTATION]
                size = min_member[name]
            else:
                continue
            gangs.setdefault(name, (size, []))[1].append(p)
        return gangs

    def check(
        self, split_seconds: float, gc_seconds: float, outage_seconds: float, served_seconds: float
    ) -> None:
        """One look at the clusters, every invariant judged on it and counted in the tally."""
        now = time.monotonic()
        tally = self.ctx.report.tally
        try:
            pods = self.ctx.core["front"].list_namespaced_pod(self.ctx.ns).items
        except Exception as e:  # an API answer lost to a fault: nothing judged this time
            for name in CHECKED_ALONG:
                tally.failed(name, e)
            return
        remote: dict[str, list[Any]] = {}
        silent: list[str] = []
        for c in REMOTES:
            try:
                remote[c] = (
                    self.ctx.core[c].list_namespaced_pod(self.ctx.ns, label_selector=keys.FRONT_UID).items
                )
            except Exception:  # a paused remote: judged without it (not a full run)
                silent.append(c)
        tally.run(ONE_REMOTE_POD, lambda: self._one_remote_pod(pods, remote, silent))
        tally.run(REMOTE_GC, lambda: self._remote_gc(now, pods, remote, silent, gc_seconds))
        tally.run(FRONT_TRUTH, lambda: self._front_truth(now, pods, remote, silent, outage_seconds))
        tally.run(GANG_WHOLE, lambda: self._gangs_whole(now, pods, split_seconds))
        tally.run(NO_REMOTE_ADDRESS, lambda: self._no_remote_address(now, pods, outage_seconds))
        tally.run(SERVED, lambda: self._served(now, served_seconds))

    def _one_remote_pod(self, pods: list[Any], remote: dict[str, list[Any]], silent: list[str]) -> None:
        front = {p.metadata.uid: p for p in pods}
        for uid, where in _by_front_uid(remote).items():
            if len(where) > 1:
                name = front[uid].metadata.name if uid in front else uid
                self.ctx.report.violation(f"front pod {name} has {len(where)} remote pods: {where}")
        _answered(silent)

    def _remote_gc(
        self, now: float, pods: list[Any], remote: dict[str, list[Any]], silent: list[str], gc_seconds: float
    ) -> None:
        front = {p.metadata.uid: p for p in pods}
        for c, items in remote.items():
            for r in items:
                uid = r.metadata.labels[keys.FRONT_UID]
                live = uid in front and not front[uid].metadata.deletion_timestamp
                key = f"{c}/{r.metadata.name}/{uid}"
                if live:
                    self.orphan_since.pop(key, None)
                elif now - self.orphan_since.setdefault(key, now) > gc_seconds:
                    self.ctx.report.violation(
                        f"remote pod {key} outlived its front pod by > {gc_seconds:.0f}s"
                    )
        _answered(silent)

    def _front_truth(
        self,
        now: float,
        pods: list[Any],
        remote: dict[str, list[Any]],
        silent: list[str],
        outage_seconds: float,
    ) -> None:
        """Running in the front, nothing in the (answering) remote."""
        remote_by_uid = _by_front_uid(remote)
        for p in pods:
            cluster = (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
            if p.status.phase == "Running" and cluster in remote and p.metadata.uid not in remote_by_uid:
                if now - self.lost_since.setdefault(p.metadata.uid, now) > outage_seconds:
                    self.ctx.report.violation(
                        f"front pod {p.metadata.name} Running, its remote pod in {cluster} gone "
                        f"for > {outage_seconds:.0f}s"
                    )
            else:
                self.lost_since.pop(p.metadata.uid, None)
        _answered(silent)

    def _gangs_whole(self, now: float, pods: list[Any], split_seconds: float) -> None:
        for gang, (size, members) in self._gangs(pods).items():
            clusters = {(m.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER) for m in members}
            placed = clusters - {None}
            if len(placed) > 1:
                self.ctx.report.violation(
                    f"gang {gang} in several clusters: {sorted(str(c) for c in placed)}"
                )
            if placed and (None in clusters) and len(members) >= size:
                since = self.partial_since.setdefault(gang, now)
                if now - since > split_seconds:
                    names = sorted(
                        m.metadata.name
                        for m in members
                        if not (m.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
                    )
                    self.ctx.report.violation(
                        f"gang {gang} partly placed for > {split_seconds:.0f}s (unplaced {names})"
                    )
            else:
                self.partial_since.pop(gang, None)

    def _no_remote_address(self, now: float, pods: list[Any], outage_seconds: float) -> None:
        """A live front pod placed remotely shows no address or one of its relays' (listed after
        the pods: a relay the front pod's status names existed before this look, unless it went in
        between, which only the bound covers). Every remote cluster of the soak is `Relay`."""
        for uid, address in served.relay_addresses(self.ctx).items():
            self.relay_addresses[uid].add(address)
            self.ctx.report.relayed_pods.add(uid)
        for uid, (name, address) in served.shown([p for p in pods if _live(p)]).items():
            if address in self.relay_addresses[uid]:
                self.unexplained_since.pop(uid, None)
            elif now - self.unexplained_since.setdefault(uid, now) > outage_seconds:
                self.ctx.report.violation(
                    f"front pod {name} shows {address}, no address of its relays "
                    f"({sorted(self.relay_addresses[uid])}), for > {outage_seconds:.0f}s"
                )

    def _served(self, now: float, served_seconds: float) -> None:
        """The web server behind a front Service answers at its front address (a fault of its
        remote cluster may stop it for up to `served_seconds`)."""
        self.unreached = problem = served.fetched(self.ctx)
        if problem is None:
            self.unreached_since = None
            return
        self.unreached_since = self.unreached_since or now
        if now - self.unreached_since > served_seconds:
            self.ctx.report.violation(f"not reached for > {served_seconds:.0f}s: {problem}")

    def converged(self) -> list[str]:
        """What is not settled yet: live front pods neither Running remotely nor waiting with a
        reason, Failed ones that do not say why, queues below their fair share."""
        problems = []
        remote = {}
        for c in REMOTES:
            for r in self.ctx.core[c].list_namespaced_pod(self.ctx.ns, label_selector=keys.FRONT_UID).items:
                remote[r.metadata.labels[keys.FRONT_UID]] = r
        events = {
            e.involved_object.uid
            for e in self.ctx.core["front"].list_namespaced_event(self.ctx.ns).items
            if e.reason == "ArmadaWaiting"
        }
        pods = self.ctx.core["front"].list_namespaced_pod(self.ctx.ns).items
        for p in pods:
            if p.metadata.deletion_timestamp or p.status.phase == "Succeeded":
                continue
            placed = (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
            if p.status.phase == "Failed":
                if not (p.status.reason or p.status.message):
                    problems.append(f"{p.metadata.name} Failed without a reason")
            elif p.status.phase == "Running":
                if p.metadata.uid not in remote:
                    problems.append(f"{p.metadata.name} Running without a remote pod")
            elif not placed and p.metadata.uid not in events:
                problems.append(f"{p.metadata.name} {p.status.phase}, unplaced, with no ArmadaWaiting Event")
            elif placed:
                state = pod_state(p, remote.get(p.metadata.uid))
                problems.append(f"{p.metadata.name} placed but {p.status.phase}, not Running ({state})")
        if self.unreached:  # the fetch of the look just before (check() comes first)
            problems.append(self.unreached)
        everywhere = self.ctx.raw("front", "list_pod_for_all_namespaces")
        soak = [p for p in everywhere if p["metadata"]["namespace"] == self.ctx.ns]
        members = {g: (size, [m.metadata.uid for m in ms]) for g, (size, ms) in self._gangs(pods).items()}
        shares = fair_shares(
            soak, members, self.ctx.capacity_cpu(), self._free(everywhere), self._other_queues(everywhere)
        )
        self.ctx.report.shares = shares
        below = [
            f"queue {q} holds {s['allocated']:.1f} CPU, below its fair share {s['fair']:.1f} "
            f"(asks {s['demand']:.1f}; a waiting unit of {s['fitting']:.1f} CPU fits in {s['fitting_cluster']}, "
            f"where {s['room']:.1f} CPU is free or held by pods fair-share preemption gives it)"
            for q, s in shares.items()
            if s["fitting"] and s["allocated"] + s["fitting"] <= s["fair"] + 1e-6
        ]
        self.ctx.report.diagnosis = self._diagnose(shares) if below else ""
        return problems + below

    def _free(self, front: list[dict[str, Any]]) -> dict[str, dict[str, Resources]]:
        """cluster -> usable remote node -> what is free on it: its allocatable minus every pod
        admitted there (the bridge's, orphans awaiting GC, anyone's) and the front pods the bridge
        placed there whose remote pod is not created yet (their room is taken all the same)."""
        out: dict[str, dict[str, Resources]] = {}
        created: set[str] = set()
        for c in REMOTES:
            nodes = {n["metadata"]["name"]: n for n in self.ctx.raw(c, "list_node") if open_to_all(n)}
            used: dict[str, Resources] = defaultdict(dict)
            for p in self.ctx.raw(c, "list_pod_for_all_namespaces"):
                uid = (p["metadata"].get("labels") or {}).get(keys.FRONT_UID)
                if uid:
                    created.add(uid)
                if running_on_node(p) and p["spec"]["nodeName"] in nodes:
                    add_into(used[p["spec"]["nodeName"]], admitted_pod_usage(p))
            out[c] = {name: free(allocatable(n), used[name]) for name, n in nodes.items()}
        for p in front:
            where = placement(p)
            if where and p["metadata"]["uid"] not in created and live(p, deleting=True):
                cluster, node = where
                if node in out.get(cluster, {}):
                    out[cluster][node] = free(out[cluster][node], pod_usage(p))
        return out

    def _other_queues(self, front: list[dict[str, Any]]) -> dict[str, tuple[float, float]]:
        """queue -> (CPU asked, CPU placed) of the bridge's pods outside the soak's namespace: an
        environment reused from the demo or other tests holds remote room the soak's queues do not
        get (the demo's gang alone holds 32 CPU), and those queues have fair shares of their own."""
        ns_labels = {
            n["metadata"]["name"]: n["metadata"].get("labels") or {}
            for n in self.ctx.raw("front", "list_namespace")
        }
        out: dict[str, tuple[float, float]] = {}
        for p in front:
            md = p["metadata"]
            if md["namespace"] == self.ctx.ns or not live(p):
                continue
            placed = placement(p) is not None
            if not (placed or keys.SCHEDULING_GATE in scheduling_gates(p)):
                continue  # not the bridge's
            q = (md.get("labels") or {}).get(keys.QUEUE_LABEL) or ns_labels.get(md["namespace"], {}).get(
                keys.QUEUE_LABEL, "(other)"
            )
            asked, held = out.get(q, (0.0, 0.0))
            out[q] = (asked + cpu_of(p), held + (cpu_of(p) if placed else 0.0))
        return out

    def _diagnose(self, shares: dict[str, dict[str, Any]]) -> str:
        """What the bridge itself says about the queues and about each queue's smallest waiting
        unit (the record a fair-share shortfall needs to be explained)."""
        api = self.ctx.apis["front"]
        try:
            out = [views.queues(api)]
            for q, s in shares.items():
                pod = s.get("fitting_pod") or s.get("smallest_waiting_pod")
                if pod:
                    out.append(f"{q}: armada-bridge why {pod}")
                    out.append(views.why(api, pod, self.ctx.ns))
            return "\n".join(out)
        except Exception as e:  # a diagnosis must not end the soak
            return f"diagnosis failed: {type(e).__name__}: {e}"


def _live(p: Any) -> bool:
    return p.status.phase not in ("Succeeded", "Failed") and not p.metadata.deletion_timestamp


def _by_front_uid(remote: dict[str, list[Any]]) -> dict[str, list[str]]:
    """front pod UID -> its remote pods ("cluster/name"), over the clusters that answered."""
    out: dict[str, list[str]] = defaultdict(list)
    for c, items in remote.items():
        for r in items:
            out[r.metadata.labels[keys.FRONT_UID]].append(f"{c}/{r.metadata.name}")
    return out


def _answered(silent: list[str]) -> None:
    """A check over every remote cluster ran in full only if each answered."""
    if silent:
        raise NotAnswered(f"{', '.join(silent)} did not answer")


def pod_state(p: Any, remote: Any | None = None) -> str:
    """What a front pod that should run says of itself (and its remote pod, if given): where it
    was placed and bound, its gates, its conditions; the record a stuck pod needs."""
    md, spec, st = p.metadata, p.spec, p.status
    ann = md.annotations or {}
    gates = [g.name for g in spec.scheduling_gates or []]
    conds = [
        f"{c.type}={c.status}" + (f"({c.reason}: {c.message})" if c.status == "False" and c.message else "")
        for c in st.conditions or []
    ]
    parts = [
        f"phase {st.phase}",
        f"cluster {ann.get(keys.ASSIGNED_CLUSTER, '-')}",
        f"node {spec.node_name or '-'}",
        f"gates {gates}",
        f"conditions {conds}",
    ]
    if st.message:
        parts.append(f"message {st.message!r}")
    if remote is not None:
        rconds = [f"{c.type}={c.status}" for c in remote.status.conditions or []]
        parts.append(
            f"remote {remote.metadata.namespace}/{remote.metadata.name} {remote.status.phase} {rconds}"
        )
    elif ann.get(keys.ASSIGNED_CLUSTER):
        parts.append("no remote pod")
    return ", ".join(parts)
