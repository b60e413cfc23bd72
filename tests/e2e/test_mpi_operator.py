"""The MPI operator, released and unchanged, with `--gang-scheduling=volcano`: its own MPIJob
v2beta1 sample (launcher + workers, one gang) runs whole in one remote cluster and ends Succeeded
when its launcher completes; one too big for any cluster waits whole and is not failed."""

from __future__ import annotations

from collections.abc import Callable

from armada_bridge.dev.operators.samples import adapt, sample
from tests.e2e.bridge import Api, front_pods
from tests.e2e.operators import (
    apply,
    assert_waits_whole,
    conditions,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    wait_gone_from_remotes,
    wait_status,
)
from tests.support import wait_for

OPERATOR = "mpi-operator"
SAMPLE = "examples/v2beta1/pi/pi.yaml"


def test_mpijob_runs_whole_in_one_remote_cluster_and_succeeds(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, SAMPLE)
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, cpu="1", memory="1Gi"))

    assert podgroup_min_member(cluster_api, namespace, name) == 3
    wait_for(
        "launcher and 2 workers placed",
        lambda: len([p for p in front_pods(cluster_api, namespace) if p.spec.node_name]) >= 3,
        timeout=120,
    )
    cluster = one_remote_cluster(cluster_api, namespace, 3)
    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True")
    assert conditions(done).get("Failed") != "True"
    assert cluster
    # Its CRD has no printer columns: the latest condition, as the training operator's CRDs show it.
    state = kubectl(
        "get", "mpijob", name, "-n", namespace, "-o", "custom-columns=STATE:.status.conditions[-1:].type"
    )
    assert "Succeeded" in state, state

    kubectl("delete", "mpijob", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_mpijob_too_big_for_any_cluster_waits_whole_and_is_not_failed(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, SAMPLE)
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = 4
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, cpu="30", memory="1Gi"))

    assert_waits_whole(cluster_api, namespace, 5)
    state = conditions(get(job))
    assert state.get("Failed") != "True" and state.get("Succeeded") != "True", state
    kubectl("delete", "mpijob", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def podgroup_min_member(api: Api, namespace: str, name: str) -> int:
    from kubernetes.client.rest import ApiException

    def probe() -> int | None:
        try:
            return int(podgroup(api, namespace, name)["spec"]["minMember"])
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    return wait_for("the MPIJob's Volcano PodGroup", probe)
