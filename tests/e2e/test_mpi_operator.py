"""The MPI operator, released and unchanged, with `--gang-scheduling=volcano`: its own MPIJob
v2beta1 sample (launcher + workers, one gang) runs whole in one remote cluster and ends Succeeded
when its launcher completes, for real on real nodes (the pi program's result in
the launcher's log); one too big for any cluster waits whole and is not failed."""

from __future__ import annotations

import re
from collections.abc import Callable

from kubernetes import client as k8s

from devenv.operators.samples import adapt, sample
from tests.framework.bridge import Api, front_pods
from tests.framework.kube import wait_for
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    assert_waits_whole,
    conditions,
    delete_and_wait_gone,
    found_podgroup,
    get,
    kubectl,
    one_remote_cluster,
    true_conditions,
    wait_status,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

OPERATOR = "mpi-operator"
SAMPLE = "examples/v2beta1/pi/pi.yaml"


def test_mpijob_too_big_for_any_cluster_waits_whole_and_is_not_failed(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, SAMPLE)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 4
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, cpu="30", memory="1Gi"))

    assert_waits_whole(cluster_api, namespace, 5)
    assert not {"Failed", "Succeeded"} & true_conditions(get(job))
    delete_and_wait_gone(cluster_api, namespace, "mpijob", name)


def test_mpijob_pi_really_runs_on_real_nodes_and_its_result_is_in_the_launchers_log(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """The sample on real nodes: the workers run sshd, the launcher's `mpirun` reaches them over
    ssh by their names under the job's headless Service (the remote cluster's DNS), with the
    operator's key Secret and hostfile ConfigMap mirrored there, and prints pi."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, SAMPLE)
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, cpu="100m", cpu_limit="1", memory="256Mi", real=True))

    # The operator's gang: a Volcano PodGroup of launcher and 2 workers, placed whole.
    pg = wait_for("the MPIJob's Volcano PodGroup", lambda: found_podgroup(cluster_api, namespace, name))
    assert pg["spec"]["minMember"] == 3
    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True", timeout=240)
    assert conditions(done).get("Failed") != "True"
    cluster = one_remote_cluster(cluster_api, namespace, 3)
    # Its CRD has no printer columns: the latest condition, as the training operator's CRDs show it.
    state = kubectl(
        "get", "mpijob", name, "-n", namespace, "-o", "custom-columns=STATE:.status.conditions[-1:].type"
    )
    assert "Succeeded" in state, state
    (launcher,) = front_pods(cluster_api, namespace, "training.kubeflow.org/job-role=launcher")
    log = k8s.CoreV1Api(cluster_api("front")).read_namespaced_pod_log(launcher.metadata.name, namespace)
    assert re.search(r"pi is approximately 3\.14159", log), log
    # Both ranks ran, each on a worker (the launcher runs none: the sample's hostfile names workers).
    assert {f"{name}-worker-0", f"{name}-worker-1"} <= set(re.findall(rf"{name}-worker-\d+", log)), log
    assert cluster

    delete_and_wait_gone(cluster_api, namespace, "mpijob", name)
