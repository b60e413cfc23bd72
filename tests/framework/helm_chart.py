"""The Helm chart (manifests/helm/armada-bridge) and the kustomize build it must agree with: render
both with the pinned helm and kubectl, parse the objects, key them by identity."""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from armada_bridge.objects import Obj
from devenv import binaries, versions

MANIFESTS = versions.REPO_ROOT / "manifests"
CHART = MANIFESTS / "helm" / "armada-bridge"
#: Non-default values: second scheduler, certificates made by Helm, remote clusters.
MANAGED_VALUES = CHART / "ci" / "managed-values.yaml"
NAMESPACE = "armada-bridge-system"

Key = tuple[str, str, str, str]


def helm(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the pinned helm; the caller looks at returncode, stdout and stderr."""
    return subprocess.run(
        [str(binaries.helm()), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _objects(text: str) -> list[Obj]:
    return [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]


def render(
    *values_files: Path,
    sets: Sequence[str] = (),
    namespace: str = NAMESPACE,
    crds: bool = True,
    hooks: bool = False,
) -> list[Obj]:
    """`helm template` of the chart, parsed (with its CRDs unless crds=False; its hooks, which
    kustomize has no counterpart of, only with hooks=True)."""
    args = ["template", "armada-bridge", str(CHART), "--namespace", namespace]
    args += ["--include-crds"] if crds else []
    args += [] if hooks else ["--no-hooks"]
    for f in values_files:
        args += ["--values", str(f)]
    for s in sets:
        args += ["--set", s]
    r = helm(*args)
    if r.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{r.stderr}")
    return _objects(r.stdout)


def kustomize(directory: Path) -> list[Obj]:
    """`kubectl kustomize DIR` with the pinned kubectl, parsed."""
    kubectl = binaries.expected().kubectl
    if not kubectl.is_file():
        binaries.ensure()
    r = subprocess.run(
        [str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, timeout=60, check=False
    )
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {directory} failed:\n{r.stderr}")
    return _objects(r.stdout)


def key(obj: Obj) -> Key:
    group = obj["apiVersion"].rpartition("/")[0]
    meta = obj["metadata"]
    return (group, obj["kind"], meta.get("namespace", ""), meta["name"])


def normalized(obj: Obj) -> Obj:
    """The object with the configuration files of ConfigMaps parsed, so that comments and layout
    of a file do not count, only what it says."""
    if obj.get("kind") != "ConfigMap":
        return obj
    data = {
        k: yaml.safe_load(v) if k.endswith(".yaml") and isinstance(v, str) else v
        for k, v in (obj.get("data") or {}).items()
    }
    return {**obj, "data": data}


def by_key(objs: Iterable[Obj]) -> dict[Key, Obj]:
    out: dict[Key, Obj] = {}
    for o in objs:
        k = key(o)
        assert k not in out, f"rendered twice: {k}"
        out[k] = normalized(o)
    return out


def differences(chart: Iterable[Obj], kustomized: Iterable[Obj]) -> list[str]:
    """What differs between two sets of objects, order-independent; empty when they are the same."""
    a, b = by_key(chart), by_key(kustomized)
    out = [f"only in the chart: {k}" for k in sorted(a.keys() - b.keys())]
    out += [f"only in the kustomize build: {k}" for k in sorted(b.keys() - a.keys())]
    for k in sorted(a.keys() & b.keys()):
        if a[k] != b[k]:
            out.append(
                f"{k} differs:\n--- chart\n{yaml.safe_dump(a[k], sort_keys=True)}"
                f"--- kustomize\n{yaml.safe_dump(b[k], sort_keys=True)}"
            )
    return out


def find(objs: Iterable[Obj], kind: str, name: str) -> Obj:
    for o in objs:
        if o["kind"] == kind and o["metadata"]["name"] == name:
            return o
    raise AssertionError(f"no {kind} {name} rendered")


def container_args(objs: Iterable[Obj], deployment: str) -> list[str]:
    args: list[str] = find(objs, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0][
        "args"
    ]
    return args
