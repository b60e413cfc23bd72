"""`armada-bridge queues | clusters | gangs | why POD`: what the bridge decided, read from the cluster.

Everything comes from the front cluster's objects (the bridge keeps its state there), so these
commands work against any front cluster a kubeconfig reaches.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from extender import intent, protocols
from extender.protocols import volcano
from extender.protocols.base import IntentError

Row = Sequence[str]


def table(rows: list[Row]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def front_client(kubeconfig: str | None) -> k8s.ApiClient:
    """The front cluster's client: `kubeconfig`, else $KUBECONFIG, else ~/.kube/config."""
    path = kubeconfig or os.environ.get("KUBECONFIG")
    return (
        k8s_config.new_client_from_config(config_file=path) if path else k8s_config.new_client_from_config()
    )


def _custom(
    api: k8s.ApiClient, group: str, version: str, plural: str, namespace: str | None = None
) -> list[Any]:
    co = k8s.CustomObjectsApi(api)
    try:
        if namespace is None:
            return list(co.list_cluster_custom_object(group, version, plural)["items"])
        return list(co.list_namespaced_custom_object(group, version, namespace, plural)["items"])
    except ApiException as e:
        if e.status == 404:
            return []  # that CRD is not installed
        raise


def queues(api: k8s.ApiClient) -> str:
    rows: list[Row] = [
        (
            "QUEUE",
            "PRIORITY-FACTOR",
            "FAIR-SHARE",
            "ADJUSTED",
            "ACTUAL",
            "QUEUED",
            "RUNNING",
            "CORDONED",
            "ALLOCATED",
        )
    ]
    for q in sorted(_custom(api, keys.GROUP, "v1alpha1", "queues"), key=lambda q: q["metadata"]["name"]):
        spec, st = q.get("spec") or {}, q.get("status") or {}
        alloc = ", ".join(f"{k}={v}" for k, v in (st.get("allocated") or {}).items()) or "-"
        rows.append(
            (
                q["metadata"]["name"],
                str(spec.get("priorityFactor", 1)),
                f"{st.get('fairShare', 0):.3f}",
                f"{st.get('adjustedFairShare', 0):.3f}",
                f"{st.get('actualShare', 0):.3f}",
                str(st.get("queuedGangs", 0)),
                str(st.get("runningGangs", 0)),
                "yes" if spec.get("cordoned") else "no",
                alloc,
            )
        )
    return table(rows)


def clusters(api: k8s.ApiClient) -> str:
    rows: list[Row] = [
        ("CLUSTER", "READY", "REASON", "NODES", "CPU", "MEMORY", "GPU", "PODS", "CORDONED", "LAST-SYNC")
    ]
    for rc in sorted(
        _custom(api, keys.GROUP, "v1alpha1", "remoteclusters"), key=lambda r: r["metadata"]["name"]
    ):
        st = rc.get("status") or {}
        ready: dict[str, Any] = next((c for c in st.get("conditions") or [] if c.get("type") == "Ready"), {})
        alloc = st.get("allocatable") or {}
        rows.append(
            (
                rc["metadata"]["name"],
                ready.get("status", "Unknown"),
                ready.get("reason", "-"),
                str(st.get("nodeCount", 0)),
                alloc.get("cpu", "-"),
                alloc.get("memory", "-"),
                alloc.get(keys.GPU_RESOURCE, "0"),
                str(st.get("pods", 0)),
                "yes" if (rc.get("spec") or {}).get("cordoned") else "no",
                st.get("lastSyncTime", "-"),
            )
        )
    return table(rows)


def _podgroups(api: k8s.ApiClient, namespace: str | None) -> dict[str, dict[tuple[str, str], Any]]:
    out: dict[str, dict[tuple[str, str], Any]] = {}
    for p in protocols.WITH_PODGROUPS:
        assert p.resource is not None
        items = _custom(api, p.resource.group, p.resource.version, p.resource.plural, namespace)
        out[p.name] = {(pg["metadata"]["namespace"], pg["metadata"]["name"]): pg for pg in items}
    return out


def _intent(
    pod: dict[str, Any], pgs: dict[str, dict[tuple[str, str], Any]], ns_labels: dict[str, str]
) -> tuple[str | None, Any, str]:
    """(queue, gang spec or None, error) of one pod, as the extender reads them."""
    ns = pod["metadata"]["namespace"]
    named = {p: pgs[p].get((ns, name)) for p, name in protocols.podgroup_names(pod).items()}
    queue, _ = intent.queue_of(pod, volcano_podgroup=named.get(volcano.NAME), namespace_labels=ns_labels)
    try:
        gang = protocols.gang_of(pod, named)
    except IntentError as e:
        return queue, None, str(e)
    return queue, gang, ""


def _pods(
    api: k8s.ApiClient, namespace: str | None
) -> tuple[list[dict[str, Any]], dict[str, dict[str, str]]]:
    core = k8s.CoreV1Api(api)
    raw = core.list_namespaced_pod(namespace) if namespace else core.list_pod_for_all_namespaces()
    pods = [api.sanitize_for_serialization(p) for p in raw.items]
    ns_labels = {n.metadata.name: dict(n.metadata.labels or {}) for n in core.list_namespace().items}
    return pods, ns_labels


def gangs(api: k8s.ApiClient, namespace: str | None) -> str:
    pods, ns_labels = _pods(api, namespace)
    pgs = _podgroups(api, namespace)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    info: dict[tuple[str, str], tuple[str | None, Any]] = {}
    for p in pods:
        if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        queue, gang, _ = _intent(p, pgs, ns_labels.get(p["metadata"]["namespace"], {}))
        if queue is None or gang is None:
            continue
        k = (p["metadata"]["namespace"], gang.key)
        groups[k].append(p)
        info[k] = (queue, gang)
    rows: list[Row] = [("NAMESPACE", "GANG", "QUEUE", "PRESENT", "CLUSTER", "STATE")]
    for (ns, key), members in sorted(groups.items()):
        queue, gang = info[(ns, key)]
        assigned = [(m["metadata"].get("annotations") or {}).get(keys.ASSIGNED_CLUSTER) for m in members]
        clusters_ = sorted({str(c) for c in assigned if c})
        running = sum((m.get("status") or {}).get("phase") == "Running" for m in members)
        state = "Running" if running == len(members) else ("Admitted" if clusters_ else "Waiting")
        size = f"{len(members)}/{gang.min_member}" + (" +reservation" if gang.min_resources else "")
        rows.append((ns, key, queue or "-", size, ",".join(clusters_) or "-", state))
    return table(rows) if len(rows) > 1 else "no gangs"


def why(api: k8s.ApiClient, name: str, namespace: str) -> str:
    core = k8s.CoreV1Api(api)
    try:
        p = api.sanitize_for_serialization(core.read_namespaced_pod(name, namespace))
    except ApiException as e:
        if e.status == 404:
            raise ValueError(f"no pod {namespace}/{name}") from None
        raise
    ns_obj = core.read_namespace(namespace)
    queue, gang, error = _intent(p, _podgroups(api, namespace), dict(ns_obj.metadata.labels or {}))
    ann = p["metadata"].get("annotations") or {}
    lines = [f"pod {namespace}/{name}: phase {(p.get('status') or {}).get('phase')}"]
    if queue is None:
        lines.append(
            "  not managed by armada-bridge: no queue (label armadaproject.io/queue on the pod or namespace, a Volcano PodGroup queue, or kueue.x-k8s.io/queue-name)"
        )
        return "\n".join(lines)
    lines.append(f"  queue: {queue}")
    if error:
        lines.append(f"  gang: cannot be read: {error}")
    elif gang is not None:
        lines.append(
            f"  gang: {gang.key} ({gang.protocol}), {gang.min_member} members"
            + (", with a capacity reservation" if gang.min_resources else "")
        )
    cluster = ann.get(keys.ASSIGNED_CLUSTER)
    if cluster:
        lines.append(
            f"  admitted to remote cluster {cluster}, node {ann.get(keys.ASSIGNED_REMOTE_NODE, '?')}; bound to {p['spec'].get('nodeName') or '(not yet)'}"
        )
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={name}").items
    events.sort(
        key=lambda e: e.last_timestamp or e.event_time or e.first_timestamp or e.metadata.creation_timestamp
    )
    waiting = [e for e in events if e.reason == "ArmadaWaiting"]
    if not cluster and waiting:
        lines.append(f"  waiting: {waiting[-1].message}")
    for c in (p.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") != "True" and c.get("message"):
            lines.append(f"  scheduler: {c['message']}")
    if events:
        lines.append("  recent events:")
        lines.extend(f"    {e.type} {e.reason}: {e.message}" for e in events[-6:])
    return "\n".join(lines)
