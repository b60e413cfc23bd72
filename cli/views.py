"""`armada-bridge queues | clusters | gangs | why POD`: what the bridge decided, read from the cluster.

Everything comes from the front cluster's objects (the bridge keeps its state there), so these
commands work against any front cluster a kubeconfig reaches. What they say is read by
extender/overview.py, which the dashboard shares; here it is listed with the API and printed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from cli.errors import NotFound
from extender import overview, protocols

Row = Sequence[str]


def table(rows: list[Row]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


#: the namespace of a pod's ServiceAccount, where the CLI runs in a pod
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def _in_cluster(kubeconfig: str | None) -> bool:
    return (
        not (kubeconfig or os.environ.get("KUBECONFIG"))
        and not Path(k8s_config.KUBE_CONFIG_DEFAULT_LOCATION).expanduser().exists()
        and bool(os.environ.get("KUBERNETES_SERVICE_HOST"))
    )


def front_client(kubeconfig: str | None, context: str | None = None) -> k8s.ApiClient:
    """The front cluster's client, as kubectl finds it: `kubeconfig`, else $KUBECONFIG, else
    ~/.kube/config (its `context`, else its current one), else (in a pod) its ServiceAccount's."""
    if _in_cluster(kubeconfig):
        configuration = k8s.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)
        return k8s.ApiClient(configuration)
    path = kubeconfig or os.environ.get("KUBECONFIG")
    return k8s_config.new_client_from_config(config_file=path, context=context)


def context_namespace(kubeconfig: str | None, context: str | None = None) -> str:
    """The namespace kubectl would use: the kubeconfig context's, else (in a pod) its own, else
    `default`."""
    if _in_cluster(kubeconfig):
        found = SERVICE_ACCOUNT_NAMESPACE.read_text().strip() if SERVICE_ACCOUNT_NAMESPACE.exists() else ""
        return found or "default"
    path = kubeconfig or os.environ.get("KUBECONFIG")
    contexts, current = k8s_config.list_kube_config_contexts(config_file=path)
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else current
    return str(((chosen or {}).get("context") or {}).get("namespace") or "default")


def _namespace_labels(core: k8s.CoreV1Api, namespace: str) -> dict[str, str] | None:
    """A namespace's labels; None where these credentials may not read the namespace (a tenant
    with rights in the namespace only)."""
    try:
        return dict(core.read_namespace(namespace).metadata.labels or {})
    except ApiException as e:
        if e.status == 403:
            return None
        raise


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


def data(value: Any) -> Any:
    """Dataclasses (and their enums, tuples) as plain JSON data."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(o: Any) -> Any:
    return asdict(o) if is_dataclass(o) and not isinstance(o, type) else str(o)


def rendered(value: Any, output: str, text: Callable[[], str]) -> str:
    """`value` as `-o` asks (`json`, `yaml`), else the table `text` makes (`""`, `wide`)."""
    if output == "json":
        return json.dumps(data(value), indent=2)
    if output == "yaml":
        return yaml.safe_dump(data(value), sort_keys=False).rstrip()
    return text()


def queues(api: k8s.ApiClient, output: str = "") -> str:
    """The queues (`-o wide`: every column is already shown)."""
    found = overview.queue_rows(_custom(api, keys.GROUP, "v1alpha1", "queues"))
    return rendered(found, output, lambda: _queues_table(found))


def _queues_table(found: list[overview.QueueRow]) -> str:
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
    for q in found:
        rows.append(
            (
                q.name,
                f"{q.priority_factor:g}",
                f"{q.fair_share:.3f}",
                f"{q.adjusted_fair_share:.3f}",
                f"{q.actual_share:.3f}",
                str(q.queued),
                str(q.running),
                "yes" if q.cordoned else "no",
                ", ".join(f"{k}={v}" for k, v in q.allocated.items()) or "-",
            )
        )
    return table(rows)


def clusters(api: k8s.ApiClient, output: str = "") -> str:
    """The remote clusters (`-o wide`: with the Ready condition's message)."""
    found = overview.cluster_rows(_custom(api, keys.GROUP, "v1alpha1", "remoteclusters"))
    return rendered(found, output, lambda: _clusters_table(found, wide=output == "wide"))


def _clusters_table(found: list[overview.ClusterRow], wide: bool) -> str:
    rows: list[Row] = [
        ("CLUSTER", "READY", "REASON", "NODES", "CPU", "MEMORY", "GPU", "PODS", "CORDONED", "LAST-SYNC")
        + (("MESSAGE",) if wide else ())
    ]
    for c in found:
        rows.append(
            (
                c.name,
                c.ready,
                c.reason or "-",
                str(c.nodes),
                c.allocatable.get("cpu", "-"),
                c.allocatable.get("memory", "-"),
                c.allocatable.get(keys.GPU_RESOURCE, "0"),
                str(c.pods),
                "yes" if c.cordoned else "no",
                c.last_heartbeat or "-",
            )
            + ((c.message or "-",) if wide else ())
        )
    return table(rows)


def _podgroups(api: k8s.ApiClient, namespace: str | None) -> dict[str, dict[tuple[str, str], Any]]:
    out: dict[str, dict[tuple[str, str], Any]] = {}
    for p in protocols.WITH_PODGROUPS:
        assert p.resource is not None
        items = _custom(api, p.resource.group, p.resource.version, p.resource.plural, namespace)
        out[p.name] = {(pg["metadata"]["namespace"], pg["metadata"]["name"]): pg for pg in items}
    return out


#: the queue shown for a pod whose queue only its namespace's label could name, which cannot be read
UNKNOWN_QUEUE = "?"


def _pod_views(api: k8s.ApiClient, namespace: str | None) -> list[overview.PodView]:
    """The pods of `namespace` (None: all) as the extender reads them. Where the namespace cannot
    be read (a tenant's rights end at its namespace), a pod that names no queue itself shows
    UNKNOWN_QUEUE: its namespace's label may name one."""
    core = k8s.CoreV1Api(api)
    raw = core.list_namespaced_pod(namespace) if namespace else core.list_pod_for_all_namespaces()
    pods = [api.sanitize_for_serialization(p) for p in raw.items]
    if namespace is None:
        ns_labels = {n.metadata.name: dict(n.metadata.labels or {}) for n in core.list_namespace().items}
        unreadable = False
    else:
        labels = _namespace_labels(core, namespace)
        ns_labels, unreadable = {namespace: labels or {}}, labels is None
    views = overview.read_pods(pods, _podgroups(api, namespace), ns_labels)
    if unreadable:
        views = [replace(v, queue=UNKNOWN_QUEUE) if v.queue is None else v for v in views]
    return views


def gangs(api: k8s.ApiClient, namespace: str | None, output: str = "") -> str:
    """The gangs of `namespace` (None: every namespace; `-o wide`: with their first pod's creation
    and their pods)."""
    found = [u for u in overview.units(_pod_views(api, namespace)) if u.kind == "gang"]
    return rendered(found, output, lambda: _gangs_table(found, wide=output == "wide"))


def _gangs_table(found: list[overview.Unit], wide: bool) -> str:
    rows: list[Row] = [
        ("NAMESPACE", "GANG", "QUEUE", "PRESENT", "CLUSTER", "STATE") + (("CREATED", "PODS") if wide else ())
    ]
    for u in found:
        size = f"{u.present}/{u.size}" + (" +reservation" if u.reservation else "")
        row = (u.namespace, u.name, u.queue, size, ",".join(u.clusters) or "-", u.state)
        rows.append(row + ((u.created or "-", ",".join(u.pods)) if wide else ()))
    return table(rows) if len(rows) > 1 else "no gangs"


def why(api: k8s.ApiClient, target: str, namespace: str, output: str = "") -> str:
    """Why a pod (`NAME`, `pod/NAME`) waits or where it went; for any other object (`KIND/NAME`,
    as kubectl names it: `rayjob/x`, `pytorchjob.kubeflow.org/y`), the same for each of its pods
    (those it owns, through ownerReferences)."""
    kind, _, name = target.rpartition("/")
    if kind.lower() in ("", "pod", "pods", "po"):
        return _why_pod(api, name, namespace, output)
    from kubernetes.dynamic import DynamicClient

    # The API's kinds as served now: the dynamic client keeps what it discovers in a file, by default
    # one in the temporary directory that later runs trust, where a kind installed since (an
    # operator's CRD) is missing and one removed since is still named.
    with tempfile.TemporaryDirectory(prefix="armada-bridge-") as private:
        resources = DynamicClient(api, cache_file=os.path.join(private, "discovery.json")).resources
        obj = _object(resources, kind, name, namespace)
        pods = _owned_pods(api, resources, obj, namespace)
    stories = _stories(api, pods, namespace)
    what = f"{obj['kind'].lower()} {namespace}/{name}"
    return rendered({"object": what, "pods": stories}, output, lambda: _object_text(what, stories))


def _object_text(what: str, stories: list[overview.Story]) -> str:
    if not stories:
        return f"{what}: no pods (yet): its controller makes them, or waits (its own status says why)"
    phases: dict[str, int] = {}
    for s in stories:
        phases[s.pod.phase] = phases.get(s.pod.phase, 0) + 1
    counts = ", ".join(f"{n} {phase}" for phase, n in sorted(phases.items()))
    lines = [f"{what}: {len(stories)} pod(s): {counts}"]
    for s in stories:
        lines += ["", why_text(s)]
    return "\n".join(lines)


def _object(resources: Any, kind: str, name: str, namespace: str) -> dict[str, Any]:
    """The namespaced object `kind`/`name`, `kind` as kubectl takes it (kind, plural, singular or
    short name, optionally `.group`), found through a dynamic client's `resources`."""
    from kubernetes.dynamic.exceptions import NotFoundError

    want, _, group = kind.lower().partition(".")
    found = [
        r
        for r in resources.search()
        if getattr(r, "namespaced", False)
        and want in {r.kind.lower(), r.name, (r.singular_name or "").lower(), *(r.short_names or [])}
        and "/" not in r.name
        and (not group or r.group == group)
    ]
    if not found:
        raise NotFound(f"no kind of object named {kind!r} is served")
    resource = found[0]
    try:
        return dict(resource.get(name=name, namespace=namespace).to_dict())
    except NotFoundError:
        raise NotFound(f"no {resource.kind} {namespace}/{name}") from None


def _owned_pods(
    api: k8s.ApiClient, resources: Any, obj: Mapping[str, Any], namespace: str
) -> list[dict[str, Any]]:
    """The pods of `namespace` that `obj` owns, directly or through owners of owners."""
    pods = [
        api.sanitize_for_serialization(p) for p in k8s.CoreV1Api(api).list_namespaced_pod(namespace).items
    ]
    root = obj["metadata"]["uid"]
    owned: dict[str, bool] = {}  # uid -> whether `obj` owns it
    objects = {p["metadata"]["uid"]: p for p in pods}

    def owns(uid: str, depth: int = 0) -> bool:
        if uid == root:
            return True
        if uid in owned or depth > 8:
            return owned.get(uid, False)
        owned[uid] = False
        for ref in (objects.get(uid, {}).get("metadata") or {}).get("ownerReferences") or []:
            if ref.get("uid") not in objects and ref.get("uid") != root:
                objects[ref["uid"]] = _owner(resources, ref, namespace)
            if owns(ref["uid"], depth + 1):
                owned[uid] = True
                break
        return owned[uid]

    return sorted((p for p in pods if owns(p["metadata"]["uid"])), key=lambda p: p["metadata"]["name"])


def _owner(resources: Any, ref: Mapping[str, Any], namespace: str) -> dict[str, Any]:
    """An owner reference's object ({} where it cannot be read)."""
    from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError

    try:
        resource = resources.get(api_version=ref["apiVersion"], kind=ref["kind"])
        return dict(resource.get(name=ref["name"], namespace=namespace).to_dict())
    except (DynamicApiError, ResourceNotFoundError, KeyError):
        return {}


def _why_pod(api: k8s.ApiClient, name: str, namespace: str, output: str) -> str:
    core = k8s.CoreV1Api(api)
    try:
        p = api.sanitize_for_serialization(core.read_namespaced_pod(name, namespace))
    except ApiException as e:
        if e.status == 404:
            raise NotFound(f"no pod {namespace}/{name}") from None
        raise
    (story,) = _stories(api, [p], namespace)
    return rendered(story, output, lambda: why_text(story))


def _stories(api: k8s.ApiClient, pods: list[dict[str, Any]], namespace: str) -> list[overview.Story]:
    """Each pod's story: its view (the namespace's labels and PodGroups read once) and Events."""
    core = k8s.CoreV1Api(api)
    labels = _namespace_labels(core, namespace)
    views = overview.read_pods(pods, _podgroups(api, namespace), {namespace: labels or {}})
    out = []
    for p, view in zip(pods, views, strict=True):
        if view.queue is None and labels is None:
            view = replace(view, queue=UNKNOWN_QUEUE)
        selector = f"involvedObject.name={p['metadata']['name']}"
        raw = core.list_namespaced_event(namespace, field_selector=selector).items
        out.append(overview.story(p, view, [api.sanitize_for_serialization(e) for e in raw]))
    return out


def why_text(s: overview.Story) -> str:
    v = s.pod
    lines = [f"pod {v.namespace}/{v.name}: phase {v.phase}"]
    if v.queue is None:
        lines.append(
            "  not managed by armada-bridge: no queue (label armadaproject.io/queue on the pod or namespace, a Volcano PodGroup queue, or kueue.x-k8s.io/queue-name)"
        )
        return "\n".join(lines)
    if v.queue == UNKNOWN_QUEUE:
        lines.append(
            f"  queue: unknown: the pod names none, and its namespace's label {keys.QUEUE_LABEL}, which may, "
            "cannot be read with these credentials"
        )
    else:
        lines.append(f"  queue: {v.queue} (from {v.queue_source.explains})")
    if v.error and v.phase not in overview.TERMINAL_PHASES:  # an ended job's PodGroup may be gone
        lines.append(f"  gang: cannot be read: {v.error}")
    elif v.gang is not None:
        lines.append(
            f"  gang: {v.gang.key} ({v.gang.protocol}), {v.gang.min_member} members"
            + (", with a capacity reservation" if v.gang.min_resources else "")
        )
    if v.cluster:
        lines.append(
            f"  admitted to remote cluster {v.cluster}, node {v.node or '?'}; bound to {v.bound_to or '(not yet)'}"
        )
    if s.waiting:
        lines.append(f"  waiting: {s.waiting}")
    lines.extend(f"  scheduler: {m}" for m in s.scheduler)
    if s.events:
        lines.append("  recent events:")
        lines.extend(f"    {e.type} {e.reason}: {e.message}" for e in s.events[-6:])
    return "\n".join(lines)
