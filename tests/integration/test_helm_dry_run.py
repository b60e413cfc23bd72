"""The chart's objects are accepted by the front's API server: a server-side dry run (admission and
validation, the CRDs' schemas included) that changes nothing.

The dev front is not empty: the bridge runs there in its dev form (`armada-bridge dev up`), whose
CRDs, PriorityClasses, RBAC and webhook (pointing at a URL, not at the Service) are already there,
applied by other means. `kubectl apply --dry-run=server` would merge the chart's objects into
those (a webhook with both a URL and a Service, refused) and so test the mix. Instead, objects
that are not there are dry-run applied (a create), and those that are there are dry-run replaced
(`kubectl replace --dry-run=server`, at their current resourceVersion): the server checks exactly
the chart's objects either way.

A dry run creates nothing, CRDs included, so the objects of a CRD validate only where the cluster
already serves it. The dev front does: the bridge runs there, and `armada-bridge dev up` installs
its CRDs. So the chart's CRDs go first (a dry-run update of the installed ones: they must be
acceptable as they are), then the test requires that the front serves every one of them, and
then every other object is validated against them. The dev front has no cert-manager: in
certificates mode cert-manager (the default) its Issuer and Certificates cannot be validated
there, and are left out by name; in mode self-signed the whole render is checked."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from devenv import binaries
from devenv.clients import run_kubectl
from tests.framework import helm_chart as chart

CERT_MANAGER = "cert-manager.io"


def _kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return run_kubectl(binaries.expected(), kubeconfig, *args, stdin=stdin, timeout=120)


def _dry_run(kubeconfig: Path, objs: list[chart.Obj]) -> list[str]:
    """Server-side dry run of the objects: `apply` those the front does not have, `replace` those
    it has (at their resourceVersion); the result lines."""
    r = _kubectl(
        kubeconfig, "get", "--ignore-not-found", "-o", "json", "-f", "-", stdin=yaml.safe_dump_all(objs)
    )
    assert r.returncode == 0, r.stderr
    live = json.loads(r.stdout)["items"] if r.stdout.strip() else []
    versions = {chart.key(o): o["metadata"]["resourceVersion"] for o in live}
    new = [o for o in objs if chart.key(o) not in versions]
    there = [
        {**o, "metadata": {**o["metadata"], "resourceVersion": versions[chart.key(o)]}}
        for o in objs
        if chart.key(o) in versions
    ]
    lines: list[str] = []
    for verb, batch in (("apply", new), ("replace", there)):
        if not batch:
            continue
        r = _kubectl(kubeconfig, verb, "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(batch))
        assert r.returncode == 0, f"the front refused the chart's objects ({verb}):\n{r.stderr}"
        out = [line for line in r.stdout.splitlines() if line.strip()]
        assert len(out) == len(batch), r.stdout
        assert all(line.endswith("(server dry run)") for line in out), r.stdout
        lines += out
    return lines


def _served(kubeconfig: Path, group: str) -> bool:
    r = _kubectl(kubeconfig, "api-resources", f"--api-group={group}", "-o", "name")
    assert r.returncode == 0, r.stderr
    return bool(r.stdout.strip())


@pytest.fixture(scope="module")
def front(dev_env: object) -> Path:
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    return dev_env.kubeconfig("front")


def _crds_then_the_rest(front: Path, objs: list[chart.Obj]) -> list[chart.Obj]:
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    assert len(crds) == 4
    _dry_run(front, crds)
    names = [o["metadata"]["name"] for o in crds]
    r = _kubectl(front, "get", "crd", *names, "-o", "name")
    assert r.returncode == 0, (
        "the front does not serve the chart's CRDs, so a dry run cannot validate the objects of "
        f"them (a dry run creates no CRD); `armada-bridge dev up` installs them:\n{r.stderr}"
    )
    return [o for o in objs if o["kind"] != "CustomResourceDefinition"]


def test_default_values_are_accepted_by_the_front(front: Path) -> None:
    rest = _crds_then_the_rest(front, chart.render())
    left_out = []
    if not _served(front, CERT_MANAGER):
        left_out = [o for o in rest if o["apiVersion"].startswith(f"{CERT_MANAGER}/")]
        assert sorted(o["kind"] for o in left_out) == ["Certificate", "Certificate", "Issuer"]
        print(
            f"cert-manager is not installed on the front: not validated: {[chart.key(o) for o in left_out]}"
        )
    _dry_run(front, [o for o in rest if o not in left_out])


def test_self_signed_certificates_are_accepted_by_the_front(front: Path) -> None:
    rest = _crds_then_the_rest(front, chart.render(sets=["certificates.mode=self-signed"]))
    assert not [o for o in rest if o["apiVersion"].startswith(f"{CERT_MANAGER}/")]
    _dry_run(front, rest)


def test_non_default_values_are_accepted_by_the_front(front: Path) -> None:
    """Second scheduler, certificates made by Helm, two RemoteClusters (validated against the
    installed CRD) and the kubeconfig Secret of one. The namespace is the dev front's own
    armada-bridge-system: a dry run would not create another one for the objects to go in."""
    lines = _dry_run(front, _crds_then_the_rest(front, chart.render(chart.MANAGED_VALUES)))
    assert any(line.startswith("remotecluster.bridge.armadaproject.io/gpu-east ") for line in lines), lines
    # The second scheduler runs in the extender's pods: its config and roles go with them.
    assert any(line.startswith("deployment.apps/armada-bridge-extender ") for line in lines), lines
    assert any(line.startswith("configmap/armada-bridge-scheduler-config ") for line in lines), lines


def test_a_bad_remote_cluster_is_refused_by_the_crd(front: Path) -> None:
    """The other way round: the dry run does validate against the served CRD (a value the chart's
    schema lets through only because it was bypassed here)."""
    objs = chart.render(chart.MANAGED_VALUES, crds=False)
    east = chart.find(objs, "RemoteCluster", "gpu-east")
    bad = {**east, "spec": {**east["spec"], "unschedulableSeconds": 0}}
    r = _kubectl(front, "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(bad))
    assert r.returncode != 0
    assert "unschedulableSeconds" in r.stderr, r.stderr
