"""JobSet (released controller, unchanged) and the Indexed Job of Kubernetes itself: the samples in
manifests/samples run as one gang in one remote cluster and complete, and one too big for any
cluster waits whole; deleting leaves nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from devenv.operators.samples import adapt
from devenv.versions import REPO_ROOT
from tests.framework.bridge import Api
from tests.framework.operators import (
    IN_ITS_NAMESPACES_QUEUE,
    apply,
    assert_waits_whole,
    conditions,
    delete_and_wait_gone,
    get,
    kubectl,
    one_remote_cluster,
    wait_status,
)

pytestmark = IN_ITS_NAMESPACES_QUEUE

SAMPLES = REPO_ROOT / "manifests" / "samples"


def ours(name: str) -> dict[str, Any]:
    return dict(yaml.safe_load((SAMPLES / name).read_text()))


def test_jobset_runs_whole_in_one_remote_cluster_and_completes(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators("jobset")
    js = ours("jobset.yaml")
    apply(adapt(js, namespace))
    done = wait_status(js, "Completed", lambda j: conditions(j).get("Completed") == "True")
    assert conditions(done).get("Failed") != "True"
    assert one_remote_cluster(cluster_api, namespace, 4)
    name = js["metadata"]["name"]
    assert "Completed" in kubectl("get", "jobset", name, "-n", namespace)  # TerminalState
    delete_and_wait_gone(cluster_api, namespace, "jobset", name)


def test_jobset_too_big_for_any_cluster_waits_whole(
    namespace: str, cluster_api: Api, operators: Callable[..., None]
) -> None:
    operators("jobset")
    js = ours("jobset.yaml")
    js["spec"]["replicatedJobs"][0]["replicas"] = 3  # 6 pods of 30 CPU: no 4-node cluster holds them
    js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]["annotations"][
        "armadaproject.io/gangCardinality"
    ] = "6"
    apply(adapt(js, namespace, cpu="30"))
    assert_waits_whole(cluster_api, namespace, 6)
    delete_and_wait_gone(cluster_api, namespace, "jobset", js["metadata"]["name"])


def test_indexed_job_runs_whole_in_one_remote_cluster_and_completes(namespace: str, cluster_api: Api) -> None:
    job = ours("indexed-job.yaml")
    apply(adapt(job, namespace))
    done = wait_status(job, "Complete", lambda j: conditions(j).get("Complete") == "True")
    assert done["status"].get("succeeded") == 3
    assert one_remote_cluster(cluster_api, namespace, 3)
    delete_and_wait_gone(cluster_api, namespace, "job", job["metadata"]["name"])


def test_indexed_job_too_big_for_any_cluster_waits_whole(namespace: str, cluster_api: Api) -> None:
    job = ours("indexed-job.yaml")
    spec = job["spec"]
    spec["completions"] = spec["parallelism"] = 5  # 5 pods of 30 CPU: no 4-node cluster holds them
    spec["template"]["metadata"]["annotations"]["armadaproject.io/gangCardinality"] = "5"
    apply(adapt(job, namespace, cpu="30"))
    assert_waits_whole(cluster_api, namespace, 5)
    assert not {"Complete", "Failed"} & {t for t, s in conditions(get(job)).items() if s == "True"}
    delete_and_wait_gone(cluster_api, namespace, "job", job["metadata"]["name"])
