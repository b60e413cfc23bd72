"""The pods made on the local environment's clusters (the demo, the tests, the benchmarks): one
busybox container, each caller saying only what matters to it. Plain bodies, as `kubectl apply` or
a client's create takes them."""

from __future__ import annotations

from typing import Any

from armada_bridge.objects import Obj
from devenv.images.recipes import RECIPES
from devenv.realnode.placement import on_a_real_node

IMAGE = "busybox"


def busybox(
    cpu: str | None = None, memory: str | None = None, *, limits: dict[str, str] | None = None, **fields: Any
) -> Obj:
    """A busybox container `main` requesting `cpu` and `memory` (each where given), with `limits`;
    `fields`, more of it (command, args, ...)."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    resources = {
        **({"requests": requests} if requests else {}),
        **({"limits": dict(limits)} if limits else {}),
    }
    return {"name": "main", "image": IMAGE, **({"resources": resources} if resources else {}), **fields}


def busybox_pod(
    name: str,
    *,
    cpu: str | None = None,
    memory: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A pod `name` of one :func:`busybox` container requesting `cpu` and `memory`; its labels and
    annotations maps where given; `spec`, more of its spec (`containers` replaces the container)."""
    metadata: dict[str, Any] = {"name": name}
    if labels is not None:
        metadata["labels"] = dict(labels)
    if annotations is not None:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [busybox(cpu, memory)], **spec},
    }


def real_pod(
    name: str,
    command: list[str],
    *,
    cpu: str = "100m",
    memory: str = "16Mi",
    memory_limit: str | None = None,
    image: str = IMAGE,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A pod `name` whose container (`image`) runs `command` once on a real node of the dev clusters
    (:func:`~devenv.realnode.placement.on_a_real_node`), requesting `cpu` and `memory`, its memory
    limited to `memory_limit` where given; `spec`, more of its spec."""
    limits = {"memory": memory_limit} if memory_limit else None
    container = busybox(cpu, memory, limits=limits, image=image, command=command)
    return busybox_pod(
        name, labels=labels, **on_a_real_node({"restartPolicy": "Never", "containers": [container], **spec})
    )


WEB_PORT = 8000  # of web_pod's server, its container port `http`


def web_pod(name: str, page: str, *, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    """A pod `name` on a real node serving `page` (one line) at `/index.html` on its port `http`
    (:data:`WEB_PORT`), Python's own HTTP server, until deleted, Ready once it listens; `spec`, more
    of its spec."""
    script = f"echo {page} > /tmp/index.html; cd /tmp; exec python3 -u -m http.server {WEB_PORT}"
    pod = real_pod(
        name,
        ["sh", "-c", script],
        cpu="50m",
        memory="32Mi",
        memory_limit="128Mi",
        image=RECIPES["python"].name,
        labels=labels,
        **spec,
    )
    main = pod["spec"]["containers"][0]
    main["ports"] = [{"name": "http", "containerPort": WEB_PORT}]
    # Ready once it listens: until then a client through a Service gets nothing (its endpoint is
    # not ready), rather than a connection its relay cannot complete.
    main["readinessProbe"] = {"tcpSocket": {"port": "http"}, "periodSeconds": 1}
    return pod
