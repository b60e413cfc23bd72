"""Kubernetes resource types and their REST paths."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from armada_bridge import keys


@dataclass(frozen=True)
class Resource:
    group: str  # "" for the core group
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The REST path. Namespace and name are single path segments, whatever a hostile object
        says: a value that could climb or add segments ("..", "a/b") is refused (ValueError)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{segment(namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{segment(name)}"
            if subresource:
                base += f"/{subresource}"
        return base


def segment(value: str) -> str:
    """One URL path segment: percent-encoded; "." and ".." and "/" refused (ValueError)."""
    if value in (".", "..") or "/" in value or not value:
        raise ValueError(f"not a valid object name or namespace: {value!r}")
    return quote(value, safe="")


PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
SECRETS = Resource("", "v1", "secrets", "Secret")
SERVICES = Resource("", "v1", "services", "Service")
SERVICEACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount")
EVENTS = Resource("events.k8s.io", "v1", "events", "Event")
CORE_EVENTS = Resource("", "v1", "events", "Event")
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease")
JOBS = Resource("batch", "v1", "jobs", "Job")

# Custom resources the bridge reads or writes.
QUEUES = Resource(keys.GROUP, "v1alpha1", "queues", "Queue", namespaced=False)
REMOTECLUSTERS = Resource(keys.GROUP, "v1alpha1", "remoteclusters", "RemoteCluster", namespaced=False)
VOLCANO_PODGROUPS = Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "PodGroup")
COSCHEDULING_PODGROUPS = Resource("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup")
# The native Workload API's PodGroup (beta in 1.37, served when the GenericWorkload gate is on).
NATIVE_PODGROUPS = Resource("scheduling.k8s.io", "v1beta1", "podgroups", "PodGroup")
