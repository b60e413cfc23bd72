"""Placing a gang (or a single job) on nodes: all members or none, in one domain.

A *domain* is where a gang may land: one cluster of the pool and, when the gang names a
node-uniformity label, one value of that label within the cluster. As in Armada's GangScheduler,
domains are tried one at a time; the first where every member fits without preemption wins,
otherwise the one with the best fit (all members placed, lowest mean priority of preempted jobs).
Armada iterates a Go map (random order); here domains are tried in sorted order so the outcome is
deterministic. Single jobs use one domain spanning every cluster of the pool (best fit overall).

Placement is tentative until committed: an overlay holds the free vectors of nodes the gang has
used so far, and ``victims`` the jobs it would displace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from armada_bridge.core import quantities as rs
from armada_bridge.core.nodedb import NodeDb, NodeEntry, SortedGroup
from armada_bridge.core.quantities import Resources
from armada_bridge.core.state import JobRecord

Domain = tuple[str, str | None, str | None, str | None]  # pool, cluster (None=all), label key, value

#: Decides whether a bound job may be displaced by a job at ``priority``; returns the priority at
#: which it is displaced (used to rank plans) or None.
VictimPolicy = Callable[[str, int, int], int | None]


@dataclass
class Plan:
    domain: Domain
    assignments: list[tuple[JobRecord, NodeEntry]] = field(default_factory=list)
    victims: dict[str, int] = field(default_factory=dict)  # job id -> priority displaced at

    @property
    def mean_victim_priority(self) -> float:
        if not self.victims:
            return float("-inf")
        return sum(self.victims.values()) / len(self.victims)


def domain_groups(nodedb: NodeDb, domain: Domain) -> list[SortedGroup]:
    pool, cluster, _k, _v = domain
    groups = nodedb.groups.get(pool, {})
    if cluster is None:
        index = nodedb.pool_index.get(pool)
        return [index] if index is not None else []
    g = groups.get(cluster)
    return [g] if g is not None else []


def gang_domains(nodedb: NodeDb, pool: str, label: str | None) -> list[Domain]:
    """Every (cluster, label value) a gang may use, in deterministic order."""
    out: list[Domain] = []
    for cluster in nodedb.clusters(pool):
        if label is None:
            out.append((pool, cluster, None, None))
        else:
            out.extend((pool, cluster, label, value) for value in nodedb.label_values(pool, cluster, label))
    return out


def plan_without_preemption(nodedb: NodeDb, members: Sequence[JobRecord], domain: Domain) -> Plan | None:
    groups = domain_groups(nodedb, domain)
    label = (domain[2], domain[3]) if domain[2] is not None and domain[3] is not None else None
    if len(members) == 1:
        rec = members[0]
        entry = nodedb.best_fit(rec.job, rec.rkey, rec.requests, groups, None, label)
        return None if entry is None else Plan(domain, [(rec, entry)])
    plan = Plan(domain=domain)
    overlay: dict[str, Resources] = {}
    for rec in members:
        entry = nodedb.best_fit(rec.job, rec.rkey, rec.requests, groups, overlay, label)
        if entry is None:
            return None
        free = overlay.get(entry.name)
        if free is None:
            free = dict(entry.free)
            overlay[entry.name] = free
        rs.sub_into(free, rec.requests)
        plan.assignments.append((rec, entry))
    return plan


def plan_with_preemption(
    nodedb: NodeDb,
    members: Sequence[JobRecord],
    domain: Domain,
    policy: VictimPolicy,
) -> Plan | None:
    """Place every member, displacing jobs the policy allows; least disruptive node per member."""
    groups = domain_groups(nodedb, domain)
    label = (domain[2], domain[3]) if domain[2] is not None and domain[3] is not None else None
    plan = Plan(domain=domain)
    overlay: dict[str, Resources] = {}
    for rec in members:
        priority = rec.pc.priority
        best: (
            tuple[
                tuple[int, int, int, tuple[object, ...]], NodeEntry, list[tuple[str, int, Mapping[str, int]]]
            ]
            | None
        ) = None
        for group in groups:
            for entry in group.entries:
                if label is not None and entry.labels.get(label[0]) != label[1]:
                    continue
                if nodedb.mismatch(rec.job, rec.rkey, entry) is not None:
                    continue
                free = overlay.get(entry.name, entry.free)
                if rs.fits(rec.requests, free):
                    score = (-(1 << 62), 0, 0, entry.key)
                    chosen: list[tuple[str, int, Mapping[str, int]]] = []
                else:
                    # Victims: cheapest first, then most recently bound (Armada undoes the latest
                    # scheduling decisions first).
                    candidates: list[tuple[int, int, str, Mapping[str, int]]] = []
                    for job_id, (req, prio, seq) in entry.bound.items():
                        if job_id in plan.victims:
                            continue
                        at = policy(job_id, prio, priority)
                        if at is not None:
                            candidates.append((at, -seq, job_id, req))
                    if not candidates:
                        continue
                    candidates.sort()
                    avail = dict(free)
                    chosen = []
                    newest = 0
                    for at, neg_seq, job_id, req in candidates:
                        rs.add_into(avail, req)
                        chosen.append((job_id, at, req))
                        newest = max(newest, -neg_seq)
                        if rs.fits(rec.requests, avail):
                            break
                    else:
                        continue
                    score = (max(c[1] for c in chosen), len(chosen), -newest, entry.key)
                if best is None or score < best[0]:
                    best = (score, entry, chosen)
        if best is None:
            return None
        _score, entry, chosen = best
        tentative = overlay.get(entry.name)
        if tentative is None:
            tentative = dict(entry.free)
            overlay[entry.name] = tentative
        free = tentative
        for job_id, at, req in chosen:
            plan.victims[job_id] = at
            rs.add_into(free, req)
        rs.sub_into(free, rec.requests)
        plan.assignments.append((rec, entry))
    return plan


def better(a: Plan, b: Plan | None) -> bool:
    """Is plan ``a`` a better fit than ``b`` (fewer, lower-priority displacements)?"""
    if b is None:
        return True
    return (a.mean_victim_priority, len(a.victims)) < (b.mean_victim_priority, len(b.victims))
