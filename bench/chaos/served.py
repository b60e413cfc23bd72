"""The soak's relays (RemoteCluster network `Relay`, the default): a share of its single pods is
selected by a front Service, so relays come and go with them, and one web server on a remote real
node behind a front Service of its own is fetched all along through the front API server's service
proxy, which dials the address the front pod shows: its relay's."""

from __future__ import annotations

import uuid
from typing import Any

from armada_bridge import keys
from bench.chaos.context import QUEUES, SoakContext
from devenv import pods

SERVED_LABEL = "chaos-served"  # of the single pods the Service `chaos-served` selects
WEB = "chaos-web"  # the web server's pod and its Service


def services(ctx: SoakContext) -> None:
    """The soak's two Services and, where the environment has real nodes, its web server, in the
    first queue (not preemptible: the queues' pods are, and they never go to real nodes)."""
    for name, selector in ((SERVED_LABEL, {SERVED_LABEL: "yes"}), (WEB, {"app": WEB})):
        ctx.core["front"].create_namespaced_service(
            ctx.ns,
            {
                "metadata": {"name": name},
                "spec": {"selector": selector, "ports": [{"port": 80, "targetPort": pods.WEB_PORT}]},
            },
        )
    if ctx.env.real_nodes() is None:
        return
    ctx.web_page = uuid.uuid4().hex
    body = pods.web_pod(WEB, ctx.web_page, labels={"app": WEB, keys.QUEUE_LABEL: QUEUES[0]})
    ctx.core["front"].create_namespaced_pod(ctx.ns, body)


def fetched(ctx: SoakContext) -> str | None:
    """What is wrong with the web server's page fetched through its front Service (None: nothing,
    the fetch counted; or no server, or not Running yet, not a fault of the relays)."""
    if not ctx.web_page:
        return None
    pod = ctx.core["front"].read_namespaced_pod(WEB, ctx.ns)
    if pod.status.phase != "Running" or not pod.status.pod_ip:
        return None
    path = f"/api/v1/namespaces/{ctx.ns}/services/{WEB}:80/proxy/index.html"
    try:
        page = ctx.apis["front"].call_api(
            path, "GET", response_type="str", auth_settings=["BearerToken"], _request_timeout=10
        )[0]
    except Exception as e:
        return f"{WEB} at {pod.status.pod_ip}: {type(e).__name__}: {str(e)[:200]}"
    if str(page).strip() != ctx.web_page:
        return f"{WEB} answered {str(page)[:100]!r}"
    ctx.report.fetches += 1
    return None


def relay_addresses(ctx: SoakContext) -> dict[str, str]:
    """front pod UID -> the address of its relay (Running relays with one)."""
    relays = ctx.core["front"].list_namespaced_pod(keys.SYSTEM_NAMESPACE, label_selector=keys.RELAY_FOR).items
    return {r.metadata.labels[keys.RELAY_FOR]: r.status.pod_ip for r in relays if r.status.pod_ip}


def shown(pods_: list[Any]) -> dict[str, tuple[str, str]]:
    """front pod UID -> (its name, the address it shows) of the pods placed in a remote cluster."""
    return {
        p.metadata.uid: (p.metadata.name, p.status.pod_ip)
        for p in pods_
        if p.status.pod_ip and (p.metadata.annotations or {}).get(keys.ASSIGNED_CLUSTER)
    }
