"""The released operators' own sample objects (read from the module each was built from), adapted
to the dev environment: namespace, sizes, queue, and how long KWOK lets their pods run. Used by the
end-to-end tests and the chaos soak."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from armada_bridge import keys
from armada_bridge.objects import Obj
from devenv.operators.catalog import catalog
from devenv.realnode.placement import on_a_real_node

# What the containers of an API group's objects are given on the real nodes, where every cluster of
# the environment shares two cores.
_ENV_ON_THE_REAL_NODES: dict[str, list[dict[str, str]]] = {
    # Ray's dashboard gives each of its modules' processes 30 s to start, then exits, and the head is
    # never ready: a head starting beside other tests' pods here can take minutes.
    "ray.io": [{"name": "RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", "value": "600"}],
}


def sample(operator: str, path: str) -> list[Obj]:
    """The documents of an operator project's own sample file, from its module."""
    o = catalog()[operator]
    return [d for d in yaml.safe_load_all((o.module / path).read_text()) if d]


def pod_templates(obj: Any) -> Iterator[Obj]:
    """Every pod template in an object, found by shape: `template.spec.containers`."""
    if isinstance(obj, dict):
        t = obj.get("template")
        if isinstance(t, dict) and isinstance((t.get("spec") or {}).get("containers"), list):
            yield t
        for v in obj.values():
            yield from pod_templates(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from pod_templates(v)


def adapt(
    obj: Obj,
    namespace: str,
    *,
    cpu: str = "1",
    memory: str = "1Gi",
    runtime: str | None = None,
    queue: str | None = None,
    real: bool = False,
    cpu_limit: str | None = None,
) -> Obj:
    """The sample changed only in namespace, sizes (CPU limited to `cpu_limit` when given, else to
    its request), the pods' queue label (none by default: they take their namespace's queue) and (for pods that run to completion on KWOK nodes) how long
    KWOK lets their containers run; with `real`, its pods ask for the real nodes, where their
    containers really run (devenv.realnode.placement), with the environment `_ENV_ON_THE_REAL_NODES`
    gives their API group."""
    obj["metadata"]["namespace"] = namespace
    group = str(obj.get("apiVersion", "")).partition("/")[0]
    for t in pod_templates(obj):
        md = t.setdefault("metadata", {})
        if queue is not None:
            md.setdefault("labels", {})[keys.QUEUE_LABEL] = queue
        if runtime is not None:
            md.setdefault("annotations", {})[keys.SIMULATED_RUNTIME] = runtime
        for c in t["spec"]["containers"]:
            c["resources"] = {
                "requests": {"cpu": cpu, "memory": memory},
                "limits": {"cpu": cpu_limit or cpu, "memory": memory},
            }
        if real:
            on_a_real_node(t["spec"])
            for c in t["spec"]["containers"]:
                env = c.setdefault("env", [])
                env += [e for e in _ENV_ON_THE_REAL_NODES.get(group, []) if e not in env]
    return obj
