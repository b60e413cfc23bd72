"""KubeRay's autoscaler sample as the end-to-end tests run it on the real nodes, and programs run in
its head pod."""

from __future__ import annotations

from armada_bridge.objects import Obj
from devenv.operators.samples import adapt, sample
from tests.framework.operators import apply, kubectl

OPERATOR = "kuberay"
HEAD = "ray.io/node-type=head"
WORKERS = "ray.io/node-type=worker"
# Where the sample mounts its ConfigMap of actor programs in the head.
SAMPLES = "/home/ray/samples"


def autoscaling_raycluster(
    namespace: str,
    *,
    queue: str | None = None,
    head_cpu: str = "200m",
    head_memory: str = "2Gi",
    worker_cpu: str = "200m",
    worker_memory: str = "2Gi",
    autoscaler_cpu: str = "100m",
) -> Obj:
    """`config/samples/ray-cluster.autoscaler.yaml` (its ConfigMap of actor programs applied) on the
    real nodes under `queue` (None: its namespace's): head and workers asking for the given sizes, each worker offering Ray
    one CPU (its limit), so that each of the sample's one-CPU actors needs a worker of its own; the
    autoscaler beside the head asks for `autoscaler_cpu`."""
    docs = sample(OPERATOR, "config/samples/ray-cluster.autoscaler.yaml")
    (rc,) = [d for d in docs if d["kind"] == "RayCluster"]
    for d in docs:
        if d is not rc:
            d["metadata"]["namespace"] = namespace
            apply(d)
    adapt(rc, namespace, cpu=worker_cpu, cpu_limit="1", memory=worker_memory, queue=queue, real=True)
    (head,) = rc["spec"]["headGroupSpec"]["template"]["spec"]["containers"]
    head["resources"] = {
        "requests": {"cpu": head_cpu, "memory": head_memory},
        "limits": {"cpu": "1", "memory": head_memory},
    }
    rc["spec"]["autoscalerOptions"]["resources"] = {
        "requests": {"cpu": autoscaler_cpu, "memory": "512Mi"},
        "limits": {"cpu": "500m", "memory": "512Mi"},
    }
    return rc


def run_on_head(head: str, namespace: str, *argv: str) -> str:
    """Run a command in the Ray head container of front pod `head` (kubectl exec, through the bridge)."""
    return kubectl("exec", head, "-c", "ray-head", "-n", namespace, "--", *argv)


def detached_actors(head: str, namespace: str, names: list[str]) -> None:
    """Create the sample's one-CPU detached actors by these names (its `detached_actor.py`, run in
    the head for each)."""
    loop = f"for name in {' '.join(names)}; do python {SAMPLES}/detached_actor.py $name || exit 1; done"
    run_on_head(head, namespace, "sh", "-c", loop)


def terminate_actors(head: str, namespace: str, names: list[str]) -> None:
    """Kill the detached actors of these names (the sample's `terminate_detached_actor.py`)."""
    loop = f"for name in {' '.join(names)}; do python {SAMPLES}/terminate_detached_actor.py $name || exit 1; done"
    run_on_head(head, namespace, "sh", "-c", loop)
