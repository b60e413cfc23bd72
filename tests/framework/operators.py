"""Helpers for the released operators' end-to-end tests: their own samples (read from the module
each was built from), kubectl on the front cluster, and what the front and remotes then hold."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge.objects import Obj
from tests.framework import kube
from tests.framework.bridge import Api, cluster_of, events_for, front_pods, remote_pods
from tests.framework.kube import wait_for

REMOTES = ("remote-1", "remote-2")
#: The mark of a module whose objects name no queue: they run in the queue of their namespace
#: (the `namespace_in_its_queue` fixture), as the operators' own samples do.
IN_ITS_NAMESPACES_QUEUE = pytest.mark.usefixtures("namespace_in_its_queue")


def run_kubectl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """kubectl on the front cluster, whatever it answers."""
    from devenv.processes.environment import Environment

    return kube.kubectl(Environment(), *args, stdin=stdin, timeout=60)


def kubectl(*args: str, stdin: str | None = None) -> str:
    r = run_kubectl(*args, stdin=stdin)
    assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stderr or r.stdout}"
    return r.stdout


def apply(obj: Obj) -> None:
    kubectl("apply", "-f", "-", stdin=json.dumps(obj))


def get(obj: Obj) -> Obj:
    kind, name, ns = obj["kind"], obj["metadata"]["name"], obj["metadata"]["namespace"]
    group = obj["apiVersion"].split("/")[0] if "/" in obj["apiVersion"] else ""
    resource = f"{kind.lower()}.{group}" if group else kind.lower()
    return dict(json.loads(kubectl("get", resource, name, "-n", ns, "-o", "json")))


def conditions(obj: Obj) -> dict[str, str]:
    """type -> status of the object's status conditions."""
    return {c["type"]: c["status"] for c in (obj.get("status") or {}).get("conditions") or []}


def true_conditions(obj: Obj) -> set[str]:
    """The types of the object's status conditions that are True."""
    return {t for t, status in conditions(obj).items() if status == "True"}


def one_remote_cluster(api: Api, namespace: str, count: int) -> str:
    """The one remote cluster that all `count` pods of the namespace went to (asserted)."""
    pods = front_pods(api, namespace)
    assert len(pods) == count, [p.metadata.name for p in pods]
    clusters = {cluster_of(p) for p in pods}
    assert len(clusters) == 1 and clusters <= set(REMOTES), clusters
    (cluster,) = clusters
    assert cluster is not None
    return cluster


def wait_gone_from_remotes(api: Api, namespace: str, timeout: float = 90) -> None:
    def probe() -> bool:
        return all(not remote_pods(api, c, namespace) for c in REMOTES)

    wait_for(f"no pod of {namespace} left in any remote cluster", probe, timeout=timeout)


def delete_and_wait_gone(api: Api, namespace: str, resource: str, name: str = "--all") -> None:
    """Delete the `resource` `name` (by default, every one) of the front's `namespace` and wait for it,
    then until no pod of the namespace is left in any remote cluster."""
    kubectl("delete", resource, name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(api, namespace)


def podgroup(api: Api, namespace: str, name: str) -> Obj:
    return dict(
        k8s.CustomObjectsApi(api("front")).get_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", namespace, "podgroups", name
        )
    )


def found_podgroup(api: Api, namespace: str, name: str) -> Obj | None:
    """The Volcano PodGroup `name` of the namespace; None while there is none (not made yet)."""
    try:
        return podgroup(api, namespace, name)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def wait_status(obj: Obj, what: str, check: Callable[[Obj], bool], timeout: float = 180) -> Obj:
    """The object as `kubectl get` returns it, once `check` holds for it."""

    def probe() -> Obj | None:
        current = get(obj)
        return current if check(current) else None

    return wait_for(f"{obj['kind']} {obj['metadata']['name']}: {what}", probe, timeout=timeout)


def assert_waits_whole(api: Api, namespace: str, pods: int) -> str:
    """All `pods` of the namespace exist and wait, none placed anywhere, with the reason in an
    Event and in `armada-bridge why`; returns that reason."""
    from cli import views

    def waiting_event() -> str | None:
        for p in front_pods(api, namespace):
            for e in events_for(api, namespace, p.metadata.name):
                if e.startswith("ArmadaWaiting") and "free" in e:
                    return e
        return None

    event = wait_for("an Event saying no cluster has room for the gang", waiting_event, timeout=60)
    time.sleep(5)
    current = front_pods(api, namespace)
    assert len(current) == pods, [p.metadata.name for p in current]
    assert all(not p.spec.node_name and cluster_of(p) is None for p in current), "part of the gang was placed"
    for c in REMOTES:
        assert remote_pods(api, c, namespace) == []
    why = views.why(api("front"), current[0].metadata.name, namespace)
    assert "waiting:" in why and "free" in why, why
    return event
