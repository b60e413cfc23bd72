"""Binding a pod to a node (`pods/binding`), the one way the bridge binds: for the front
kube-scheduler through the extender's /bind verb, and by itself for an admitted pod the scheduler
keeps refusing (controller: BIND_REFUSED_AFTER).

Strict by construction: a bind is reported done only when the pod *with that UID* is bound to that
node. Anything else is an error, so kube-scheduler forgets the pod it assumed on the node and tries
the pod again: its cache never keeps a pod that is not there (a deleted pod counted on a node, the
phantom of docs/performance.md, cannot come from a bind)."""

from __future__ import annotations

import aiohttp

from armada_bridge.kube import PODS, ApiError, Kube


async def bind(front: Kube, namespace: str, name: str, uid: str, node: str) -> str | None:
    """Bind pod `namespace/name` of UID `uid` to `node` (the UID a precondition). None when it is
    bound there, by this call or before it (a 409 "already assigned" is checked with a read);
    otherwise why not."""
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    try:
        await front.request("POST", PODS.path(namespace, name, "binding"), body=body)
        return None
    except ApiError as e:
        if not e.conflict:
            return str(e)
        refused = str(e)
    except (aiohttp.ClientError, TimeoutError) as e:
        # Perhaps bound, perhaps not: an error either way (if it was bound, the scheduler sees the
        # pod bound and stops trying).
        return f"binding not confirmed: {e!r}"
    try:
        pod = await front.get(PODS, name, namespace)
    except (ApiError, aiohttp.ClientError, TimeoutError) as e:
        return f"{refused}; then reading the pod: {e}"
    if pod["metadata"].get("uid") == uid and (pod.get("spec") or {}).get("nodeName") == node:
        return None
    return refused
