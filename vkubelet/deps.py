"""What a pod depends on in its namespace (pure): ConfigMaps, Secrets, its ServiceAccount, Services."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from armada_bridge.objects import Obj

CONFIGMAP = "ConfigMap"
SECRET = "Secret"
SERVICEACCOUNT = "ServiceAccount"
SERVICE = "Service"


@dataclass(frozen=True, order=True)
class Ref:
    kind: str
    namespace: str
    name: str
    optional: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)


def _containers(spec: Obj) -> Iterable[Obj]:
    for kind in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(kind) or []


def pod_dependencies(pod: Obj) -> list[Ref]:
    """ConfigMaps and Secrets a pod reads (volumes, projected volumes, env, envFrom,
    imagePullSecrets) and its ServiceAccount unless it is `default` (every namespace has one)."""
    ns = pod["metadata"]["namespace"]
    spec = pod.get("spec") or {}
    refs: dict[tuple[str, str, str], Ref] = {}

    def add(kind: str, name: str | None, optional: bool | None = False) -> None:
        if not name:
            return
        key = (kind, ns, name)
        prev = refs.get(key)
        # Needed by one reference and optional for another: needed.
        refs[key] = Ref(kind, ns, name, bool(optional) and (prev is None or prev.optional))

    for v in spec.get("volumes") or []:
        if "configMap" in v:
            add(CONFIGMAP, v["configMap"].get("name"), v["configMap"].get("optional"))
        if "secret" in v:
            add(SECRET, v["secret"].get("secretName"), v["secret"].get("optional"))
        for src in (v.get("projected") or {}).get("sources") or []:
            if "configMap" in src:
                add(CONFIGMAP, src["configMap"].get("name"), src["configMap"].get("optional"))
            if "secret" in src:
                add(SECRET, src["secret"].get("name"), src["secret"].get("optional"))
    for c in _containers(spec):
        for e in c.get("env") or []:
            vf = e.get("valueFrom") or {}
            if "configMapKeyRef" in vf:
                add(CONFIGMAP, vf["configMapKeyRef"].get("name"), vf["configMapKeyRef"].get("optional"))
            if "secretKeyRef" in vf:
                add(SECRET, vf["secretKeyRef"].get("name"), vf["secretKeyRef"].get("optional"))
        for ef in c.get("envFrom") or []:
            if "configMapRef" in ef:
                add(CONFIGMAP, ef["configMapRef"].get("name"), ef["configMapRef"].get("optional"))
            if "secretRef" in ef:
                add(SECRET, ef["secretRef"].get("name"), ef["secretRef"].get("optional"))
    for s in spec.get("imagePullSecrets") or []:
        add(SECRET, s.get("name"), True)  # the kubelet also starts a pod without them
    sa = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if sa and sa != "default":
        add(SERVICEACCOUNT, sa)
    return sorted(refs.values())


def selects(service: Obj, pod: Obj) -> bool:
    """True when the Service's selector matches the pod's labels (a Service without one matches none)."""
    selector = (service.get("spec") or {}).get("selector") or {}
    if not selector:
        return False
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())
