"""manifests/samples/dev/rayjob.yaml is manifests/samples/rayjob.yaml placed on the dev environment's real
nodes (devenv.realnode.placement), nothing else changed but its pods' CPU requests and its submitter."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from devenv.realnode.placement import on_a_real_node
from devenv.versions import REPO_ROOT

ROOT = REPO_ROOT


def _templates(rayjob: dict[str, Any]) -> list[dict[str, Any]]:
    spec = rayjob["spec"]["rayClusterSpec"]
    return [spec["headGroupSpec"]["template"], *(g["template"] for g in spec["workerGroupSpecs"])]


def test_the_dev_rayjob_is_the_sample_on_real_nodes() -> None:
    sample = yaml.safe_load((ROOT / "manifests/samples/rayjob.yaml").read_text())
    dev = yaml.safe_load((ROOT / "manifests/samples/dev/rayjob.yaml").read_text())
    submitter = dev["spec"].pop("submitterPodTemplate")
    expected = copy.deepcopy(sample)
    for mine, theirs in zip(_templates(expected), _templates(dev), strict=True):
        for c, d in zip(mine["spec"]["containers"], theirs["spec"]["containers"], strict=True):
            c["resources"]["requests"]["cpu"] = d["resources"]["requests"]["cpu"]
        on_a_real_node(mine["spec"])
    assert dev == expected
    bare = copy.deepcopy({k: v for k, v in submitter["spec"].items() if k not in ("tolerations", "affinity")})
    for c in bare["containers"]:
        c.pop("imagePullPolicy")
    assert on_a_real_node(bare) == submitter["spec"]
    assert {c["image"] for c in submitter["spec"]["containers"]} == {
        c["image"] for t in _templates(sample) for c in t["spec"]["containers"]
    }


def test_the_dev_manifests_need_nothing_but_the_bridge() -> None:
    """`armada-bridge dev up` applies manifests/dev whole, before any operator runs: only the
    bridge's own kinds and Namespaces belong there (samples live in manifests/samples/)."""
    kinds = {
        (d["apiVersion"], d["kind"])
        for f in sorted((ROOT / "manifests/dev").glob("*.yaml"))
        for d in yaml.safe_load_all(f.read_text())
        if d
    }
    assert kinds <= {("v1", "Namespace"), ("bridge.armadaproject.io/v1alpha1", "Queue")}, kinds
