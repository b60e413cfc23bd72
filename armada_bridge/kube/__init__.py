"""A small asyncio Kubernetes client on aiohttp: REST calls, watches, informers."""

from armada_bridge.kube.client import ApiError, Kube, KubeConfig
from armada_bridge.kube.kubeconfig import KubeconfigError, load_config
from armada_bridge.kube.resources import (
    CONFIGMAPS,
    EVENTS,
    LEASES,
    NAMESPACES,
    NODES,
    PODS,
    SECRETS,
    SERVICEACCOUNTS,
    SERVICES,
    Resource,
)

__all__ = [
    "CONFIGMAPS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NODES",
    "PODS",
    "SECRETS",
    "SERVICEACCOUNTS",
    "SERVICES",
    "ApiError",
    "Kube",
    "KubeConfig",
    "KubeconfigError",
    "Resource",
    "load_config",
]
