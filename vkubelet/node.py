"""The virtual node of one remote cluster: its object, capacity, conditions and Lease heartbeat.

As the kubelet does: the Lease is renewed only while the remote API answers; when it stops
answering the node's Ready condition turns False at once (the front node lifecycle controller's
grace period would take minutes), and both recover when it answers again.
"""

from __future__ import annotations

import datetime as dt
import logging

from armada_bridge import keys
from armada_bridge.contract.capacity import Capacity
from armada_bridge.contract.remotecluster import RemoteClusterSpec
from armada_bridge.kube import LEASES, NODES, ApiError, Kube
from armada_bridge.kube.times import micro_time, now, rfc3339
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_SECONDS = 40
KUBELET_VERSION = "v1.37.2-armada-bridge"


def node_labels(name: str, spec: RemoteClusterSpec) -> dict[str, str]:
    return {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/role": "agent",
        "node.kubernetes.io/exclude-from-external-load-balancers": "true",
        **spec.node_labels,
        keys.NODE_TYPE_LABEL: keys.NODE_TYPE_VIRTUAL,
        keys.CLUSTER_LABEL: name,
    }


def bridge_taint() -> Obj:
    return {
        "key": keys.VIRTUAL_NODE_TAINT_KEY,
        "value": keys.VIRTUAL_NODE_TAINT_VALUE,
        "effect": keys.VIRTUAL_NODE_TAINT_EFFECT,
    }


def node_manifest(name: str, spec: RemoteClusterSpec) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": node_labels(name, spec)},
        "spec": {"taints": [bridge_taint()], "unschedulable": spec.cordoned},
    }


def spec_patch(node: Obj, name: str, spec: RemoteClusterSpec) -> Obj | None:
    """A merge patch bringing labels, taint and cordon in line with the spec (None: nothing to do).
    Taints and a manual `kubectl cordon` that others own are kept."""
    md = node["metadata"]
    patch: Obj = {}
    want_labels = node_labels(name, spec)
    have_labels = md.get("labels") or {}
    if any(have_labels.get(k) != v for k, v in want_labels.items()):
        patch.setdefault("metadata", {})["labels"] = want_labels
    taints = (node.get("spec") or {}).get("taints") or []
    if bridge_taint() not in taints:
        others = [t for t in taints if t.get("key") != keys.VIRTUAL_NODE_TAINT_KEY]
        patch.setdefault("spec", {})["taints"] = [*others, bridge_taint()]
    annotations = md.get("annotations") or {}
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    if spec.cordoned and (not unschedulable or keys.CORDONED_BY_SPEC not in annotations):
        patch.setdefault("spec", {})["unschedulable"] = True
        patch.setdefault("metadata", {})["annotations"] = {keys.CORDONED_BY_SPEC: "true"}
    elif not spec.cordoned and keys.CORDONED_BY_SPEC in annotations:
        patch.setdefault("spec", {})["unschedulable"] = False
        patch.setdefault("metadata", {})["annotations"] = {keys.CORDONED_BY_SPEC: None}
    return patch or None


def node_status(
    *,
    ready: bool,
    reason: str,
    message: str,
    capacity: Capacity,
    address: str,
    port: int,
    heartbeat: dt.datetime,
    previous: Obj | None,
) -> Obj:
    """The node's status; a condition keeps its lastTransitionTime while its status is unchanged."""
    before = {c["type"]: c for c in ((previous or {}).get("status") or {}).get("conditions") or []}
    stamp = rfc3339(heartbeat)

    def cond(type_: str, status: str, reason_: str, message_: str) -> Obj:
        prev = before.get(type_)
        since = prev.get("lastTransitionTime") if prev and prev.get("status") == status else stamp
        return {
            "type": type_,
            "status": status,
            "reason": reason_,
            "message": message_,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": since,
        }

    conditions = [
        cond("Ready", "True" if ready else "False", reason, message),
        cond("MemoryPressure", "False", "RemoteClusterManaged", "the remote cluster handles memory pressure"),
        cond("DiskPressure", "False", "RemoteClusterManaged", "the remote cluster handles disk pressure"),
        cond("PIDPressure", "False", "RemoteClusterManaged", "the remote cluster handles PID pressure"),
        cond("NetworkUnavailable", "False", "RemoteClusterManaged", "pods use the remote cluster's network"),
    ]
    # With no usable remote node the node still exists, with nothing to offer.
    allocatable = capacity.allocatable or {"cpu": "0", "memory": "0", "pods": "0"}
    return {
        "conditions": conditions,
        "capacity": capacity.capacity or allocatable,
        "allocatable": allocatable,
        "addresses": [{"type": "InternalIP", "address": address}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "containerRuntimeVersion": "armada-bridge://remote-cluster",
            "osImage": "remote cluster",
            "kernelVersion": "",
            "machineID": "",
            "systemUUID": "",
            "bootID": "",
        },
    }


def status_differs(have: Obj, want: Obj) -> bool:
    """True when anything but heartbeat times changed."""

    def strip(status: Obj) -> Obj:
        s = dict(status)
        s["conditions"] = sorted(
            ({k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in s.get("conditions") or []),
            key=lambda c: str(c.get("type")),
        )
        return {
            k: s.get(k) for k in ("conditions", "capacity", "allocatable", "addresses", "daemonEndpoints")
        }

    return strip(have) != strip(want)


class NodeClient:
    """Writes the virtual node, its status and its Lease to the front cluster."""

    def __init__(self, front: Kube, name: str) -> None:
        self.front = front
        self.name = name
        self._lease_uid: str | None = None

    async def ensure(self, spec: RemoteClusterSpec) -> Obj:
        node = await self.front.get_or_none(NODES, self.name)
        if node is None:
            try:
                node = await self.front.create(NODES, node_manifest(self.name, spec))
                log.info("%s: virtual node created", self.name)
            except ApiError as e:
                if not e.conflict:
                    raise
                node = await self.front.get(NODES, self.name)
        patch = spec_patch(node, self.name, spec)
        if patch:
            node = await self.front.patch(NODES, self.name, patch, uid=node["metadata"]["uid"])
        return node

    async def update_status(self, status: Obj, node_uid: str) -> Obj:
        return await self.front.patch(
            NODES, self.name, {"status": status}, subresource="status", uid=node_uid
        )

    async def renew_lease(self, node_uid: str) -> None:
        t = micro_time(now())
        spec = {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": t}
        if self._lease_uid is None:
            lease = await self.front.get_or_none(LEASES, self.name, LEASE_NAMESPACE)
            self._lease_uid = lease["metadata"]["uid"] if lease is not None else None
        if self._lease_uid is not None:
            try:
                await self.front.patch(
                    LEASES, self.name, {"spec": spec}, LEASE_NAMESPACE, uid=self._lease_uid
                )
                return
            except ApiError as e:
                self._lease_uid = None
                if not (e.not_found or e.uid_mismatch):
                    raise
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name,
                "namespace": LEASE_NAMESPACE,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": node_uid}],
            },
            "spec": {**spec, "acquireTime": t},
        }
        try:
            created = await self.front.create(LEASES, body)
            self._lease_uid = created["metadata"]["uid"]
        except ApiError as e:
            if not e.conflict:
                raise

    async def delete(self) -> None:
        await self.front.delete(NODES, self.name)
        await self.front.delete(LEASES, self.name, LEASE_NAMESPACE)
