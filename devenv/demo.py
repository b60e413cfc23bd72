"""`armada-bridge demo`: the bridge at work on the local environment.

In the front cluster: a namespace in queue `default`, a gang of four 8-CPU pods (Armada's gang
annotations) and a plain Job on the remote clusters' KWOK nodes, and, where the environment has real
nodes, a pod whose container really runs. The demo shows the gang admitted whole to one remote
cluster, its pods running there, the Job's pods completing, the real container's own output read
with `kubectl logs` on the front, and the queue's share.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.clients import api_client
from devenv.names import FRONT
from devenv.pods import busybox, busybox_pod, real_pod
from devenv.processes.environment import Environment

NAMESPACE = "armada-bridge-demo"
OPERATORS_NAMESPACE = "armada-bridge-operators-demo"  # hack/demo.sh's PyTorchJob and RayCluster
GANG = 4


def _say(msg: str) -> None:
    print(msg, flush=True)


def _pod(name: str) -> dict[str, Any]:
    annotations = {keys.GANG_ID: "demo", keys.GANG_CARDINALITY: str(GANG)}
    return busybox_pod(name, cpu="8", memory="4Gi", labels={"app": "demo-gang"}, annotations=annotations)


def _job(name: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [busybox("1", command=["true"])]}
    return {
        "metadata": {"name": name},
        "spec": {"completions": 3, "parallelism": 3, "template": {"spec": pod}},
    }


def _real_pod(name: str) -> dict[str, Any]:
    script = 'echo "hello from a real container: host $(uname -n), kernel $(uname -r), user $(id -un)"'
    return real_pod(name, ["sh", "-c", script], memory="32Mi", memory_limit="32Mi")


def _wait(what: str, probe: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.5)
    raise TimeoutError(f"{what}: not after {timeout:.0f}s")


def run_demo(queues: Callable[[k8s.ApiClient], str], timeout: float = 120) -> int:
    """The demo, ending with the queues' table as `queues` renders it (the CLI's view)."""
    env = Environment()
    statuses = env.status()
    if not statuses or not all(s.healthy for s in statuses):
        print(
            "armada-bridge demo: the environment is not up; run `armada-bridge dev up` first", file=sys.stderr
        )
        return 1
    with api_client(env.kubeconfig(FRONT)) as api:
        core, batch = k8s.CoreV1Api(api), k8s.BatchV1Api(api)
        try:
            core.delete_namespace(NAMESPACE)
            _wait(
                "old demo namespace gone",
                lambda: not any(n.metadata.name == NAMESPACE for n in core.list_namespace().items),
                timeout,
            )
        except ApiException as e:
            if e.status != 404:
                raise
        core.create_namespace({"metadata": {"name": NAMESPACE, "labels": {keys.QUEUE_LABEL: "default"}}})
        _say(f"namespace {NAMESPACE} is in queue default (label {keys.QUEUE_LABEL})")
        for i in range(GANG):
            core.create_namespaced_pod(NAMESPACE, _pod(f"gang-{i}"))
        _say(f"submitted a gang of {GANG} pods x 8 CPU (annotations {keys.GANG_ID}, {keys.GANG_CARDINALITY})")
        batch.create_namespaced_job(NAMESPACE, _job("hello"))
        _say("submitted Job hello (3 pods)")
        try:
            pods = _wait(
                "gang Running",
                lambda: (
                    (ps := core.list_namespaced_pod(NAMESPACE, label_selector="app=demo-gang").items)
                    and all(p.status.phase == "Running" for p in ps)
                    and ps
                ),
                timeout,
            )
            for p in sorted(pods, key=lambda p: p.metadata.name):
                ann = p.metadata.annotations or {}
                _say(
                    f"  {p.metadata.name}: Running on virtual node {p.spec.node_name} -> {ann.get(keys.ASSIGNED_CLUSTER)}/{ann.get(keys.ASSIGNED_REMOTE_NODE)}"
                )
            cluster = (pods[0].metadata.annotations or {})[keys.ASSIGNED_CLUSTER]
            with api_client(env.kubeconfig(cluster)) as remote:
                there = (
                    k8s.CoreV1Api(remote).list_namespaced_pod(NAMESPACE, label_selector="app=demo-gang").items
                )
            _say(
                f"  in {cluster} itself: {len(there)} pods, {sum(p.status.phase == 'Running' for p in there)} Running"
            )
            _wait(
                "Job complete",
                lambda: (batch.read_namespaced_job_status("hello", NAMESPACE).status.succeeded or 0) >= 3,
                timeout,
            )
            _say("Job hello: 3/3 pods succeeded in the remote cluster")
            if env.real_nodes() is not None:
                core.create_namespaced_pod(NAMESPACE, _real_pod("real-hello"))
                done = _wait(
                    "pod real-hello done",
                    lambda: (
                        (p := core.read_namespaced_pod("real-hello", NAMESPACE)).status.phase
                        in ("Succeeded", "Failed")
                        and p
                    ),
                    timeout,
                )
                ann = done.metadata.annotations or {}
                _say(
                    f"pod real-hello: {done.status.phase} on a real node, "
                    f"{ann.get(keys.ASSIGNED_CLUSTER)}/{ann.get(keys.ASSIGNED_REMOTE_NODE)}; "
                    f"`kubectl logs -n {NAMESPACE} real-hello` on the front:"
                )
                _say("  " + core.read_namespaced_pod_log("real-hello", NAMESPACE).strip())
        except TimeoutError as e:
            print(f"armada-bridge demo: {e}; see `armada-bridge why POD -n {NAMESPACE}`", file=sys.stderr)
            return 1
        crd = k8s.CustomObjectsApi(api)
        with contextlib.suppress(TimeoutError):  # the extender writes Queue status every 2 s
            _wait(
                "queue status",
                lambda: (
                    crd.get_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", "default").get("status")
                    or {}
                ).get("runningGangs"),
                10,
            )
        _say("\n" + queues(api))
    _say(f"\ndemo finished; try: armada-bridge gangs -n {NAMESPACE}; kubectl logs -n {NAMESPACE} gang-0")
    _say("clean up (what the demo holds in the remote clusters): armada-bridge demo --clean")
    return 0


def clean_demo(timeout: float = 180) -> int:
    """Delete what the demos created (their namespaces, everywhere) and wait until it is gone."""
    env = Environment()
    with api_client(env.kubeconfig(FRONT)) as api:
        core = k8s.CoreV1Api(api)
        for ns in (NAMESPACE, OPERATORS_NAMESPACE):
            with contextlib.suppress(ApiException):
                core.delete_namespace(ns)
        try:
            _wait(
                "demo namespaces gone",
                lambda: (
                    not {n.metadata.name for n in core.list_namespace().items}
                    & {NAMESPACE, OPERATORS_NAMESPACE}
                ),
                timeout,
            )
        except TimeoutError as e:
            print(f"armada-bridge demo --clean: {e}", file=sys.stderr)
            return 1
    _say(
        f"removed namespaces {NAMESPACE} and {OPERATORS_NAMESPACE} (their pods are gone from the remote clusters)"
    )
    return 0
