"""The RemoteCluster custom resource: its spec (validated at the boundary), and the client of the
remote cluster it names, built from its kubeconfig Secret."""

from __future__ import annotations

import base64
import binascii
import enum
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from armada_bridge import keys
from armada_bridge.kube import SECRETS, ApiError, Kube, load_config


class HostAccess(enum.StrEnum):
    """What to do with a pod that asks for host access (hostPath, hostNetwork/PID/IPC, privileged)."""

    DENY = "Deny"  # the pod fails with reason HostAccessRefused and an Event
    ALLOW = "Allow"


class NetworkMode(enum.StrEnum):
    """How the front reaches the remote cluster's pods (docs/networking.md)."""

    # Front pods show the address of a relay pod in the front, which carries each connection to the
    # remote pod through the remote API server (the safe default: pod networks apart, even alike).
    RELAY = "Relay"
    # The remote pod's own address is copied to the front pod: the clusters' pod networks route to
    # each other and do not overlap (a remote address inside the front's ranges is not copied).
    ROUTABLE = "Routable"


class PodSecurityLevel(enum.StrEnum):
    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


class PodSecurity(BaseModel):
    """Pod Security Admission levels of the remote namespaces the vkubelet creates."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # None: baseline, or privileged when the RemoteCluster allows host access.
    enforce: PodSecurityLevel | None = None
    audit: PodSecurityLevel | None = PodSecurityLevel.RESTRICTED
    warn: PodSecurityLevel | None = None


class SecretRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = ""  # default: "<cluster>-kubeconfig"
    namespace: str = keys.SYSTEM_NAMESPACE
    key: str = keys.KUBECONFIG_SECRET_KEY


class FrontApi(BaseModel):
    """What remote pods see as their Kubernetes API (issue 10): the front's, or the remote's own."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    # True: a pod that mounts a ServiceAccount token gets a token of its front ServiceAccount, the
    # front CA and KUBERNETES_SERVICE_HOST/PORT of the front endpoint. False: the remote cluster's.
    enabled: bool = True
    # The front apiserver as reachable from the remote pods (default: the vkubelet's own front URL).
    host: str = ""
    port: int = Field(default=443, ge=1, le=65535)
    token_expiration_seconds: int = Field(default=3600, ge=600, alias="tokenExpirationSeconds")


class RemoteClusterSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    kubeconfig_secret: SecretRef = Field(default_factory=SecretRef, alias="kubeconfigSecret")
    node_labels: dict[str, str] = Field(default_factory=dict, alias="nodeLabels")
    cordoned: bool = False
    host_access: HostAccess = Field(default=HostAccess.DENY, alias="hostAccess")
    unschedulable_seconds: int = Field(default=120, ge=1, le=86400, alias="unschedulableSeconds")
    front_api: FrontApi = Field(default_factory=FrontApi, alias="frontAPI")
    pod_security: PodSecurity = Field(default_factory=PodSecurity, alias="podSecurity")
    network: NetworkMode = NetworkMode.RELAY

    def namespace_labels(self) -> dict[str, str]:
        """The Pod Security Admission labels of a remote namespace the vkubelet creates."""
        ps = self.pod_security
        enforce = ps.enforce or (
            PodSecurityLevel.PRIVILEGED if self.host_access == HostAccess.ALLOW else PodSecurityLevel.BASELINE
        )
        levels = {
            keys.POD_SECURITY_ENFORCE: enforce,
            keys.POD_SECURITY_AUDIT: ps.audit,
            keys.POD_SECURITY_WARN: ps.warn,
        }
        return {k: str(v) for k, v in levels.items() if v is not None}


def parse_spec(obj: Any) -> RemoteClusterSpec:
    """The spec of a RemoteCluster object; ValueError with a readable message when it is invalid."""
    try:
        spec = RemoteClusterSpec.model_validate(obj.get("spec") or {})
        if not spec.kubeconfig_secret.name:
            spec.kubeconfig_secret.name = f"{obj['metadata']['name']}-kubeconfig"
        return spec
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors())
        raise ValueError(f"invalid spec: {problems}") from e


class RemoteClusterError(ValueError):
    """A RemoteCluster that cannot be used as written (its message says why, for its status)."""


async def kubeconfig_secret(front: Kube, spec: RemoteClusterSpec) -> dict[str, Any]:
    """The Secret holding the remote cluster's kubeconfig. Its resourceVersion tells a changed
    kubeconfig (a new client) from the one a client was built from: read it before building."""
    ref = spec.kubeconfig_secret
    try:
        return await front.get(SECRETS, ref.name, ref.namespace)
    except ApiError as e:
        raise RemoteClusterError(f"Secret {ref.namespace}/{ref.name}: {e.message}") from e


def kubeconfig_fingerprint(spec: RemoteClusterSpec, secret: dict[str, Any] | None) -> str:
    """What a remote client was built from: the Secret named (and its key) and the version read of
    it ("" when missing). Another fingerprint means another kubeconfig, so a new client."""
    version = str(secret["metadata"].get("resourceVersion") or "") if secret is not None else ""
    return f"{spec.kubeconfig_secret.model_dump_json()}@{version}"


def remote_client_of(secret: dict[str, Any], spec: RemoteClusterSpec, *, user_agent: str) -> Kube:
    """A client of the remote cluster from its kubeconfig Secret (see :func:`kubeconfig_secret`)."""
    ref = spec.kubeconfig_secret
    where = f"Secret {ref.namespace}/{ref.name}"
    raw = (secret.get("data") or {}).get(ref.key)
    if not raw:
        raise RemoteClusterError(f"{where} has no key {ref.key!r}")
    try:
        config = load_config(yaml.safe_load(base64.b64decode(raw)))
    except (binascii.Error, yaml.YAMLError, ValueError, TypeError, KeyError, OSError) as e:
        raise RemoteClusterError(f"{where} key {ref.key!r} is not a usable kubeconfig: {e}") from e
    return Kube(config, timeout=30, user_agent=user_agent)


async def remote_client(front: Kube, spec: RemoteClusterSpec, *, user_agent: str) -> Kube:
    """A client of the remote cluster, from its kubeconfig Secret as it is now."""
    return remote_client_of(await kubeconfig_secret(front, spec), spec, user_agent=user_agent)
