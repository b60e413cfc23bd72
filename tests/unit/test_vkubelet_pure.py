"""The vkubelet's pure parts: remote pod shaping, status mapping, dependencies, capacity, spec."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from functools import partial
from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract.capacity import cluster_capacity
from armada_bridge.contract.remotecluster import HostAccess, parse_spec
from armada_bridge.core.quantities import format_quantity
from armada_bridge.kube import Kube, KubeConfig
from tests.framework.pods import pod
from vkubelet import deps, remote_pod
from vkubelet import status as pod_status
from vkubelet.agent import NodeEndpoint
from vkubelet.events import PendingEvents
from vkubelet.heartbeat import routable_condition
from vkubelet.manager import Manager
from vkubelet.metrics import METRICS
from vkubelet.mirror import differs, mirror_of
from vkubelet.node import node_status, spec_patch
from vkubelet.workqueue import WorkQueue


def front_pod(**spec: Any) -> dict[str, Any]:
    return pod(
        "p",
        namespace="ns",
        uid="u-1",
        labels={"app": "a"},
        annotations=spec.pop("annotations", {}),
        cpu=None,
        spec={
            "nodeName": "remote-1",
            "schedulerName": "volcano",
            "priorityClassName": "high",
            "priority": 1000,
            "tolerations": [
                {"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists"},
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
            ],
            "volumes": [
                {
                    "name": "kube-api-access-abcde",
                    "projected": {"sources": [{"configMap": {"name": "kube-root-ca.crt"}}]},
                },
                {"name": "cfg", "configMap": {"name": "settings"}},
            ],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "volumeMounts": [
                        {
                            "name": "kube-api-access-abcde",
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                        },
                        {"name": "cfg", "mountPath": "/cfg"},
                    ],
                }
            ],
            **spec,
        },
    )


def test_remote_pod_keeps_identity_and_drops_front_only_fields() -> None:
    r = remote_pod.remote_pod(front_pod())
    md, spec = r["metadata"], r["spec"]
    assert (md["name"], md["namespace"]) == ("p", "ns")
    assert md["labels"] == {"app": "a", keys.FRONT_UID: "u-1", keys.MANAGED_BY_LABEL: keys.MANAGED_BY_VALUE}
    for f in ("nodeName", "schedulerName", "priorityClassName", "priority"):
        assert f not in spec
    assert [v["name"] for v in spec["volumes"]] == ["cfg"]
    assert [m["name"] for m in spec["containers"][0]["volumeMounts"]] == ["cfg"]
    assert spec["tolerations"] == [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    ]


def test_remote_pod_restores_constraints_and_pins_the_node() -> None:
    constraints = {
        "nodeSelector": {"zone": "a"},
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "x", "operator": "Exists"}]}, {}]
                }
            }
        },
        "topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    }
    pod = front_pod(
        annotations={keys.SCHEDULING_CONSTRAINTS: json.dumps(constraints), keys.ASSIGNED_REMOTE_NODE: "n-3"}
    )
    spec = remote_pod.remote_pod(pod)["spec"]
    assert spec["nodeSelector"] == {"zone": "a"}
    assert {"key": "gpu", "operator": "Exists"} in spec["tolerations"]
    assert spec["topologySpreadConstraints"] == constraints["topologySpreadConstraints"]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert len(terms) == 2
    for term in terms:
        assert {"key": "metadata.name", "operator": "In", "values": ["n-3"]} in term["matchFields"]
    assert terms[0]["matchExpressions"] == [{"key": "x", "operator": "Exists"}]


def test_unreadable_constraints_are_ignored() -> None:
    pod = front_pod(annotations={keys.SCHEDULING_CONSTRAINTS: "{not json"})
    assert "nodeSelector" not in remote_pod.remote_pod(pod)["spec"]


def test_host_access() -> None:
    assert remote_pod.host_access(front_pod()) == []
    pod = front_pod(hostNetwork=True, volumes=[{"name": "h", "hostPath": {"path": "/"}}])
    pod["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    assert remote_pod.host_access(pod) == ["hostNetwork", "hostPath volume h", "privileged container main"]


def test_status_mapping_and_marker() -> None:
    front = front_pod()
    remote = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {
            "phase": "Running",
            "podIP": "10.0.0.3",
            "hostIP": "192.0.2.1",
            "qosClass": "BestEffort",
            "startTime": "2026-01-01T00:00:01Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": 2, "imageID": "sha"}],
        },
    }
    relay = {"podIP": "10.9.0.7", "podIPs": [{"ip": "10.9.0.7"}], "hostIP": "10.9.0.1", "hostIPs": None}
    patch = pod_status.status_patch(front, remote, "remote-1", relay)
    assert patch is not None
    st = patch["status"]
    # The addresses are the ones given (a relay's), never the remote pod's.
    assert st["phase"] == "Running" and st["podIP"] == "10.9.0.7" and st["hostIP"] == "10.9.0.1"
    assert st["containerStatuses"][0]["restartCount"] == 2
    front["status"] = st
    assert pod_status.has_marker(front)
    assert pod_status.status_patch(front, remote, "remote-1", relay) is None  # idempotent
    # As the API server stores it: every condition with its lastProbeTime, null (the marker we
    # wrote without one too), no null top-level fields. Nothing to write (a write that changes
    # nothing costs the front API server as much as one that does).
    stored = {k: v for k, v in st.items() if v is not None}
    stored["conditions"] = [{**c, "lastProbeTime": None} for c in st["conditions"]]
    front["status"] = stored
    assert pod_status.status_patch(front, remote, "remote-1", relay) is None
    remote["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    patch = pod_status.status_patch(front, remote, "remote-1", relay)
    assert patch is not None and list(patch["status"]) == ["conditions"], patch
    # The relay goes: so do the addresses (both fields of each pair, as the API requires).
    front["status"] = {**stored, "conditions": patch["status"]["conditions"]}
    gone = pod_status.status_patch(front, remote, "remote-1", dict.fromkeys(relay))
    assert gone is not None and gone["status"] == {"podIP": None, "podIPs": None, "hostIP": None}


def test_a_routable_clusters_pod_shows_its_own_address_unless_it_names_a_front_one() -> None:
    front_ranges = [ipaddress.ip_network("10.244.0.0/16"), ipaddress.ip_network("10.96.0.0/12")]
    remote = {
        "status": {
            "podIP": "10.50.1.2",
            "podIPs": [{"ip": "10.50.1.2"}],
            "hostIP": "192.0.2.1",
            "hostIPs": [{"ip": "192.0.2.1"}],
        }
    }
    assert pod_status.routable_addresses(remote, front_ranges) == (remote["status"], "")
    remote["status"].update(podIP="10.244.3.4", podIPs=[{"ip": "10.244.3.4"}])
    shown, why = pod_status.routable_addresses(remote, front_ranges)
    assert shown == {"podIP": None, "podIPs": None, "hostIP": "192.0.2.1", "hostIPs": [{"ip": "192.0.2.1"}]}
    assert why == "podIP 10.244.3.4 is inside the front's range 10.244.0.0/16"
    remote["status"].update(podIP="10.50.1.2", podIPs=[{"ip": "10.50.1.2"}, {"ip": "fd00::3"}])
    assert pod_status.routable_addresses(remote, [ipaddress.ip_network("fd00::/64")])[0]["podIP"] is None


def test_a_routable_cluster_says_when_a_pod_address_was_not_shown() -> None:
    ok = routable_condition("", "2026-01-01T00:00:00Z", 3)
    assert (ok["type"], ok["status"], ok["reason"], ok["observedGeneration"]) == (
        "AddressesShown",
        "True",
        "Apart",
        3,
    )
    bad = routable_condition(
        "pod a/b: podIP 10.244.3.4 is inside the front's range 10.244.0.0/16, not shown", "t", 3
    )
    assert (bad["status"], bad["reason"]) == ("False", "InsideFrontRanges")
    assert bad["message"].startswith("pod a/b: podIP 10.244.3.4") and "network: Relay" in bad["message"]


def test_failed_patch_terminates_running_containers() -> None:
    front = front_pod()
    front["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "ready": True, "state": {"running": {"startedAt": "t0"}}}],
    }
    st = pod_status.failed_patch(front, "RemotePodDeleted", "gone", "t1")["status"]
    assert st["phase"] == "Failed" and st["reason"] == "RemotePodDeleted"
    assert st["containerStatuses"][0]["state"]["terminated"]["reason"] == "RemotePodDeleted"
    assert st["conditions"][0]["status"] == "False"


def test_dependencies() -> None:
    pod = front_pod(imagePullSecrets=[{"name": "pull"}], serviceAccountName="runner")
    c = pod["spec"]["containers"][0]
    c["env"] = [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "a", "optional": True}}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "b"}}},
    ]
    c["envFrom"] = [{"secretRef": {"name": "all-secret"}}]
    pod["spec"]["volumes"].append({"name": "s", "secret": {"secretName": "vol-secret"}})
    refs = {(r.kind, r.name): r.optional for r in deps.pod_dependencies(remote_pod.remote_pod(pod))}
    assert refs == {
        ("ConfigMap", "settings"): False,
        ("ConfigMap", "env-cm"): True,
        ("Secret", "env-secret"): False,
        ("Secret", "all-secret"): False,
        ("Secret", "vol-secret"): False,
        ("Secret", "pull"): True,
        ("ServiceAccount", "runner"): False,
    }


def test_service_selection_and_mirror() -> None:
    svc = {
        "metadata": {"name": "w", "namespace": "ns", "uid": "s-1", "labels": {}},
        "spec": {
            "type": "NodePort",
            "clusterIP": "10.96.0.9",
            "selector": {"app": "a"},
            "ports": [{"port": 80, "nodePort": 30080}],
        },
    }
    assert deps.selects(svc, front_pod())
    assert not deps.selects({"spec": {}}, front_pod())
    m = mirror_of("Service", svc)
    assert m["spec"] == {"type": "ClusterIP", "selector": {"app": "a"}, "ports": [{"port": 80}]}
    assert m["metadata"]["annotations"][keys.FRONT_OBJECT_UID] == "s-1"
    have = {
        **m,
        "spec": {
            **m["spec"],
            "clusterIP": "10.0.0.1",
            "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}],
        },
    }
    assert not differs(m, have)
    headless = {**svc, "spec": {**svc["spec"], "clusterIP": "None", "type": "ClusterIP"}}
    assert mirror_of("Service", headless)["spec"]["clusterIP"] == "None"


def test_configmap_mirror_differs_on_data() -> None:
    cm = {"metadata": {"name": "c", "namespace": "ns", "uid": "c-1"}, "data": {"k": "1"}}
    m = mirror_of("ConfigMap", cm)
    assert not differs(m, m)
    assert differs(mirror_of("ConfigMap", {**cm, "data": {"k": "2"}}), m)


def node(name: str, cpu: str, ready: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": extra.pop("labels", {})},
        "spec": extra,
        "status": {
            "capacity": {"cpu": cpu, "memory": "4Gi", "pods": "110", keys.GPU_RESOURCE: "2"},
            "allocatable": {"cpu": cpu, "memory": "4Gi", "pods": "110", keys.GPU_RESOURCE: "2"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod_on(node_name: str, cpu: str, bridge: bool = False) -> dict[str, Any]:
    labels = {keys.FRONT_UID: "x"} if bridge else {}
    return pod(labels=labels, cpu=cpu, spec={"nodeName": node_name}, phase="Running")


def test_capacity_counts_usable_nodes_minus_foreign_pods() -> None:
    nodes = [
        node("a", "8"),
        node("b", "8"),
        node("down", "8", ready=False),
        node("cordoned", "8", unschedulable=True),
        node("virtual", "8", labels={keys.NODE_TYPE_LABEL: keys.NODE_TYPE_VIRTUAL}),
    ]
    pods = [pod_on("a", "500m"), pod_on("b", "1"), pod_on("a", "3", bridge=True), pod_on("down", "4")]
    cap = cluster_capacity(nodes, [p for p in pods if keys.FRONT_UID not in p["metadata"]["labels"]])
    assert cap.nodes == 2
    assert (
        cap.capacity["cpu"] == "16"
        and cap.capacity["memory"] == "8Gi"
        and cap.capacity[keys.GPU_RESOURCE] == "4"
    )
    assert cap.allocatable["cpu"] == "14500m"
    assert cap.allocatable["pods"] == "218"


def test_capacity_gives_back_what_our_pods_hold_on_nodes_left_out() -> None:
    """The front counts every pod bound to the virtual node: ours on a cordoned or NotReady node
    hold no usable room, so the allocatable grows by what they use and the front sees the room
    left on the usable nodes."""
    nodes = [node("a", "8"), node("cordoned", "8", unschedulable=True), node("down", "8", ready=False)]
    ours = [
        pod_on("a", "3", bridge=True),
        pod_on("cordoned", "2", bridge=True),
        pod_on("down", "1", bridge=True),
        pod_on("", "4", bridge=True),  # not placed in the remote cluster yet: room on a usable node
    ]
    foreign = [pod_on("a", "500m")]
    # The vkubelet keeps no spec of its remote pods: what each uses is read from its front pod.
    # Ours as the vkubelet counts them: (front pod UID, the node its remote pod is bound to), for
    # those that take room; the front pod (whose spec says what it uses) read by UID.
    running = [(str(i), p["spec"]["nodeName"]) for i, p in enumerate(ours) if p["spec"]["nodeName"]]
    # One more of ours on a node left out whose front pod is gone (being cleaned up): not counted.
    running.append(("orphan", "down"))
    looked_up: list[str] = []

    def front_of(uid: str) -> dict[str, Any] | None:
        looked_up.append(uid)
        return None if uid == "orphan" else ours[int(uid)]

    cap = cluster_capacity(nodes, foreign, running, front_of)
    assert sorted(looked_up) == ["1", "2", "orphan"]  # front pods read only where they count
    assert cap.capacity["cpu"] == "8"
    # 8 - 0.5 foreign + 2 + 1 held on the nodes left out: less the 10 CPUs of our four pods the
    # front counts, 0.5 CPU, the room on node a once the unplaced pod lands there.
    assert cap.allocatable["cpu"] == "10500m"
    assert cap.allocatable["pods"] == "111"  # 110 - 1 foreign + 2 of ours on the nodes left out


def test_format_quantity() -> None:
    assert format_quantity("cpu", 1500) == "1500m"
    assert format_quantity("memory", 2**30 * 1000) == "1Gi"
    assert format_quantity("pods", 3000) == "3"


def test_node_status_keeps_transition_time_and_spec_patch() -> None:
    from datetime import UTC, datetime

    from armada_bridge.contract.capacity import Capacity

    cap = Capacity({"cpu": "1"}, {"cpu": "1"}, 1)
    t1, t2 = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC)
    status = partial(
        node_status, ready=True, reason="r", message="m", capacity=cap, address="127.0.0.1", port=1
    )
    s1 = status(heartbeat=t1, previous=None)
    s2 = status(heartbeat=t2, previous={"status": s1})
    assert s2["conditions"][0]["lastTransitionTime"] == s1["conditions"][0]["lastTransitionTime"]
    spec = parse_spec({"metadata": {"name": "rc"}, "spec": {"cordoned": True, "nodeLabels": {"x": "y"}}})
    patch = spec_patch({"metadata": {"labels": {}}, "spec": {}}, "rc", spec)
    assert patch is not None
    assert patch["spec"]["unschedulable"] is True
    assert patch["metadata"]["labels"]["x"] == "y"
    assert patch["metadata"]["labels"][keys.CLUSTER_LABEL] == "rc"


def test_remote_cluster_spec_defaults_and_errors() -> None:
    spec = parse_spec({"metadata": {"name": "rc"}, "spec": {}})
    assert spec.kubeconfig_secret.name == "rc-kubeconfig"
    assert spec.kubeconfig_secret.namespace == keys.SYSTEM_NAMESPACE
    assert spec.host_access == HostAccess.DENY and not spec.cordoned
    with pytest.raises(ValueError, match="hostAccess"):
        parse_spec({"metadata": {"name": "rc"}, "spec": {"hostAccess": "Sometimes"}})


async def test_workqueue_never_runs_a_key_twice_at_once() -> None:
    q = WorkQueue("t")
    running: set[str] = set()
    overlaps = []
    done: list[str] = []

    async def work(key: str) -> None:
        if key in running:
            overlaps.append(key)
        running.add(key)
        await asyncio.sleep(0.01)
        if len(done) < 3:
            q.add(key)  # re-added while active: processed again after
        running.discard(key)
        done.append(key)

    q.add("a")
    task = asyncio.create_task(q.run(work, 4))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if len(done) >= 4:
            break
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert not overlaps and done[:4] == ["a"] * 4


def test_user_from_client_certificate() -> None:
    from armada_bridge.kube.auth import User, user_from_cert

    cert = {"subject": ((("organizationName", "system:masters"),), (("commonName", "kwok-admin"),))}
    assert user_from_cert(cert) == User("kwok-admin", ("system:masters",))
    assert user_from_cert({"subject": ()}) is None


def test_unschedulable_remote_pods_are_recognised() -> None:
    refused = {
        "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }
    assert pod_status.unschedulable_since(refused) == "2026-01-01T00:00:00Z"
    assert pod_status.unschedulable_since({**refused, "spec": {"nodeName": "n0"}}) is None  # placed
    waiting = {**refused, "status": {"phase": "Pending", "conditions": []}}
    assert pod_status.unschedulable_since(waiting) is None  # not refused (yet)


def test_a_given_back_pod_may_get_a_new_remote_pod() -> None:
    conditions = [pod_status.marker("remote-1", "t0"), {"type": "Other"}]
    front = {"status": {"phase": "Pending", "conditions": conditions}}
    assert pod_status.has_marker(front)
    patch = pod_status.given_back_patch(front, "remote-1", "Too many pods", "t1")
    after = {"status": patch["status"]}
    assert not pod_status.has_marker(after)
    types = [c["type"] for c in after["status"]["conditions"]]
    assert types.count(keys.REMOTE_POD_CONDITION) == 1 and "Other" in types


def test_selection_of_the_virtual_node_is_not_asked_of_remote_nodes() -> None:
    constraints = {
        "nodeSelector": {keys.CLUSTER_LABEL: "remote-2", "disk": "ssd"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": keys.NODE_TYPE_LABEL,
                                    "operator": "In",
                                    "values": [keys.NODE_TYPE_VIRTUAL],
                                },
                                {"key": "zone", "operator": "In", "values": ["a"]},
                            ]
                        }
                    ]
                }
            }
        },
    }
    annotations = {keys.SCHEDULING_CONSTRAINTS: json.dumps(constraints), keys.ASSIGNED_REMOTE_NODE: "n1"}
    spec = remote_pod.remote_pod(front_pod(annotations=annotations))["spec"]
    assert spec["nodeSelector"] == {"disk": "ssd"}
    (term,) = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert term["matchExpressions"] == [{"key": "zone", "operator": "In", "values": ["a"]}]
    assert term["matchFields"] == [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]


def test_remote_namespaces_get_pod_security_levels_from_the_remote_cluster() -> None:
    default = parse_spec({"metadata": {"name": "rc"}, "spec": {}})
    assert default.namespace_labels() == {
        keys.POD_SECURITY_ENFORCE: "baseline",
        keys.POD_SECURITY_AUDIT: "restricted",
    }
    allowed = parse_spec({"metadata": {"name": "rc"}, "spec": {"hostAccess": "Allow"}})
    assert allowed.namespace_labels()[keys.POD_SECURITY_ENFORCE] == "privileged"
    strict = parse_spec(
        {"metadata": {"name": "rc"}, "spec": {"podSecurity": {"enforce": "restricted", "warn": "restricted"}}}
    )
    assert strict.namespace_labels()[keys.POD_SECURITY_ENFORCE] == "restricted"
    assert strict.namespace_labels()[keys.POD_SECURITY_WARN] == "restricted"
    with pytest.raises(ValueError, match="podSecurity"):
        parse_spec({"metadata": {"name": "rc"}, "spec": {"podSecurity": {"enforce": "lax"}}})


def test_reachability_has_hysteresis() -> None:
    from vkubelet.heartbeat import Reachability

    r = Reachability(failures=2)
    assert r.observe(True) is True  # reachable at the first answer
    assert r.observe(False) is None and r.reachable  # one miss is not enough
    assert r.observe(False) is False and r.settled  # two in a row are
    assert r.observe(False) is None
    assert r.observe(True) is True and not r.settled
    r2 = Reachability(failures=2)
    for _ in range(5):  # still connecting for the first time: no failure counted
        assert r2.observe(False, count_failure=False) is None
    assert not r2.settled


def test_dependencies_come_only_from_the_pods_own_namespace() -> None:
    """Whatever a pod names, the vkubelet mirrors only objects of the pod's namespace: a user
    can never make it copy another namespace's Secret into a remote cluster."""
    pod = front_pod()
    pod["spec"]["volumes"] = [
        {"name": "a", "secret": {"secretName": "db", "namespace": "kube-system"}},
        {"name": "b", "configMap": {"name": "cfg", "namespace": "other"}},
        {"name": "c", "projected": {"sources": [{"secret": {"name": "tok", "namespace": "kube-system"}}]}},
    ]
    pod["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "env", "namespace": "other"}}]
    refs = deps.pod_dependencies(pod)
    assert {r.name for r in refs} >= {"db", "cfg", "tok", "env"}
    assert {r.namespace for r in refs} == {pod["metadata"]["namespace"]}


def test_the_vkubelets_informer_handler_errors_are_counted() -> None:
    """An event a handler raised on is lost to that handler until the resync: counted, by informer."""

    async def scenario() -> None:
        front = Kube(KubeConfig(server="http://127.0.0.1:1"), timeout=1)
        manager = Manager(front, NodeEndpoint("127.0.0.1", 1))
        informer = manager.front_objects.by_kind[deps.CONFIGMAP]
        name = "vkubelet_informer_handler_errors_total"
        before = METRICS.registry.get_sample_value(name, {"informer": informer.name}) or 0.0

        def broken(_kind: str, _obj: Any) -> None:
            raise KeyError("a bug")

        informer.add_handler(broken)
        informer._emit("ADDED", {"metadata": {"name": "cm", "namespace": "team-a"}})
        assert METRICS.registry.get_sample_value(name, {"informer": informer.name}) == before + 1
        assert all(
            i.on_handler_error == METRICS.handler_failed
            for i in (manager.clusters, *manager.front_objects.informers)
        )
        await front.close()

    asyncio.run(scenario())


def test_remote_events_waiting_are_bounded_and_a_newer_version_replaces_its_own() -> None:
    """Beyond the bound a new Event is dropped; one already waiting is updated in place (its count
    grew remotely), and taking one makes room again."""
    waiting = PendingEvents(limit=2)
    ref = {"name": "p", "namespace": "ns"}
    assert waiting.put("a", {"count": 1}, ref) and waiting.put("b", {"count": 1}, ref)
    assert not waiting.put("c", {"count": 1}, ref)  # dropped
    assert waiting.put("a", {"count": 2}, ref)  # the newer version of one waiting
    assert len(waiting) == 2
    assert waiting.take("a") == ({"count": 2}, ref)
    assert waiting.take("a") is None and waiting.take("c") is None
    assert waiting.put("c", {"count": 1}, ref) and len(waiting) == 2
