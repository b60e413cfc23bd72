"""`armada-bridge remove-clusters`: delete RemoteClusters and wait until the vkubelet has cleaned
each one up (its remote pods and mirrors deleted, then its front pods failed with
RemoteClusterRemoved and its virtual node deleted, then its finalizer removed: vkubelet/manager.py). Run before the vkubelet itself goes, as the chart's
pre-delete hook does on `helm uninstall`: deleted with it, nothing would remove the finalizers and
the remote pods would run on, unseen."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from armada_bridge import keys
from armada_bridge.kube.resources import REMOTECLUSTERS


class RemovalError(RuntimeError):
    """The removal cannot be done, or was not done in time; the message says which and why."""


def _clusters(api: k8s.ApiClient) -> dict[str, dict[str, Any]]:
    try:
        items = k8s.CustomObjectsApi(api).list_cluster_custom_object(
            REMOTECLUSTERS.group, REMOTECLUSTERS.version, REMOTECLUSTERS.plural
        )["items"]
    except ApiException as e:
        if e.status == 404:
            return {}  # the CRD is not installed: no remote clusters
        raise
    return {rc["metadata"]["name"]: rc for rc in items}


def _why(api: k8s.ApiClient, rc: dict[str, Any]) -> str:
    """Where a cluster's cleanup stands: what blocks it (its CleanupBlocked condition), else the
    front pods on its virtual node not failed yet, else that the vkubelet has not finished."""
    name = rc["metadata"]["name"]
    for c in (rc.get("status") or {}).get("conditions") or []:
        if c.get("type") == "CleanupBlocked" and c.get("status") == "True":
            return f"blocked: {c.get('reason')}: {c.get('message')}"
    selector = f"spec.nodeName={name},status.phase!=Failed,status.phase!=Succeeded"
    pods = k8s.CoreV1Api(api).list_pod_for_all_namespaces(field_selector=selector, limit=500)
    if pods.items:
        more = "+" if pods.metadata._continue else ""
        return f"{len(pods.items)}{more} front pod(s) on its node not stopped yet"
    held = ", ".join(rc["metadata"].get("finalizers") or []) or "none"
    return f"waiting for the vkubelet to finish (finalizers: {held})"


def remove_clusters(
    api: k8s.ApiClient,
    names: Sequence[str] | None,
    timeout: float,
    say: Callable[[str], None] = print,
    every: float = 10.0,
) -> list[str]:
    """Delete the named RemoteClusters (all when `names` is None) and wait until each is gone.
    Returns the names removed; raises RemovalError naming what is left, and why, after `timeout`."""
    present = _clusters(api)
    if names is None:
        chosen = sorted(present)
    else:
        unknown = sorted(set(names) - set(present))
        if unknown:
            raise RemovalError(
                f"no RemoteCluster named {', '.join(unknown)} (present: {', '.join(sorted(present)) or 'none'})"
            )
        chosen = sorted(set(names))
    if not chosen:
        say("no remote clusters to remove")
        return []
    co = k8s.CustomObjectsApi(api)
    for name in chosen:
        unguarded = keys.REMOTECLUSTER_FINALIZER not in (present[name]["metadata"].get("finalizers") or [])
        say(
            f"deleting RemoteCluster {name}" + (" (no vkubelet cleanup finalizer on it)" if unguarded else "")
        )
        try:
            co.delete_cluster_custom_object(
                REMOTECLUSTERS.group, REMOTECLUSTERS.version, REMOTECLUSTERS.plural, name
            )
        except ApiException as e:
            if e.status != 404:
                raise
    started = time.monotonic()
    shown = started
    while True:
        left = {n: rc for n, rc in _clusters(api).items() if n in chosen}
        if not left:
            say(
                f"removed {len(chosen)} remote cluster(s) in {time.monotonic() - started:.0f}s: {', '.join(chosen)}"
            )
            return chosen
        now = time.monotonic()
        if now - started > timeout:
            why = "; ".join(f"{n}: {_why(api, rc)}" for n, rc in sorted(left.items()))
            raise RemovalError(
                f"{len(left)} remote cluster(s) not removed after {timeout:.0f}s: {why}. Their remote pods "
                f"keep running until the vkubelet cleans them up; removing the finalizer "
                f"{keys.REMOTECLUSTER_FINALIZER} by hand lets a cluster go without that cleanup"
            )
        if now - shown >= every:
            shown = now
            for n, rc in sorted(left.items()):
                say(f"{n}: {_why(api, rc)} ({now - started:.0f}s)")
        time.sleep(1.0)
