"""Front pods bound to a virtual node, run as pods of the remote cluster.

One level-triggered reconcile per front pod UID: it looks at the front pod and the remote pod that
carries its UID (both from informer caches) and does the one next step. Running it twice creates
nothing twice; it keeps no state a restart would lose.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterator

from armada_bridge import keys
from armada_bridge.contract.capacity import running_on_node
from armada_bridge.contract.pods import TERMINAL_PHASES, is_terminal
from armada_bridge.contract.remotecluster import HostAccess, RemoteClusterSpec
from armada_bridge.kube import PODS, ApiError, Kube
from armada_bridge.kube.informer import Informer, key_of
from armada_bridge.kube.times import now, rfc3339
from armada_bridge.objects import Obj
from armada_bridge.rejection import Rejection, rejection_of, rejections_of
from vkubelet import remote_pod
from vkubelet import status as pod_status
from vkubelet.admission import NOT_ADMITTED, PodAdmission, Verdict
from vkubelet.events import Recorder
from vkubelet.metrics import METRICS
from vkubelet.mirror import Mirrors
from vkubelet.tokens import FrontTokens, TokenUnavailable
from vkubelet.workqueue import WorkQueue

log = logging.getLogger(__name__)

RETRY_WAITING = 5.0  # seconds before retrying a pod whose dependencies are missing
# A remote pod just created usually runs within a second: its Pending states (created, scheduled)
# are written to the front only if it is still Pending after this long, so a pod that starts at
# once costs one front status write, not three.
PENDING_QUIET = 1.0
#: seconds before a pod whose front status changed under a write is reconciled again (its informer
#: usually brings the newer pod, and with it another reconcile, sooner)
RETRY_CONFLICT = 1.0


def _uid(obj: Obj) -> str:
    return str(obj["metadata"]["uid"])


def _front_uid_label(obj: Obj) -> str | None:
    return (obj["metadata"].get("labels") or {}).get(keys.FRONT_UID)


def _deleting(obj: Obj) -> bool:
    return bool(obj["metadata"].get("deletionTimestamp"))


def _refused(front: Obj, remote: Obj) -> bool:
    """`remote` was made for a node that has since refused the front pod (it is given back)."""
    refused = rejections_of(front)
    node = (remote["metadata"].get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE)
    return refused is not None and node in refused.nodes


def _owned_by_daemonset(pod: Obj) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in pod["metadata"].get("ownerReferences") or [])


class PodController:
    def __init__(
        self,
        cluster: str,
        spec: RemoteClusterSpec,
        front: Kube,
        remote: Kube,
        front_pods: Informer,
        remote_pods: Informer,
        mirrors: Mirrors,
        recorder: Recorder,
        on_error: Callable[[str], None],
        admission: PodAdmission,
        addresses: Callable[[str, Obj], Obj],
    ) -> None:
        """`addresses`: the addresses a front pod (UID) shows for its remote pod (podIP(s),
        hostIP(s); the RemoteCluster's network mode decides)."""
        self.cluster = cluster
        self.addresses = addresses
        self.admission = admission
        self.spec = spec
        self.front = front
        self.remote = remote
        self.front_pods = front_pods
        self.remote_pods = remote_pods
        self.mirrors = mirrors
        self.recorder = recorder
        self.on_error = on_error
        self.queue = WorkQueue(f"pods/{cluster}")
        self.front_key: dict[str, str] = {}  # front pod UID -> namespace/name
        self.front_phase: dict[str, str] = {}  # front pod UID -> its phase (the cache is packed)
        self.remote_key: dict[str, str] = {}  # front pod UID -> namespace/name of its remote pod
        # front pod UID -> the node its remote pod takes room on (bound there, not finished): what is
        # counted every few seconds, kept beside the packed cache
        self.remote_node: dict[str, str] = {}
        self.last_remote: dict[str, Obj] = {}  # front pod UID -> last state of a deleted remote pod
        self._warned: dict[str, str] = {}  # front pod UID -> last waiting message (one Event per change)
        self._created: dict[str, float] = {}  # front pod UID -> when we created its remote pod (monotonic)
        self.tokens: FrontTokens | None = None  # the front API in remote pods (vkubelet/tokens.py)
        front_pods.add_handler(self._on_front)
        remote_pods.add_handler(self._on_remote)

    # ---------------------------------------------------------------- triggers
    def _on_front(self, kind: str, pod: Obj) -> None:
        uid = _uid(pod)
        if kind == "DELETED":
            self.front_key.pop(uid, None)
            self.front_phase.pop(uid, None)
        else:
            self.front_key[uid] = key_of(pod)
            self.front_phase[uid] = (pod.get("status") or {}).get("phase") or "Pending"
        self.queue.add(uid)

    def _on_remote(self, kind: str, pod: Obj) -> None:
        uid = _front_uid_label(pod)
        if not uid:
            return
        if kind == "DELETED":
            if self.remote_key.get(uid) == key_of(pod):
                self.remote_key.pop(uid, None)
                self.remote_node.pop(uid, None)
            if (pod.get("spec") or {}).get("nodeName"):  # it may have run: never again
                self.last_remote[uid] = pod
        else:
            self.remote_key[uid] = key_of(pod)
            if running_on_node(pod):
                self.remote_node[uid] = pod["spec"]["nodeName"]
            else:
                self.remote_node.pop(uid, None)
        self.queue.add(uid)

    def enqueue_all(self) -> None:
        for uid in list(self.front_key) + list(self.remote_key):
            self.queue.add(uid)

    async def run(self, workers: int) -> None:
        await self.queue.run(self._sync, workers)

    # ---------------------------------------------------------------- lookups
    def front_pod(self, uid: str) -> Obj | None:
        key = self.front_key.get(uid)
        pod = self.front_pods.cache.get(key) if key else None
        return pod if pod is not None and _uid(pod) == uid else None

    def remote_pod(self, uid: str) -> Obj | None:
        key = self.remote_key.get(uid)
        pod = self.remote_pods.cache.get(key) if key else None
        return pod if pod is not None and _front_uid_label(pod) == uid else None

    def _live(self) -> list[str]:
        return [uid for uid, phase in self.front_phase.items() if phase not in TERMINAL_PHASES]

    def live_front_pods(self) -> Iterator[Obj]:
        """Front pods that run or are about to (their mirrors are needed): every non-terminal one,
        so a mirror made for a pod being created is never collected under its feet. One at a
        time, each read from the packed cache as it is reached: a pass over thousands never holds
        them all."""
        for uid in self._live():
            pod = self.front_pod(uid)
            if pod is not None:
                yield pod

    def front_uids(self) -> list[tuple[str, str]]:
        """(UID, namespace/name) of each front pod bound to the cluster's node."""
        return list(self.front_key.items())

    def remote_namespaces(self) -> dict[str, str]:
        """Front pod UID -> the namespace of its remote pod, for every remote pod of ours."""
        return {uid: key.partition("/")[0] for uid, key in self.remote_key.items()}

    def live_front_namespaces(self) -> set[str]:
        """The namespaces of :meth:`live_front_pods`, read from their keys."""
        return {key.partition("/")[0] for uid in self._live() if (key := self.front_key.get(uid))}

    # ---------------------------------------------------------------- reconcile
    async def _sync(self, uid: str) -> None:
        t0 = time.perf_counter()
        try:
            await self.reconcile(uid)
            self.queue.forget(uid)
        except ApiError as e:
            self.on_error("pod")
            log.warning("%s: pod %s: %s", self.cluster, self.front_key.get(uid, uid), e)
            self.queue.retry(uid)
        except (OSError, TimeoutError) as e:
            self.on_error("pod")
            log.warning("%s: pod %s: %s: %s", self.cluster, self.front_key.get(uid, uid), type(e).__name__, e)
            self.queue.retry(uid)
        finally:
            METRICS.sync_seconds.labels(self.cluster).observe(time.perf_counter() - t0)
            METRICS.queue_depth.labels(self.cluster).set(len(self.queue))

    async def reconcile(self, uid: str) -> None:
        front = self.front_pod(uid)
        remote = self.remote_pod(uid)

        if front is None:
            # Gone from the front (or force-deleted): its remote pod goes too.
            self._warned.pop(uid, None)
            self._created.pop(uid, None)
            self.last_remote.pop(uid, None)
            if remote is not None and not _deleting(remote):
                await self._delete_remote(remote, None)
            return

        if _deleting(front):
            if remote is not None:
                if not _deleting(remote):
                    await self._delete_remote(remote, front["metadata"].get("deletionGracePeriodSeconds"))
                return  # the remote pod's deletion brings us back here
            await self._finish_front_deletion(front)
            return

        if is_terminal(front):
            # Succeeded and Failed pods are never started again, nor left running remotely when
            # someone else ended them (the extender marks preempted pods Failed).
            if remote is not None and not _deleting(remote) and not is_terminal(remote):
                await self._delete_remote(remote, None)
            return

        if rejection_of(front) is not None or (remote is not None and _refused(front, remote)):
            # Refused by the remote cluster: no remote pod until the extender has placed it again,
            # and the refused one gone.
            if remote is not None and not _deleting(remote):
                await self._delete_remote(remote, 0)
            return

        if remote is not None:
            if _deleting(remote):
                await self._fail(front, "RemotePodDeleted", self._gone_message(remote, "is being deleted"))
                return
            if await self._given_back(front, remote):
                return
            await self._sync_metadata(front, remote)
            await self._sync_status(front, remote)
            return

        if pod_status.has_marker(front) or uid in self.last_remote:
            # It ran remotely (the front pod says so, or we saw its remote pod go): not again.
            last = self.last_remote.pop(uid, None)
            reason = (
                "RemotePodEvicted"
                if last and (last.get("status") or {}).get("reason") == "Evicted"
                else "RemotePodDeleted"
            )
            await self._fail(front, reason, self._gone_message(last, "was deleted"))
            return

        await self._create(front)

    # ---------------------------------------------------------------- steps
    def _gone_message(self, remote: Obj | None, what: str) -> str:
        why = ""
        if remote is not None:
            st = remote.get("status") or {}
            if st.get("reason") or st.get("message"):
                why = f": {st.get('reason', '')} {st.get('message', '')}".rstrip()
        return f"the remote pod in cluster {self.cluster} {what} outside the bridge{why}; it is not recreated"

    async def _delete_remote(self, remote: Obj, grace: int | None) -> None:
        md = remote["metadata"]
        body: Obj = {"preconditions": {"uid": md["uid"]}}
        if grace is not None:
            body["gracePeriodSeconds"] = grace
        try:
            await self.remote.delete(PODS, md["name"], md["namespace"], body=body)
        except ApiError as e:
            if not e.conflict:  # conflict: a different pod by now, nothing of ours to delete
                raise

    async def _finish_front_deletion(self, front: Obj) -> None:
        md = front["metadata"]
        try:
            await self.front.delete(
                PODS,
                md["name"],
                md["namespace"],
                body={"gracePeriodSeconds": 0, "preconditions": {"uid": md["uid"]}},
            )
        except ApiError as e:
            if not e.conflict:
                raise

    async def _fail(self, front: Obj, reason: str, message: str) -> None:
        md = front["metadata"]
        log.info("%s: %s/%s failed: %s: %s", self.cluster, md["namespace"], md["name"], reason, message)
        patch = pod_status.failed_patch(front, reason, message, rfc3339(now()))
        if await self._patch_front(front, patch, "status") is not None:
            await self.recorder.pod_event(front, "Warning", reason, message)

    async def _patch_front(self, front: Obj, patch: Obj, subresource: str | None = None) -> Obj | None:
        """Patch the front pod on the condition that it is still the version `front` is (its
        resourceVersion): the API server lets a Failed pod become Running again, so a status written
        from a stale cache would undo one someone else wrote meanwhile (the extender's Preempted).
        The pod as written; None when it had changed: it is reconciled again from the newer version."""
        md = front["metadata"]
        try:
            return await self.front.patch(
                PODS,
                md["name"],
                patch,
                md["namespace"],
                subresource=subresource,
                uid=md["uid"],
                resource_version=md["resourceVersion"],
            )
        except ApiError as e:
            if not e.conflict or e.uid_mismatch:
                raise
            self.queue.add_after(md["uid"], RETRY_CONFLICT)
            return None

    async def _given_back(self, front: Obj, remote: Obj) -> bool:
        """A remote pod its cluster has left unschedulable past the bound goes back to the extender:
        the refusal is noted on the front pod (which waits, Pending), then the remote pod deleted."""
        since = pod_status.unschedulable_since(remote)
        if since is None:
            return False
        try:
            created = dt.datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            return False
        waited = (now() - created).total_seconds()
        bound = self.spec.unschedulable_seconds
        if waited < bound:
            self.queue.add_after(_uid(front), bound - waited + 1)
            return False
        md = front["metadata"]
        node = (md.get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE) or ""
        scheduled: Obj = next(
            (c for c in remote["status"].get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        why = f"unschedulable on node {node} for {int(waited)}s: {scheduled.get('message') or 'no reason given'}"
        log.info("%s: %s/%s given back to the extender: %s", self.cluster, md["namespace"], md["name"], why)
        refused = rejections_of(front) or Rejection((), "")
        annotations = {keys.REMOTE_REJECTION: refused.adding(node, why).encode()}
        # The status first: were the refusal written alone, the marker left saying the remote pod
        # ran would fail the pod once that remote pod is gone. Each write on the version read.
        waiting = await self._patch_front(
            front, pod_status.given_back_patch(front, self.cluster, why, rfc3339(now())), "status"
        )
        if (
            waiting is None
            or await self._patch_front(waiting, {"metadata": {"annotations": annotations}}) is None
        ):
            return True
        await self.recorder.pod_event(
            front, "Warning", "RemoteUnschedulable", f"remote cluster {self.cluster}: {why}; placing it again"
        )
        await self._delete_remote(remote, 0)
        return True

    async def _wait(self, front: Obj, reason: str, message: str) -> None:
        """The pod cannot be created yet: say why once (an Event), try again later."""
        uid = _uid(front)
        if self._warned.get(uid) != message:
            self._warned[uid] = message
            await self.recorder.pod_event(front, "Warning", reason, message)
        self.queue.add_after(uid, RETRY_WAITING)

    async def _sync_status(self, front: Obj, remote: Obj) -> None:
        uid = _uid(front)
        patch = pod_status.status_patch(front, remote, self.cluster, self.addresses(uid, remote))
        if patch is None:
            return
        created = self._created.get(uid)
        if created is not None:
            quiet = created + PENDING_QUIET - time.monotonic()
            if pod_status.is_pending(remote) and quiet > 0:
                self.queue.add_after(uid, quiet)
                return
            del self._created[uid]
        updated = await self._patch_front(front, patch, "status")
        if updated is not None and patch["status"].get("phase") == "Running":
            self._observe_running(updated)

    async def _sync_metadata(self, front: Obj, remote: Obj) -> None:
        """Labels and annotations set on the front pod after creation reach the remote pod (so
        Services there keep selecting it). Keys the remote cluster added are left alone."""
        want = remote_pod.remote_pod(front)["metadata"]
        rmd = remote["metadata"]
        patch: Obj = {}
        for f in ("labels", "annotations"):
            have = rmd.get(f) or {}
            changed = {k: v for k, v in want[f].items() if have.get(k) != v}
            if changed:
                patch[f] = changed
        if patch:
            patch["resourceVersion"] = rmd["resourceVersion"]  # never on a newer pod blindly
            try:
                await self.remote.patch(
                    PODS, rmd["name"], {"metadata": patch}, rmd["namespace"], uid=rmd["uid"]
                )
            except ApiError as e:
                if not (e.conflict or e.uid_mismatch):
                    raise
                self.queue.add(_uid(front))

    def _observe_running(self, pod: Obj) -> None:
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("lastTransitionTime"):
                try:
                    since = dt.datetime.fromisoformat(str(c["lastTransitionTime"]).replace("Z", "+00:00"))
                except ValueError:
                    return
                METRICS.bind_to_running_seconds.labels(self.cluster).observe(
                    max(0.0, (now() - since).total_seconds())
                )
                return

    async def _create(self, front: Obj) -> None:
        md = front["metadata"]
        uid = md["uid"]
        if _owned_by_daemonset(front):
            await self._wait(
                front, "DaemonSetPodNotRun", f"DaemonSet pods are not run in remote cluster {self.cluster}"
            )
            return
        check = self.admission.check(front, self.cluster)
        if check.verdict is Verdict.WAIT:
            await self._wait(front, "DecisionKeyWaiting", check.message)
            return
        if check.verdict is Verdict.REFUSE:
            await self._fail(front, NOT_ADMITTED, check.message)
            return
        asks = remote_pod.host_access(front)
        if asks and self.spec.host_access == HostAccess.DENY:
            await self._fail(
                front,
                "HostAccessRefused",
                f"remote cluster {self.cluster} does not run pods that ask for host access "
                f"({', '.join(asks)}); set spec.hostAccess: Allow on RemoteCluster {self.cluster} to allow it",
            )
            return
        await self.mirrors.ensure_namespace(md["namespace"], self.spec.namespace_labels())
        problems = await self.mirrors.ensure(self.mirrors.needed_for(front))
        if problems:
            await self._wait(front, "MirrorWaiting", f"waiting for {', '.join(problems)} (front cluster)")
            return
        body = remote_pod.remote_pod(front)
        try:
            if self.tokens is None:
                created = await self.remote.create(PODS, body)
            else:
                created = await self.tokens.create(front, body, self._token_waiting)
        except TokenUnavailable as e:
            await self._wait(front, "FrontTokenWaiting", str(e))
            return
        except ApiError as e:
            if e.conflict:
                await self._name_taken(front)
                return
            if e.status in (400, 422):
                await self._fail(
                    front, "RemoteRejected", f"remote cluster {self.cluster} rejected the pod: {e.message}"
                )
                return
            if e.status == 403:
                await self._wait(front, "RemoteForbidden", f"remote cluster {self.cluster}: {e.message}")
                return
            raise
        self._warned.pop(uid, None)
        self._created[uid] = time.monotonic()
        self.remote_key[uid] = key_of(created)
        self.remote_pods.remember(created)
        # The front status (and its "remote pod exists" marker) follows from the remote informer's
        # events, one write per remote state rather than one more here.

    async def _token_waiting(self, front: Obj, message: str) -> None:
        """The remote pod was created but its front token not issued: it waits for it remotely."""
        await self.recorder.pod_event(front, "Warning", "FrontTokenWaiting", message)

    async def _name_taken(self, front: Obj) -> None:
        """A remote pod of that name exists: ours (informer lag), a stale one of ours, or not ours."""
        md = front["metadata"]
        existing = await self.remote.get_or_none(PODS, md["name"], md["namespace"])
        if existing is None:
            self.queue.add(md["uid"])
            return
        owner = _front_uid_label(existing)
        if owner == md["uid"]:
            self.remote_key[md["uid"]] = key_of(existing)
            self.remote_pods.remember(existing)
            await self._sync_status(front, existing)
            return
        if owner is not None and self.front_pod(owner) is None:
            # Left over from an earlier front pod of the same name: remove it, then create ours.
            if not _deleting(existing):
                await self._delete_remote(existing, 0)
            self.queue.add_after(md["uid"], 1.0)
            return
        await self._wait(
            front,
            "RemoteNameTaken",
            f"remote cluster {self.cluster} already has pod {md['namespace']}/{md['name']} that the bridge does not manage",
        )

    # ---------------------------------------------------------------- gauges
    def report(self) -> int:
        counts: dict[str, int] = {"Pending": 0, "Running": 0, "Succeeded": 0, "Failed": 0, "Unknown": 0}
        for phase in self.front_phase.values():
            counts[phase] = counts.get(phase, 0) + 1
        for phase, n in counts.items():
            METRICS.pods.labels(self.cluster, phase).set(n)
        return sum(counts.values())
