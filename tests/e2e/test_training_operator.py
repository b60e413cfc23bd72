"""Kubeflow training-operator v1, released and unchanged, in Volcano gang mode: its own samples of
each job kind run whole in one remote cluster and end Succeeded; a job too big for any cluster
waits whole (the operator creates no pod before its PodGroup is Inqueue) and is not failed."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from kubernetes import client as k8s

from armada_bridge.dev.operators.samples import adapt, sample
from tests.e2e.bridge import Api, front_pods
from tests.e2e.operators import (
    apply,
    conditions,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    run_kubectl,
    wait_gone_from_remotes,
    wait_status,
)
from tests.support import wait_for

OPERATOR = "training-operator"
# kind, the operator project's sample, pods in it
SAMPLES = [
    ("PyTorchJob", "examples/pytorch/simple.yaml", 2),
    ("TFJob", "examples/tensorflow/simple.yaml", 2),
    ("XGBoostJob", "examples/xgboost/xgboostjob.yaml", 3),
    ("PaddleJob", "examples/paddlepaddle/simple-cpu.yaml", 2),
    ("JAXJob", "examples/jax/cpu-demo/demo.yaml", 2),
]


@pytest.mark.parametrize(("kind", "path", "size"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_runs_whole_in_one_remote_cluster_and_succeeds(
    kind: str, path: str, size: int, namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, path)
    assert job["kind"] == kind
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, runtime="3s"))

    pg = wait_for("the job's Volcano PodGroup", lambda: _podgroup(cluster_api, namespace, name))
    assert pg["spec"]["minMember"] == size
    wait_for(
        f"{size} pods, each admitted to a remote cluster",
        lambda: len([p for p in front_pods(cluster_api, namespace) if p.spec.node_name]) == size,
        timeout=120,
    )
    cluster = one_remote_cluster(cluster_api, namespace, size)
    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True")
    assert conditions(done).get("Failed") != "True"
    # `kubectl get` tells the truth: its STATE column is the operator's latest condition.
    assert "Succeeded" in kubectl("get", kind.lower(), name, "-n", namespace)
    assert cluster

    kubectl("delete", kind.lower(), name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def test_pytorchjob_too_big_for_any_cluster_waits_whole_and_is_not_failed(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/pytorch/simple.yaml")
    name = job["metadata"]["name"]
    # 1 master + 4 workers of 30 CPU: each fits a 32-CPU node, the five do not fit a 4-node cluster.
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 4
    apply(adapt(job, namespace, cpu="30", runtime="3s"))

    pg = wait_for(
        "the PodGroup to say why it waits",
        lambda: (
            (g := _podgroup(cluster_api, namespace, name))
            and any(c.get("type") == "Unschedulable" for c in (g.get("status") or {}).get("conditions") or [])
            and g
        ),
        timeout=60,
    )
    assert pg["spec"]["minMember"] == 5
    reason = next(c for c in pg["status"]["conditions"] if c["type"] == "Unschedulable")
    assert "free" in reason.get("message", ""), reason
    time.sleep(5)
    assert (podgroup(cluster_api, namespace, name).get("status") or {}).get("phase") == "Pending"
    # The operator waits for the gang scheduler: no pod at all, and the job is not failed.
    assert front_pods(cluster_api, namespace) == []
    state = conditions(get(job))
    assert state.get("Failed") != "True" and state.get("Running") != "True", state
    kubectl("delete", "pytorchjob", name, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace)


def _podgroup(api: Api, namespace: str, name: str) -> dict[str, object] | None:
    from kubernetes.client.rest import ApiException

    try:
        return podgroup(api, namespace, name)
    except ApiException as e:
        if e.status == 404:
            return None
        raise


def test_limitation_mpijob_v1_is_not_served_beside_the_mpi_operator(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """The training operator's MPIJob `kubeflow.org/v1` and the MPI operator's `v2beta1` are one CRD
    name, `mpijobs.kubeflow.org`, with different schemas and no conversion: one front serves one of
    them. The suite's environment runs the MPI operator (its CRD) and the training operator without
    its `mpijob` scheme, so the training operator's own MPIJob sample is refused, clearly, and
    nothing is created. (docs/operators.md says why no second environment runs it.)"""
    operators(OPERATOR, "mpi-operator")
    crd = k8s.ApiextensionsV1Api(cluster_api("front")).read_custom_resource_definition("mpijobs.kubeflow.org")
    assert [v.name for v in crd.spec.versions if v.served] == ["v2beta1"]
    (job,) = sample(OPERATOR, "examples/mpi/tensorflow-mnist.yaml")
    assert job["apiVersion"] == "kubeflow.org/v1"
    job["metadata"]["namespace"] = namespace
    r = run_kubectl("apply", "-f", "-", stdin=json.dumps(job))
    assert r.returncode != 0 and 'no matches for kind "MPIJob" in version "kubeflow.org/v1"' in r.stderr, r
    assert front_pods(cluster_api, namespace) == []
