"""Translation: a front pod -> what the extender manages of it (queue, gang, the core's job,
where it was placed), read from the inputs. Pure but for the owner look-ups."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from armada_bridge import keys
from armada_bridge.contract import pods, queue_access
from armada_bridge.contract.decisions import Decision, DecisionKey
from armada_bridge.core import model
from armada_bridge.objects import Obj
from armada_bridge.rejection import rejection_of, rejections_of
from extender import intent, protocols, translate
from extender.inputs import Inputs
from extender.owners import OwnerResolver, controller_ref
from extender.pod_info import PodInfo
from extender.protocols import volcano
from extender.protocols.base import IntentError, PodGroupMissing


def _timestamp(value: str | None) -> float:
    if not value:
        return 0.0
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _stuck(uid: str, queue: str, created: float) -> model.Job:
    """The job of a pod that waits for a fix: nothing to place, but since when it waits."""
    return model.Job(uid, queue, {}, submit_time=created)


class Describer:
    def __init__(self, inputs: Inputs, owners: OwnerResolver, key: DecisionKey) -> None:
        self.inputs = inputs
        self.owners = owners
        self.key = key

    def decision_of(self, pod: Mapping[str, Any]) -> Decision | None:
        """The pod's decision if this extender made it (its signature verifies): a decision written
        by anyone else is no decision."""
        return self.key.verified(pod)

    def queue_of(
        self,
        pod: Mapping[str, Any],
        podgroups: Mapping[str, Obj | None] | None = None,
        namespace_labels: Mapping[str, str] | None = None,
    ) -> str | None:
        """The pod's queue from its protocols and its namespace's label; None: not managed.
        `podgroups` and `namespace_labels`: as read for it (default: the caches')."""
        pgs = podgroups if podgroups is not None else self.inputs.podgroups_of(pod)
        if namespace_labels is None:
            namespace_labels = self.inputs.namespace_labels(pod["metadata"].get("namespace") or "")
        queue, _source = intent.queue_of(
            pod, volcano_podgroup=pgs.get(volcano.NAME), namespace_labels=namespace_labels
        )
        return queue

    def queue_refusal(
        self, queue: str, namespace: str, namespace_labels: Mapping[str, str] | None = None
    ) -> str | None:
        """Why `queue` does not take pods of `namespace` (None: it does, or it does not exist yet:
        its pods wait for it, and are described again when it comes). `namespace_labels`: as read
        (default: the cache's)."""
        obj = self.inputs.queues.get(queue)
        if obj is None:
            return None
        if namespace_labels is None:
            namespace_labels = self.inputs.namespace_labels(namespace)
        return queue_access.refusal(obj, namespace, namespace_labels)

    async def inherited(
        self, pod: Mapping[str, Any], podgroups: Mapping[str, Obj | None] | None = None
    ) -> tuple[dict[str, str], dict[str, str]]:
        """The labels and annotations that put a pod being created in its root controller's queue
        (the label ``armadaproject.io/queue`` of the topmost owner, e.g. the JobSet of its Job, or
        an object the Armada API created) when none of its own protocols names another (a
        namespace's queue is weaker than its owner's; an operator that copies its object's labels
        onto its pods, as the Spark operator does, names the same): that queue and the root's UID
        (labels: the pod is the root's), and what else of the root's the pod takes with its queue
        (``keys.INHERITED_ANNOTATIONS``: the job priority) where the pod has none of its own
        (annotations); ({}, {}) otherwise. Read at the pod's creation, from the root as it is then
        (a root without a queue label when first seen is not read again)."""
        ref = controller_ref(dict(pod))
        if ref is None or not all(isinstance(ref.get(f), str) for f in ("apiVersion", "kind", "name", "uid")):
            return {}, {}  # no owner, or a reference that names nothing
        pgs = podgroups if podgroups is not None else self.inputs.podgroups_of(pod)
        named, source = intent.queue_of(pod, volcano_podgroup=pgs.get(volcano.NAME), namespace_labels={})
        own = named if source in intent.OWN_SOURCES else None
        root = await self.owners.queued_root(dict(pod))
        md = (root or {}).get("metadata") or {}
        queue = (md.get("labels") or {}).get(keys.QUEUE_LABEL)
        if not queue or own not in (None, queue):
            return {}, {}
        theirs, mine = md.get("annotations") or {}, pod["metadata"].get("annotations") or {}
        annotations = {k: str(theirs[k]) for k in keys.INHERITED_ANNOTATIONS if k in theirs and k not in mine}
        return {keys.QUEUE_LABEL: str(queue), keys.QUEUE_OWNER_LABEL: str(md["uid"])}, annotations

    async def describe(self, pod: Obj, relaxed: Mapping[tuple[str, str], int]) -> PodInfo | None:
        """The managed pod's job for the core, or None when the bridge does not manage it.
        `relaxed`: gangs admitted one member short, (namespace, gang key) -> member count."""
        md, spec = pod["metadata"], pod.get("spec", {})
        uid = md["uid"]
        annotations = md.get("annotations") or {}
        if pods.is_terminal(pod):
            return None
        decision = self.decision_of(pod)
        if md.get("deletionTimestamp") and decision is None:
            return None
        # A placed pod being deleted keeps its room until it is gone: its remote pod still runs, and
        # the front scheduler still counts it on the virtual node.
        node_name = spec.get("nodeName")
        if node_name and decision is None:
            # Bound by someone else (to a real front node, or to a virtual node without a decision
            # of ours, which its vkubelet refuses): not ours to account.
            return None
        pgs = self.inputs.podgroups_of(pod)
        queue = self.queue_of(pod, pgs)
        if queue is None:
            return None
        root = await self.owners.root(pod)
        key = f"{md['namespace']}/{md['name']}"
        created = _timestamp(md.get("creationTimestamp"))
        if decision is None and (closed := self.queue_refusal(queue, md["namespace"])) is not None:
            # Admitted pods keep running when a queue closes to their namespace, as when cordoned.
            return PodInfo(key, uid, queue, None, root, _stuck(uid, queue, created), None, invalid=closed)
        try:
            gang = protocols.gang_of(pod, pgs)
            count = relaxed.get((md["namespace"], gang.key)) if gang is not None else None
            if gang is not None and count is not None:
                gang = replace(gang, min_member=count)
            job = translate.job_from_pod(
                pod,
                job_id=uid,
                queue=queue,
                gang=gang,
                submit_time=created,
                # Pods of one controller stay in one remote cluster: the first bound fixes it.
                colocation=f"{root.kind} {md['namespace']}/{root.name}" if root.uid != uid else None,
            )
        except (IntentError, pods.PodSpecError) as e:
            # Managed, but it cannot be scheduled as it is: it waits, and says why.
            missing = e.ref if isinstance(e, PodGroupMissing) else None
            return PodInfo(
                key,
                uid,
                queue,
                None,
                root,
                _stuck(uid, queue, created),
                None,
                invalid=str(e),
                missing=missing,
            )
        if keys.SCHEDULING_CONSTRAINTS not in annotations and not node_name:
            # The webhook never saw it (down when the pod was created): the loop sets it up now
            # where the API allows (Controller._sync_pod); else it waits, and says why.
            why = (
                "not set up by the armada-bridge admission webhook when created (it was unavailable, "
                "or the pod's queue became known later), and its nodeSelector, affinity, topology "
                "spread or scheduler cannot change now, so it cannot go to a remote cluster; delete "
                "it (its owner recreates it) or recreate it"
            )
            return PodInfo(
                key, uid, queue, gang, root, _stuck(uid, queue, created), None, invalid=why, set_up=False
            )
        placed = None
        cluster, node = (decision.cluster, decision.node) if decision is not None else (None, None)
        if cluster and node and rejection_of(pod) is None:
            placed = (cluster, node)
        elif cluster and (refused := rejections_of(pod)) is not None:
            # Refused by its remote cluster: placed again, in that cluster (it is bound to its
            # virtual node), on a node that has not refused it.
            job = translate.pinned_to_cluster(job, cluster, avoid_nodes=refused.nodes)
        return PodInfo(
            key,
            uid,
            queue,
            gang,
            root,
            job,
            placed,
            bound=bool(node_name),
            bound_at=_timestamp(pods.scheduled_at(pod)) or None,
            gates=pods.scheduling_gates(pod),
        )
