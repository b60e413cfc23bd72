"""What the extender writes on front pods: a decision (admit), a preemption, a waiting reason
(Event), a nudge. Writes only; what they mean for the core stays with the loop."""

from __future__ import annotations

import enum
import logging
import time
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey
from armada_bridge.contract.pods import PodSpecError, gates_without, is_terminal, scheduling_gates
from armada_bridge.kube import PODS, ApiError, Kube
from armada_bridge.kube.resources import VOLCANO_PODGROUPS
from armada_bridge.objects import Obj
from extender import admission, binding
from extender.events import WAITING, EventRecorder
from extender.metrics import Metrics
from extender.owners import controlling_job
from extender.pod_info import PodInfo
from extender.protocols import volcano

log = logging.getLogger(__name__)


class Written(enum.Enum):
    DONE = "done"
    GONE = "gone"  # the pod (that UID) no longer exists
    FAILED = "failed"


class Actions:
    def __init__(self, front: Kube, events: EventRecorder, metrics: Metrics, key: DecisionKey) -> None:
        self.front = front
        self.events = events
        self.metrics = metrics
        self.key = key

    async def admit(self, info: PodInfo, cluster: str, node: str) -> bool:
        """Write the decision on the pod (the annotations naming its cluster and remote node, signed
        for this pod: armada_bridge.contract.decisions), and lift the bridge's scheduling gate in the
        same write: the front scheduler then binds it."""
        ns, _, name = info.key.partition("/")
        patch: dict[str, Any] = {"metadata": {"annotations": self.key.annotations(info.uid, cluster, node)}}
        if keys.SCHEDULING_GATE in info.gates:
            patch["spec"] = {"schedulingGates": gates_without(info.gates)}
        try:
            await self.front.patch(
                PODS, name, patch, ns, params={"fieldManager": "armada-bridge"}, uid=info.uid
            )
        except Exception as e:
            log.info(
                "pod %s: decision not written (%s: %s); it is reconsidered", info.key, type(e).__name__, e
            )
            return False
        # No Event: the decision is on the pod (`why`, `kubectl describe`), the front scheduler's
        # `Scheduled` names its cluster, and an Event per admitted pod was a front write per pod.
        self.metrics.admitted.labels(queue=info.queue).inc()
        return True

    async def preempt(self, info: PodInfo, why: str, pod: Obj | None) -> Written:
        """Mark the front pod Failed/Preempted (as the kubelet does); the vkubelet then deletes the
        remote pod (a terminal front pod never keeps one running) and the owner, if any, replaces it.
        `pod`: the pod as last seen; the mark is written only on that version of it (a pod that
        ended meanwhile is not made Preempted, and its owner does not run it again)."""
        ns, _, name = info.key.partition("/")
        if pod is None or pod["metadata"]["uid"] != info.uid or is_terminal(pod):
            return Written.GONE
        status = {
            "status": {
                "phase": "Failed",
                "reason": "Preempted",
                "message": f"preempted by armada-bridge: {why}",
                "conditions": [
                    {
                        "type": "DisruptionTarget",
                        "status": "True",
                        "reason": "PreemptionByScheduler",
                        "message": f"armada-bridge: {why}",
                    }
                ],
            },
        }
        try:
            pod = await self.front.patch(
                PODS,
                name,
                status,
                ns,
                subresource="status",
                patch_type="strategic",
                uid=info.uid,
                resource_version=pod["metadata"]["resourceVersion"],
            )
        except Exception as e:
            if isinstance(e, ApiError) and (e.not_found or e.uid_mismatch):
                return Written.GONE
            if isinstance(e, ApiError) and e.conflict:
                log.info("pod %s: changed since it was chosen for preemption; it keeps running", info.key)
            else:
                log.warning(
                    "pod %s: could not mark preempted (%s: %s); it keeps running",
                    info.key,
                    type(e).__name__,
                    e,
                )
            return Written.FAILED
        await self.events.emit(pod, "Preempted", f"preempted by armada-bridge: {why}", warning=True)
        self.metrics.preempted.labels(queue=info.queue).inc()
        return Written.DONE

    async def set_up(self, pod: Obj, scheduler_name: str | None) -> bool:
        """A managed pod the webhook never saw, set up now as it would have been
        (:func:`extender.admission.setup_patch`). True when patched: its update brings it back."""
        md = pod["metadata"]
        try:
            if admission.setup_patch(pod, scheduler_name=scheduler_name) is None:
                return False  # cannot be set up: no need to look its Job up
            extra = await job_group_annotations(self.front, pod)
            patch = admission.setup_patch(pod, scheduler_name=scheduler_name, extra_annotations=extra)
            assert patch is not None
            await self.front.patch(PODS, md["name"], patch, md["namespace"], uid=md["uid"])
        except (ApiError, PodSpecError) as e:
            log.warning("pod %s/%s not set up after its creation: %s", md["namespace"], md["name"], e)
            return False
        log.info("pod %s/%s created while the webhook was down: set up now", md["namespace"], md["name"])
        await self.events.emit(
            pod,
            "ArmadaSetUp",
            "set up by armada-bridge after its creation (the admission webhook was unavailable then)",
        )
        return True

    async def create_job_podgroup(self, pod: Obj) -> bool:
        """Volcano's protocol for plain Jobs (annotation ``group-min-member``): the PodGroup the
        Volcano controller would create for the pod's Job, created if the pod names it. True when
        it exists now."""
        ns = pod["metadata"]["namespace"]
        try:
            job = await controlling_job(self.front, pod)
            if job is None:
                return False
            pg = volcano.job_podgroup(job)
            named = (pod["metadata"].get("annotations") or {}).get(keys.VOLCANO_GROUP_NAME_ANNOTATION)
            if pg is None or pg["metadata"]["name"] != named:
                return False
            await self.front.create(VOLCANO_PODGROUPS, pg, ns)
        except ApiError as e:
            if e.conflict:
                return True
            log.warning("PodGroup of the Job of pod %s/%s not created: %s", ns, pod["metadata"]["name"], e)
            return False
        except ValueError as e:  # IntentError; a name that is not one
            log.warning("PodGroup of the Job of pod %s/%s not created: %s", ns, pod["metadata"]["name"], e)
            return False
        log.info(
            "created PodGroup %s/%s for the Job of pod %s",
            ns,
            pg["metadata"]["name"],
            pod["metadata"]["name"],
        )
        return True

    async def explain(self, pod: Obj, reason: str) -> None:
        """Why the pod waits, as an Event (deduplicated by the recorder)."""
        await self.events.emit(pod, WAITING, reason)

    async def release(self, pod: Obj) -> None:
        """Lift the bridge's scheduling gate from a pod the bridge does not manage (any more): the
        front scheduler places it as any other pod."""
        md = pod["metadata"]
        patch = {"spec": {"schedulingGates": gates_without(scheduling_gates(pod))}}
        try:
            await self.front.patch(PODS, md["name"], patch, md["namespace"], uid=md["uid"])
        except ApiError as e:
            log.info(
                "pod %s/%s: gate not lifted (%s); tried again on its next change",
                md["namespace"],
                md["name"],
                e,
            )
            return
        log.info("pod %s/%s: not managed, its scheduling gate lifted", md["namespace"], md["name"])

    async def bind(self, pod: Obj, node: str, refusal: str) -> bool:
        """Bind an admitted pod to its cluster's virtual node through the API (`pods/binding`, the
        pod's UID a precondition), as kube-scheduler would have: it refused the node the core
        admitted the pod to (its view of that node disagreed, e.g. a deleted pod it still counted
        there), and nothing but the core may reject an admitted pod."""
        md = pod["metadata"]
        why = await binding.bind(self.front, md["namespace"], md["name"], md["uid"], node)
        if why is not None:
            log.info("pod %s/%s: not bound to %s (%s)", md["namespace"], md["name"], node, why)
            return False
        log.warning(
            "pod %s/%s: bound to %s by the bridge; the front scheduler refused it: %s",
            md["namespace"],
            md["name"],
            node,
            refusal,
        )
        await self.events.emit(
            pod,
            "ArmadaBound",
            f"bound to {node} by armada-bridge: the front kube-scheduler refused the node the pod was "
            f"admitted to ({refusal[:300]})",
            warning=True,
        )
        return True

    async def touch(self, info: PodInfo) -> None:
        """An annotation update, so the front scheduler retries the pod now (it set aside pods an
        earlier attempt failed for up to 5 minutes)."""
        ns, _, name = info.key.partition("/")
        patch = {"metadata": {"annotations": {keys.NUDGE: str(int(time.time()))}}}
        try:
            await self.front.patch(PODS, name, patch, ns, uid=info.uid)
        except ApiError as e:
            log.debug("touch %s: %s", info.key, e)


async def job_group_annotations(front: Kube, pod: Obj) -> dict[str, str]:
    """Volcano's protocol for plain Jobs (annotation `group-min-member`): the annotation naming the
    PodGroup the Volcano controller would create for the pod's Job ({} for other pods). Read only:
    the loop creates that PodGroup when the pod waits for it."""
    try:
        job = await controlling_job(front, dict(pod))
        return volcano.job_pod_annotations(job) if job is not None else {}
    except (ApiError, ValueError) as e:  # IntentError; a name that is not one
        log.warning("pod %s: Volcano group of its Job not named: %s", pod["metadata"].get("name"), e)
        return {}
