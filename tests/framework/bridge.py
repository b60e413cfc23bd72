"""Helpers for end-to-end tests: managed pods, and what the front and remote clusters say of them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.contract.capacity import open_to_all
from armada_bridge.contract.pods import pod_usage
from armada_bridge.core.quantities import parse_quantity
from bench.chaos.invariants import pod_state
from devenv.pods import busybox_pod
from tests.framework.kube import role_binding, wait_for

Api = Callable[[str], k8s.ApiClient]


def pod(
    name: str,
    *,
    queue: str | None,
    cpu: str = "1",
    memory: str = "1Gi",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    scheduler: str = "default-scheduler",
    priority_class: str | None = None,
) -> dict[str, Any]:
    """A managed pod (its queue label where `queue` names one) of one busybox container."""
    lab = dict(labels or {})
    if queue is not None:
        lab[keys.QUEUE_LABEL] = queue
    return busybox_pod(
        name,
        cpu=cpu,
        memory=memory,
        labels=lab,
        annotations=annotations or {},
        schedulerName=scheduler,
        **({"priorityClassName": priority_class} if priority_class else {}),
    )


def create_podgroup(
    api: Api, namespace: str, group: str, version: str, name: str, spec: dict[str, Any]
) -> None:
    """A PodGroup `name` of `group`/`version` with `spec` in the front's `namespace`."""
    k8s.CustomObjectsApi(api("front")).create_namespaced_custom_object(
        group,
        version,
        namespace,
        "podgroups",
        {"apiVersion": f"{group}/{version}", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec},
    )


def label_namespace_queue(api: Api, namespace: str, queue: str | None = None) -> None:
    """Label the front namespace `armadaproject.io/queue` (default: its own queue, the `namespace`
    fixture's): pods that name no queue take it, as an admin sets a team's namespace up."""
    k8s.CoreV1Api(api("front")).patch_namespace(
        namespace, {"metadata": {"labels": {keys.QUEUE_LABEL: queue or namespace}}}
    )


def front_pods(api: Api, namespace: str, selector: str = "") -> list[Any]:
    return list(k8s.CoreV1Api(api("front")).list_namespaced_pod(namespace, label_selector=selector).items)


def running_pods(api: Api, namespace: str, selector: str = "") -> list[Any]:
    """The front pods (matching `selector`) in phase Running."""
    return [p for p in front_pods(api, namespace, selector) if p.status.phase == "Running"]


@contextmanager
def cordoned(api: Api, nodes: list[tuple[str, str]]) -> Iterator[None]:
    """These (cluster, node)s cordoned for the block, uncordoned after."""
    for cluster, node in nodes:
        k8s.CoreV1Api(api(cluster)).patch_node(node, {"spec": {"unschedulable": True}})
    try:
        yield
    finally:
        for cluster, node in nodes:
            k8s.CoreV1Api(api(cluster)).patch_node(node, {"spec": {"unschedulable": False}})


def cluster_of(p: Any) -> str | None:
    return (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)


ENDED = ("Succeeded", "Failed")


def pod_in_phase(core: Any, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 120) -> Any:
    """Pod `name` once its phase is one of `phases` (`core`: a CoreV1Api of its cluster)."""

    def probe() -> Any:
        p = core.read_namespaced_pod(name, namespace)
        return p if p.status.phase in phases else None

    return wait_for(f"pod {namespace}/{name} {'/'.join(phases)}", probe, timeout=timeout)


def wait_running(api: Api, namespace: str, count: int, selector: str = "", timeout: float = 90) -> list[Any]:
    def probe() -> list[Any] | None:
        pods = front_pods(api, namespace, selector)
        running = [p for p in pods if p.status.phase == "Running"]
        return running if len(running) >= count else None

    try:
        return wait_for(f"{count} front pods Running in {namespace}", probe, timeout=timeout)
    except AssertionError as e:  # say where each pod that does not run got stuck
        stuck = [p for p in front_pods(api, namespace, selector) if p.status.phase != "Running"]
        lines = [f"{p.metadata.name}: {pod_state(p)}" for p in stuck[:20]]
        raise AssertionError("\n".join([str(e), f"{len(stuck)} not Running:", *lines])) from None


def events_for(api: Api, namespace: str, name: str) -> list[str]:
    evs = (
        k8s.CoreV1Api(api("front"))
        .list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}")
        .items
    )
    return [f"{e.reason}: {e.message}" for e in evs]


def remote_pods(api: Api, cluster: str, namespace: str) -> list[Any]:
    return list(k8s.CoreV1Api(api(cluster)).list_namespaced_pod(namespace).items)


REMOTES = ("remote-1", "remote-2")


def free_in_remotes(api: Api, resource: str = "cpu", clusters: tuple[str, ...] = REMOTES) -> int:
    """Whole units of `resource` free on the remote clusters' schedulable nodes (allocatable minus
    what live pods take), so a test can size itself to whatever else runs on the environment.
    Namespaces being deleted (earlier tests) are waited for first: their pods are going."""
    free = sum(sum(nodes.values()) for nodes in free_by_node(api, resource, clusters).values())
    return max(0, free) // 1000


def free_by_node(
    api: Api, resource: str = "cpu", clusters: tuple[str, ...] = REMOTES
) -> dict[str, dict[str, int]]:
    """cluster -> schedulable node open to ordinary pods (not the tainted real nodes) -> milli-units
    of `resource` free on it (allocatable minus what live pods take), once earlier tests'
    namespaces are gone."""
    wait_settled(api)
    out: dict[str, dict[str, int]] = {}
    for cluster in clusters:
        core = k8s.CoreV1Api(api(cluster))
        free = {
            n.metadata.name: parse_quantity(n.status.allocatable.get(resource, "0"))
            for n in core.list_node().items
            if open_to_all(api(cluster).sanitize_for_serialization(n))
        }
        for p in core.list_pod_for_all_namespaces().items:
            if p.spec.node_name in free and p.status.phase not in ("Succeeded", "Failed"):
                free[p.spec.node_name] -= pod_usage(api(cluster).sanitize_for_serialization(p)).get(
                    resource, 0
                )
        out[cluster] = free
    return out


def gang_rooms(api: Api, members: int, cpu: int) -> int:
    """How many gangs of `members` pods of `cpu` CPUs each, at most one such pod per node (`cpu` is
    over half a node), fit in the remotes now, each gang in one cluster."""
    return sum(
        sum(1 for free in nodes.values() if free >= cpu * 1000) // members
        for nodes in free_by_node(api).values()
    )


def wait_settled(api: Api, timeout: float = 300) -> None:
    """Wait until no namespace is being deleted in any cluster (what it held is then free)."""

    def terminating() -> list[str]:
        return [
            f"{c}/{ns.metadata.name}"
            for c in ("front", *REMOTES)
            for ns in k8s.CoreV1Api(api(c)).list_namespace().items
            if ns.status.phase == "Terminating"
        ]

    wait_for(
        "namespaces of earlier tests deleted", lambda: not terminating() or None, timeout=timeout, interval=1
    )


def service_account_token(api: Api, namespace: str, name: str, role: str | None) -> str:
    """A ServiceAccount's token; with `role`, that ClusterRole in `namespace` (a RoleBinding)."""
    admin = api("front")
    core_api = k8s.CoreV1Api(admin)
    core_api.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    if role:
        bind_cluster_role(api, namespace, name, role)
    token = core_api.create_namespaced_service_account_token(
        name, namespace, {"spec": {"expirationSeconds": 1800}}
    )
    return str(token.status.token)


def bind_cluster_role(api: Api, namespace: str, account: str, role: str) -> None:
    """The ClusterRole `role` to the ServiceAccount `account` in `namespace` (a RoleBinding)."""
    k8s.RbacAuthorizationV1Api(api("front")).create_namespaced_role_binding(
        namespace, role_binding(f"{account}-{role}", role, account, namespace)
    )
