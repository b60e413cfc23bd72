"""Short constructors for nodes and jobs from Kubernetes-style quantities (tests, bench, callers)."""

from __future__ import annotations

from collections.abc import Mapping

from armada_bridge.core.model import DEFAULT_POOL, Job, Node, NodeSelectorTerm, Taint, Toleration
from armada_bridge.core.quantities import parse_resources


def node(
    name: str,
    cluster: str = "remote-1",
    resources: Mapping[str, str | int | float] | None = None,
    *,
    pool: str = DEFAULT_POOL,
    labels: Mapping[str, str] | None = None,
    taints: tuple[Taint, ...] = (),
    unschedulable: bool = False,
) -> Node:
    return Node(
        name=name,
        cluster=cluster,
        allocatable=parse_resources(resources or {"cpu": "32", "memory": "256Gi"}),
        pool=pool,
        labels=dict(labels or {}),
        taints=taints,
        unschedulable=unschedulable,
    )


def job(
    job_id: str,
    queue: str,
    resources: Mapping[str, str | int | float] | None = None,
    *,
    priority_class: str = "",
    priority: int = 0,
    submit_time: float = 0.0,
    node_selector: Mapping[str, str] | None = None,
    affinity: tuple[NodeSelectorTerm, ...] = (),
    tolerations: tuple[Toleration, ...] = (),
    gang_id: str | None = None,
    gang_cardinality: int = 1,
    gang_node_uniformity_label: str | None = None,
    gang_min_resources: Mapping[str, str | int | float] | None = None,
    pools: tuple[str, ...] | None = None,
    colocation: str | None = None,
) -> Job:
    return Job(
        id=job_id,
        queue=queue,
        requests=parse_resources(resources or {"cpu": "1", "memory": "4Gi"}),
        priority_class=priority_class,
        priority=priority,
        submit_time=submit_time,
        node_selector=dict(node_selector or {}),
        affinity=affinity,
        tolerations=tolerations,
        gang_id=gang_id,
        gang_cardinality=gang_cardinality,
        gang_node_uniformity_label=gang_node_uniformity_label,
        gang_min_resources=parse_resources(gang_min_resources) if gang_min_resources is not None else None,
        pools=pools,
        colocation=colocation,
    )


def gang(
    gang_id: str,
    queue: str,
    cardinality: int,
    resources: Mapping[str, str | int | float] | None = None,
    *,
    present: int | None = None,
    **kwargs: object,
) -> list[Job]:
    """``present`` members (default all) of a gang of ``cardinality``."""
    count = cardinality if present is None else present
    return [
        job(f"{gang_id}-{i}", queue, resources, gang_id=gang_id, gang_cardinality=cardinality, **kwargs)  # type: ignore[arg-type]
        for i in range(count)
    ]
