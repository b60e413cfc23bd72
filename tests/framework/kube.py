"""Small helpers shared by the integration and end-to-end tests."""

from __future__ import annotations

import asyncio
import copy
import secrets
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey, key_of, key_secret
from devenv import binaries
from devenv.base import BaseEnvironment
from devenv.clients import kubectl_argv as devenv_kubectl_argv
from devenv.clients import run_kubectl

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.25) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` and the last value seen."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


#: A scheduler nobody runs: a pod created for it stays unbound until a test binds it.
HOLD_SCHEDULER = "armada-bridge-test-hold"


def decision_key(core: Any) -> DecisionKey:
    """The environment's decision key (made by its extender; made here when it has not run yet,
    as the extender would: create-if-absent)."""
    try:
        secret = core.read_namespaced_secret(keys.DECISION_KEY_SECRET, keys.SYSTEM_NAMESPACE)
    except ApiException as e:
        if e.status != 404:
            raise
        try:
            core.create_namespaced_secret(keys.SYSTEM_NAMESPACE, key_secret(secrets.token_bytes(32)))
        except ApiException as conflict:
            if conflict.status != 409:
                raise
        secret = core.read_namespaced_secret(keys.DECISION_KEY_SECRET, keys.SYSTEM_NAMESPACE)
    return key_of({"data": secret.data})


def create_bound(core: Any, namespace: str, body: dict[str, Any]) -> Any:
    """Create a pod bound to the virtual node its spec.nodeName names, as the bridge's path leaves
    it: the extender's decision for that cluster (signed; the node in its ASSIGNED_REMOTE_NODE
    annotation, if any), then a binding, as the front kube-scheduler makes. The test stands in for
    both; the vkubelet refuses a pod bound without such a decision."""
    body = copy.deepcopy(body)
    cluster = body["spec"].pop("nodeName")
    body["spec"]["schedulerName"] = HOLD_SCHEDULER
    created = core.create_namespaced_pod(namespace, body)
    name, uid = created.metadata.name, created.metadata.uid
    node = ((body["metadata"].get("annotations") or {}).get(keys.ASSIGNED_REMOTE_NODE)) or ""
    decision = decision_key(core).annotations(uid, cluster, node)
    core.patch_namespaced_pod(name, namespace, {"metadata": {"annotations": decision, "uid": uid}})
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": cluster},
    }
    core.create_namespaced_pod_binding(name, namespace, binding, _preload_content=False)
    return core.read_namespaced_pod(name, namespace)


async def wait_for_async(
    what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.1
) -> T:
    """:func:`wait_for` inside an event loop: `probe` (not a coroutine) is called between sleeps
    that let the loop's tasks (informers, workers) run."""
    deadline = time.monotonic() + timeout
    while not (last := probe()):
        assert time.monotonic() <= deadline, (
            f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})"
        )
        await asyncio.sleep(interval)
    return last


def kubectl(
    env: BaseEnvironment,  # its front, unless `kubeconfig` says otherwise
    *args: str,
    kubeconfig: Path | None = None,
    stdin: str | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    """kubectl on the front (or `kubeconfig`'s cluster), whatever it answers."""
    front = kubeconfig or env.kubeconfig("front")
    return run_kubectl(binaries.expected(), front, *args, stdin=stdin, timeout=timeout)


def kubectl_argv(env: BaseEnvironment, *args: str) -> list[str]:
    """The command line of kubectl `args` on the front, for a kubectl a test runs in the background."""
    return devenv_kubectl_argv(binaries.expected(), env.kubeconfig("front"), *args)


RBAC_GROUP = "rbac.authorization.k8s.io"


def role_binding(
    name: str, role: str, account: str, namespace: str, *, kind: str = "ClusterRole"
) -> dict[str, Any]:
    """A RoleBinding (or ClusterRoleBinding) `name` of the `kind` `role` to the ServiceAccount
    `account` of `namespace`."""
    return {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }


def grant(
    rbac: Any,
    namespace: str,
    name: str,
    rules: list[dict[str, Any]],
    account: str,
    account_namespace: str = "",
) -> None:
    """A Role `name` in `namespace` allowing `rules`, bound there to the ServiceAccount `account` (of
    `account_namespace`, by default the same namespace); `rbac` an RbacAuthorizationV1Api."""
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
    rbac.create_namespaced_role_binding(
        namespace, role_binding(name, name, account, account_namespace or namespace, kind="Role")
    )
