"""Pod -> scheduling facts and the core's model (extender/translate.py).

The request cases are ported from Kubernetes' ``k8s.io/component-helpers/resource/helpers_test.go``
(v0.37.2, ``TestPodRequestsAndLimits``/``TestPodResourceRequests``/pod-level resources).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract import pods
from armada_bridge.contract.pods import PodSpecError, SchedulingConstraints, scheduler_refusal
from armada_bridge.core.matching import static_mismatch
from armada_bridge.core.model import (
    CLUSTER_LABEL,
    Job,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)
from armada_bridge.core.quantities import parse_resources
from extender import translate
from extender.protocols.base import GangSpec
from extender.translate import NODE_NAME_FIELD
from tests.framework.pods import pod


def c(
    name: str, requests: dict[str, str] | None = None, limits: dict[str, str] | None = None, **extra: Any
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": name, "image": "x", "resources": resources, **extra}


def sidecar(name: str, requests: dict[str, str]) -> dict[str, Any]:
    return c(name, requests, restartPolicy="Always")


def pod_of(
    containers: list[dict[str, Any]],
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return pod("p", namespace="ns", spec={"containers": containers, "initContainers": init or [], **spec})


def R(**values: str) -> dict[str, int]:
    return parse_resources({k.replace("_", "-"): v for k, v in values.items()})


# ------------------------------------------------------------------------------------- requests
@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        pytest.param(
            pod_of([c("a", {"cpu": "1"}), c("b", {"cpu": "2", "memory": "1Gi"})]),
            R(cpu="3", memory="1Gi"),
            id="sum",
        ),
        pytest.param(
            pod_of([c("a", {"cpu": "1"})], [sidecar("restartable-init-1", {"cpu": "1"})]),
            R(cpu="2"),
            id="restartable init container",
        ),
        pytest.param(
            pod_of(
                [c("container-1", {"cpu": "1"})],
                [
                    c("init-1", {"cpu": "5"}),
                    sidecar("r1", {"cpu": "1"}),
                    sidecar("r2", {"cpu": "2"}),
                    sidecar("r3", {"cpu": "3"}),
                ],
            ),
            R(cpu="7"),
            id="multiple restartable init containers: max(5, 3+2+1+1)",
        ),
        pytest.param(
            pod_of(
                [c("container-1", {"cpu": "1"})],
                [
                    c("init-1", {"cpu": "5"}),
                    sidecar("r1", {"cpu": "1"}),
                    sidecar("r2", {"cpu": "2"}),
                    c("init-2", {"cpu": "5"}),
                    sidecar("r3", {"cpu": "3"}),
                ],
            ),
            R(cpu="8"),
            id="restartable and regular init: init-2 runs beside r1+r2",
        ),
        pytest.param(
            pod_of(
                [c("container-1", {"cpu": "100"})],
                [sidecar("r1", {"cpu": "10"}), c("init-1", {"cpu": "200"})],
            ),
            R(cpu="210"),
            id="restartable-init, init and regular",
        ),
        pytest.param(
            pod_of(
                [
                    c("foobar", {"cpu": "1", "memory": "5"}, {"cpu": "2"}),
                    c("foobar2", {"cpu": "4", "memory": "12"}),
                ],
                [c("small-init", {"cpu": "1", "memory": "5"}), c("big-init", {"cpu": "40", "memory": "120"})],
                overhead={"cpu": "3", "memory": "8"},
            ),
            R(cpu="43", memory="128"),
            id="massive init is the max, overhead added",
        ),
        pytest.param(
            pod_of(
                [c("c", {"memory": "3Mi", "cpu": "2m"})],
                [sidecar("s", {"memory": "5Mi", "cpu": "4m"}), c("i", {"memory": "6Mi", "cpu": "8m"})],
            ),
            R(memory="11Mi", cpu="12m"),
            id="container-level, init and sidecar",
        ),
        pytest.param(
            pod_of(
                [c("c", {"memory": "3Mi", "cpu": "2m"})],
                [sidecar("s", {"memory": "5Mi", "cpu": "4m"}), c("i", {"memory": "6Mi", "cpu": "8m"})],
                resources={"requests": {"memory": "15Mi", "cpu": "18m"}},
            ),
            R(memory="15Mi", cpu="18m"),
            id="pod-level requests replace the aggregate",
        ),
        pytest.param(
            pod_of(
                [c("c", {"cpu": "1"}, {"nvidia.com/gpu": "2"})],
                resources={"limits": {"cpu": "4", "memory": "8Gi"}},
            ),
            {"cpu": 1000, "memory": 8 * 2**30 * 1000, "nvidia.com/gpu": 2000},
            id="pod-level limit defaults only requests containers did not set; extended stays per container",
        ),
        pytest.param(
            pod_of([c("a", None, {"cpu": "2", "memory": "1Gi"}), c("b", {"cpu": "500m"}, {"cpu": "1"})]),
            R(cpu="2500m", memory="1Gi"),
            id="requests default to limits",
        ),
        pytest.param(pod_of([c("a", {"cpu": "0"})]), {}, id="zero dropped"),
        pytest.param({"spec": {}}, {}, id="empty"),
    ],
)
def test_pod_requests(pod: dict[str, Any], expected: dict[str, int]) -> None:
    assert pods.pod_requests(pod) == expected


def test_pod_requests_malformed_quantity_names_the_field() -> None:
    with pytest.raises(PodSpecError, match=r"spec.initContainers\[0\].resources.requests\[cpu\]"):
        pods.pod_requests(pod_of([], [c("i", {"cpu": "a lot"})]))


# ------------------------------------------------------------------------------------- constraints
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100", "h100"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-7"]}]},
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [{"key": "x", "operator": "Exists"}]}}
        ],
    },
    "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
}
TOLERATIONS = [
    {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
    {"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
]
SPREAD = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]


def constrained_pod(annotation: dict[str, Any] | None = None) -> dict[str, Any]:
    pod = pod_of(
        [c("a", {"cpu": "1"})],
        nodeSelector={"spec-only": "yes"},
        tolerations=[{"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists"}],
    )
    if annotation is not None:
        pod["metadata"]["annotations"] = {keys.SCHEDULING_CONSTRAINTS: json.dumps(annotation)}
    return pod


def test_constraints_from_annotation_win_over_spec() -> None:
    annotation = {
        "nodeSelector": {"disk": "ssd"},
        "affinity": AFFINITY,
        "tolerations": TOLERATIONS,
        "topologySpreadConstraints": SPREAD,
    }
    got = pods.scheduling_constraints(constrained_pod(annotation))
    assert got == SchedulingConstraints({"disk": "ssd"}, AFFINITY, tuple(TOLERATIONS), tuple(SPREAD))
    assert json.loads(got.to_annotation()) == annotation


def test_constraints_from_spec_without_annotation() -> None:
    got = pods.scheduling_constraints(constrained_pod())
    assert got.node_selector == {"spec-only": "yes"}
    assert got.affinity is None and got.topology_spread_constraints == ()
    assert got.tolerations == ({"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists"},)


def test_empty_annotation_means_no_constraints() -> None:
    got = pods.scheduling_constraints(constrained_pod({}))
    assert got.is_empty and got.to_annotation() == "{}"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must hold a JSON object"),
        ('{"nodeSelector": {"a": 1}}', "nodeSelector must be a map of strings"),
        ('{"tolerations": {"key": "x"}}', "tolerations must be a list of objects"),
        ('{"affinity": "near"}', "affinity must be an object"),
    ],
)
def test_malformed_constraints_annotation(raw: str, fragment: str) -> None:
    pod = constrained_pod()
    pod["metadata"]["annotations"] = {keys.SCHEDULING_CONSTRAINTS: raw}
    with pytest.raises(PodSpecError, match=fragment):
        pods.scheduling_constraints(pod)


def test_node_affinity_terms() -> None:
    terms = translate.node_affinity_terms(AFFINITY)
    assert terms == (
        NodeSelectorTerm((NodeSelectorRequirement("gpu", "In", ("a100", "h100")),)),
        NodeSelectorTerm((NodeSelectorRequirement(NODE_NAME_FIELD, "In", ("node-7",)),)),
    )
    assert translate.node_affinity_terms(None) == ()
    assert translate.node_affinity_terms({"podAffinity": {}}) == ()


def test_empty_node_selector_term_matches_nothing() -> None:
    affinity = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{}]}}
    }
    (term,) = translate.node_affinity_terms(affinity)
    job = Job("j", "q", {}, affinity=(term,))
    assert static_mismatch(job, {NODE_NAME_FIELD: "n", "any": "thing"}, ()) is not None


def test_match_fields_other_than_name_rejected() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "spec.x", "operator": "In", "values": ["y"]}]}]
            }
        }
    }
    with pytest.raises(PodSpecError, match=r"only metadata\.name"):
        translate.node_affinity_terms(affinity)


def test_tolerations_to_core() -> None:
    assert translate.tolerations_to_core(TOLERATIONS) == (
        Toleration("dedicated", "Equal", "ml", "NoSchedule"),
        Toleration("", "Exists", "", "NoExecute"),
    )


# ------------------------------------------------------------------------------------- job_from_pod
def test_job_from_pod_uses_original_constraints() -> None:
    annotation = {"nodeSelector": {"disk": "ssd"}, "affinity": AFFINITY, "tolerations": TOLERATIONS}
    pod = constrained_pod(annotation)
    pod["spec"]["priorityClassName"] = "armada-preemptible"
    job = translate.job_from_pod(pod, job_id="u", queue="q", gang=None, submit_time=12.5)
    assert job.id == "u" and job.queue == "q" and job.submit_time == 12.5
    assert job.requests == R(cpu="1", pods="1")  # a pod slot: nodes admit only so many pods
    assert job.priority_class == "armada-preemptible"
    assert job.node_selector == {"disk": "ssd"}
    assert len(job.affinity) == 2
    assert job.tolerations == translate.tolerations_to_core(TOLERATIONS)
    assert job.gang_id is None and not job.is_gang


def test_job_from_pod_gang() -> None:
    gang = GangSpec("volcano/pg", "volcano", 4, node_uniformity_label="rack", priority_class_name="high")
    job = translate.job_from_pod(constrained_pod(), job_id="u", queue="q", gang=gang, submit_time=0)
    assert job.gang_id == "ns/volcano/pg"
    assert job.gang_cardinality == 4
    assert job.gang_node_uniformity_label == "rack"
    assert job.gang_min_resources is None
    assert job.priority_class == "high"  # the PodGroup's, as the pod names none
    assert job.is_gang


def test_job_from_pod_reservation() -> None:
    """Spark-style minMember 1 + minResources: a gang of one that reserves the whole application."""
    gang = GangSpec("volcano/spark-pg", "volcano", 1, min_resources=R(cpu="5", memory="10Gi"))
    job = translate.job_from_pod(constrained_pod(), job_id="driver", queue="q", gang=gang, submit_time=0)
    assert job.gang_cardinality == 1
    assert job.gang_min_resources == R(cpu="5", memory="10Gi")
    assert job.is_gang


# ------------------------------------------------------------------------------------- node_from_remote
def remote_node(**over: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "metadata": {"name": "kwok-node-0", "labels": {"type": "kwok", "topology.kubernetes.io/zone": "z1"}},
        "spec": {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]},
        "status": {
            "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "8"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }
    for k, v in over.items():
        node[k] = {**node[k], **v}
    return node


def test_node_from_remote() -> None:
    node = translate.node_from_remote(remote_node(), "remote-1", R(cpu="4", memory="300Gi"))
    assert node.name == "remote-1/kwok-node-0"
    assert node.cluster == "remote-1"
    assert node.allocatable == {"cpu": 28_000, "memory": 0, "pods": 110_000, "nvidia.com/gpu": 8000}
    assert node.taints == (Taint("dedicated", "ml", "NoSchedule"),)
    assert not node.unschedulable
    assert node.labels["topology.kubernetes.io/zone"] == "z1"
    assert node.labels[NODE_NAME_FIELD] == "kwok-node-0"
    assert node.labels[keys.CLUSTER_LABEL] == "remote-1"
    assert node.effective_labels()[CLUSTER_LABEL] == "remote-1"
    named = translate.node_from_remote(remote_node(), "remote-1", {}, core_name="custom")
    assert named.name == "custom"


def test_node_from_remote_unschedulable() -> None:
    cordoned = translate.node_from_remote(remote_node(spec={"unschedulable": True}), "r", {})
    assert cordoned.unschedulable
    not_ready = translate.node_from_remote(
        remote_node(status={"conditions": [{"type": "Ready", "status": "Unknown"}]}), "r", {}
    )
    assert not_ready.unschedulable


def test_node_name_field_matches_match_fields() -> None:
    node = translate.node_from_remote(remote_node(metadata={"name": "node-7"}), "remote-1", {})
    (_, by_name) = translate.node_affinity_terms(AFFINITY)
    job = Job("j", "q", {}, affinity=(by_name,), tolerations=(Toleration("dedicated", "Exists"),))
    assert static_mismatch(job, node.effective_labels(), node.taints) is None
    other = Job(
        "j", "q", {}, affinity=(NodeSelectorTerm((NodeSelectorRequirement(NODE_NAME_FIELD, "In", ("x",)),)),)
    )
    assert static_mismatch(other, node.effective_labels(), ()) is not None


def test_node_from_remote_malformed() -> None:
    with pytest.raises(PodSpecError, match=r"no metadata\.name"):
        translate.node_from_remote({"metadata": {}}, "r", {})
    with pytest.raises(PodSpecError, match=r"status.allocatable\[cpu\]"):
        translate.node_from_remote(remote_node(status={"allocatable": {"cpu": "many"}}), "r", {})


def test_scheduler_refusal_is_kube_schedulers_unschedulable_message_only() -> None:
    def with_condition(**cond: str) -> dict[str, Any]:
        return {
            "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", **cond}]}
        }

    msg = "0/3 nodes are available: 1 Insufficient cpu"
    assert scheduler_refusal(with_condition(status="False", reason="Unschedulable", message=msg)) == msg
    assert scheduler_refusal(with_condition(status="False", reason="Unschedulable")) == "no node fits"
    # A scheduler error (an extender down) is retried by kube-scheduler; a bound pod is scheduled.
    assert scheduler_refusal(with_condition(status="False", reason="SchedulerError", message="x")) is None
    assert scheduler_refusal(with_condition(status="True")) is None
    assert scheduler_refusal({"status": {}}) is None
    assert scheduler_refusal({}) is None
