"""Remote pod status to front pod status (pure)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from armada_bridge import keys
from armada_bridge.objects import Obj

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# The fields of the remote pod's status the front pod shows; its addresses are another matter
# (`routable_addresses`, vkubelet/relay_pods.py).
COPIED = (
    "phase",
    "reason",
    "message",
    "containerStatuses",
    "initContainerStatuses",
    "startTime",
    "qosClass",
)
POD_ADDRESSES = ("podIP", "podIPs")
HOST_ADDRESSES = ("hostIP", "hostIPs")


def _inside(address: Any, networks: Iterable[Network]) -> str | None:
    """The network of `networks` that holds `address` ("not an address" for what is not one)."""
    try:
        ip = ipaddress.ip_address(str(address))
    except ValueError:
        return "not an address"
    return next((str(n) for n in networks if ip.version == n.version and ip in n), None)


def routable_addresses(remote: Obj, excluded: Iterable[Network]) -> tuple[Obj, str]:
    """A Routable cluster's pod shows the remote pod's own addresses, except those inside
    `excluded` (the front's pod and Service ranges: there they would name some front pod); with
    them, what was left out and why ("" for nothing)."""
    rs = remote.get("status") or {}
    excluded = list(excluded)
    out: Obj = {}
    why = ""
    for single, plural in (POD_ADDRESSES, HOST_ADDRESSES):
        addresses = [rs.get(single), *(a.get("ip") for a in rs.get(plural) or [])]
        clash = next(((a, n) for a in addresses if a and (n := _inside(a, excluded))), None)
        out[single] = None if clash else rs.get(single)
        out[plural] = None if clash else rs.get(plural)
        if clash and not why:
            why = f"{single} {clash[0]} is inside the front's range {clash[1]}"
    return out, why


def marker(cluster: str, created: str) -> Obj:
    """The front pod condition saying the remote pod exists (created at `created`)."""
    return {
        "type": keys.REMOTE_POD_CONDITION,
        "status": "True",
        "reason": "Created",
        "message": f"running as a pod of remote cluster {cluster}",
        "lastTransitionTime": created,
    }


def is_pending(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in (None, "Pending")


def has_marker(front: Obj) -> bool:
    return any(
        c.get("type") == keys.REMOTE_POD_CONDITION and c.get("status") == "True"
        for c in front.get("status", {}).get("conditions") or []
    )


def unschedulable_since(remote: Obj) -> str | None:
    """When a remote pod never scheduled was created, if its scheduler says it cannot place it."""
    if (remote.get("spec") or {}).get("nodeName") or (remote.get("status") or {}).get("phase") not in (
        None,
        "Pending",
    ):
        return None
    for c in (remote.get("status") or {}).get("conditions") or []:
        if (
            c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            return str(remote["metadata"].get("creationTimestamp") or "") or None
    return None


def given_back_patch(front: Obj, cluster: str, message: str, now: str) -> Obj:
    """The front pod waits again (Pending, no remote pod): its marker says the remote pod is gone
    without having run, so a new one may be created where the extender places it next."""
    conditions = [
        c
        for c in front.get("status", {}).get("conditions") or []
        if c.get("type") != keys.REMOTE_POD_CONDITION
    ]
    conditions.append(
        {
            "type": keys.REMOTE_POD_CONDITION,
            "status": "False",
            "reason": "RemoteUnschedulable",
            "message": f"remote cluster {cluster}: {message}"[:1000],
            "lastTransitionTime": now,
        }
    )
    return {"status": {"phase": "Pending", "conditions": conditions}}


def front_status(remote: Obj, cluster: str, addresses: Obj) -> Obj:
    """The status the front pod should show for `remote` (only the fields the vkubelet owns), with
    `addresses` (podIP(s), hostIP(s); None each for none)."""
    rs = remote.get("status") or {}
    out: Obj = {f: rs.get(f) for f in COPIED}
    out.update({f: addresses.get(f) for f in (*POD_ADDRESSES, *HOST_ADDRESSES)})
    conditions = [c for c in rs.get("conditions") or [] if c.get("type") != keys.REMOTE_POD_CONDITION]
    conditions.append(marker(cluster, remote["metadata"].get("creationTimestamp", "")))
    out["conditions"] = conditions
    if not out["phase"]:
        out["phase"] = "Pending"
    return out


def _pruned(value: Any) -> Any:
    """`value` without null fields, at any depth: the API server writes some fields we leave out as
    null (a condition's lastProbeTime) and drops others we send as null, so both sides compare
    alike only without them."""
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def status_patch(front: Obj, remote: Obj, cluster: str, addresses: Obj) -> Obj | None:
    """A merge patch for the front pod's status subresource, None when it already matches (a
    write that changes nothing still costs the API server a whole write's work)."""
    want = front_status(remote, cluster, addresses)
    have = front.get("status") or {}
    changed = {k: v for k, v in want.items() if _pruned(have.get(k)) != _pruned(v)}
    if not changed:
        return None
    return {"status": changed}


def failed_patch(front: Obj, reason: str, message: str, now: str) -> Obj:
    """Mark the front pod Failed (terminal: the vkubelet never starts it again)."""
    statuses = []
    for cs in front.get("status", {}).get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "terminated" not in state:
            cs = {
                **cs,
                "ready": False,
                "started": False,
                "state": {
                    "terminated": {
                        "exitCode": 137,
                        "reason": reason,
                        "message": message,
                        "startedAt": (state.get("running") or {}).get("startedAt"),
                        "finishedAt": now,
                    }
                },
            }
        statuses.append(cs)
    conditions = [
        {**c, "status": "False", "reason": reason, "lastTransitionTime": now}
        if c.get("type") in ("Ready", "ContainersReady") and c.get("status") == "True"
        else c
        for c in front.get("status", {}).get("conditions") or []
    ]
    patch: Obj = {"phase": "Failed", "reason": reason, "message": message, "conditions": conditions}
    if statuses:
        patch["containerStatuses"] = statuses
    return {"status": patch}
