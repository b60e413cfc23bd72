"""The docs run as written: each file's ```` ```sh runnable ```` and ```` ```python runnable ````
blocks (README.md, docs/**/*.md), in order, in one `bash -euo pipefail` (a Python block through
`python`, the repository's), against the dev environment with every released operator
running, with what README's "Try it" exports (the front's kubeconfig; `armada-bridge`,
`kubectl-armada` and the pinned kubectl on PATH), as a reader in the repository would: in a
directory with the repository's files and a home of its own (the machine's caches linked in), so
that what a doc writes (a job file, `~/.armadactl.yaml`) stays there; what it leaves running (a
server) is stopped after it. The Namespaces and Queues a file makes are deleted before and after it
(none else: other tests run meanwhile)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from devenv.names import FRONT
from devenv.operators.catalog import ALL
from devenv.processes.environment import Environment
from tests.framework import doc_runs
from tests.framework.bridge import Api
from tests.framework.docs_blocks import ROOT, blocks, doc_files

RUNNABLE = {p: [b for b in blocks(p) if b.runnable] for p in doc_files()}
FILES = [p for p, found in RUNNABLE.items() if found]
# A Namespace or Queue a doc makes (`metadata: {name: x, ...}` or `metadata:` then `  name: x`, or
# `kubectl create namespace x`)
_MADE = r"kind:\s*{kind}\s*\nmetadata:\s*(?:\{{\s*name:\s*([\w.-]+)|\n\s+name:\s*([\w.-]+))"
_CREATED = r"kubectl\s+create\s+{kind}\s+([\w.-]+)"


def made_in(text: str, kind: str = "Namespace") -> set[str]:
    """The names of the objects of `kind` (Namespace or Queue) the text makes."""
    made = {a or b for a, b in re.findall(_MADE.format(kind=kind), text)}
    return made | set(re.findall(_CREATED.format(kind=kind.lower()), text))


def _made(api: k8s.ApiClient) -> tuple[set[str], set[str]]:
    namespaces = {n.metadata.name for n in k8s.CoreV1Api(api).list_namespace().items}
    queues = k8s.CustomObjectsApi(api).list_cluster_custom_object(keys.GROUP, "v1alpha1", "queues")["items"]
    return namespaces, {q["metadata"]["name"] for q in queues}


def _remove(api: k8s.ApiClient, namespaces: set[str], queues: set[str]) -> None:
    core, custom = k8s.CoreV1Api(api), k8s.CustomObjectsApi(api)
    for ns in namespaces:
        core.delete_namespace(ns)
    for q in queues:
        custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", q)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and namespaces & _made(api)[0]:
        time.sleep(2)


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("doc", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_the_docs_runnable_blocks_run_as_written(
    doc: Path, dev_env: Environment, cluster_api: Api, operators: Any, tmp_path: Path
) -> None:
    operators(*ALL)
    api = cluster_api(FRONT)
    # As the doc's reader starts: without what an earlier reading left (its team's namespace and
    # queue). Only what the doc makes is removed, before and after: other tests run meanwhile.
    text = "".join(b.text for b in RUNNABLE[doc])
    ours = made_in(text), made_in(text, "Queue")
    namespaces, queues = _made(api)
    _remove(api, namespaces & ours[0], queues & ours[1])
    cwd, home = doc_runs.reader(tmp_path)
    env = doc_runs.reader_env(home, dev_env.kubeconfig(FRONT), ARMADA_BRIDGE_STATE=str(dev_env.state_dir))
    run = doc_runs.Run(doc_runs.script(RUNNABLE[doc]), cwd, env, tmp_path)
    try:
        run.finish(timeout=1440)
    finally:
        namespaces, queues = _made(api)
        _remove(api, namespaces & ours[0], queues & ours[1])
