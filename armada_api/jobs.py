"""Armada's job items as front pods, and back. Pure.

A job item of a request (queue, job set) becomes one pod named as Armada's executor names it,
``armada-<job id>-0``, in the item's namespace, with the queue, job id and job set on it (keys in
:mod:`armada_bridge.keys`), the item's labels and annotations (Armada's gang annotations among
them), its priority, and its pod spec (docs/armada-api.md, "SubmitJobs").
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from armada_client.armada import submit_pb2

from armada_api import ids, objects
from armada_api.job_services import job_services
from armada_api.podspec import to_json
from armada_bridge import keys
from armada_bridge.contract.pods import job_priority_value
from armada_bridge.kube.names import is_dns_label
from armada_bridge.objects import Obj

#: Armada v0.22's limits (internal/server/submit/validation).
MAX_JOB_SET_ID = 1024
MAX_CLIENT_ID = 100
#: labels and annotations the API writes itself: an item may not give them.
API_LABELS = (keys.QUEUE_LABEL, keys.ARMADA_QUEUE_ID_LABEL, keys.ARMADA_JOB_ID_LABEL, keys.JOB_SET_LABEL)
API_ANNOTATIONS = (keys.ARMADA_JOB_SET_ID_ANNOTATION, keys.CLIENT_ID_ANNOTATION, keys.JOB_PRIORITY_ANNOTATION)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class RequestError(ValueError):
    """A request that is not well formed (Armada: INVALID_ARGUMENT); nothing is done."""


@dataclass(frozen=True)
class JobPod:
    job_id: str
    namespace: str
    #: the job's pod; for an item with an object (:mod:`armada_api.objects`), that object
    pod: Obj
    #: Services selecting the pod (the item's ServiceConfigs), created once the pod exists
    services: tuple[Obj, ...] = ()
    is_object: bool = False


def pod_name(job_id: str) -> str:
    return f"armada-{job_id}-0"


def job_set_label_value(job_set: str) -> str:
    """The job set as a label value: itself when it is one, else a digest of it."""
    if len(job_set) <= 63 and _LABEL_VALUE.match(job_set):
        return job_set
    return "sha256-" + hashlib.sha256(job_set.encode()).hexdigest()[:56]


def is_queue_name(name: str) -> bool:
    """A name a Queue object (or a namespace) can have: a DNS label."""
    return is_dns_label(name)


def check_queue_and_job_set(queue: str, job_set: str) -> None:
    if not queue:
        raise RequestError("queue is a required field")
    if not job_set:
        raise RequestError("job set id is a required field")
    if len(job_set) > MAX_JOB_SET_ID:
        raise RequestError(f"job set id of length {len(job_set)} must be less than {MAX_JOB_SET_ID}")


def job_set_selector(queue: str, job_set: str | None = None) -> str:
    """The label selector of a queue's pods made by the API (of one job set when given)."""
    selector = f"{keys.ARMADA_QUEUE_ID_LABEL}={queue}"
    if job_set is not None:
        selector += f",{keys.JOB_SET_LABEL}={job_set_label_value(job_set)}"
    return selector


def in_job_set(pod: Mapping[str, Any], job_set: str) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    return bool(annotations.get(keys.ARMADA_JOB_SET_ID_ANNOTATION) == job_set) and is_submitted(pod)


def is_submitted(obj: Mapping[str, Any]) -> bool:
    """Whether a pod or object that carries the API's labels is a job the API created, not one an
    operator made from it (and copied its labels onto): the API's have no controller."""
    refs = (obj.get("metadata") or {}).get("ownerReferences") or ()
    return not any(isinstance(r, Mapping) and r.get("controller") for r in refs)


def job_id_of(pod: Mapping[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(keys.ARMADA_JOB_ID_LABEL) or "")


def job_pods(request: submit_pb2.JobSubmitRequest, new_id: Any = ids.new_job_id) -> list[JobPod]:
    """Every item of a request as its pod, in order; RequestError when any item is not valid."""
    check_queue_and_job_set(request.queue, request.job_set_id)
    out = []
    for index, item in enumerate(request.job_request_items):
        try:
            out.append(job_pod(item, queue=request.queue, job_set=request.job_set_id, new_id=new_id))
        except RequestError as e:
            raise RequestError(f"job request item {index}: {e}") from None
    return out


def job_pod(
    item: submit_pb2.JobSubmitRequestItem, *, queue: str, job_set: str, new_id: Any = ids.new_job_id
) -> JobPod:
    if not item.namespace:
        raise RequestError("namespace is a required field")
    if not is_queue_name(item.namespace):
        raise RequestError(f"namespace {item.namespace!r} is not a valid namespace name")
    if len(item.client_id) > MAX_CLIENT_ID:
        raise RequestError(f"client id of length {len(item.client_id)} is longer than {MAX_CLIENT_ID}")
    if item.scheduler not in ("", "default"):
        raise RequestError(f"scheduler {item.scheduler!r} is not served: the bridge schedules every job")
    if item.ingress:
        raise RequestError("ingress of a job is not served yet (docs/armada-api.md)")
    manifest = item.annotations.get(keys.OBJECT_ANNOTATION)
    spec = _pod_spec(item) if manifest is None else _no_pod(item)  # an object's: {}
    job_id = ids.job_id_for_client_id(queue, item.namespace, item.client_id) if item.client_id else new_id()
    labels = _own(dict(item.labels), API_LABELS, "label")
    annotations = _own(dict(item.annotations), API_ANNOTATIONS, "annotation")
    annotations.pop(keys.OBJECT_ANNOTATION, None)
    labels.update(
        {
            keys.QUEUE_LABEL: queue,
            keys.ARMADA_QUEUE_ID_LABEL: queue,
            keys.ARMADA_JOB_ID_LABEL: job_id,
            keys.JOB_SET_LABEL: job_set_label_value(job_set),
        }
    )
    annotations[keys.ARMADA_JOB_SET_ID_ANNOTATION] = job_set
    annotations[keys.JOB_PRIORITY_ANNOTATION] = str(job_priority_value(item.priority))
    if item.client_id:
        annotations[keys.CLIENT_ID_ANNOTATION] = item.client_id
    if manifest is not None:
        try:
            obj = objects.job_object(
                manifest, job_id=job_id, namespace=item.namespace, labels=labels, annotations=annotations
            )
        except objects.ObjectError as e:
            raise RequestError(str(e)) from None
        return JobPod(job_id, item.namespace, obj, is_object=True)
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job_id),
            "namespace": item.namespace,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }
    services = job_services(
        list(item.services),
        job_id=job_id,
        pod_name=pod_name(job_id),
        namespace=item.namespace,
        spec=spec,
        labels={k: labels[k] for k in API_LABELS},
    )
    return JobPod(job_id, item.namespace, pod, tuple(services))


def _no_pod(item: submit_pb2.JobSubmitRequestItem) -> Obj:
    """An object's item: its object makes its pods, so it carries no pod spec, nor Services of one."""
    if item.pod_specs or item.HasField("pod_spec"):
        raise RequestError(f"a job with an object ({keys.OBJECT_ANNOTATION}) has no pod spec")
    if item.services or item.required_node_labels:
        raise RequestError(
            f"a job with an object ({keys.OBJECT_ANNOTATION}) has no services or required node labels:"
            " its object says what its pods need"
        )
    return {}


def _pod_spec(item: submit_pb2.JobSubmitRequestItem) -> Obj:
    specs = list(item.pod_specs)
    if item.HasField("pod_spec"):
        if specs:
            raise RequestError("PodSpec must be nil if PodSpecs is provided (i.e., these are exclusive)")
        specs = [item.pod_spec]
    if not specs:
        raise RequestError("Job must contain at least one PodSpec")
    if len(specs) > 1:
        raise RequestError("Jobs with multiple pods are not supported")
    spec = to_json(specs[0])
    if not spec.get("containers"):
        raise RequestError("the pod spec has no containers")
    spec.setdefault("restartPolicy", "Never")
    if item.required_node_labels:
        selector = dict(spec.get("nodeSelector") or {})
        for k, v in item.required_node_labels.items():
            if selector.get(k, v) != v:
                raise RequestError(
                    f"requiredNodeLabels {k}={v} contradicts the pod's nodeSelector {selector[k]}"
                )
            selector[k] = v
        spec["nodeSelector"] = selector
    return dict(spec)


def _own(values: dict[str, str], reserved: tuple[str, ...], what: str) -> dict[str, str]:
    taken = sorted(set(values) & set(reserved))
    if taken:
        raise RequestError(f"{what} {', '.join(taken)} is set by the Armada API, not by the job")
    return values
