"""Which front pods get a relay, and the relay pod itself (pure).

In a RemoteCluster's `Relay` network mode (the default) a front pod bound to its virtual node shows
no address of the remote cluster: when a front Service selects it, it shows the address of a relay
pod in the front (vkubelet/relays.py makes them). A relay is Debian's socat, one container per port
the front may dial: each accepted connection is passed, by an HTTP CONNECT that names the front
pod's UID and the port, to the vkubelet's relay endpoint (vkubelet/relay_server.py), which carries it
to the remote pod through the remote API server. The relay holds no credential of any cluster: it
shows the vkubelet a token of its own (its annotation, readable only in the bridge's namespace).
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.objects import Obj, ObjView

RELAY_USER = "relay"  # the user name of the relay's Basic proxy credentials (the token is the password)
RELAY_RUN_AS = 65532  # the bridge image's user
SOCAT = "socat"
# socat forks a process per connection: a few MiB each.
CONTAINER_REQUESTS = {"cpu": "5m", "memory": "8Mi"}
CONTAINER_LIMITS = {"memory": "128Mi"}
# The front pod's status fields that say where it is reached.
ADDRESS_FIELDS = ("podIP", "podIPs", "hostIP", "hostIPs")


@dataclass(frozen=True)
class RelaySettings:
    """How the vkubelet makes relay pods: in `namespace`, running `image` (with socat), dialling
    the vkubelet's relay endpoint at `endpoint_host`:`endpoint_port`, placed with `placement`
    (nodeSelector, tolerations, affinity, priorityClassName: merged into the pod spec)."""

    namespace: str
    image: str
    endpoint_host: str
    endpoint_port: int
    placement: dict[str, Any] = field(default_factory=dict)


def relay_name(front_uid: str) -> str:
    return f"relay-{front_uid}"


def selects(service: ObjView, pod: ObjView) -> bool:
    """A Service of the pod's namespace whose selector (non-empty) the pod's labels match."""
    md, smd = pod["metadata"], service["metadata"]
    if smd.get("namespace") != md.get("namespace"):
        return False
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = md.get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _container_ports(pod: ObjView) -> dict[str, int]:
    """The pod's TCP container ports, by name (unnamed ones under their number)."""
    out: dict[str, int] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        for p in c.get("ports") or []:
            if p.get("protocol", "TCP") == "TCP" and isinstance(p.get("containerPort"), int):
                out[str(p.get("name") or p["containerPort"])] = int(p["containerPort"])
    return out


def relay_ports(pod: ObjView, services: Iterable[ObjView]) -> tuple[int, ...]:
    """The ports a relay of `pod` listens on: none when no Service of `services` selects it, else
    its TCP container ports and the TCP target ports of the Services that select it (a named
    target port is the container port of that name)."""
    selecting = [s for s in services if selects(s, pod)]
    if not selecting:
        return ()
    named = _container_ports(pod)
    ports = set(named.values())
    for s in selecting:
        for p in (s.get("spec") or {}).get("ports") or []:
            if p.get("protocol", "TCP") != "TCP":
                continue
            target = p.get("targetPort", p.get("port"))
            if isinstance(target, int):
                ports.add(target)
            elif isinstance(target, str) and target.isdigit():
                ports.add(int(target))
            elif isinstance(target, str) and target in named:
                ports.add(named[target])
    return tuple(sorted(p for p in ports if 0 < p < 65536))


def spec_hash(ports: tuple[int, ...], settings: RelaySettings) -> str:
    """What a relay was made for: another value, another relay."""
    what = [list(ports), settings.image, settings.endpoint_host, settings.endpoint_port, settings.placement]
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def _container(front_uid: str, port: int, token: str, settings: RelaySettings) -> Obj:
    target = (
        f"PROXY:{settings.endpoint_host}:{front_uid}:{port},proxyport={settings.endpoint_port},"
        f"proxyauth={RELAY_USER}:{token}"
    )
    return {
        "name": f"port-{port}",
        "image": settings.image,
        "imagePullPolicy": "IfNotPresent",
        "command": [SOCAT],
        "args": [f"TCP-LISTEN:{port},fork,reuseaddr,backlog=256", target],
        "ports": [{"containerPort": port, "protocol": "TCP"}],
        "resources": {"requests": dict(CONTAINER_REQUESTS), "limits": dict(CONTAINER_LIMITS)},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def relay_pod(front: ObjView, ports: tuple[int, ...], token: str, settings: RelaySettings) -> Obj:
    """The relay pod of `front` listening on `ports` (not empty). It stays off virtual nodes, has
    no ServiceAccount token and none of the front pod's labels (a front Service would select it)."""
    md = front["metadata"]
    uid = str(md["uid"])
    spec: Obj = {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 1,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RELAY_RUN_AS,
            "runAsGroup": RELAY_RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
            # Ports below 1024 without a capability: a safe sysctl, the pod's own network namespace.
            "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}],
        },
        "containers": [_container(uid, p, token, settings) for p in ports],
        **copy.deepcopy(settings.placement),
    }
    not_virtual = {"key": keys.NODE_TYPE_LABEL, "operator": "NotIn", "values": [keys.NODE_TYPE_VIRTUAL]}
    terms = (
        spec.setdefault("affinity", {})
        .setdefault("nodeAffinity", {})
        .setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
        .setdefault("nodeSelectorTerms", [])
    )
    if not terms:
        terms.append({})
    for term in terms:  # ORed: each says it
        term.setdefault("matchExpressions", []).append(dict(not_virtual))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": relay_name(uid),
            "namespace": settings.namespace,
            "labels": {
                keys.RELAY_FOR: uid,
                keys.COMPONENT_LABEL: keys.RELAY_COMPONENT,
                keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE,
            },
            "annotations": {
                keys.RELAY_FRONT_POD: f"{md['namespace']}/{md['name']}",
                keys.RELAY_TOKEN: token,
                keys.RELAY_SPEC_HASH: spec_hash(ports, settings),
            },
        },
        "spec": spec,
    }


def relay_token(relay: ObjView) -> str:
    return str((relay["metadata"].get("annotations") or {}).get(keys.RELAY_TOKEN) or "")


def is_current(relay: ObjView, ports: tuple[int, ...], settings: RelaySettings) -> bool:
    """The relay was made for these ports and settings, and is not ending."""
    md = relay["metadata"]
    if md.get("deletionTimestamp") or (relay.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return (md.get("annotations") or {}).get(keys.RELAY_SPEC_HASH) == spec_hash(ports, settings)


def relay_addresses(relay: ObjView | None) -> Obj:
    """The addresses a front pod shows for its relay: the relay's pod and host addresses once all
    its containers run (None each before)."""
    st = (relay or {}).get("status") or {}
    statuses = st.get("containerStatuses") or []
    running = bool(statuses) and all("running" in (cs.get("state") or {}) for cs in statuses)
    if not (running and st.get("podIP")):
        return dict.fromkeys(ADDRESS_FIELDS)
    return {f: st.get(f) for f in ADDRESS_FIELDS}
