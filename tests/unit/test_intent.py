"""Queue and gang intent read from the protocols operators speak (extender/intent.py,
extender/protocols/)."""

from __future__ import annotations

from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.core.quantities import parse_resources
from extender import intent, protocols
from extender.protocols import volcano
from extender.protocols.base import GangSpec, IntentError, PodGroupMissing, PodGroupRef
from tests.framework import pods

NS = "team-a"


def pod(
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    owners: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return pods.pod(namespace=NS, labels=labels, annotations=annotations, spec=spec, owners=owners)


def podgroup(api_version: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NS},
        "spec": spec,
    }


def volcano_pg(name: str = "job-1", **spec: Any) -> dict[str, Any]:
    return podgroup("scheduling.volcano.sh/v1beta1", name, **spec)


def cosched_pg(name: str = "job-1", **spec: Any) -> dict[str, Any]:
    return podgroup("scheduling.x-k8s.io/v1alpha1", name, **spec)


def native_pg(name: str = "ray-cluster", version: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    return podgroup(f"scheduling.k8s.io/{version}", name, **spec)


def gang(p: dict[str, Any], **pgs: Any) -> GangSpec | None:
    return protocols.gang_of(p, {name: pgs.get(name) for name in protocols.podgroup_names(p)})


# ------------------------------------------------------------------------------------- queue
def test_queue_from_pod_label_wins_over_everything() -> None:
    p = pod(
        labels={keys.QUEUE_LABEL: "gold", keys.KUEUE_QUEUE_NAME_LABEL: "kq"},
        annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"},
    )
    assert intent.queue_of(
        p, volcano_podgroup=volcano_pg(queue="vq"), namespace_labels={keys.QUEUE_LABEL: "ns"}
    ) == (
        "gold",
        "pod-label",
    )


def test_queue_from_volcano_podgroup() -> None:
    p = pod(
        annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"}, labels={keys.KUEUE_QUEUE_NAME_LABEL: "kq"}
    )
    assert intent.queue_of(p, volcano_podgroup=volcano_pg(queue="research"), namespace_labels={}) == (
        "research",
        "volcano-podgroup",
    )


def test_queue_volcano_podgroup_without_queue_is_default() -> None:
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"})
    assert intent.queue_of(p, volcano_podgroup=volcano_pg(queue=""), namespace_labels={}) == (
        "default",
        "volcano-default",
    )
    assert intent.queue_of(p, volcano_podgroup=volcano_pg(), namespace_labels={})[0] == "default"


def test_queue_volcano_default_yields_to_the_namespace_queue() -> None:
    """The CRD and the operators write Volcano's `default` where nobody named a queue: an operator's
    job in a namespace opened to a team's queue runs in that queue."""
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"})
    team = {keys.QUEUE_LABEL: "team-a"}
    for pg in (volcano_pg(), volcano_pg(queue=""), volcano_pg(queue="default")):
        assert intent.queue_of(p, volcano_podgroup=pg, namespace_labels=team) == ("team-a", "namespace-label")
    # a queue the PodGroup names, the pod's own labels and Kueue's label still win
    assert intent.queue_of(p, volcano_podgroup=volcano_pg(queue="research"), namespace_labels=team) == (
        "research",
        "volcano-podgroup",
    )
    kueue = pod(
        annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"}, labels={keys.KUEUE_QUEUE_NAME_LABEL: "kq"}
    )
    assert intent.queue_of(kueue, volcano_podgroup=volcano_pg(), namespace_labels=team) == (
        "kq",
        "kueue-label",
    )
    own = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "job-1"}, labels={keys.QUEUE_LABEL: "gold"})
    assert intent.queue_of(own, volcano_podgroup=volcano_pg(), namespace_labels=team) == ("gold", "pod-label")


def test_volcano_podgroup_queue_for_its_status() -> None:
    assert volcano.queue_of(volcano_pg(), "team-a") == "team-a"
    assert volcano.queue_of(volcano_pg(queue="default"), "team-a") == "team-a"
    assert volcano.queue_of(volcano_pg(queue="research"), "team-a") == "research"
    assert volcano.queue_of(volcano_pg(), None) == "default"


def test_every_queue_source_is_explained() -> None:
    for source in intent.QueueSource:
        assert source.explains
    assert "namespace" in intent.QueueSource.NAMESPACE_LABEL.explains


def test_queue_volcano_podgroup_ignored_when_pod_does_not_name_it() -> None:
    p = pod()
    assert intent.queue_of(p, volcano_podgroup=volcano_pg(queue="x"), namespace_labels={}) == (None, "none")


def test_queue_from_volcano_pod_label_and_annotation() -> None:
    p = pod(labels={keys.VOLCANO_QUEUE_NAME_LABEL: "kuberay-q"})
    assert intent.queue_of(p, volcano_podgroup=None, namespace_labels={}) == ("kuberay-q", "volcano-pod")
    p = pod(annotations={keys.VOLCANO_QUEUE_NAME_ANNOTATION: "auto-q"})
    assert intent.queue_of(p, volcano_podgroup=None, namespace_labels={}) == ("auto-q", "volcano-pod")


def test_queue_from_kueue_label_then_namespace() -> None:
    p = pod(labels={keys.KUEUE_QUEUE_NAME_LABEL: "lq"})
    assert intent.queue_of(p, volcano_podgroup=None, namespace_labels={keys.QUEUE_LABEL: "ns-q"}) == (
        "lq",
        "kueue-label",
    )
    assert intent.queue_of(pod(), volcano_podgroup=None, namespace_labels={keys.QUEUE_LABEL: "ns-q"}) == (
        "ns-q",
        "namespace-label",
    )


def test_queue_none_when_unmanaged() -> None:
    assert intent.queue_of(pod(), volcano_podgroup=None, namespace_labels={"other": "x"}) == (None, "none")
    assert (
        intent.queue_of(pod(labels={keys.QUEUE_LABEL: ""}), volcano_podgroup=None, namespace_labels={})[0]
        is None
    )


# ------------------------------------------------------------------------------------- refs
def test_podgroup_refs_per_protocol() -> None:
    p = pod(
        labels={keys.COSCHEDULING_POD_GROUP_LABEL: "sp-pg"},
        annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "vc-pg"},
        spec={"containers": [], "schedulingGroup": {"podGroupName": "native-pg"}},
    )
    assert protocols.podgroup_names(p) == {
        "volcano": "vc-pg",
        "coscheduling": "sp-pg",
        "workload": "native-pg",
    }
    assert protocols.podgroup_names(pod()) == {}


# ------------------------------------------------------------------------------------- one case per protocol
def _native_case(version: str) -> Any:
    return pytest.param(
        pod(spec={"containers": [], "schedulingGroup": {"podGroupName": "rc-cluster"}}),
        {
            "workload": native_pg(
                "rc-cluster",
                version,
                schedulingPolicy={"gang": {"minCount": 5}},
                schedulingConstraints={"topology": [{"key": "topology.kubernetes.io/rack"}]},
                priorityClassName="batch",
            )
        },
        GangSpec(
            key="workload/rc-cluster",
            protocol="workload",
            min_member=5,
            node_uniformity_label="topology.kubernetes.io/rack",
            podgroup_ref=PodGroupRef(f"scheduling.k8s.io/{version}", "PodGroup", "rc-cluster", NS),
            priority_class_name="batch",
        ),
        id=f"native workload {version}",
    )


PROTOCOL_GANGS = [
    pytest.param(
        pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "pytorch-1"}),
        {
            "volcano": volcano_pg(
                "pytorch-1",
                minMember=3,
                minResources={"cpu": "3", "memory": "12Gi"},
                queue="q",
                priorityClassName="high",
            )
        },
        GangSpec(
            key="volcano/pytorch-1",
            protocol="volcano",
            min_member=3,
            min_resources=parse_resources({"cpu": "3", "memory": "12Gi"}),
            podgroup_ref=PodGroupRef("scheduling.volcano.sh/v1beta1", "PodGroup", "pytorch-1", NS),
            priority_class_name="high",
        ),
        id="volcano",
    ),
    pytest.param(
        pod(labels={keys.COSCHEDULING_POD_GROUP_LABEL: "ray-c"}),
        {
            "coscheduling": cosched_pg(
                "ray-c", minMember=5, minResources={"cpu": "10"}, scheduleTimeoutSeconds=60
            )
        },
        GangSpec(
            key="coscheduling/ray-c",
            protocol="coscheduling",
            min_member=5,
            min_resources={"cpu": 10_000},
            schedule_timeout_seconds=60,
            podgroup_ref=PodGroupRef("scheduling.x-k8s.io/v1alpha1", "PodGroup", "ray-c", NS),
        ),
        id="coscheduling",
    ),
    pytest.param(
        pod(
            labels={keys.KUEUE_POD_GROUP_NAME_LABEL: "grp"},
            annotations={keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION: "4"},
        ),
        {},
        GangSpec(key="kueue/grp", protocol="kueue", min_member=4),
        id="kueue",
    ),
    pytest.param(
        pod(
            annotations={
                keys.GANG_ID: "g-1",
                keys.GANG_CARDINALITY: "8",
                keys.GANG_NODE_UNIFORMITY_LABEL: "topology.kubernetes.io/zone",
            }
        ),
        {},
        GangSpec(
            key="armada/g-1",
            protocol="armada",
            min_member=8,
            node_uniformity_label="topology.kubernetes.io/zone",
        ),
        id="armada",
    ),
    *(_native_case(version) for version in ("v1beta1", "v1alpha3", "v1alpha2")),
]


@pytest.mark.parametrize(("p", "podgroups", "expected"), PROTOCOL_GANGS)
def test_each_protocols_gang(p: dict[str, Any], podgroups: dict[str, Any], expected: GangSpec) -> None:
    g = gang(p, **podgroups)
    assert g == expected
    assert g is not None and not g.is_reservation


def test_native_basic_policy_is_not_a_gang_and_falls_through() -> None:
    p = pod(spec={"containers": [], "schedulingGroup": {"podGroupName": "pg"}})
    assert gang(p, workload=native_pg("pg", schedulingPolicy={"basic": {}})) is None
    p["metadata"]["labels"] = {keys.COSCHEDULING_POD_GROUP_LABEL: "sp"}
    g = gang(
        p,
        workload=native_pg("pg", schedulingPolicy={"basic": {}}),
        coscheduling=cosched_pg("sp", minMember=2),
    )
    assert g is not None and g.protocol == "coscheduling"


def test_no_protocol_no_gang() -> None:
    assert gang(pod(labels={"app": "x"})) is None


# ------------------------------------------------------------------------------------- reservations
def test_spark_style_volcano_reservation() -> None:
    """Spark: minMember 1 + minResources for driver and executors = a capacity reservation."""
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "spark-pi-pg"})
    pg = volcano_pg("spark-pi-pg", minMember=1, minResources={"cpu": "5", "memory": "10Gi"}, queue="spark")
    g = gang(p, volcano=pg)
    assert g is not None
    assert g.min_member == 1
    assert g.min_resources == parse_resources({"cpu": "5", "memory": "10Gi"})
    assert g.is_reservation


def test_spark_style_coscheduling_reservation() -> None:
    p = pod(labels={keys.COSCHEDULING_POD_GROUP_LABEL: "spark-pi-pg"})
    g = gang(p, coscheduling=cosched_pg("spark-pi-pg", minMember=1, minResources={"cpu": "4"}))
    assert g is not None and g.is_reservation and g.min_member == 1


def test_one_member_without_resources_is_no_reservation() -> None:
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "pg"})
    g = gang(p, volcano=volcano_pg("pg", minMember=1))
    assert g is not None and g.min_member == 1 and g.min_resources is None and not g.is_reservation


def test_volcano_auto_podgroup_quota_names_are_normalised() -> None:
    """Volcano's own auto PodGroups carry quota names (count/pods, requests.cpu, limits.cpu, pods)."""
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "podgroup-x"})
    pg = volcano_pg(
        "podgroup-x",
        minMember=2,
        minResources={
            "count/pods": "2",
            "cpu": "2",
            "limits.cpu": "4",
            "pods": "2",
            "requests.cpu": "2",
            "requests.memory": "1Gi",
            "nvidia.com/gpu": "2",
        },
    )
    g = gang(p, volcano=pg)
    assert g is not None
    assert g.min_resources == parse_resources({"cpu": "2", "memory": "1Gi", "nvidia.com/gpu": "2"})


def test_min_member_zero_counts_as_one() -> None:
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "pg"})
    g = gang(p, volcano=volcano_pg("pg", minMember=0))
    assert g is not None and g.min_member == 1


# ------------------------------------------------------------------------------------- precedence
def all_protocols_pod() -> dict[str, Any]:
    return pod(
        labels={keys.COSCHEDULING_POD_GROUP_LABEL: "sp", keys.KUEUE_POD_GROUP_NAME_LABEL: "kg"},
        annotations={
            keys.VOLCANO_GROUP_NAME_ANNOTATION: "vc",
            keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION: "9",
            keys.GANG_ID: "ag",
            keys.GANG_CARDINALITY: "2",
        },
        spec={"containers": [], "schedulingGroup": {"podGroupName": "np"}},
    )


def test_precedence_armada_first() -> None:
    pgs = {
        "volcano": volcano_pg("vc", minMember=3),
        "coscheduling": cosched_pg("sp", minMember=4),
        "workload": native_pg("np", schedulingPolicy={"gang": {"minCount": 5}}),
    }
    p = all_protocols_pod()
    g = gang(p, **pgs)
    assert g is not None and g.protocol == "armada"
    del p["metadata"]["annotations"][keys.GANG_ID]
    g = gang(p, **pgs)
    assert g is not None and (g.protocol, g.min_member) == ("workload", 5)
    del p["spec"]["schedulingGroup"]
    g = gang(p, **pgs)
    assert g is not None and (g.protocol, g.min_member) == ("volcano", 3)
    del p["metadata"]["annotations"][keys.VOLCANO_GROUP_NAME_ANNOTATION]
    g = gang(p, **pgs)
    assert g is not None and (g.protocol, g.min_member) == ("coscheduling", 4)
    del p["metadata"]["labels"][keys.COSCHEDULING_POD_GROUP_LABEL]
    g = gang(p, **pgs)
    assert g is not None and (g.protocol, g.min_member) == ("kueue", 9)
    assert [p.name for p in protocols.PRECEDENCE] == [
        "armada",
        "workload",
        "volcano",
        "coscheduling",
        "kueue",
    ]


# ------------------------------------------------------------------------------------- malformed / missing
def test_missing_podgroup_raises_so_the_pod_waits() -> None:
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "not-yet"})
    with pytest.raises(PodGroupMissing) as err:
        gang(p)
    assert err.value.ref == PodGroupRef("scheduling.volcano.sh/v1beta1", "PodGroup", "not-yet", NS)
    assert "not-yet" in str(err.value) and isinstance(err.value, IntentError)
    with pytest.raises(PodGroupMissing):
        gang(pod(labels={keys.COSCHEDULING_POD_GROUP_LABEL: "x"}))
    with pytest.raises(PodGroupMissing):
        gang(pod(spec={"containers": [], "schedulingGroup": {"podGroupName": "x"}}))


@pytest.mark.parametrize(
    ("annotations", "labels", "fragment"),
    [
        ({keys.GANG_ID: "g"}, {}, "gangCardinality is missing"),
        ({keys.GANG_ID: "g", keys.GANG_CARDINALITY: "many"}, {}, "must be an integer"),
        ({keys.GANG_ID: "g", keys.GANG_CARDINALITY: "0"}, {}, "at least 1"),
        ({}, {keys.KUEUE_POD_GROUP_NAME_LABEL: "k"}, "pod-group-total-count is missing"),
        (
            {keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION: "-3"},
            {keys.KUEUE_POD_GROUP_NAME_LABEL: "k"},
            "at least 1",
        ),
    ],
)
def test_malformed_annotations(annotations: dict[str, str], labels: dict[str, str], fragment: str) -> None:
    with pytest.raises(IntentError, match=fragment) as err:
        gang(pod(annotations=annotations, labels=labels))
    assert f"pod {NS}/p-0" in str(err.value)


def test_malformed_podgroups() -> None:
    p = pod(annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "pg"})
    with pytest.raises(IntentError, match=r"spec.minResources\[cpu\]"):
        gang(p, volcano=volcano_pg("pg", minMember=2, minResources={"cpu": "lots"}))
    with pytest.raises(IntentError, match=r"spec\.minMember"):
        gang(p, volcano=volcano_pg("pg", minMember="two"))
    with pytest.raises(IntentError, match=r"expected apiVersion scheduling\.volcano\.sh"):
        gang(p, volcano=cosched_pg("pg", minMember=2))
    q = pod(spec={"containers": [], "schedulingGroup": {"podGroupName": "np"}})
    with pytest.raises(IntentError, match="minCount"):
        gang(q, workload=native_pg("np", schedulingPolicy={"gang": {"minCount": 0}}))
    with pytest.raises(IntentError, match="expected apiVersion"):
        gang(q, workload=native_pg("np", "v9", schedulingPolicy={"gang": {"minCount": 2}}))


# ------------------------------------------------------------------------------------- Volcano auto PodGroups
def batch_job(
    annotations: dict[str, str] | None = None, template_annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    template_md: dict[str, Any] = {}
    if template_annotations is not None:
        template_md["annotations"] = template_annotations
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": NS, "uid": "job-uid-1", "annotations": annotations or {}},
        "spec": {
            "parallelism": 4,
            "completionMode": "Indexed",
            "template": {
                "metadata": template_md,
                "spec": {
                    "schedulerName": "volcano",
                    "priorityClassName": "high",
                    "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "4"}}}],
                    "containers": [
                        {"name": "main", "resources": {"requests": {"cpu": "1500m", "memory": "2Gi"}}},
                        {"name": "gpu", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
                    ],
                },
            },
        },
    }


def test_volcano_job_podgroup_as_the_volcano_controller_builds_it() -> None:
    job = batch_job(
        {
            keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "4",
            "scheduling.volcano.sh/preemptable": "false",
            "other": "x",
        },
        {keys.VOLCANO_QUEUE_NAME_ANNOTATION: "research"},
    )
    pg = volcano.job_podgroup(job)
    assert pg == {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {
            "name": "podgroup-job-uid-1",
            "namespace": NS,
            "annotations": {
                keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "4",
                "scheduling.volcano.sh/preemptable": "false",
                keys.VOLCANO_QUEUE_NAME_ANNOTATION: "research",
            },
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": "train",
                    "uid": "job-uid-1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        # one pod: cpu max(1.5, init 4) = 4, memory 2Gi, gpu 1 (limit -> request); x4 members
        "spec": {
            "minMember": 4,
            "minResources": {"cpu": "16", "memory": "8Gi", "nvidia.com/gpu": "4"},
            "priorityClassName": "high",
            "queue": "research",
        },
        "status": {"phase": "Pending"},
    }
    assert volcano.job_pod_annotations(job) == {keys.VOLCANO_GROUP_NAME_ANNOTATION: "podgroup-job-uid-1"}
    # and the bridge reads it back as a Volcano gang of 4
    member = pod(annotations=volcano.job_pod_annotations(job))
    g = gang(member, volcano=pg)
    assert (
        g is not None
        and g.min_member == 4
        and g.min_resources == parse_resources({"cpu": "16", "memory": "8Gi", "nvidia.com/gpu": "4"})
    )
    assert intent.queue_of(member, volcano_podgroup=pg, namespace_labels={}) == (
        "research",
        "volcano-podgroup",
    )


def test_volcano_job_podgroup_defaults_and_skips() -> None:
    pg = volcano.job_podgroup(batch_job({keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "oops"}))
    assert pg is not None and pg["spec"]["minMember"] == 1 and "queue" not in pg["spec"]  # upstream keeps 1
    assert volcano.job_podgroup(batch_job()) is None  # not annotated
    already = batch_job(
        {keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "2"}, {keys.VOLCANO_GROUP_NAME_ANNOTATION: "mine"}
    )
    assert volcano.job_podgroup(already) is None
    not_a_job = {**batch_job({keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "2"}), "kind": "Deployment"}
    assert volcano.job_podgroup(not_a_job) is None
    assert volcano.job_pod_annotations(batch_job()) == {}
    no_uid = batch_job({keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "2"})
    del no_uid["metadata"]["uid"]
    with pytest.raises(IntentError, match="uid"):
        volcano.job_podgroup(no_uid)


def test_volcano_job_podgroup_from_informer_cache_and_exact_quantities() -> None:
    """List items carry no kind/apiVersion; fractional cpu stays exact."""
    job = batch_job({keys.VOLCANO_GROUP_MIN_MEMBER_ANNOTATION: "3"})
    del job["kind"], job["apiVersion"]
    job["spec"]["template"]["spec"] = {
        "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "100M"}}}]
    }
    pg = volcano.job_podgroup(job)
    assert pg is not None
    assert pg["spec"]["minResources"] == {"cpu": "1500m", "memory": "300000000"}


def test_volcano_podgroup_name_uses_controller_uid() -> None:
    owners = [
        {"apiVersion": "v1", "kind": "Other", "name": "o", "uid": "not-controller"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "job-uid-1", "controller": True},
    ]
    assert volcano.auto_podgroup_name(pod(owners=owners)) == "podgroup-job-uid-1"
    assert volcano.auto_podgroup_name(pod()) == "podgroup-uid-p-0"
