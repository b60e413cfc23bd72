"""The Helm chart renders what the kustomize manifests say (one source of truth: with the default
values, the very same objects; the chart reads the static files, CRDs, RBAC, scheduling
configuration, through links to them), its values are validated by values.schema.json, and the
options (second scheduler, certificates made by Helm, remote clusters, another namespace) render
what they promise. Needs the pinned helm and kubectl, no cluster
(tests/integration/test_helm_dry_run.py sends the objects to the front's API server)."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.framework import helm_chart as chart

pytestmark = pytest.mark.unit


def _lint(*args: str) -> subprocess.CompletedProcess[str]:
    return chart.helm("lint", str(chart.CHART), "--strict", *args)


def test_lint_with_the_default_values() -> None:
    r = _lint()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 chart(s) linted, 0 chart(s) failed" in r.stdout


def test_lint_with_non_default_values() -> None:
    r = _lint("--values", str(chart.MANAGED_VALUES), "--namespace", "batch-bridge")
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ("extender.replicas=0", "/extender/replicas"),
        ("vkubelet.replicas=two", "/vkubelet/replicas"),
        ("scheduler.mode=default-scheduler", "/scheduler/mode"),
        ("certificates.mode=openssl", "/certificates/mode"),
        ("image.pullPolicy=Sometimes", "/image/pullPolicy"),
        ("image.tag=", "/image/tag"),
        ("extender.replicaCount=2", "replicaCount"),
        ("remoteClusters[0].name=Remote_1", "/remoteClusters/0/name"),
        ("remoteClusters[0].name=r1,remoteClusters[0].hostAccess=Maybe", "/remoteClusters/0/hostAccess"),
        ("remoteClusters[0].name=r1,remoteClusters[0].frontAPI.tokenExpirationSeconds=60", "tokenExpiration"),
        ("remoteClusters[0].name=r1,remoteClusters[0].kubeconfgi=x", "kubeconfgi"),
    ],
)
def test_the_schema_rejects_a_bad_value(setting: str, complaint: str) -> None:
    r = chart.helm("template", str(chart.CHART), "--set", setting)
    assert r.returncode != 0, f"--set {setting} was accepted"
    assert "values don't meet the specifications of the schema" in r.stderr, r.stderr
    assert complaint in r.stderr, r.stderr
    assert not r.stdout.strip(), "nothing is rendered from bad values"


def test_the_schema_rejects_both_an_inline_kubeconfig_and_a_secret(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(
        yaml.safe_dump(
            {"remoteClusters": [{"name": "r1", "kubeconfig": "x", "kubeconfigSecret": {"name": "s"}}]}
        )
    )
    r = chart.helm("template", str(chart.CHART), "--values", str(values))
    assert r.returncode != 0
    assert "/remoteClusters/0" in r.stderr, r.stderr


def test_default_values_render_the_kustomize_build() -> None:
    """`helm template` with the defaults == `kubectl kustomize manifests`, object by object, in any
    order. The one exception: the Namespace, which `helm install --create-namespace` makes."""
    kustomized = [o for o in chart.kustomize(chart.MANIFESTS) if o["kind"] != "Namespace"]
    rendered = chart.render()
    assert len(rendered) == len(kustomized) > 20
    diff = chart.differences(rendered, kustomized)
    assert not diff, "\n".join(diff)


def test_the_armada_api_renders_its_kustomization_when_enabled() -> None:
    """`armadaApi.enabled`: the default objects and those of `kubectl kustomize manifests/armada-api`,
    no more; with self-signed certificates a Secret Helm makes (its ca.crt for the clients) in
    place of cert-manager's Certificate."""
    default = chart.by_key(chart.render())
    enabled = chart.render(sets=["armadaApi.enabled=true"])
    api = chart.kustomize(chart.MANIFESTS / "armada-api")
    assert len(api) >= 6
    diff = chart.differences([o for o in enabled if chart.key(o) not in default], api)
    assert not diff, "\n".join(diff)
    assert {chart.key(o) for o in enabled} >= set(default)
    signed = chart.render(sets=["armadaApi.enabled=true", "certificates.mode=self-signed"])
    secret = chart.find(signed, "Secret", "armada-bridge-armada-api-tls")
    assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
    assert not [o for o in signed if o["kind"] == "Certificate"]


def test_second_scheduler_mode_renders_the_second_scheduler_kustomization() -> None:
    default = chart.by_key(chart.render())
    managed = chart.render(sets=["scheduler.mode=second-scheduler"])
    second = chart.kustomize(chart.MANIFESTS / "scheduler" / "second-scheduler")
    second_keys = {chart.key(o) for o in second}
    diff = chart.differences([o for o in managed if chart.key(o) in second_keys], second)
    assert not diff, "\n".join(diff)
    # Everything else (the namespace's CRDs and certificates) is the default.
    rest = [o for o in managed if chart.key(o) not in second_keys]
    assert rest and all(chart.key(o) in default for o in rest)
    diff = chart.differences(rest, [default[chart.key(o)] for o in rest if chart.key(o) in default])
    assert not diff, "\n".join(diff)
    # The extender names the second scheduler, which runs in its pod and calls it on loopback.
    assert (
        chart.container_args(managed, "armada-bridge-extender")[-1]
        == "--scheduler-name=armada-bridge-scheduler"
    )
    pod = chart.find(managed, "Deployment", "armada-bridge-extender")["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["extender", "kube-scheduler"]
    config = yaml.safe_load(
        chart.find(managed, "ConfigMap", "armada-bridge-scheduler-config")["data"][
            "kube-scheduler-config.yaml"
        ]
    )
    assert config["extenders"][0]["urlPrefix"] == "http://127.0.0.1:8888"
    assert "--listen=127.0.0.1:8888" in chart.container_args(managed, "armada-bridge-extender")
    assert not [o for o in managed if o["kind"] == "ServiceAccount" and "scheduler" in o["metadata"]["name"]]


def _openssl(*args: str, stdin: bytes) -> str:
    r = subprocess.run(["openssl", *args], input=stdin, capture_output=True, timeout=30, check=False)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout.decode()


def test_self_signed_certificates_need_no_cert_manager(tmp_path: Path) -> None:
    objs = chart.render(sets=["certificates.mode=self-signed"], crds=False)
    assert not [o for o in objs if o["apiVersion"].startswith("cert-manager.io/")]
    webhook = chart.find(objs, "MutatingWebhookConfiguration", "armada-bridge")
    assert "cert-manager.io/inject-ca-from" not in (webhook["metadata"].get("annotations") or {})
    ca_bundle = webhook["webhooks"][0]["clientConfig"]["caBundle"]
    ca = tmp_path / "ca.crt"
    ca.write_bytes(base64.b64decode(ca_bundle))
    for name, san in [
        ("armada-bridge-extender-tls", "DNS:armada-bridge-extender.armada-bridge-system.svc"),
        ("armada-bridge-vkubelet-tls", "DNS:armada-bridge-vkubelet.armada-bridge-system.svc"),
    ]:
        secret = chart.find(objs, "Secret", name)
        assert secret["type"] == "kubernetes.io/tls"
        assert set(secret["data"]) == {"tls.crt", "tls.key", "ca.crt"}
        crt = base64.b64decode(secret["data"]["tls.crt"])
        assert "OK" in _openssl("verify", "-CAfile", str(ca), stdin=crt)
        assert san in _openssl("x509", "-noout", "-ext", "subjectAltName", stdin=crt)
        # The key belongs to the certificate.
        key = base64.b64decode(secret["data"]["tls.key"])
        assert _openssl("pkey", "-pubout", stdin=key) == _openssl("x509", "-noout", "-pubkey", stdin=crt)


def test_non_default_values_in_another_namespace() -> None:
    ns = "batch-bridge"
    objs = chart.render(chart.MANAGED_VALUES, namespace=ns, crds=False)
    values = yaml.safe_load(chart.MANAGED_VALUES.read_text())
    # Nothing still names the kustomize namespace; namespaced objects are in the release's (or
    # kube-system, for the bindings to the API server's authentication reader role).
    text = json.dumps(objs)
    assert "armada-bridge-system" not in text
    for o in objs:
        assert o["metadata"].get("namespace") in (None, ns, "kube-system"), chart.key(o)
    # Image, replicas, the namespace the components default to, the second scheduler.
    for name, replicas in [
        ("armada-bridge-extender", 3),
        ("armada-bridge-vkubelet", 1),
    ]:
        assert chart.find(objs, "Deployment", name)["spec"]["replicas"] == replicas
    for name in ("armada-bridge-extender", "armada-bridge-vkubelet"):
        c = chart.find(objs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]
        assert c["image"] == "registry.example.com/batch/armada-bridge:0.1.0"
        assert c["imagePullPolicy"] == "IfNotPresent"
        pod = chart.find(objs, "Deployment", name)["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == values["nodeSelector"] and pod["tolerations"] == values["tolerations"]
    assert f"--namespace={ns}" in chart.container_args(objs, "armada-bridge-extender")
    assert f"--leader-election-namespace={ns}" in chart.container_args(objs, "armada-bridge-vkubelet")
    config = yaml.safe_load(
        chart.find(objs, "ConfigMap", "armada-bridge-scheduler-config")["data"]["kube-scheduler-config.yaml"]
    )
    assert config["leaderElection"]["resourceNamespace"] == ns
    containers = chart.find(objs, "Deployment", "armada-bridge-extender")["spec"]["template"]["spec"][
        "containers"
    ]
    assert containers[1]["image"] == "registry.example.com/mirror/kube-scheduler:v1.37.2"
    # The scheduling configuration from the values.
    scheduling = chart.find(objs, "ConfigMap", "armada-bridge-scheduling-config")["data"][
        "scheduling-config.yaml"
    ]
    assert yaml.safe_load(scheduling) == values["extender"]["schedulingConfig"]
    # Remote clusters: the kubeconfig Secret when given inline, the RemoteCluster with its spec.
    east, west = values["remoteClusters"]
    secret = chart.find(objs, "Secret", "gpu-east-kubeconfig")
    assert secret["metadata"]["namespace"] == ns
    assert base64.b64decode(secret["data"]["kubeconfig"]).decode() == east["kubeconfig"]
    assert chart.find(objs, "RemoteCluster", "gpu-east")["spec"] == {
        "kubeconfigSecret": {"name": "gpu-east-kubeconfig", "namespace": ns, "key": "kubeconfig"},
        **{k: v for k, v in east.items() if k not in ("name", "kubeconfig")},
    }
    assert chart.find(objs, "RemoteCluster", "cpu-west")["spec"] == {
        "kubeconfigSecret": {"name": "cpu-west-admin", "namespace": ns, "key": "config"},
        **{k: v for k, v in west.items() if k not in ("name", "kubeconfigSecret")},
    }
    assert not [o for o in objs if o["kind"] == "Secret" and o["metadata"]["name"].startswith("cpu-west")]


def test_chart_reads_the_kustomize_files_through_links() -> None:
    """The static parts are not copies: crds/ and files/* link into manifests/ (helm follows them,
    and `helm package` stores their content)."""
    links = [chart.CHART / "crds", *sorted((chart.CHART / "files").iterdir())]
    assert len(links) >= 5
    for link in links:
        assert link.is_symlink(), f"{link} should link to the kustomize file, not copy it"
        target = link.resolve()
        assert target.exists() and chart.MANIFESTS in target.parents, f"{link} -> {target}"
        assert chart.CHART not in target.parents


def test_rbac_grants_are_the_reviewed_kustomize_ones_whatever_the_values() -> None:
    """tests/unit/test_rbac.py reviews the kustomize files; the chart grants exactly their rules."""

    def rules(objs: list[chart.Obj]) -> dict[tuple[str, str], object]:
        return {
            (o["kind"], o["metadata"]["name"]): o["rules"]
            for o in objs
            if o["kind"] in ("Role", "ClusterRole")
        }

    kustomized = rules(chart.kustomize(chart.MANIFESTS))
    assert rules(chart.render(crds=False)) == kustomized
    assert rules(chart.render(chart.MANAGED_VALUES, namespace="batch-bridge", crds=False)) == kustomized


def test_uninstall_hook_removes_the_remote_clusters_before_anything_goes() -> None:
    """`helm uninstall` runs, before deleting anything, a Job of the image that removes every
    RemoteCluster and waits for the vkubelet's cleanup; its identity may do that and no more. Off
    with uninstall.removeRemoteClusters=false (tests/e2e/test_install.py runs it for real)."""
    every = chart.render(crds=False, hooks=True)
    hooks = [o for o in every if "helm.sh/hook" in (o["metadata"].get("annotations") or {})]
    assert {(o["kind"], o["metadata"]["name"]) for o in hooks} == {
        (kind, "armada-bridge-uninstall")
        for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Job")
    }
    for o in hooks:
        annotations = o["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "pre-delete", o["kind"]
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded", o["kind"]
        # Its identity before the Job that uses it.
        assert int(annotations.get("helm.sh/hook-weight", "0")) < 0 or o["kind"] == "Job", o["kind"]
    assert chart.find(hooks, "ClusterRole", "armada-bridge-uninstall")["rules"] == [
        {
            "apiGroups": ["bridge.armadaproject.io"],
            "resources": ["remoteclusters"],
            "verbs": ["get", "list", "delete"],
        },
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ]
    job = chart.find(hooks, "Job", "armada-bridge-uninstall")["spec"]
    pod = job["template"]["spec"]
    (container,) = pod["containers"]
    assert (
        container["image"]
        == chart.find(every, "Deployment", "armada-bridge-vkubelet")["spec"]["template"]["spec"][
            "containers"
        ][0]["image"]
    )
    assert "command" not in container  # the image's ENTRYPOINT, python -m
    assert container["args"] == ["cli.main", "remove-clusters", "--all", "--timeout=240"]
    assert job["activeDeadlineSeconds"] > 240 and job["backoffLimit"] == 0
    assert pod["serviceAccountName"] == "armada-bridge-uninstall"
    off = chart.render(crds=False, hooks=True, sets=["uninstall.removeRemoteClusters=false"])
    assert not [o for o in off if "helm.sh/hook" in (o["metadata"].get("annotations") or {})]
