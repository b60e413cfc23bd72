"""KubeRay, released and unchanged, with `--batch-scheduler=volcano`: its own RayCluster sample runs
whole in one remote cluster and reports `ready`; one too big for any cluster waits whole. On real
nodes its RayJob sample is submitted to the remote head and followed to SUCCEEDED, and a front pod
submits a job to a remote RayCluster through its front Service."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
import yaml
from kubernetes import client as k8s

from armada_bridge import keys
from devenv.images import ray
from devenv.operators.samples import adapt, sample
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import ENDED, Api, cluster_of, front_pods, pod_in_phase, remote_pods
from tests.framework.kube import wait_for
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    assert_waits_whole,
    delete_and_wait_gone,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    wait_status,
)
from tests.framework.ray_clusters import (
    HEAD,
    OPERATOR,
    WORKERS,
    autoscaling_raycluster,
    detached_actors,
    terminate_actors,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

RAY_IMAGE = ray.NAME
SAMPLE = "config/samples/ray-cluster.sample.yaml"


def test_raycluster_runs_whole_in_one_remote_cluster_and_is_ready(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:

    operators(OPERATOR)
    (rc,) = sample(OPERATOR, SAMPLE)
    rc["spec"]["workerGroupSpecs"][0]["replicas"] = 2
    name = rc["metadata"]["name"]
    apply(adapt(rc, namespace, cpu="1", memory="1Gi"))

    ready = wait_status(rc, "state ready", lambda r: (r.get("status") or {}).get("state") == "ready")
    assert ready["status"].get("readyWorkerReplicas") == 2, ready["status"]
    assert one_remote_cluster(cluster_api, namespace, 3)
    assert podgroup(cluster_api, namespace, f"ray-{name}-pg")["spec"]["minMember"] == 3
    assert "ready" in kubectl("get", "raycluster", name, "-n", namespace)

    delete_and_wait_gone(cluster_api, namespace, "raycluster", name)


def test_raycluster_too_big_for_any_cluster_waits_whole(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (rc,) = sample(OPERATOR, SAMPLE)
    # head + 4 workers of 30 CPU: each fits a 32-CPU node, the five do not fit a 4-node cluster.
    rc["spec"]["workerGroupSpecs"][0].update(replicas=4, minReplicas=4)
    name = rc["metadata"]["name"]
    apply(adapt(rc, namespace, cpu="30", memory="1Gi"))

    assert_waits_whole(cluster_api, namespace, 5)
    state = (get(rc).get("status") or {}).get("state")
    assert state not in ("ready", "failed"), state
    delete_and_wait_gone(cluster_api, namespace, "raycluster", name)


def test_rayjob_is_submitted_to_the_remote_head_and_succeeds_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """KubeRay's own RayJob sample on real nodes: its RayCluster runs whole in one remote cluster,
    the submitter pod (KubeRay's Job, kept with the RayJob's other pods) submits the job to the head
    by its Service name there, the job runs on the Ray cluster, and KubeRay follows it through the
    front API server's service proxy to the head's dashboard until it ends SUCCEEDED.

    Changed from the sample: its runtime environment's `pip` packages (fetched from PyPI at job start,
    which no pod here can reach) and the line that checks one of them; its `env_vars` stay and the
    job still checks them."""
    operators(OPERATOR)
    docs = sample(OPERATOR, "config/samples/ray-job.sample.yaml")
    (rj,) = [d for d in docs if d["kind"] == "RayJob"]
    (code,) = [d for d in docs if d["kind"] == "ConfigMap"]
    runtime_env = yaml.safe_load(rj["spec"]["runtimeEnvYAML"])
    assert runtime_env.pop("pip")
    rj["spec"]["runtimeEnvYAML"] = yaml.safe_dump(runtime_env)
    program = code["data"]["sample_code.py"]
    code["data"]["sample_code.py"] = "\n".join(
        line for line in program.splitlines() if "requests" not in line
    )
    code["metadata"]["namespace"] = namespace
    apply(code)
    adapt(rj, namespace, cpu="200m", cpu_limit="1", memory="2Gi", real=True)
    submitter = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "submitter",
                "image": RAY_IMAGE,
                "resources": {
                    "requests": {"cpu": "100m", "memory": "512Mi"},
                    "limits": {"cpu": "1", "memory": "1Gi"},
                },
            }
        ],
    }
    rj["spec"]["submitterPodTemplate"] = {
        "spec": on_a_real_node(submitter),
    }
    apply(rj)

    done = wait_status(
        rj, "a terminal deployment status", lambda j: _deployment(j) in ("Complete", "Failed"), timeout=300
    )
    assert (_deployment(done), done["status"].get("jobStatus")) == ("Complete", "SUCCEEDED"), done["status"]
    cluster = done["status"]["rayClusterName"]
    pods = front_pods(cluster_api, namespace)
    assert len({cluster_of(p) for p in pods}) == 1, [(p.metadata.name, cluster_of(p)) for p in pods]
    assert len([p for p in pods if p.metadata.name.startswith(cluster)]) == 2
    # The submitter's log is the job's: the actor counted with the runtime environment's variable.
    # (KubeRay's submitter Job retries a failed `ray job submit` twice: one pod succeeded.)
    submitters = front_pods(cluster_api, namespace, f"batch.kubernetes.io/job-name={rj['metadata']['name']}")
    (sub,) = [p for p in submitters if p.status.phase == "Succeeded"]
    log = kubectl("logs", sub.metadata.name, "-n", namespace)
    assert "test_counter got 5" in log, log
    assert re.search(r"Job .rayjob-sample-\w+. succeeded", log), log
    delete_and_wait_gone(cluster_api, namespace, "rayjob", rj["metadata"]["name"])


def test_raycluster_autoscaler_scales_its_workers_through_the_front_api_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """KubeRay's autoscaler sample on real nodes: a detached actor needing a CPU the head does not
    offer makes the autoscaler in the remote head pod raise the worker group through the front API;
    KubeRay's new worker pod is admitted to the head's cluster and the actor runs there. Once the
    actor is gone and the worker idle past the sample's 60 s, the autoscaler removes it and its
    room is free again."""
    operators(OPERATOR)
    rc = autoscaling_raycluster(namespace)
    name = rc["metadata"]["name"]
    apply(rc)
    wait_status(rc, "state ready", lambda r: (r.get("status") or {}).get("state") == "ready", timeout=240)
    (head,) = front_pods(cluster_api, namespace, HEAD)
    assert front_pods(cluster_api, namespace, WORKERS) == []

    detached_actors(head.metadata.name, namespace, ["actor1"])
    (worker,) = wait_for(
        "the autoscaler's worker Running",
        lambda: (
            [p for p in front_pods(cluster_api, namespace, WORKERS) if p.status.phase == "Running"] or None
        ),
        timeout=240,
    )
    assert cluster_of(worker) == cluster_of(head)
    assert (worker.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), worker.metadata.annotations
    assert get(rc)["spec"]["workerGroupSpecs"][0]["replicas"] == 1  # the autoscaler's own patch

    terminate_actors(head.metadata.name, namespace, ["actor1"])
    wait_for(
        "the idle worker removed", lambda: front_pods(cluster_api, namespace, WORKERS) == [], timeout=300
    )
    wait_for(
        "the worker gone from its remote cluster",
        lambda: all(
            "worker" not in p.metadata.name
            for p in remote_pods(cluster_api, str(cluster_of(head)), namespace)
        ),
        timeout=60,
    )
    delete_and_wait_gone(cluster_api, namespace, "raycluster", name)


def _deployment(rayjob: dict[str, object]) -> object:
    status = rayjob.get("status")
    return status.get("jobDeploymentStatus") if isinstance(status, dict) else None


@pytest.mark.timeout(1200)  # up to 600 s queued for the real nodes, then the job
def test_a_front_pod_submits_a_ray_job_to_a_remote_raycluster_through_its_front_service(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """KubeRay's RayCluster sample on real nodes, in a remote cluster whose pod network the front
    does not reach: a client pod on the front's real node runs `ray job submit` against the head's
    dashboard at its front Service's DNS name (through the head's relay), and the job runs on the
    remote Ray cluster to SUCCEEDED, its output in the client's log."""
    operators(OPERATOR)
    (rc,) = sample(OPERATOR, SAMPLE)
    name = rc["metadata"]["name"]
    apply(adapt(rc, namespace, cpu="200m", cpu_limit="1", memory="2Gi", real=True))
    # Its gang queues for the real nodes' room (other tests' real pods hold it meanwhile).
    wait_status(rc, "state ready", lambda r: (r.get("status") or {}).get("state") == "ready", timeout=600)
    dashboard = f"http://{name}-head-svc.{namespace}.svc.cluster.local:8265"
    job = "import ray; ray.init(); f = ray.remote(lambda x: x * x); print('squares', sum(ray.get([f.remote(i) for i in range(4)])))"
    client = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "submit",
                "image": RAY_IMAGE,
                "command": ["ray", "job", "submit", "--address", dashboard, "--", "python", "-c", job],
                "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
            }
        ],
    }
    # Not managed (the bridge's namespace): the front's own scheduler puts it on the front's real node.
    system = keys.SYSTEM_NAMESPACE
    client_name = f"ray-submit-{namespace[-6:]}"
    front = k8s.CoreV1Api(cluster_api("front"))
    front.create_namespaced_pod(system, {"metadata": {"name": client_name}, "spec": on_a_real_node(client)})
    try:
        done = pod_in_phase(front, system, client_name, ENDED, timeout=300)
        log = front.read_namespaced_pod_log(client_name, system)
        assert done.spec.node_name == "front-real-0"
        assert done.status.phase == "Succeeded" and "squares 14" in log, log
        assert re.search(r"Job 'raysubmit_\w+' succeeded", log), log
    finally:
        front.delete_namespaced_pod(client_name, system, grace_period_seconds=0)
    delete_and_wait_gone(cluster_api, namespace, "raycluster", name)
