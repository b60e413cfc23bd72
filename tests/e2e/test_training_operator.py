"""Kubeflow training-operator v1, released and unchanged, in Volcano gang mode: its own samples of
each job kind run whole in one remote cluster and end Succeeded, MXJob through v1.8.1 (the last
release that serves it) beside v1.9.4, and MPIJob v1 with the front serving its CRD in place of the
MPI operator's for the test; a job too big for any cluster waits whole (the operator creates no pod
before its PodGroup is Inqueue) and is not failed. On real nodes a PyTorchJob's master and worker
really rendezvous and all-reduce with PyTorch's gloo backend."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from devenv.images import pytorch
from devenv.operators.catalog import catalog
from devenv.operators.install import SHARED_CRD, enabled
from devenv.operators.samples import adapt, sample
from tests.e2e.bridge import Api, front_pods, remote_pods
from tests.e2e.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    conditions,
    delete_and_wait_gone,
    found_podgroup,
    get,
    kubectl,
    one_remote_cluster,
    podgroup,
    run_kubectl,
    true_conditions,
    wait_status,
)
from tests.support import wait_for

pytestmark = IN_ITS_NAMESPACES_QUEUE

OPERATOR = "training-operator"
# MPIJob kubeflow.org/v1: the training operator v1.9.4 serving that kind alone, in place of the MPI
# operator (the two define one CRD name: docs/operators.md).
MPIJOB_V1 = "training-operator-mpijob"
# kind, the operator (as `dev up --operators` names it), the operator project's sample, pods in it
SAMPLES = [
    ("PyTorchJob", OPERATOR, "examples/pytorch/simple.yaml", 2),
    ("TFJob", OPERATOR, "examples/tensorflow/simple.yaml", 2),
    ("XGBoostJob", OPERATOR, "examples/xgboost/xgboostjob.yaml", 3),
    ("PaddleJob", OPERATOR, "examples/paddlepaddle/simple-cpu.yaml", 2),
    ("JAXJob", OPERATOR, "examples/jax/cpu-demo/demo.yaml", 2),
    # Scheduler, Server and Worker; the job succeeds when its scheduler does.
    ("MXJob", "training-operator-mxjob", "examples/mxnet/mxjob_dist_v1.yaml", 3),
]


@pytest.mark.parametrize(("kind", "operator", "path", "size"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_sample_runs_whole_in_one_remote_cluster_and_succeeds(
    kind: str,
    operator: str,
    path: str,
    size: int,
    namespace: str,
    cluster_api: Api,
    operators: Callable[..., None],
) -> None:
    operators(operator)
    _runs_whole_in_one_remote_cluster_and_succeeds(kind, operator, path, size, namespace, cluster_api)


@pytest.fixture
def mpijob_v1(
    dev_env: object, operators: Callable[..., None], namespace: str, cluster_api: Api
) -> Iterator[None]:
    """The front serving the training operator's MPIJob kubeflow.org/v1 for one test, in place of
    the MPI operator's v2beta1 (the MPI operator stopped, the CRD replaced); then, whatever the test
    did, its MPIJobs deleted and the MPI operator running again with its CRD, as the rest of the
    suite expects."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    operators(OPERATOR, "mpi-operator")
    try:
        dev_env.ensure_operators([MPIJOB_V1])
        yield
    finally:
        # The MPI operator's CRD does not replace one that still has objects.
        run_kubectl("delete", SHARED_CRD, "--all", "-n", namespace, "--wait=true")
        dev_env.ensure_operators(["mpi-operator"])
    assert _served(cluster_api, SHARED_CRD) == ["v2beta1"]


def test_mpijob_v1_runs_whole_in_one_remote_cluster_and_succeeds_in_place_of_the_mpi_operator(
    namespace: str, cluster_api: Api, mpijob_v1: None
) -> None:
    assert _served(cluster_api, SHARED_CRD) == ["v1"]
    # Launcher and 2 workers, created by the operator itself once the PodGroup is Inqueue.
    _runs_whole_in_one_remote_cluster_and_succeeds(
        "MPIJob", MPIJOB_V1, "examples/mpi/tensorflow-mnist.yaml", 3, namespace, cluster_api
    )


def test_mpijob_v1_is_refused_while_mpi_operator_mpijobs_exist_and_nothing_changes(
    namespace: str, cluster_api: Api, dev_env: object, operators: Callable[..., None]
) -> None:
    """Serving MPIJob v1 replaces the MPI operator's CRD, which would delete its MPIJobs: while one
    exists it is refused, naming it, and the MPI operator keeps running with its CRD."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    operators("mpi-operator")
    (job,) = sample("mpi-operator", "examples/v2beta1/pi/pi.yaml")
    job["spec"]["runPolicy"]["suspend"] = True  # no pods: the object is what counts
    apply(adapt(job, namespace))
    mpi_operator = catalog()["mpi-operator"].component
    pid = dev_env.supervisor.pid(mpi_operator)
    assert pid is not None

    with pytest.raises(RuntimeError, match=f"{namespace}/{job['metadata']['name']}.*delete them first"):
        dev_env.ensure_operators([MPIJOB_V1])
    assert _served(cluster_api, SHARED_CRD) == ["v2beta1"]
    assert dev_env.supervisor.pid(mpi_operator) == pid
    assert MPIJOB_V1 not in enabled(dev_env)
    kubectl("delete", "mpijob", job["metadata"]["name"], "-n", namespace, "--wait=true")


def _runs_whole_in_one_remote_cluster_and_succeeds(
    kind: str, operator: str, path: str, size: int, namespace: str, cluster_api: Api
) -> None:
    """The operator's own sample: its Volcano PodGroup counts all `size` pods, which run in one
    remote cluster; the job ends Succeeded, `kubectl get` says so, and deleting it leaves no pod in
    any remote cluster."""
    (job,) = sample(operator, path)
    assert job["kind"] == kind
    name = job["metadata"]["name"]
    apply(adapt(job, namespace, runtime="3s"))

    pg = wait_for("the job's Volcano PodGroup", lambda: found_podgroup(cluster_api, namespace, name))
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

    delete_and_wait_gone(cluster_api, namespace, kind.lower(), name)


def _served(api: Api, crd: str) -> list[str]:
    found = k8s.ApiextensionsV1Api(api("front")).read_custom_resource_definition(crd)
    return [v.name for v in found.spec.versions if v.served]


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
            (g := found_podgroup(cluster_api, namespace, name))
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
    assert not {"Failed", "Running"} & true_conditions(get(job))
    delete_and_wait_gone(cluster_api, namespace, "pytorchjob", name)


def test_pytorchjob_workers_really_rendezvous_and_all_reduce_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    """The operator's PyTorchJob sample (Master 1 + Worker 1) on real nodes, its image and program
    replaced by ours (armada-bridge.local/pytorch: Debian's PyTorch 1.13 on CPUs; the sample's
    downloads MNIST, which no pod here can reach). The worker's init container (the operator's,
    image `alpine:3.10`) waits until the master's Service resolves in the remote cluster's DNS; then
    both ranks meet at MASTER_ADDR:MASTER_PORT as the operator set them, all-reduce their ranks
    with gloo (0 + 1 = 1) and train 5 DDP steps to the same weights; the job ends Succeeded."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/pytorch/simple.yaml")
    name = job["metadata"]["name"]
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert {r: s["replicas"] for r, s in replicas.items()} == {"Master": 1, "Worker": 1}
    for spec in replicas.values():
        (container,) = spec["template"]["spec"]["containers"]
        # The sample's `Always` would pull; the real nodes have the image imported.
        container.update(
            image=pytorch.NAME, imagePullPolicy="IfNotPresent", command=["python3", pytorch.PROGRAM, "5"]
        )
    apply(adapt(job, namespace, cpu="200m", cpu_limit="1", memory="1Gi", real=True))

    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True", timeout=300)
    assert conditions(done).get("Failed") != "True"
    cluster = one_remote_cluster(cluster_api, namespace, 2)
    remote = k8s.CoreV1Api(cluster_api(cluster))
    for p in remote_pods(cluster_api, cluster, namespace):
        labels = remote.read_node(p.spec.node_name).metadata.labels or {}
        assert labels.get(keys.NODE_TYPE_LABEL) != keys.DEV_NODE_TYPE_VALUE, (
            p.metadata.name,
            p.spec.node_name,
        )

    master, worker = f"{name}-master-0", f"{name}-worker-0"
    logs = {pod: kubectl("logs", pod, "-c", "pytorch", "-n", namespace) for pod in (master, worker)}
    assert "rank 0/2: all_reduce sum = 1.0" in logs[master], logs[master]
    assert "rank 1/2: all_reduce sum = 1.0" in logs[worker], logs[worker]
    for rank, pod in enumerate((master, worker)):
        assert f"rank {rank}/2: step 5 loss " in logs[pod], logs[pod]
    # DDP averaged the gradients: both ranks end with the same weights, though each had its own data.
    weights = {pod: re.findall(r"weights sum = (-?[\d.]+)", log) for pod, log in logs.items()}
    assert len(weights[master]) == 1 and weights[master] == weights[worker], weights
    # The operator's init container found the master's Service by its short name.
    (init,) = next(
        p for p in front_pods(cluster_api, namespace) if p.metadata.name == worker
    ).status.init_container_statuses
    assert init.name == "init-pytorch" and init.state.terminated.exit_code == 0, init
    init_log = kubectl("logs", worker, "-c", "init-pytorch", "-n", namespace)
    assert f"Name:\t{master}.{namespace}.svc.cluster.local" in init_log, init_log

    delete_and_wait_gone(cluster_api, namespace, "pytorchjob", name)
