"""Queue and gang rules across released operators, unchanged, on their own samples:

* with room for one of two gangs, the second waits whole and starts when the first ends
  (training-operator PyTorchJobs);
* objects of two operators in two queues share the remotes by fair share (KubeRay RayClusters of
  one queue submitted first, MPI operator MPIJobs of another, all waiting on cordoned nodes: when
  the nodes come back, each queue gets its half);
* an urgent operator gang (an MPIJob, its PodGroup reserving minResources) preempts a preemptible
  one whole, runs and succeeds.
* a preempted gang's operator sees the failure and, as its restart policy says, its new pods queue
  again (a PyTorchJob, `restartPolicy: OnFailure`, preempted by an urgent gang).

Every gang is sized from what is free in the remotes: pods of 20 CPUs (over half of a 32-CPU node,
so one per node) in gangs of 4, and `gang_rooms` says how many such gangs fit now."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from armada_bridge.objects import Obj
from devenv.operators.samples import adapt, sample
from tests.framework.bridge import (
    REMOTES,
    Api,
    cluster_of,
    cordoned,
    free_by_node,
    front_pods,
    gang_rooms,
    pod,
    remote_pods,
)
from tests.framework.kube import wait_for
from tests.framework.operators import (
    apply,
    conditions,
    delete_and_wait_gone,
    get,
    kubectl,
    wait_gone_from_remotes,
    wait_status,
)

# Alone in the environment: they fill every gang's room of the remotes (one cordons their KWOK nodes).
pytestmark = pytest.mark.exclusive

CPU = 20
MEMBERS = 4
PREEMPTIBLE = "armada-preemptible"
URGENT = "armada-urgent"
PYTORCH_JOB_LABEL = "training.kubeflow.org/job-name"


def pytorchjob(
    namespace: str, name: str, *, runtime: str | None = None, queue: str | None = None, priority: str = ""
) -> Obj:
    """training-operator's own PyTorchJob sample: 1 master + 3 workers of CPU each; a priority
    class, where given, through the operator's own gang field (`runPolicy.schedulingPolicy`)."""
    (job,) = sample("training-operator", "examples/pytorch/simple.yaml")
    job["metadata"]["name"] = name
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = MEMBERS - 1
    if priority:
        job["spec"].setdefault("runPolicy", {}).setdefault("schedulingPolicy", {})["priorityClass"] = priority
    return adapt(job, namespace, cpu=str(CPU), runtime=runtime, queue=queue)


def mpijob(namespace: str, name: str, *, queue: str, priority: str = "") -> Obj:
    """The MPI operator's own MPIJob sample: launcher + 3 workers of CPU each, one gang."""
    (job,) = sample("mpi-operator", "examples/v2beta1/pi/pi.yaml")
    job["metadata"]["name"] = name
    job["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] = MEMBERS - 1
    if priority:
        job["spec"].setdefault("runPolicy", {}).setdefault("schedulingPolicy", {})["priorityClass"] = priority
    return adapt(job, namespace, cpu=str(CPU), queue=queue)


def raycluster(namespace: str, name: str, *, queue: str) -> Obj:
    """KubeRay's own RayCluster sample: head + 3 workers of CPU each, one gang."""
    (rc,) = sample("kuberay", "config/samples/ray-cluster.sample.yaml")
    rc["metadata"]["name"] = name
    rc["spec"]["workerGroupSpecs"][0].update(replicas=MEMBERS - 1, minReplicas=MEMBERS - 1)
    return adapt(rc, namespace, cpu=str(CPU), queue=queue)


def fill_with_preemptible_pytorchjobs(api: Api, namespace: str, queue: str) -> list[Obj]:
    """Preemptible PyTorchJobs (the sample's pods, `restartPolicy: OnFailure`) of `queue`, as many
    as there is room for, all Running."""
    rooms = gang_rooms(api, MEMBERS, CPU)
    assert rooms >= 1, "no room for one gang of 4 x 20 CPUs"
    jobs = [pytorchjob(namespace, f"victim-{i}", queue=queue, priority=PREEMPTIBLE) for i in range(rooms)]
    for job in jobs:
        apply(job)
    wait_for(
        f"queue {queue}'s gangs Running",
        lambda: len(running(front_pods(api, namespace))) == MEMBERS * rooms,
        timeout=180,
    )
    return jobs


def restarted_jobs(api: Api, namespace: str, jobs: list[Obj], before: set[str]) -> list[Obj]:
    """The jobs whose operator replaced every pod (all of them made after `before` was taken).
    (Its `Restarting` condition does not last: the operator drops it once the job runs again.)"""
    out = []
    for job in jobs:
        pods = front_pods(api, namespace, f"{PYTORCH_JOB_LABEL}={job['metadata']['name']}")
        if len(pods) == MEMBERS and not {p.metadata.uid for p in pods} & before:
            out.append(job)
    return out


def placed(pods: list[Any]) -> list[Any]:
    """Pods admitted to a remote cluster that have not ended."""
    return [p for p in pods if p.spec.node_name and p.status.phase in ("Pending", "Running")]


def running(pods: list[Any]) -> list[Any]:
    return [p for p in pods if p.spec.node_name and p.status.phase == "Running"]


def test_with_room_for_one_of_two_gangs_the_second_waits_whole_and_starts_when_the_first_ends(
    namespace_in_its_queue: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    namespace = namespace_in_its_queue
    operators("training-operator")
    rooms = gang_rooms(cluster_api, MEMBERS, CPU)
    assert rooms >= 1, "no room for one gang of 4 x 20 CPUs"
    # Long-running gangs take all the room but one.
    for i in range(rooms - 1):
        apply(pytorchjob(namespace, f"filler-{i}"))
    if rooms > 1:
        wait_for(
            "the fillers Running",
            lambda: len(running(front_pods(cluster_api, namespace))) == MEMBERS * (rooms - 1),
            timeout=180,
        )
    jobs = [pytorchjob(namespace, n, runtime="15s") for n in ("one", "two")]
    for job in jobs:
        apply(job)

    def of(job: Obj) -> list[Any]:
        return front_pods(cluster_api, namespace, f"{PYTORCH_JOB_LABEL}={job['metadata']['name']}")

    names = {j["metadata"]["name"] for j in jobs}
    order: list[str] = []
    deadline = time.monotonic() + 300
    while not all(conditions(get(j)).get("Succeeded") == "True" for j in jobs):
        assert time.monotonic() < deadline, f"both jobs did not succeed; started: {order}"
        # Read where the room is, in the remotes: a pod's room is free once it has ended there,
        # before the front's copy of its status says so.
        live = {
            str((p.metadata.labels or {}).get(PYTORCH_JOB_LABEL))
            for c in REMOTES
            for p in remote_pods(cluster_api, c, namespace)
            if p.status.phase in ("Pending", "Running")
        }
        active = sorted(live & names)
        assert len(active) <= 1, "both gangs placed at once though there is room for one"
        for name in active:
            if name not in order:
                order.append(name)
        time.sleep(0.5)
    assert len(order) == 2, order
    for job in jobs:
        pods = of(job)
        assert len(pods) == MEMBERS and len({cluster_of(p) for p in pods}) == 1
        assert conditions(get(job)).get("Failed") != "True"
    delete_and_wait_gone(cluster_api, namespace, "pytorchjob")


def test_objects_of_two_operators_in_two_queues_share_the_remotes_by_fair_share(
    namespace: str, cluster_api: Api, operators: Callable[..., None], queues: list[str]
) -> None:
    """RayClusters of queue a are submitted first, then MPIJobs of queue b, each queue enough to
    fill the remotes alone, while every remote node is cordoned; then the nodes come back. By
    arrival order a would take every room; by fair share each queue gets its half."""
    operators("kuberay", "mpi-operator")
    a, b = queues
    rooms = gang_rooms(cluster_api, MEMBERS, CPU)
    assert rooms >= 2, f"room for {rooms} gang(s) of 4 x 20 CPUs: fair share needs two"
    nodes = [(c, n) for c, free in free_by_node(cluster_api).items() for n in free]
    with cordoned(cluster_api, nodes):
        # Submitted in this order, each queue's pods all made (and waiting) before the next.
        rays = [raycluster(namespace, f"ray-{i}", queue=a) for i in range(rooms)]
        mpijobs = [mpijob(namespace, f"mpi-{i}", queue=b) for i in range(rooms)]
        for queue, objs in ((a, rays), (b, mpijobs)):
            for obj in objs:
                apply(obj)
            selector = f"{keys.QUEUE_LABEL}={queue}"
            wait_for(
                f"queue {queue}'s pods, all waiting",
                lambda s=selector: len(front_pods(cluster_api, namespace, s)) == MEMBERS * rooms,
                timeout=120,
            )
        assert not [p for p in front_pods(cluster_api, namespace) if p.spec.node_name]

    # Gangs each queue got: RayClusters run until deleted; an MPIJob ends when its launcher (a Job)
    # does, and its room goes to whoever waits, a as well once b waits no more.
    def gangs() -> tuple[int, int, int]:
        """a's RayClusters placed, b's MPIJobs placed or ended, b's MPIJobs still waiting."""
        pods = front_pods(cluster_api, namespace)
        ray_placed = sum(
            len(
                [
                    p
                    for p in pods
                    if p.spec.node_name and p.metadata.name.startswith(f"{r['metadata']['name']}-")
                ]
            )
            == MEMBERS
            for r in rays
        )
        mpi_served = sum(
            conditions(get(j)).get("Succeeded") == "True"
            or len(placed([p for p in pods if p.metadata.name.startswith(f"{j['metadata']['name']}-")]))
            == MEMBERS
            for j in mpijobs
        )
        return ray_placed, mpi_served, len(mpijobs) - mpi_served

    half = rooms // 2
    over: list[tuple[int, int, int]] = []  # a above its share while b waited, as seen

    def both_served() -> tuple[int, int] | None:
        ray_placed, mpi_served, mpi_waiting = gangs()
        if ray_placed > rooms - half and mpi_waiting:
            over.append((ray_placed, mpi_served, mpi_waiting))
        return (ray_placed, mpi_served) if min(ray_placed, mpi_served) >= half else None

    wait_for(f"each queue with {half} gang(s) placed", both_served, timeout=180)
    assert not over, (
        f"queue a took more than its share while b waited (a placed, b served, b waiting): {over}"
    )
    for kind in ("raycluster", "mpijob"):
        kubectl("delete", kind, "--all", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace, timeout=180)


def test_a_preempted_gangs_operator_restarts_it_and_its_new_pods_queue_again(
    namespace: str, cluster_api: Api, operators: Callable[..., None], queues: list[str]
) -> None:
    operators("training-operator")
    a, b = queues
    victims = fill_with_preemptible_pytorchjobs(cluster_api, namespace, a)
    before = {p.metadata.uid for p in front_pods(cluster_api, namespace)}
    # Queue b: an urgent gang of the same shape (Armada gang annotations) that runs for 60 s.
    core = k8s.CoreV1Api(cluster_api("front"))
    gang = {keys.GANG_ID: "urgent", keys.GANG_CARDINALITY: str(MEMBERS), keys.SIMULATED_RUNTIME: "60s"}
    for i in range(MEMBERS):
        urgent = pod(f"urgent-{i}", queue=b, cpu=str(CPU), annotations=gang, priority_class=URGENT)
        urgent["spec"]["restartPolicy"] = "Never"
        core.create_namespaced_pod(namespace, urgent)
    urgent_pods = f"{keys.QUEUE_LABEL}={b}"
    wait_for(
        "the urgent gang placed",
        lambda: len(placed(front_pods(cluster_api, namespace, urgent_pods))) == MEMBERS,
        timeout=120,
    )
    # Exactly one of a's jobs was preempted, whole; its operator saw its pods fail and, as its
    # restart policy says, restarted it: new pods, which queued and run again, in one cluster.
    restarted = wait_for(
        "a PyTorchJob restarted by its operator",
        lambda: restarted_jobs(cluster_api, namespace, victims, before),
        timeout=120,
    )
    assert len(restarted) == 1, [j["metadata"]["name"] for j in restarted]
    (job,) = restarted
    of_job = f"{PYTORCH_JOB_LABEL}={job['metadata']['name']}"

    def new_pods_waiting() -> list[Any] | None:
        pods = [p for p in front_pods(cluster_api, namespace, of_job) if p.metadata.uid not in before]
        return pods if len(pods) == MEMBERS and not placed(pods) else None

    # While the urgent gang runs, the restarted job's new pods wait, whole.
    wait_for("the restarted job's new pods waiting", new_pods_waiting, timeout=60)
    assert len(placed(front_pods(cluster_api, namespace, urgent_pods))) == MEMBERS

    def new_pods_running() -> list[Any] | None:
        fresh = [
            p for p in running(front_pods(cluster_api, namespace, of_job)) if p.metadata.uid not in before
        ]
        return fresh if len(fresh) == MEMBERS else None

    fresh = wait_for("the restarted job's new pods Running", new_pods_running, timeout=180)
    assert len({cluster_of(p) for p in fresh}) == 1
    # The operator reports the restarted job Running again, and no job failed.
    wait_status(job, "Running again", lambda j: conditions(j).get("Running") == "True", timeout=60)
    for other in victims:
        state = conditions(get(other))
        assert state.get("Failed") != "True" and state.get("Running") == "True", state
        if other is not job:
            pods = front_pods(cluster_api, namespace, f"{PYTORCH_JOB_LABEL}={other['metadata']['name']}")
            assert {p.metadata.uid for p in pods} <= before, "a job that was not preempted was restarted"
    kubectl("delete", "pytorchjob", "--all", "-n", namespace, "--wait=true")
    kubectl("delete", "pods", "-l", urgent_pods, "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace, timeout=180)


def test_an_urgent_operator_gang_preempts_a_preemptible_one_whole(
    namespace: str, cluster_api: Api, operators: Callable[..., None], queues: list[str]
) -> None:
    operators("training-operator", "mpi-operator")
    a, b = queues
    victims = fill_with_preemptible_pytorchjobs(cluster_api, namespace, a)
    before = {p.metadata.uid for p in front_pods(cluster_api, namespace)}
    # The MPI operator's own sample as an urgent gang (its PodGroup's priorityClassName, through
    # the operator's `runPolicy.schedulingPolicy`; its PodGroup reserves minResources): it
    # preempts one of a's gangs, whole, runs and succeeds.
    urgent = mpijob(namespace, "urgent", queue=b, priority=URGENT)
    apply(urgent)
    done = wait_status(urgent, "Succeeded", lambda j: conditions(j).get("Succeeded") == "True", timeout=120)
    assert conditions(done).get("Failed") != "True"
    restarted = wait_for(
        "a PyTorchJob restarted by its operator",
        lambda: restarted_jobs(cluster_api, namespace, victims, before),
        timeout=60,
    )
    assert len(restarted) == 1, [j["metadata"]["name"] for j in restarted]
    for kind in ("pytorchjob", "mpijob"):
        kubectl("delete", kind, "--all", "-n", namespace, "--wait=true")
    wait_gone_from_remotes(cluster_api, namespace, timeout=180)
