"""The Spark operator's SparkPi sample for Volcano as the end-to-end tests submit it, and the same
application made elastic (dynamic allocation) running a program of tests/framework/realnode_programs."""

from __future__ import annotations

from armada_bridge import keys
from armada_bridge.core.quantities import parse_quantity
from armada_bridge.objects import Obj
from devenv.operators.samples import sample
from devenv.realnode.placement import on_a_real_node
from tests.framework import PROGRAMS
from tests.framework.operators import apply

OPERATOR = "spark-operator"
SAMPLE = "examples/spark-pi-volcano.yaml"
# The ServiceAccount and Role its Helm chart installs in each job namespace (the driver runs as it).
JOB_NAMESPACE_RBAC = "config/spark-rbac/spark-application-rbac.yaml"
DRIVER = "spark-role=driver"
EXECUTOR = "spark-role=executor"

# What a pod of the sample asks for in memory: its `memory` (Spark's 512m: MiB) and what Spark
# adds for a PySpark pod (`spark.kubernetes.memoryOverheadFactor` 0.4, at least 384 MiB).
SAMPLE_MEMORY = "512m"
POD_MEMORY = "896Mi"


def spark_app(
    namespace: str,
    *,
    cores: int = 1,
    executors: int | None = None,
    runtime: str | None = None,
    queue: str | None = None,
    real: bool = False,
) -> Obj:
    """The operator's own SparkPi sample for Volcano, with its job namespace's RBAC applied, changed
    only in namespace, sizes, the queue label and (driver) how long KWOK lets it run; with `real`,
    its pods on the real nodes (the application's own tolerations and affinity for driver and
    executors), each asking for a fifth of a core."""
    for doc in sample(OPERATOR, JOB_NAMESPACE_RBAC):
        doc["metadata"]["namespace"] = namespace
        apply(doc)
    (app,) = sample(OPERATOR, SAMPLE)
    app["metadata"]["namespace"] = namespace
    spec = app["spec"]
    assert spec["batchScheduler"] == "volcano"
    for role in ("driver", "executor"):
        spec[role]["cores"] = cores
        if queue is not None:
            spec[role].setdefault("labels", {})[keys.QUEUE_LABEL] = queue
    if executors is not None:
        spec["executor"]["instances"] = executors
    if runtime is not None:
        spec["driver"].setdefault("annotations", {})[keys.SIMULATED_RUNTIME] = runtime
    if real:
        for role in ("driver", "executor"):
            placement = on_a_real_node({})
            spec[role].update(
                coreRequest="200m", tolerations=placement["tolerations"], affinity=placement["affinity"]
            )
    return app


def state(app: Obj) -> str:
    return str(((app.get("status") or {}).get("applicationState") or {}).get("state") or "")


def elastic_app(
    namespace: str,
    program: str,
    *,
    arguments: list[str] | None = None,
    queue: str | None = None,
    driver_cpu: str = "200m",
    executor_cpu: str = "100m",
    max_executors: int = 4,
) -> Obj:
    """The SparkPi sample on the real nodes turned into a PySpark application with dynamic
    allocation (the operator's `dynamicAllocation`, shuffle tracking, from one executor up to
    `max_executors`; a backlog of a second asks for more, executors idle for 10 s are released):
    `program` (a file of realnode_programs, given to the driver in a ConfigMap) run with
    `arguments`. Its PodGroup reserves what the driver and its first executor ask for
    (`batchSchedulerOptions.resources`: the operator counts the driver's whole `cores` otherwise,
    more than one real node has)."""
    apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "programs", "namespace": namespace},
            "data": {program: (PROGRAMS / program).read_text()},
        }
    )
    app = spark_app(namespace, queue=queue, real=True)
    spec = app["spec"]
    spec.pop("mainClass")
    spec["executor"].pop("instances")  # else the first executors are as many (Spark's rule)
    spec.update(
        type="Python",
        pythonVersion="3",
        mainApplicationFile=f"local:///opt/programs/{program}",
        arguments=list(arguments or []),
        dynamicAllocation={
            "enabled": True,
            "shuffleTrackingEnabled": True,
            "initialExecutors": 1,
            "minExecutors": 1,
            "maxExecutors": max_executors,
        },
        sparkConf={
            "spark.dynamicAllocation.schedulerBacklogTimeout": "1s",
            "spark.dynamicAllocation.executorIdleTimeout": "10s",
        },
        volumes=[{"name": "programs", "configMap": {"name": "programs"}}],
    )
    spec["driver"]["coreRequest"] = driver_cpu
    spec["executor"]["coreRequest"] = executor_cpu
    spec["driver"]["volumeMounts"] = [{"name": "programs", "mountPath": "/opt/programs"}]
    assert spec["driver"]["memory"] == spec["executor"]["memory"] == SAMPLE_MEMORY
    cpu = parse_quantity(driver_cpu) + parse_quantity(executor_cpu)
    memory = 2 * parse_quantity(POD_MEMORY) // 1000
    spec["batchSchedulerOptions"] = {"resources": {"cpu": f"{cpu}m", "memory": str(memory)}}
    return app
