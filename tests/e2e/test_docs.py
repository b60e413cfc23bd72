"""The docs run as written: each file's ```` ```sh runnable ```` blocks (README.md, docs/**/*.md),
in order, in one `bash -euo pipefail`, against the dev environment with every released operator
running, with what README's "Try it" exports (the front's kubeconfig; `armada-bridge`,
`kubectl-armada` and the pinned kubectl on PATH), as a reader in the repository would: in a
directory with the repository's files and a home of its own (the machine's caches linked in), so
that what a doc writes (a job file, `~/.armadactl.yaml`) stays there; what it leaves running (a
server) is stopped after it. The Namespaces and Queues a file makes are deleted before and after it
(none else: other tests run meanwhile)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s

from armada_bridge import keys
from devenv import binaries
from devenv.names import FRONT
from devenv.operators.catalog import ALL
from devenv.processes.environment import Environment
from tests.framework.bridge import Api
from tests.framework.docs_blocks import ROOT, blocks, doc_files

RUNNABLE = {p: [b for b in blocks(p) if b.runnable] for p in doc_files()}
FILES = [p for p, found in RUNNABLE.items() if found]
# A Namespace or Queue a doc makes (`metadata: {name: x, ...}` or `metadata:` then `  name: x`, or
# `kubectl create namespace x`)
_MADE = r"kind:\s*{kind}\s*\nmetadata:\s*(?:\{{\s*name:\s*([\w.-]+)|\n\s+name:\s*([\w.-]+))"
_CREATED = r"kubectl\s+create\s+{kind}\s+([\w.-]+)"
_HOME_LINKED = (".cache", "go")  # the machine's caches, as the reader's (the state: ARMADA_BRIDGE_STATE)


def made_in(text: str, kind: str = "Namespace") -> set[str]:
    """The names of the objects of `kind` (Namespace or Queue) the text makes."""
    made = {a or b for a, b in re.findall(_MADE.format(kind=kind), text)}
    return made | set(re.findall(_CREATED.format(kind=kind.lower()), text))


def _reader(where: Path) -> tuple[Path, Path]:
    """A reader's directory (the repository's files linked in) and home, under `where`."""
    cwd, home = where / "repository", where / "home"
    cwd.mkdir()
    home.mkdir()
    for entry in ROOT.iterdir():
        (cwd / entry.name).symlink_to(entry)
    for name in _HOME_LINKED:
        if (Path.home() / name).exists():
            (home / name).symlink_to(Path.home() / name)
    return cwd, home


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


@pytest.mark.timeout(900)
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
    script = "\n".join(f"echo '== {b.where}' >&2\n{b.text}" for b in RUNNABLE[doc])
    kubectl_dir = binaries.expected().kubectl.parent
    cwd, home = _reader(tmp_path)
    env = {
        **os.environ,
        "HOME": str(home),
        "ARMADA_BRIDGE_STATE": str(dev_env.state_dir),
        "KUBECONFIG": str(dev_env.kubeconfig(FRONT)),
        "PATH": f"{ROOT / '.venv/bin'}:{kubectl_dir}:{os.environ['PATH']}",
    }
    out, err = tmp_path / "stdout", tmp_path / "stderr"  # files: what it leaves running may keep a pipe open
    with out.open("w") as stdout, err.open("w") as stderr:
        shell = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=cwd,
            env=env,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,  # what it leaves running is stopped with its process group
        )
    try:
        shell.wait(timeout=840)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
        if shell.poll() is None:
            shell.kill()
            shell.wait()
        namespaces, queues = _made(api)
        _remove(api, namespaces & ours[0], queues & ours[1])
    assert shell.returncode == 0, (
        f"exit {shell.returncode}\n{out.read_text()[-4000:]}\n{err.read_text()[-4000:]}"
    )
