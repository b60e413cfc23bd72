"""A job item that carries a Kubernetes object instead of a pod spec, as that object. Pure.

The object travels in Armada's own message, in the item annotation ``bridge.armadaproject.io/object``
(its manifest, JSON or YAML), so every Armada client can send one; Armada's fields keep their
meaning: the queue, job set, job id, priority, labels and annotations go on the object as they go
on a job's pod (:func:`armada_api.jobs.job_pod`). Its operator makes the pods; they take the
object's queue (the extender's webhook gives a pod with no queue of its own its root controller's,
:meth:`extender.describe.Describer.inherited`). docs/armada-api.md, "Objects".
"""

from __future__ import annotations

import json

import yaml

from armada_bridge.kube.names import is_dns_subdomain
from armada_bridge.objects import Obj


class ObjectError(ValueError):
    """The object is not one the API can create (a malformed request: INVALID_ARGUMENT)."""


def object_name(job_id: str) -> str:
    """The name of an object that came without one (as a job's pod is named after its job)."""
    return f"armada-{job_id}"


def parse(manifest: str) -> Obj:
    """The object of a manifest (JSON, or YAML: one document)."""
    try:
        obj = json.loads(manifest) if manifest.lstrip().startswith("{") else yaml.safe_load(manifest)
    except (ValueError, yaml.YAMLError) as e:
        raise ObjectError(f"the object is neither JSON nor YAML: {str(e).splitlines()[0]}") from None
    if not isinstance(obj, dict):
        raise ObjectError("the object must be a mapping with apiVersion, kind and metadata")
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field), str) or not obj[field]:
            raise ObjectError(f"the object has no {field}")
    if not isinstance(obj.get("metadata", {}), dict):
        raise ObjectError("the object's metadata must be a mapping")
    return obj


def job_object(
    manifest: str, *, job_id: str, namespace: str, labels: dict[str, str], annotations: dict[str, str]
) -> Obj:
    """The object to create: the manifest's, in `namespace` (it may say none, or the same), named as
    it says (else after the job), with the job's `labels` and `annotations` added to its own (a key
    of both is refused: neither is dropped silently)."""
    obj = parse(manifest)
    md = dict(obj.get("metadata") or {})
    if md.get("namespace", namespace) != namespace:
        raise ObjectError(
            f"the object's namespace {md['namespace']!r} is not the job's namespace {namespace!r}"
        )
    name = md.get("name") or object_name(job_id)
    if not isinstance(name, str) or not is_dns_subdomain(name):
        raise ObjectError(f"the object's name {name!r} is not a valid object name")
    md.pop("generateName", None)
    if any(isinstance(r, dict) and r.get("controller") for r in md.get("ownerReferences") or ()):
        raise ObjectError("the object of a job has no controller (ownerReferences): it is the job")
    for field, extra in (("labels", labels), ("annotations", annotations)):
        own = md.get(field) or {}
        if not isinstance(own, dict):
            raise ObjectError(f"the object's metadata.{field} must be a mapping")
        both = sorted(set(own) & set(extra))
        if both:
            raise ObjectError(f"{field} {', '.join(both)} given both on the job and on its object")
        md[field] = {**own, **extra}
    md.update(name=name, namespace=namespace)
    return {**obj, "metadata": md}
