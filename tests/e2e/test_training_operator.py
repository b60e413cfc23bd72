"""Kubeflow training-operator v1, released and unchanged, in Volcano gang mode: its own samples of
each job kind run whole in one remote cluster and end Succeeded, MXJob through v1.8.1 (the last
release that serves it) beside v1.9.4, and MPIJob v1 with the front serving its CRD in place of the
MPI operator's for the test; a job too big for any cluster waits whole (the operator creates no pod
before its PodGroup is Inqueue) and is not failed. On real nodes every kind really computes, its
pods wired as the operator wires them: a PyTorchJob's master and worker rendezvous and all-reduce
with PyTorch's gloo backend, TFJob workers train with MultiWorkerMirroredStrategy, an XGBoostJob's
master and workers train through its tracker, PaddleJob workers all-reduce, an MXJob's scheduler,
server and workers run a dist_sync kvstore, JAXJob processes psum, and an MPIJob v1 launcher's
mpirun reaches its workers through `kubectl exec` (the operator's kubexec.sh, kubectl delivered by
its init container)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.objects import Obj
from devenv.images import jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost
from devenv.images.framework import PROGRAM_DIR, SHARED, FrameworkImage
from devenv.operators.catalog import catalog
from devenv.operators.install import SHARED_CRD, enabled
from devenv.operators.samples import adapt, sample
from tests.framework.bridge import Api, front_pods, remote_pods
from tests.framework.kube import wait_for
from tests.framework.operators import (
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


@pytest.mark.exclusive  # it swaps the MPI operator for the training operator's MPIJob v1
def test_mpijob_v1_runs_whole_in_one_remote_cluster_and_succeeds_in_place_of_the_mpi_operator(
    namespace: str, cluster_api: Api, mpijob_v1: None
) -> None:
    assert _served(cluster_api, SHARED_CRD) == ["v1"]
    # Launcher and 2 workers, created by the operator itself once the PodGroup is Inqueue.
    _runs_whole_in_one_remote_cluster_and_succeeds(
        "MPIJob", MPIJOB_V1, "examples/mpi/tensorflow-mnist.yaml", 3, namespace, cluster_api
    )


@pytest.mark.exclusive  # it asks for that swap
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
    _succeeds_on_real_nodes(job, namespace, cluster_api, 2)

    master, worker = f"{name}-master-0", f"{name}-worker-0"
    logs = _logs(namespace, "pytorch", master, worker)
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


# Real computations: each kind's own sample, its pods given our image and program (the samples'
# images download data sets, which no pod here can reach), its wiring left as the operator sets it.

# Each pod's share of a real node: a little CPU, a limit of one core, the framework's memory.
REAL_CPU, REAL_CPU_LIMIT = "200m", "1"


def _succeeds_on_real_nodes(
    job: Obj, namespace: str, cluster_api: Api, size: int, memory: str = "1Gi", timeout: float = 300
) -> str:
    """Apply the job with its pods on the real nodes; once it is Succeeded (and not Failed), all
    `size` pods are in one remote cluster, none of them on a KWOK node. Returns that cluster."""
    apply(adapt(job, namespace, cpu=REAL_CPU, cpu_limit=REAL_CPU_LIMIT, memory=memory, real=True))
    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True", timeout=timeout)
    assert conditions(done).get("Failed") != "True"
    cluster = one_remote_cluster(cluster_api, namespace, size)
    _on_real_nodes(cluster_api, cluster, namespace)
    return cluster


def _on_real_nodes(cluster_api: Api, cluster: str, namespace: str) -> None:
    """Each remote pod bound to a real node (by the remote's scheduler, once the real node has room:
    the suite's other real-node tests may still hold it)."""
    remote = k8s.CoreV1Api(cluster_api(cluster))

    def bound() -> list[Any] | None:
        pods = remote_pods(cluster_api, cluster, namespace)
        return pods if pods and all(p.spec.node_name for p in pods) else None

    for p in wait_for(f"the remote pods bound to nodes of {cluster}", bound, timeout=300):
        labels = remote.read_node(p.spec.node_name).metadata.labels or {}
        assert labels.get(keys.NODE_TYPE_LABEL) != keys.DEV_NODE_TYPE_VALUE, (
            p.metadata.name,
            p.spec.node_name,
        )


def _logs(namespace: str, container: str, *pods: str) -> dict[str, str]:
    """Each front pod's `kubectl logs` of `container`."""
    return {pod: kubectl("logs", pod, "-c", container, "-n", namespace) for pod in pods}


def _run_ours(
    specs: dict[str, Obj], image: FrameworkImage, *args: str, command: list[str] | None = None
) -> None:
    """Every replica's one container runs our program (or `command`) in our image, imported on the
    real nodes (never pulled), in place of the sample's image, command and arguments."""
    for spec in specs.values():
        (container,) = spec["template"]["spec"]["containers"]
        container.pop("args", None)
        container.update(
            image=image.name,
            imagePullPolicy="IfNotPresent",
            command=command or ["python3", image.path, *args],
        )


def _agree(pattern: str, logs: dict[str, str]) -> str:
    """The one value `pattern` finds in every log (asserted: once in each, the same in all)."""
    found = {pod: re.findall(pattern, log) for pod, log in logs.items()}
    values = {tuple(v) for v in found.values()}
    assert len(values) == 1 and len(next(iter(values))) == 1, found
    return str(next(iter(values))[0])


def test_tfjob_workers_train_with_multi_worker_mirrored_strategy_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None], node_images: Callable[..., None]
) -> None:
    """The operator's TFJob sample (2 workers) with our TensorFlow image and program: each worker
    reads the TF_CONFIG the operator set (both workers' `<pod>.<namespace>.svc:2222`, its own task),
    MultiWorkerMirroredStrategy meets the other over gRPC, they all-reduce their indices (0 + 1) and
    train 5 steps on their own data to the same weights; the job (worker 0 done) ends Succeeded."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/tensorflow/simple.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["tfReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Worker": 2}
    node_images(tensorflow.IMAGE.key)  # imported on demand
    _run_ours(specs, tensorflow.IMAGE, "5")
    _succeeds_on_real_nodes(job, namespace, cluster_api, 2, memory="2Gi")

    logs = _logs(namespace, "tensorflow", f"{name}-worker-0", f"{name}-worker-1")
    for i, log in enumerate(logs.values()):
        assert f"worker {i}/2: all-reduce sum = 1.0" in log, log
        assert f"worker {i}/2: step 5 loss " in log, log
    _agree(r"weights sum = (-?[\d.]+)", logs)
    delete_and_wait_gone(cluster_api, namespace, "tfjob", name)


def test_xgboostjob_master_and_workers_train_through_the_tracker_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None], node_images: Callable[..., None]
) -> None:
    """The operator's XGBoostJob sample (Master 1 + Worker 2) with our XGBoost image and program:
    the master runs the tracker at MASTER_PORT (its `xgboostjob-port`, 9991), the three ranks
    (RANK as the operator numbered them) join it at MASTER_ADDR and train 10 rounds together, each
    on its own rows, to one model; the master's log has the model's evaluation; the job (its master
    done) ends Succeeded."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/xgboost/xgboostjob.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["xgbReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Master": 1, "Worker": 2}
    node_images(xgboost.IMAGE.key)  # imported on demand
    _run_ours(specs, xgboost.IMAGE, "10")
    _succeeds_on_real_nodes(job, namespace, cluster_api, 3)

    pods = (f"{name}-master-0", f"{name}-worker-0", f"{name}-worker-1")
    logs = _logs(namespace, "xgboost", *pods)
    for rank, pod in enumerate(pods):
        assert f"rank {rank}/3: trained 10 rounds, model " in logs[pod], logs[pod]
    _agree(r"trained 10 rounds, model ([0-9a-f]+)", logs)  # one model, trained together
    evaluation = re.search(
        r"master: train-logloss=([\d.]+) train-error=([\d.]+) test-accuracy=([\d.]+)", logs[pods[0]]
    )
    assert evaluation is not None, logs[pods[0]]
    assert float(evaluation[3]) > 0.9, evaluation[0]
    delete_and_wait_gone(cluster_api, namespace, "xgboostjob", name)


def test_paddlejob_workers_all_reduce_and_train_data_parallel_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None], node_images: Callable[..., None]
) -> None:
    """The operator's collective PaddleJob sample (2 workers, `python -m paddle.distributed.launch`)
    with our Paddle image and program in place of `run_check`: worker 0's launcher serves at
    PADDLE_MASTER (its pod address), the other's reaches it by worker 0's Service (waited for until
    it resolves), the launchers rank the two, and the ranks all-reduce (0 + 1) and train 5
    data-parallel steps to the same weights over gloo; the job ends Succeeded."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/paddlepaddle/simple-cpu.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["paddleReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Worker": 2}
    launch = (
        f'python3 {PROGRAM_DIR}/{SHARED.name} "$PADDLE_MASTER" && exec python3 -m paddle.distributed.launch'
    )
    node_images(paddle.IMAGE.key)  # imported on demand
    _run_ours(specs, paddle.IMAGE, command=["sh", "-c", f"{launch} {paddle.IMAGE.path} 5"])
    _succeeds_on_real_nodes(job, namespace, cluster_api, 2, memory="2Gi")

    logs = _logs(namespace, "paddle", f"{name}-worker-0", f"{name}-worker-1")
    ranks = sorted(r for log in logs.values() for r in re.findall(r"rank (\d)/2: all_reduce sum = 1\.0", log))
    assert ranks == ["0", "1"], logs  # each pod one rank, whichever the launchers gave it
    _agree(r"weights sum = (-?[\d.]+)", logs)
    delete_and_wait_gone(cluster_api, namespace, "paddlejob", name)


def test_mxjob_scheduler_server_and_workers_run_a_dist_sync_kvstore_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None], node_images: Callable[..., None]
) -> None:
    """training-operator v1.8.1's MXJob sample (Scheduler, Server, Worker), its workers made 2, with
    our MXNet 1.9.1 image and program: every pod has the DMLC_* variables the operator set (the
    scheduler's Service and port as DMLC_PS_ROOT_URI/PORT), the workers push (rank + 1) to a
    `dist_sync` kvstore and pull the servers' aggregate, 1 + 2 = 3 in every element; the scheduler
    ends when the workers are done, and with it the job, Succeeded."""
    operator = "training-operator-mxjob"
    operators(operator)
    (job,) = sample(operator, "examples/mxnet/mxjob_dist_v1.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["mxReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Scheduler": 1, "Server": 1, "Worker": 1}
    specs["Worker"]["replicas"] = 2
    node_images(mxnet.IMAGE.key)  # imported on demand
    _run_ours(specs, mxnet.IMAGE)
    _succeeds_on_real_nodes(job, namespace, cluster_api, 4)

    logs = _logs(namespace, "mxnet", f"{name}-worker-0", f"{name}-worker-1")
    ranks = sorted(
        r for log in logs.values() for r in re.findall(r"worker (\d)/2: pulled \[\[3\.0, 3\.0, 3\.0\]", log)
    )
    assert ranks == ["0", "1"], logs
    assert "scheduler: serving" in _logs(namespace, "mxnet", f"{name}-scheduler-0")[f"{name}-scheduler-0"]
    delete_and_wait_gone(cluster_api, namespace, "mxjob", name)


def test_jaxjob_processes_initialize_jax_distributed_and_psum_on_real_nodes(
    namespace: str, cluster_api: Api, operators: Callable[..., None], node_images: Callable[..., None]
) -> None:
    """The operator's JAXJob sample (2 workers) with our JAX image and program: each process calls
    `jax.distributed.initialize` at COORDINATOR_ADDRESS:COORDINATOR_PORT (worker 0's Service and
    `jaxjob-port`) with NUM_PROCESSES and PROCESS_ID as the operator set them, and psums over both
    processes' devices with gloo, 1 + 2 = 3 on each; the job ends Succeeded."""
    operators(OPERATOR)
    (job,) = sample(OPERATOR, "examples/jax/cpu-demo/demo.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["jaxReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Worker": 2}
    node_images(jax.IMAGE.key)  # imported on demand
    _run_ours(specs, jax.IMAGE)
    _succeeds_on_real_nodes(job, namespace, cluster_api, 2)

    logs = _logs(namespace, "jax", f"{name}-worker-0", f"{name}-worker-1")
    for i, log in enumerate(logs.values()):
        assert f"process {i}/2: 2 devices, 1 local" in log, log
        assert f"process {i}/2: psum = 3.0" in log, log
    delete_and_wait_gone(cluster_api, namespace, "jaxjob", name)


# The MPIJob v1 launcher's command: wait until every worker of the operator's hostfile takes a
# `kubectl exec` (the operator starts the launcher with its workers, and its restart policy is
# Never), then the sample's mpirun with the pi program in place of Horovod's.
MPI_LAUNCHER = (
    "for w in $(cut -d' ' -f1 /etc/mpi/hostfile); do"
    ' until /opt/kube/kubectl exec "$w" -- true; do sleep 2; done; done;'
    " exec mpirun --allow-run-as-root -np 2 -bind-to none -map-by slot -mca pml ob1 -mca btl ^openib "
)


@pytest.mark.exclusive  # it swaps the MPI operator for the training operator's MPIJob v1
def test_mpijob_v1_launcher_reaches_its_workers_through_kubectl_exec_on_real_nodes(
    namespace: str, cluster_api: Api, mpijob_v1: None
) -> None:
    """The training operator's MPIJob v1 sample (Launcher + 2 workers) with the MPI operator's pi
    image (`mpioperator/mpi-pi:openmpi`, Debian's OpenMPI) in place of Horovod's: the launcher's
    init container (the operator's `kubectl-delivery`, built here) copies kubectl into /opt/kube,
    and mpirun starts its daemons on the workers through the operator's /etc/mpi/kubexec.sh, a
    `kubectl exec` through the front's API server and the bridge's vkubelet into each worker in
    its remote cluster; both ranks compute pi, the launcher's log has the result, the job ends
    Succeeded."""
    (job,) = sample(MPIJOB_V1, "examples/mpi/tensorflow-mnist.yaml")
    name, specs = job["metadata"]["name"], job["spec"]["mpiReplicaSpecs"]
    assert {r: s["replicas"] for r, s in specs.items()} == {"Launcher": 1, "Worker": 2}
    for spec in specs.values():
        (container,) = spec["template"]["spec"]["containers"]
        container.update(image=mpi.IMAGE, imagePullPolicy="IfNotPresent")
        container.pop("command", None)
        container.pop("args", None)
    (launcher,) = specs["Launcher"]["template"]["spec"]["containers"]
    launcher["command"] = ["sh", "-c", MPI_LAUNCHER + mpi.PROGRAM]
    apply(adapt(job, namespace, cpu=REAL_CPU, cpu_limit=REAL_CPU_LIMIT, memory="512Mi", real=True))
    # Placed before it ends: the sample's cleanPodPolicy Running deletes the workers after.
    wait_for(
        "3 pods, each admitted to a remote cluster",
        lambda: len([p for p in front_pods(cluster_api, namespace) if p.spec.node_name]) == 3,
        timeout=120,
    )
    cluster = one_remote_cluster(cluster_api, namespace, 3)
    _on_real_nodes(cluster_api, cluster, namespace)
    done = wait_status(job, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True", timeout=300)
    assert conditions(done).get("Failed") != "True"

    log = _logs(namespace, "mpi", f"{name}-launcher")[f"{name}-launcher"]
    assert re.search(r"pi is approximately 3\.14159", log), log
    # Both ranks ran, each on a worker, reached by kubexec.sh's `kubectl exec`.
    assert {f"{name}-worker-0", f"{name}-worker-1"} <= set(re.findall(rf"{name}-worker-\d+", log)), log
    (init,) = next(
        p for p in front_pods(cluster_api, namespace) if p.metadata.name == f"{name}-launcher"
    ).status.init_container_statuses
    assert init.name == "kubectl-delivery" and init.state.terminated.exit_code == 0, init
    delete_and_wait_gone(cluster_api, namespace, "mpijob", name)
