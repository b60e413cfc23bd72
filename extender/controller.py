"""The extender's control loop: front objects and remote clusters in, core rounds, decisions out.

Level-triggered: informer events only mark things dirty and wake the loop; each round brings the
pure scheduling core up to date with what changed, runs it, and writes its decisions on the pods
(annotations naming the remote cluster and node). Those annotations are the only record of a
decision, so a restarted extender rebuilds exactly what it had decided.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.contract import pods
from armada_bridge.contract.decisions import DecisionKey
from armada_bridge.core import model
from armada_bridge.core import quantities as rs
from armada_bridge.core.model import JobState
from armada_bridge.core.result import RoundResult
from armada_bridge.core.scheduler import Scheduler, SchedulerError
from armada_bridge.core.stall import StallRule, Waiting
from armada_bridge.kube import ApiError, Kube
from armada_bridge.kube.informer import key_of
from armada_bridge.kube.lifecycle import wait_set
from armada_bridge.kube.resources import VOLCANO_PODGROUPS
from armada_bridge.objects import Obj
from extender import translate
from extender.actions import Actions, Written
from extender.describe import Describer
from extender.events import WAITING, EventRecorder, gist
from extender.inputs import Inputs
from extender.metrics import Metrics
from extender.owners import OwnerResolver
from extender.pod_info import PodInfo
from extender.status_writer import write_podgroup_statuses, write_queue_statuses

log = logging.getLogger(__name__)


def _gated_unmanaged(pod: Obj) -> bool:
    """A live pod the bridge does not manage that still carries its scheduling gate (its queue went,
    or it never had one and a webhook configuration gated it anyway)."""
    return (
        keys.SCHEDULING_GATE in pods.scheduling_gates(pod)
        and not pod["metadata"].get("deletionTimestamp")
        and not pods.is_terminal(pod)
    )


# A waiting reason whose Event could not be written is posted again after this long.
EVENT_RETRY_SECONDS = 10.0
# How long the front kube-scheduler may refuse the node the core admitted a pod to before the bridge
# binds the pod there itself (the nudges every 5 s failed to change its mind meanwhile).
BIND_REFUSED_AFTER = 30.0


def core_node_name(cluster: str, node: str) -> str:
    return f"{cluster}/{node}"


def split_core_node(name: str) -> tuple[str, str]:
    cluster, _, node = name.partition("/")
    return cluster, node


def queue_from_cr(q: Obj, pool_total: Mapping[str, int]) -> model.Queue:
    """The core's Queue for a Queue object; absolute limits become fractions of `pool_total`."""
    spec = q.get("spec", {})
    limits: dict[str, float] = {}
    for resource, limit in (spec.get("resourceLimits") or {}).items():
        if not isinstance(limit, dict):
            continue
        if limit.get("fraction") is not None:
            limits[resource] = float(limit["fraction"])
        elif limit.get("absolute") is not None:
            total = pool_total.get(resource, 0)
            try:
                absolute = rs.parse_quantity(limit["absolute"])
            except rs.QuantityError:
                continue  # the CRD's validation rejects these; never trust it blindly
            limits[resource] = min(1.0, absolute / total) if total > 0 else 0.0
    return model.Queue(
        name=q["metadata"]["name"],
        priority_factor=float(spec.get("priorityFactor") or 1.0),
        cordoned=bool(spec.get("cordoned")),
        resource_limits=limits,
    )


@dataclass
class Settings:
    identity: str = "armada-bridge-extender"
    coalesce_seconds: float = 0.05
    #: after a round that failed or could not write all its decisions, the next one waits
    #: coalesce_seconds doubled per failure in a row, up to this.
    max_backoff_seconds: float = 5.0
    status_interval: float = 2.0
    #: every this often, whatever differs from what the loop last synced is looked at again (an
    #: event a handler failed on is not lost; see Controller.resync).
    resync_interval: float = 60.0
    #: A gang one member short for this long, whose PodGroup's minResources covers the missing one,
    #: is admitted with what is present (see Controller.relax_stalled_gangs).
    gang_stall_seconds: float = 30.0
    #: A waiting reason becomes an Event once its pod has been seen waiting this long (by the
    #: status pass, every status_interval): most pods of a gang arriving member by member, or of
    #: a burst, wait less, and an Event each was a third of the front writes for them.
    explain_after_seconds: float = 2.0
    scheduling: model.SchedulingConfig = field(default_factory=model.SchedulingConfig)
    #: the kube-scheduler managed pods are pointed at (managed Kubernetes), if not their own
    scheduler_name: str | None = None


class Controller:
    def __init__(self, front: Kube, settings: Settings, metrics: Metrics, key: DecisionKey) -> None:
        self.front = front
        self.settings = settings
        self.metrics = metrics
        self.core = Scheduler(settings.scheduling)
        self.inputs = Inputs(front, on_handler_error=self._handler_failed)
        self.changes = self.inputs.changes
        self.events = EventRecorder(front, metrics, on_lost=self._event_lost)
        self.describer = Describer(self.inputs, OwnerResolver(front), key)
        self.actions = Actions(front, self.events, metrics, key)
        self._core_nodes: dict[str, set[str]] = defaultdict(set)  # cluster -> core node names
        #: managed pods in the core, by uid; and reasons the shell (not the core) keeps pods waiting.
        self.managed: dict[str, PodInfo] = {}
        self._uid_by_key: dict[str, str] = {}
        self.shell_reasons: dict[str, str] = {}
        self._posted: dict[str, str] = {}  # uid -> gist of the waiting reason last posted as an Event
        self._waiting_since: dict[str, float] = {}  # uid -> first seen waiting (monotonic)
        self._post_again_at: dict[str, float] = {}  # uid -> not before (monotonic): its Event was lost
        self._synced_rv: dict[str, str] = {}  # pod key -> its resourceVersion when last synced
        self._status_errors: dict[str, str] = {}  # status step -> its last error, while it fails
        self._refused: dict[str, float] = {}  # uid -> since when the front scheduler refuses it (admitted)
        #: uid -> core node: gang members the core placed whose decision could not be written while
        #: others of their gang's were; the core keeps them placed and their write is retried, so a
        #: gang is never left partly admitted (see _apply)
        self._unwritten: dict[str, str] = {}
        self.last_result: RoundResult | None = None
        #: gangs, keyed (namespace, gang key), admitted one member short (see relax_stalled_gangs).
        self.stall: StallRule[tuple[str, str]] = StallRule(settings.gang_stall_seconds)
        self.rounds = 0
        self.failed_rounds = 0  # rounds in a row that failed or left decisions unwritten
        self.unwritten = 0  # decisions of the last round that could not be written (reverted)
        self.leading = False  # this replica runs the rounds

    # ------------------------------------------------------------------ loop
    async def run_rounds(self) -> None:
        """The leader's loop: a round whenever something changed (coalesced), statuses periodically,
        a resync every `resync_interval`. Nothing that fails in a round or the status pass ends it:
        the error is logged and counted (`armada_bridge_extender_round_errors_total`), and the loop
        backs off and carries on."""
        self.leading = True
        await self.inputs.wait_synced()
        self.changes.pods.update(key_of(p) for p in self.inputs.pods.items())
        last_status, last_resync = 0.0, time.monotonic()
        try:
            while True:
                await wait_set(self.changes.wake, self.settings.status_interval)
                await asyncio.sleep(self.backoff())
                self.changes.wake.clear()
                if time.monotonic() - last_resync >= self.settings.resync_interval:
                    last_resync = time.monotonic()
                    self.resync()
                    self.changes.clusters = True  # a kubeconfig Secret rotated: one read per remote
                try:
                    await self.round()
                    self.failed_rounds = self.failed_rounds + 1 if self.unwritten else 0
                except Exception as e:  # an API error, or a bug: never the end of the leader
                    self.failed_rounds += 1
                    self.metrics.round_errors.labels(stage="round").inc()
                    if isinstance(e, (ApiError, OSError, TimeoutError)):
                        log.warning("round failed, retrying in %.2fs: %s", self.backoff(), e)
                    else:
                        log.exception("round failed, retrying in %.2fs", self.backoff())
                    self.changes.wake.set()
                if time.monotonic() - last_status >= self.settings.status_interval:
                    last_status = time.monotonic()
                    if self.inputs.remotes.errors:  # a Secret missing or unusable: tried again soon
                        self.changes.clusters = True
                    await self.write_statuses()
        finally:
            self.leading = False
            await self.inputs.remotes.close()
            self.changes.clusters = True  # a next term starts its remote watchers again

    def resync(self) -> None:
        """Level-triggered safety net: what differs from what the loop last synced is looked at
        again, so an event a handler failed on is recovered within `resync_interval`. Cheap when
        nothing changed: a pod whose cached resourceVersion is the one last synced stays clean, and
        remote nodes and queues reach the core only where they differ, so that its incremental
        round keeps what it knows (what fits nowhere)."""
        cache = self.inputs.pods.cache
        self.changes.pods.update(
            k
            for k, pod in cache.items()
            if self._synced_rv.get(k) != pod["metadata"].get("resourceVersion", "")
        )
        self.changes.pods.update(self._synced_rv.keys() - cache.keys())
        for cluster, watcher in self.inputs.remotes.watchers.items():
            self.changes.nodes.update((cluster, n) for n in watcher.nodes.cache)
        self.changes.queues = True
        self.changes.wake.set()

    def _handler_failed(self, informer: str) -> None:
        self.metrics.informer_handler_errors.labels(informer=informer).inc()

    def backoff(self) -> float:
        """How long the next round waits to coalesce changes: longer after failures in a row."""
        base = self.settings.coalesce_seconds
        return min(self.settings.max_backoff_seconds, base * 2 ** min(self.failed_rounds, 16))

    async def round(self) -> RoundResult:
        t0 = time.perf_counter()
        await self._sync()
        if self.core.settled and not self._unwritten and self.last_result is not None:
            # Woken by changes that did not reach the core (statuses, bindings, heartbeats) after
            # a round that decided nothing: another would decide nothing, at a cost that grows
            # with the backlog.
            return self.last_result
        result = self.core.schedule_round(time.time())
        self.metrics.round_seconds.observe(time.perf_counter() - t0)
        self.rounds += 1
        self.last_result = result
        await self._apply(result)
        return result

    # ------------------------------------------------------------------ sync
    async def _sync(self) -> None:
        """Bring the core up to date with what changed: clusters, nodes, queues, then pods."""
        changes, remotes = self.changes, self.inputs.remotes
        if changes.clusters:
            changes.clusters = False
            try:
                await remotes.sync(self.inputs.remote_clusters.items())
            except BaseException:
                changes.clusters = True  # the round failed: tried again next round
                raise
            for cluster, watcher in remotes.watchers.items():  # cordon may have changed
                changes.nodes.update((cluster, n) for n in watcher.nodes.cache)
            for cluster in list(self._core_nodes):
                if cluster not in remotes.watchers:
                    for name in list(self._core_nodes[cluster]):
                        changes.nodes.add(split_core_node(name))
        for cluster, watcher in remotes.watchers.items():  # nodes held back until pods synced
            known = self._core_nodes[cluster]
            if watcher.pods.synced.is_set() and len(known) < len(watcher.nodes.cache):
                changes.nodes.update(
                    (cluster, n) for n in watcher.nodes.cache if core_node_name(cluster, n) not in known
                )
        if changes.nodes:
            changes.queues = True  # absolute queue limits are fractions of the pool's total
            for cluster, name in changes.take_nodes():
                self._sync_node(cluster, name)
        if changes.queues:
            changes.queues = False
            total: rs.Resources = {}
            for entry in self.core.nodedb.entries.values():
                rs.add_into(total, entry.node.allocatable)
            wanted = {q["metadata"]["name"]: queue_from_cr(q, total) for q in self.inputs.queues.items()}
            for name in list(self.core.queues):
                if name not in wanted:
                    self.core.remove_queue(name)
            for q in wanted.values():
                if self.core.queues.get(q.name) != q:
                    self.core.upsert_queue(q)
        if changes.pods:
            todo = sorted(changes.take_pods())
            for i, k in enumerate(todo):
                pod = self.inputs.pods.cache.get(k)
                try:
                    await self._sync_pod(k)
                except BaseException:
                    changes.pods.update(todo[i:])  # the round failed: the rest are not lost
                    raise
                if pod is None:
                    self._synced_rv.pop(k, None)
                else:
                    self._synced_rv[k] = pod["metadata"].get("resourceVersion", "")
            # Pods the core let go free their room only once their remote pods are gone.
            for cluster, name in changes.take_nodes():
                self._sync_node(cluster, name)

    def _sync_node(self, cluster: str, name: str) -> None:
        core_name = core_node_name(cluster, name)
        watcher = self.inputs.remotes.watchers.get(cluster)
        if watcher is not None and not watcher.pods.synced.is_set():
            # What other pods use on the node is not known yet: offering it now could over-admit.
            # The pods informer's first list marks the nodes dirty again.
            return
        node = watcher.nodes.cache.get(name) if watcher else None
        if node is None:
            self._core_nodes[cluster].discard(core_name)
            lost = self.core.remove_node(core_name)
            for uid in lost:
                info = self.managed.pop(uid, None)
                if info is not None:
                    self.changes.pods.add(info.key)  # re-derived next round (placed pods stay out)
            return
        try:
            core_node = translate.node_from_remote(
                node, cluster, self._used_by_others(cluster, name), core_name=core_name
            )
        except pods.PodSpecError as e:  # a node that cannot be read takes no pods
            log.warning("remote node %s/%s left out: %s", cluster, name, e)
            return
        rc = self.inputs.remote_clusters.get(cluster)
        if rc is not None and (rc.get("spec", {}).get("cordoned") or rc["metadata"].get("deletionTimestamp")):
            core_node.unschedulable = True  # cordoned, or being removed: nothing new goes there
        known = self.core.nodedb.entries.get(core_name)
        if known is not None and known.node == core_node:
            return  # unchanged (a resync, a RemoteCluster's status): what fits nowhere stays known
        self.core.upsert_node(core_node)
        if core_name not in self._core_nodes[cluster]:
            self._core_nodes[cluster].add(core_name)
            for uid in list(self.shell_reasons):  # pods placed on it before it was known
                info = self.managed.get(uid)
                if info is not None and info.placed == (cluster, name):
                    self.changes.pods.add(info.key)

    def _used_by_others(self, cluster: str, node: str) -> rs.Resources:
        """What pods the core does not account on this node use there: the remote cluster's own,
        and the bridge's whose front pod the core has let go (finished, preempted, deleted) while
        the remote pod still runs or terminates."""
        core_name = core_node_name(cluster, node)
        used: rs.Resources = {}
        for uid, usage in self.inputs.remote_usage.get((cluster, node), {}).values():
            placement = self.core.placement_of(uid) if uid else None
            if placement is None or placement.node != core_name:
                rs.add_into(used, usage)
        return used

    async def _sync_pod(self, k: str) -> None:
        ns, _, name = k.partition("/")
        pod = self.inputs.pods.get(name, ns)
        known = self._uid_by_key.get(k)
        if pod is None or (known is not None and known != pod["metadata"]["uid"]):
            if known is not None:
                self._forget(known)
            if pod is None:
                return
        uid = pod["metadata"]["uid"]
        if self.inputs.namespace_closing(ns) and self.describer.decision_of(pod) is None:
            # Going with its namespace: neither placed (it would only be bound, refused by the API
            # server, which takes no new content there, and retried until gone) nor released to
            # the front scheduler, nor reported (Events there are refused too).
            if uid in self.managed:
                self._forget(uid)
            return
        info = await self.describer.describe(pod, self.stall.relaxed)
        old = self.managed.get(uid)
        if info is not None and info.placed is not None:
            info.placed_at = old.placed_at if old is not None and old.placed_at else time.monotonic()
        if info is None:
            if old is not None:
                self._forget(uid)
            if _gated_unmanaged(pod):
                await self.actions.release(pod)
            return
        self._uid_by_key[k] = uid
        hold = info.invalid
        if hold is not None:
            if not info.set_up and await self.actions.set_up(pod, self.settings.scheduler_name):
                return  # its update brings it back, set up
            if old is not None:
                self.core.remove_job(uid)
            self.managed[uid] = info
            self.shell_reasons[uid] = hold
            missing = info.missing
            if missing is not None and missing.group == VOLCANO_PODGROUPS.group:
                # A plain Job's pod names the PodGroup Volcano's controller would make: made here
                # (the admission webhook only names it, so admission has no side effects).
                await self.actions.create_job_podgroup(pod)
            return
        self.shell_reasons.pop(uid, None)
        if (
            old is not None
            and old.job == info.job
            and old.placed == info.placed
            and self.core.state_of(uid) is not JobState.GONE
        ):
            old.bound, old.gates = info.bound, info.gates
            return
        self.managed[uid] = info
        state = self.core.state_of(uid)
        if state is JobState.RUNNING and info.placed is None and uid not in self._unwritten:
            self.core.revert(uid)  # its remote cluster refused it: it is placed again
            state = JobState.QUEUED
        try:
            if state is JobState.GONE:
                self.core.add_job(info.job)
            elif old is not None and old.job != info.job:
                self.core.update_job(info.job)
            if info.placed is not None:
                # Bound before (a restart, another replica's round): as long ago as it says, so
                # that fair-share eviction keeps taking the latest bound last.
                self.core.mark_running(uid, core_node_name(*info.placed), info.bound_at or time.time())
        except SchedulerError as e:
            # e.g. placed on a node the core does not know (yet): keep the pod out of the core
            # rather than schedule it twice; it is re-derived when the node appears.
            self.core.remove_job(uid)
            self.shell_reasons[uid] = f"placed on {info.placed}, not known yet: {e}"

    def _forget(self, uid: str) -> None:
        info = self.managed.pop(uid, None)
        if info is not None:
            self._uid_by_key.pop(info.key, None)
            if info.placed is not None:  # its remote pod, if any, now counts as the node's own use
                self.changes.nodes.add(info.placed)
        self.core.remove_job(uid)
        self.shell_reasons.pop(uid, None)
        self._posted.pop(uid, None)
        self._waiting_since.pop(uid, None)
        self._refused.pop(uid, None)
        self._unwritten.pop(uid, None)
        self._post_again_at.pop(uid, None)
        self.events.forget(uid)

    # ------------------------------------------------------------------ outputs
    async def _apply(self, result: RoundResult) -> None:
        """Write the round's decisions. Each is provisional until written: preemptions first (a
        victim that could not be marked keeps running, so whatever was placed on its node this
        round, with its whole gang, is reverted), then admissions. An admission that cannot be
        written is reverted (the job is queued again and the next round reconsiders it), unless
        another member of its gang was written: then the core keeps it placed and its write is
        retried until it lands or the pod is gone, so a gang is admitted whole, in one cluster."""
        sem = asyncio.Semaphore(32)

        async def bounded(coro: Any) -> Any:
            async with sem:
                return await coro

        for uid in [u for u in self._unwritten if u not in self.managed]:
            del self._unwritten[uid]  # let go meanwhile (deleted, preempted, its node gone)
        if self._unwritten:
            retried = list(self._unwritten.items())
            landed = await asyncio.gather(*(bounded(self._admit(uid, node)) for uid, node in retried))
            for (uid, _), ok in zip(retried, landed, strict=True):
                if ok:
                    del self._unwritten[uid]

        outcomes = await asyncio.gather(
            *(bounded(self._preempt(uid, why)) for uid, why in result.preempted.items())
        )
        kept_nodes = {node for node in outcomes if node is not None}
        blocked = self._blocked_by(result, kept_nodes)
        for uid in blocked:
            self.core.revert(uid)
        admitted = [uid for uid in result.scheduled if uid not in blocked]
        written = await asyncio.gather(
            *(bounded(self._admit(uid, result.scheduled[uid].node)) for uid in admitted)
        )
        whole = {self._gang_id(uid) for uid, ok in zip(admitted, written, strict=True) if ok} - {None}
        reverted = 0
        for uid, ok in zip(admitted, written, strict=True):
            if ok:
                continue
            info = self.managed.get(uid)
            if info is not None and self._gang_id(uid) in whole:
                self._unwritten[uid] = result.scheduled[uid].node  # its gang runs: it must follow
                continue
            reverted += 1
            self.core.revert(uid)
            if info is not None:
                self.changes.pods.add(info.key)
        self.unwritten = len(kept_nodes) + len(blocked) + reverted + len(self._unwritten)
        if self.unwritten:
            self.changes.wake.set()
        self.metrics.observe_round(result)

    async def explain_waiting(self, limit: int = 1000) -> None:
        """Why pods wait, as Events, from the status pass (not each round: the backlog is looked
        through once per status interval): a pod that has waited explain_after_seconds is told its
        reason, and told again when the reason changes in more than its figures (:func:`gist`); at
        most `limit` Events a pass, the rest in the next."""
        result = self.last_result
        managed = self.managed
        # A pod placed already does not wait for room: one placed on a node the core does not know
        # yet (a restart, before its remote cluster's pods are listed) is only being caught up with.
        waiting = [
            (uid, r)
            for uid, r in (
                *(result.waiting.items() if result is not None else ()),
                *self.shell_reasons.items(),
            )
            if (info := managed.get(uid)) is None or info.placed is None
        ]
        for uid in self._waiting_since.keys() - {uid for uid, _ in waiting}:
            del self._waiting_since[uid]  # waits no longer
            self._posted.pop(uid, None)
        work = []
        now = time.monotonic()
        gists: dict[str, str] = {}  # the waiting share a few reasons
        for uid, reason in waiting:
            if now - self._waiting_since.setdefault(uid, now) < self.settings.explain_after_seconds:
                continue
            said = gists.get(reason)
            if said is None:
                said = gists[reason] = gist(reason)
            if self._posted.get(uid) != said and self._post_again_at.get(uid, 0) <= now:
                self._posted[uid] = said
                work.append(self._explain(uid, reason))
                if len(work) == limit:
                    break
        await asyncio.gather(*work)

    def _blocked_by(self, result: RoundResult, kept_nodes: set[str]) -> set[str]:
        """Jobs scheduled this round that must not be admitted: placed on a node whose victim
        still runs, or in a gang with such a member (a gang is admitted whole or not at all)."""
        if not kept_nodes:
            return set()
        blocked = {uid for uid, p in result.scheduled.items() if p.node in kept_nodes}
        gangs = {self._gang_id(uid) for uid in blocked} - {None}
        blocked |= {uid for uid in result.scheduled if self._gang_id(uid) in gangs}
        return blocked

    def _gang_id(self, uid: str) -> str | None:
        info = self.managed.get(uid)
        return info.job.gang_id if info is not None and info.gang is not None else None

    async def _admit(self, uid: str, core_node: str) -> bool:
        """Write the decision on the pod; False when it could not be (the caller reverts it or
        retries it)."""
        info = self.managed.get(uid)
        if info is None:
            return False
        cluster, node = split_core_node(core_node)
        if not await self.actions.admit(info, cluster, node):
            return False
        info.placed = (cluster, node)
        info.placed_at = time.monotonic()
        self._posted.pop(uid, None)
        self._waiting_since.pop(uid, None)
        return True

    async def _explain(self, uid: str, reason: str) -> None:
        info = self.managed.get(uid)
        if info is None:
            return
        ns, _, name = info.key.partition("/")
        pod = self.inputs.pods.get(name, ns)
        if pod is not None:
            await self.actions.explain(pod, reason)

    def _event_lost(self, uid: str, reason: str, message: str) -> None:
        """An Event the recorder could not write: a waiting reason is posted again by a later
        status pass."""
        if reason == WAITING and self._posted.get(uid) == gist(message):
            del self._posted[uid]
            # Not at once: what refused it (a namespace being deleted, an API server in trouble)
            # would refuse it again in every pass until then.
            self._post_again_at[uid] = time.monotonic() + EVENT_RETRY_SECONDS

    async def _preempt(self, uid: str, why: str) -> str | None:
        """Preempt a victim (:meth:`Actions.preempt`). Returns the core node of a victim that could
        not be marked: it keeps running there (the core is told so), and nothing may take its room
        this round."""
        info = self.managed.pop(uid, None)
        if info is None:
            return None
        ns, _, name = info.key.partition("/")
        written = await self.actions.preempt(info, why, self.inputs.pods.get(name, ns))
        if written is Written.FAILED and info.placed is not None:
            node = core_node_name(*info.placed)
            self.managed[uid] = info
            try:
                self.core.restore(info.job, node, info.bound_at or time.time())
            except SchedulerError:
                self.changes.pods.add(info.key)  # its node went meanwhile: re-derived next round
            return node
        if written is Written.DONE and info.placed is not None:
            self.changes.nodes.add(info.placed)  # its remote pod keeps its room until it is gone
        return None

    # ------------------------------------------------------------------ status
    async def touch_unbound(self, older_than: float = 5.0, limit: int = 200) -> None:
        """Admitted pods the front scheduler refused and has not bound since (it set them aside):
        touched so it retries now, not after its 5-minute flush, or bound by the bridge once
        refused for BIND_REFUSED_AFTER. An admitted pod it has not refused is still in its queue
        and is tried without a nudge (a write, and a requeue, for nothing under load)."""
        now = time.monotonic()
        due = [
            i
            for i in self.managed.values()
            if i.placed is not None and i.placed_at and now - i.placed_at > older_than and not i.bound
        ]
        refused = []
        for info in due:
            refusal = self._refusal(info)
            if refusal is None:
                self._refused.pop(info.uid, None)
            else:
                refused.append((info, refusal))
        for info, refusal in refused[:limit]:
            info.placed_at = now
            if not await self._bind_refused(info, refusal, now):
                await self.actions.touch(info)

    def _refusal(self, info: PodInfo) -> tuple[Obj, str] | None:
        """The front pod and kube-scheduler's refusal of it, if it refused it last."""
        ns, _, name = info.key.partition("/")
        pod = self.inputs.pods.get(name, ns)
        refusal = pods.scheduler_refusal(pod) if pod is not None else None
        return None if pod is None or refusal is None else (pod, refusal)

    async def _bind_refused(self, info: PodInfo, refused: tuple[Obj, str], now: float) -> bool:
        """An admitted pod the front scheduler has refused for BIND_REFUSED_AFTER seconds is bound
        to its virtual node by the bridge (:meth:`Actions.bind`). True when bound."""
        pod, refusal = refused
        if info.placed is None:
            return False
        since = self._refused.setdefault(info.uid, now)
        node = self._virtual_node(info.placed[0])
        if now - since < BIND_REFUSED_AFTER or node is None:
            return False
        return await self.actions.bind(pod, node, refusal)

    def _virtual_node(self, cluster: str) -> str | None:
        return next((n for n, c in self.inputs.virtual_nodes().items() if c == cluster), None)

    def relax_stalled_gangs(self) -> None:
        """The core's stall rule (:mod:`armada_bridge.core.stall`) on the gangs waiting now; a gang
        it relaxes is re-added with the smaller count (the core keys a gang's size on its first
        member)."""
        now = time.monotonic()
        present: dict[tuple[str, str], list[PodInfo]] = defaultdict(list)
        alive: set[tuple[str, str]] = set()
        for info in self.managed.values():
            if info.gang is not None:
                k = (info.key.partition("/")[0], info.gang.key)
                alive.add(k)
                if info.placed is None:
                    present[k].append(info)
        self.stall.prune(alive)
        waiting = {
            k: Waiting(len(m), m[0].gang.min_member, bool(m[0].gang.min_resources))
            for k, m in present.items()
            if m[0].gang is not None
        }
        for k in self.stall.observe(waiting, now):
            members = present[k]
            log.info(
                "gang %s/%s: %d/%d present for %.0fs, admitting with room for all",
                *k,
                len(members),
                waiting[k].min_member,
                self.stall.stalled_for(k, now),
            )
            for info in members:
                self.core.remove_job(info.uid)
                self.managed.pop(info.uid, None)
                self.changes.pods.add(info.key)
            self.changes.wake.set()

    async def write_statuses(self) -> None:
        """The periodic pass: stalled gangs, admitted pods still unbound (nudged, or bound by the
        bridge), Queue and PodGroup status. Each step on its own: one that fails (logged, counted as
        stage status) stops none of the others, and runs again next interval."""

        async def relax() -> None:
            self.relax_stalled_gangs()

        steps: dict[str, Callable[[], Awaitable[None]]] = {
            "stalled gangs": relax,
            "unbound pods": self.touch_unbound,
            "waiting reasons": self.explain_waiting,
            "queue status": lambda: write_queue_statuses(self),
            "podgroup status": lambda: write_podgroup_statuses(self),
        }
        for step, run in steps.items():
            try:
                await run()
                self._status_errors.pop(step, None)
            except Exception as e:
                self.metrics.round_errors.labels(stage="status").inc()
                if self._status_errors.get(step) == repr(e):  # the same again: no traceback
                    log.warning("status pass: %s failed again: %s: %s", step, type(e).__name__, e)
                else:
                    log.exception("status pass: %s failed; the other steps go on", step)
                self._status_errors[step] = repr(e)

    # ------------------------------------------------------------------ queries (filter, CLI)
    def look_at(self, pod: Obj) -> None:
        """The scheduler asked about a pod we may not have seen yet: look at it in the next round."""
        uid = pod["metadata"].get("uid") or ""
        if uid not in self.managed:
            self.changes.pods.add(f"{pod['metadata'].get('namespace', '')}/{pod['metadata']['name']}")
            self.changes.wake.set()

    def reason_for(self, uid: str) -> str:
        return (
            self.shell_reasons.get(uid)
            or self.core.reason_of(uid)
            or (
                "waiting for the next scheduling round"
                if uid in self.managed
                else "not known to armada-bridge yet"
            )
        )

    def leads(self) -> bool:
        return self.leading

    def waiting_reasons(self) -> dict[str, str]:
        """pod UID -> why it waits, for every managed pod not placed (empty on a standby replica)."""
        return {uid: self.reason_for(uid) for uid, info in self.managed.items() if info.placed is None}

    def describe_state(self) -> dict[str, Any]:
        """Queues with their shares, every managed pod with its gang, placement and reason."""
        shares = self.last_result.queue_shares() if self.last_result else {}
        queues = {
            name: {
                "priorityFactor": q.priority_factor,
                "cordoned": q.cordoned,
                **(
                    {
                        "fairShare": r.fair_share,
                        "adjustedFairShare": r.adjusted_fair_share,
                        "actualShare": r.actual_share,
                        "running": r.running,
                        "queued": r.queued,
                    }
                    if (r := shares.get(name))
                    else {}
                ),
            }
            for name, q in sorted(self.core.queues.items())
        }
        pods = {
            info.key: {
                "uid": uid,
                "queue": info.queue,
                "gang": info.gang.key if info.gang else None,
                "gangSize": info.gang.min_member if info.gang else None,
                "cluster": info.placed[0] if info.placed else None,
                "node": info.placed[1] if info.placed else None,
                "state": str(self.core.state_of(uid)),
                "reason": None if info.placed else self.reason_for(uid),
            }
            for uid, info in sorted(self.managed.items(), key=lambda kv: kv[1].key)
        }
        return {"rounds": self.rounds, "queues": queues, "pods": pods}
