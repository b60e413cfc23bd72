"""A team cannot skip its queue (docs/security.md, "a team skips its queue").

As a tenant would try it: a ServiceAccount with the built-in `edit` role in its namespaces, the
usual grant for a team. Its namespace's Queue is cordoned (nothing of it may run), and it has a
namespace with no queue at all. Every way around the queue is refused at the API (the admission
policies) and, where an identity that passes them tries it anyway, by the vkubelet and the
extender (signed decisions); no remote pod is ever created for it. The same pods through the
normal path run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey
from tests.framework.bridge import REMOTES, Api, events_for, pod, remote_pods
from tests.framework.kube import HOLD_SCHEDULER, decision_key, grant, role_binding, wait_for

pytestmark = pytest.mark.e2e

FRONT = "front"


@dataclass
class Tenant:
    api: k8s.CoreV1Api  # as the tenant
    queued: str  # its namespace, whose Queue is cordoned
    unqueued: str  # its namespace with no queue
    queue: str


def _token_client(admin: k8s.ApiClient, token: str) -> k8s.ApiClient:
    config = k8s.Configuration()
    config.host = admin.configuration.host
    config.ssl_ca_cert = admin.configuration.ssl_ca_cert
    config.verify_ssl = admin.configuration.verify_ssl
    config.api_key = {"authorization": f"Bearer {token}"}
    return k8s.ApiClient(config)


@pytest.fixture
def tenant(namespace: str, cluster_api: Api) -> Iterator[Tenant]:
    admin = cluster_api(FRONT)
    core, rbac = k8s.CoreV1Api(admin), k8s.RbacAuthorizationV1Api(admin)
    crd = k8s.CustomObjectsApi(admin)
    queue = f"cordoned-{uuid.uuid4().hex[:6]}"
    crd.create_cluster_custom_object(
        keys.GROUP,
        "v1alpha1",
        "queues",
        {
            "apiVersion": keys.API_VERSION,
            "kind": "Queue",
            "metadata": {"name": queue},
            "spec": {"cordoned": True},
        },
    )
    core.patch_namespace(namespace, {"metadata": {"labels": {keys.QUEUE_LABEL: queue}}})
    unqueued = f"{namespace[:50]}-nq"
    core.create_namespace({"metadata": {"name": unqueued}})
    core.create_namespaced_service_account(namespace, {"metadata": {"name": "team"}})
    for ns in (namespace, unqueued):
        rbac.create_namespaced_role_binding(ns, role_binding("team-edit", "edit", "team", namespace))
    token = core.create_namespaced_service_account_token(
        "team", namespace, {"spec": {"expirationSeconds": 1800}}
    )
    client = _token_client(admin, str(token.status.token))
    api = k8s.CoreV1Api(client)
    wait_for("the tenant's grant", lambda: _can_list(api, namespace) and _can_list(api, unqueued), timeout=30)
    yield Tenant(api, namespace, unqueued, queue)
    client.close()
    core.delete_namespace(unqueued)
    crd.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", queue)


def _can_list(api: k8s.CoreV1Api, namespace: str) -> bool:
    try:
        api.list_namespaced_pod(namespace)
        return True
    except ApiException as e:
        if e.status == 403:
            return False
        raise


def _refused(call: Any, *args: Any, **kwargs: Any) -> str:
    """The API's refusal of the call (it must be one): its message."""
    with pytest.raises(ApiException) as info:
        call(*args, **kwargs)
    assert info.value.status == 403, info.value.body
    return str(info.value.body)


def _no_remote_pods(cluster_api: Api, *namespaces: str) -> None:
    for cluster in REMOTES:
        for ns in namespaces:
            try:
                assert remote_pods(cluster_api, cluster, ns) == [], f"a remote pod in {cluster}/{ns}"
            except ApiException as e:
                if e.status != 404:  # no such namespace there: nothing was ever made for it
                    raise


def _waiting_gated(core: k8s.CoreV1Api, namespace: str, name: str) -> Any:
    p = core.read_namespaced_pod(name, namespace)
    gates = [g.name for g in p.spec.scheduling_gates or []]
    return p if keys.SCHEDULING_GATE in gates and not p.spec.node_name else None


def test_a_tenant_cannot_put_a_pod_on_a_virtual_node(tenant: Tenant, cluster_api: Api) -> None:
    for ns, node in ((tenant.queued, "remote-1"), (tenant.unqueued, "remote-2")):
        body = pod("pinned", queue=None)
        body["spec"]["nodeName"] = node
        message = _refused(tenant.api.create_namespaced_pod, ns, body)
        assert f"{node} is the virtual node of remote cluster {node}" in message
    # A real node of the front stays the tenant's to name.
    body = pod("on-front-node", queue=None)
    body["spec"]["nodeName"] = "front-node-0"
    tenant.api.create_namespaced_pod(tenant.unqueued, body)
    _no_remote_pods(cluster_api, tenant.queued, tenant.unqueued)


def test_a_tenant_cannot_write_the_bridges_keys_or_lift_its_gate(tenant: Tenant, cluster_api: Api) -> None:
    admin = k8s.CoreV1Api(cluster_api(FRONT))
    forged = {
        keys.ASSIGNED_CLUSTER: "remote-1",
        keys.ASSIGNED_REMOTE_NODE: "remote-1-node-0",
        keys.DECISION_SIGNATURE: "forged",
        keys.REMOTE_REJECTION: '{"nodes": [], "reason": "x"}',
        keys.NUDGE: "1",
    }
    assert set(forged) == set(keys.BRIDGE_ONLY_ANNOTATIONS)
    for key, value in forged.items():  # at creation, one key at a time
        message = _refused(
            tenant.api.create_namespaced_pod,
            tenant.queued,
            pod(f"forged-{uuid.uuid4().hex[:4]}", queue=None, annotations={key: value}),
        )
        assert f"only the bridge may set or change {key}" in message
    # Created through the normal path, it waits: its queue is cordoned.
    tenant.api.create_namespaced_pod(tenant.queued, pod("waits", queue=None))
    wait_for(
        "the pod held at the bridge's gate", lambda: _waiting_gated(admin, tenant.queued, "waits"), timeout=30
    )
    wait_for(
        "ArmadaWaiting: cordoned",
        lambda: any("cordoned" in e for e in events_for(cluster_api, tenant.queued, "waits")),
        timeout=30,
    )
    for key, value in [*forged.items(), (keys.SCHEDULING_CONSTRAINTS, "{}")]:  # later, by update
        message = _refused(
            tenant.api.patch_namespaced_pod,
            "waits",
            tenant.queued,
            {"metadata": {"annotations": {key: value}}},
        )
        assert f"only the bridge may set or change {key}" in message
    _refused(  # removing one is changing it too
        tenant.api.patch_namespaced_pod,
        "waits",
        tenant.queued,
        {"metadata": {"annotations": {keys.SCHEDULING_CONSTRAINTS: None}}},
    )
    message = _refused(
        tenant.api.patch_namespaced_pod,
        "waits",
        tenant.queued,
        [{"op": "remove", "path": "/spec/schedulingGates"}],
    )
    assert f"only the bridge lifts the scheduling gate {keys.SCHEDULING_GATE}" in message
    _refused(
        tenant.api.patch_namespaced_pod,
        "waits",
        tenant.queued,
        [
            {"op": "remove", "path": "/spec/schedulingGates"},
            {
                "op": "add",
                "path": "/metadata/annotations/bridge.armadaproject.io~1cluster",
                "value": "remote-1",
            },
        ],
    )
    # What is the tenant's own stays the tenant's.
    tenant.api.patch_namespaced_pod(
        "waits", tenant.queued, {"metadata": {"annotations": {"team/note": "mine"}}}
    )
    assert _waiting_gated(admin, tenant.queued, "waits")
    _no_remote_pods(cluster_api, tenant.queued)

    # The normal path: once its queue is open, the same pod runs.
    k8s.CustomObjectsApi(cluster_api(FRONT)).patch_cluster_custom_object(
        keys.GROUP, "v1alpha1", "queues", tenant.queue, {"spec": {"cordoned": False}}
    )
    wait_for(
        "the pod Running through its queue",
        lambda: admin.read_namespaced_pod("waits", tenant.queued).status.phase == "Running",
        timeout=60,
    )


def test_a_binding_to_a_virtual_node_or_with_the_bridges_keys_is_refused(
    tenant: Tenant, cluster_api: Api
) -> None:
    """Even for a tenant granted pods/binding (as for a scheduler of its own): not to a virtual node,
    nor with the bridge's keys (a Binding's annotations are copied onto the pod)."""
    binds = [{"apiGroups": [""], "resources": ["pods/binding"], "verbs": ["create"]}]
    grant(
        k8s.RbacAuthorizationV1Api(cluster_api(FRONT)),
        tenant.unqueued,
        "binder",
        binds,
        "team",
        tenant.queued,
    )
    for name in ("to-virtual", "to-front", "with-keys"):
        tenant.api.create_namespaced_pod(tenant.unqueued, pod(name, queue=None, scheduler=HOLD_SCHEDULER))

    def bind(name: str, node: str, annotations: dict[str, str] | None = None) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "annotations": annotations or {}},
            "target": {"kind": "Node", "name": node},
        }
        tenant.api.create_namespaced_pod_binding(name, tenant.unqueued, body, _preload_content=False)

    def bound_to_front() -> bool:
        try:
            bind("to-front", "front-node-0")
            return True
        except ApiException as e:
            if e.status == 403 and "pods/binding" in str(e.body):  # RBAC caches catching up
                return False
            raise

    wait_for("a binding to a front node", bound_to_front, timeout=30)  # the grant works
    message = _refused(bind, "to-virtual", "remote-1")
    assert "remote-1 is the virtual node of remote cluster remote-1" in message
    forged = {keys.ASSIGNED_CLUSTER: "remote-1", keys.DECISION_SIGNATURE: "forged"}
    message = _refused(bind, "with-keys", "front-node-0", forged)
    assert "only the bridge may set or change" in message and keys.DECISION_SIGNATURE in message, message
    with_keys = tenant.api.read_namespaced_pod("with-keys", tenant.unqueued)
    assert not with_keys.spec.node_name and keys.DECISION_SIGNATURE not in (
        with_keys.metadata.annotations or {}
    )
    _no_remote_pods(cluster_api, tenant.unqueued)


def _not_admitted(core: k8s.CoreV1Api, namespace: str, name: str) -> Any:
    p = core.read_namespaced_pod(name, namespace)
    return p if p.status.phase == "Failed" and p.status.reason == "NotAdmitted" else None


def test_the_vkubelet_runs_only_pods_the_extender_admitted_there(tenant: Tenant, cluster_api: Api) -> None:
    """Defence in depth: the admin passes the admission policies (so would anyone they grant the
    permission to, or everyone where the policies are not installed); the vkubelet still refuses
    what the extender did not admit to its cluster, as a kubelet's admission does."""
    admin = k8s.CoreV1Api(cluster_api(FRONT))
    key = decision_key(admin)
    toleration = [{"key": keys.VIRTUAL_NODE_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]

    def bound(name: str, ns: str, node: str, annotations: dict[str, str] | None = None) -> None:
        body = pod(name, queue=None, annotations=annotations)
        body["spec"]["nodeName"] = node
        body["spec"]["tolerations"] = toleration
        admin.create_namespaced_pod(ns, body)

    bound("no-queue", tenant.unqueued, "remote-1")  # no decision at all
    forged = {keys.ASSIGNED_CLUSTER: "remote-2", keys.ASSIGNED_REMOTE_NODE: "remote-2-node-0"}
    bound("forged", tenant.queued, "remote-2", {**forged, keys.DECISION_SIGNATURE: "forged"})
    # A real signature, of another pod: it names that pod's UID.
    other = DecisionKey.sign(key, str(uuid.uuid4()), "remote-2", "remote-2-node-0")
    bound("copied", tenant.queued, "remote-2", {**forged, keys.DECISION_SIGNATURE: other})
    reasons = {}
    for ns, name in ((tenant.unqueued, "no-queue"), (tenant.queued, "forged"), (tenant.queued, "copied")):
        failed = wait_for(
            f"{name} refused", lambda ns=ns, name=name: _not_admitted(admin, ns, name), timeout=30
        )
        reasons[name] = failed.status.message
        wait_for(  # the Event follows the status it reports
            f"{name}'s NotAdmitted Event",
            lambda ns=ns, name=name: any(
                e.startswith("NotAdmitted: not run in remote cluster")
                for e in events_for(cluster_api, ns, name)
            ),
            timeout=30,
        )
    assert "never admitted it" in reasons["no-queue"]
    assert (
        "signature does not verify" in reasons["forged"] and "signature does not verify" in reasons["copied"]
    )

    # A genuine decision for remote-1, bound to remote-2 by hand: remote-2 refuses it.
    body = pod("elsewhere", queue=None, scheduler=HOLD_SCHEDULER)
    body["spec"]["tolerations"] = toleration
    created = admin.create_namespaced_pod(tenant.unqueued, body)
    decision = key.annotations(created.metadata.uid, "remote-1", "remote-1-node-0")
    admin.patch_namespaced_pod("elsewhere", tenant.unqueued, {"metadata": {"annotations": decision}})
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "elsewhere"},
        "target": {"kind": "Node", "name": "remote-2"},
    }
    admin.create_namespaced_pod_binding("elsewhere", tenant.unqueued, binding, _preload_content=False)
    failed = wait_for(
        "elsewhere refused", lambda: _not_admitted(admin, tenant.unqueued, "elsewhere"), timeout=30
    )
    assert "admitted it to remote cluster remote-1, not remote-2" in failed.status.message
    _no_remote_pods(cluster_api, tenant.queued, tenant.unqueued)


def test_the_extender_trusts_no_decision_it_did_not_make(tenant: Tenant, cluster_api: Api) -> None:
    """A pod in a cordoned queue, its gate lifted and a decision forged by someone who passes the
    admission policies: the front scheduler asks the extender, which refuses every node, so the
    pod is never bound; its queue still decides (it waits: cordoned)."""
    admin = k8s.CoreV1Api(cluster_api(FRONT))
    admin.create_namespaced_pod(tenant.queued, pod("forged-unbound", queue=None))
    wait_for("gated", lambda: _waiting_gated(admin, tenant.queued, "forged-unbound"), timeout=30)
    forged = {
        keys.ASSIGNED_CLUSTER: "remote-1",
        keys.ASSIGNED_REMOTE_NODE: "remote-1-node-0",
        keys.DECISION_SIGNATURE: "x",
    }
    admin.patch_namespaced_pod("forged-unbound", tenant.queued, {"metadata": {"annotations": forged}})
    admin.patch_namespaced_pod(
        "forged-unbound", tenant.queued, [{"op": "remove", "path": "/spec/schedulingGates"}]
    )

    def refused_by_the_scheduler() -> Any:
        p = admin.read_namespaced_pod("forged-unbound", tenant.queued)
        cond = next((c for c in p.status.conditions or [] if c.type == "PodScheduled"), None)
        return (
            p
            if cond is not None and cond.status == "False" and "armada-bridge" in (cond.message or "")
            else None
        )

    p = wait_for("the front scheduler refused by the extender", refused_by_the_scheduler, timeout=60)
    wait_for(
        "ArmadaWaiting: cordoned",
        lambda: any("cordoned" in e for e in events_for(cluster_api, tenant.queued, "forged-unbound")),
        timeout=30,
    )
    assert (
        not p.spec.node_name and not admin.read_namespaced_pod("forged-unbound", tenant.queued).spec.node_name
    )
    _no_remote_pods(cluster_api, tenant.queued)


def test_a_tenant_cannot_name_a_queue_that_does_not_take_its_namespace(
    tenant: Tenant, cluster_api: Api
) -> None:
    """Another team's queue, named every way a pod can name one (its own label, Kueue's label, its
    controller's label): refused at creation with the reason (the webhook). A queue that closes to
    the namespace while a pod waits admits it nowhere until it opens again (the extender). The
    tenant's own queue, through its namespace's label, needs no selector (the other tests)."""
    admin = cluster_api(FRONT)
    crd = k8s.CustomObjectsApi(admin)
    other = f"other-{uuid.uuid4().hex[:6]}"
    closed = {"matchLabels": {"team": other}}  # no namespace has it
    body = {"apiVersion": keys.API_VERSION, "kind": "Queue", "metadata": {"name": other}}
    crd.create_cluster_custom_object(
        keys.GROUP, "v1alpha1", "queues", {**body, "spec": {"namespaceSelector": closed}}
    )
    ns = tenant.unqueued
    why = f"queue {other} does not take pods from namespace {ns}"
    batch = k8s.BatchV1Api(tenant.api.api_client)
    try:
        assert why in _refused(tenant.api.create_namespaced_pod, ns, pod("own-label", queue=other))
        kueue = pod("kueue-label", queue=None, labels={keys.KUEUE_QUEUE_NAME_LABEL: other})
        assert why in _refused(tenant.api.create_namespaced_pod, ns, kueue)
        job = {
            "metadata": {"name": "labelled-job", "labels": {keys.QUEUE_LABEL: other}},
            "spec": {
                "backoffLimit": 0,
                "template": {"spec": {**pod("job-pod", queue=None)["spec"], "restartPolicy": "Never"}},
            },
        }
        batch.create_namespaced_job(ns, job)
        wait_for(
            "the job controller's pod refused",
            lambda: any(
                e.startswith("FailedCreate") and why in e for e in events_for(cluster_api, ns, "labelled-job")
            ),
            timeout=60,
        )
        assert not [
            p for p in tenant.api.list_namespaced_pod(ns).items if p.metadata.name.startswith("labelled-job")
        ]

        # Open to the namespace by name (cordoned, so that its pod waits), then closed again.
        # (merge patches: the other selector's field set to None is removed)
        by_name = {
            "matchLabels": None,
            "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": [ns]}],
        }
        crd.patch_cluster_custom_object(
            keys.GROUP,
            "v1alpha1",
            "queues",
            other,
            {"spec": {"namespaceSelector": by_name, "cordoned": True}},
        )
        wait_for(
            "the queue open to the namespace",
            lambda: _created(tenant.api, ns, pod("waits", queue=other)),
            timeout=30,
        )
        wait_for(
            "waiting: cordoned",
            lambda: any("cordoned" in e for e in events_for(cluster_api, ns, "waits")),
            timeout=30,
        )
        crd.patch_cluster_custom_object(
            keys.GROUP,
            "v1alpha1",
            "queues",
            other,
            {"spec": {"namespaceSelector": {**closed, "matchExpressions": None}, "cordoned": False}},
        )
        wait_for(
            "waiting: closed to the namespace",
            lambda: any(why in e for e in events_for(cluster_api, ns, "waits")),
            timeout=30,
        )
        assert _waiting_gated(tenant.api, ns, "waits") is not None
        _no_remote_pods(cluster_api, ns)
        crd.patch_cluster_custom_object(
            keys.GROUP, "v1alpha1", "queues", other, {"spec": {"namespaceSelector": by_name}}
        )
        wait_for(
            "admitted once open again",
            lambda: tenant.api.read_namespaced_pod("waits", ns).spec.node_name,
            timeout=60,
        )
    finally:
        batch.delete_namespaced_job("labelled-job", ns, propagation_policy="Background")
        crd.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", other)


def _created(api: k8s.CoreV1Api, namespace: str, body: dict[str, Any]) -> bool:
    """Create the pod; False while the webhook still refuses it (its cache has not the change yet)."""
    try:
        api.create_namespaced_pod(namespace, body)
        return True
    except ApiException as e:
        if e.status == 403 and "does not take pods" in str(e.body):
            return False
        raise
