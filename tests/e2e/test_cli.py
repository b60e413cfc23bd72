"""`armada-bridge queues | clusters | gangs | why` against the running bridge."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml
from kubernetes import client as k8s

from armada_bridge import keys
from devenv import binaries
from devenv.clients import token_kubeconfig
from devenv.names import FRONT
from devenv.processes.environment import Environment
from tests.framework.bridge import Api, pod, service_account_token, wait_running
from tests.framework.kube import wait_for


def _cli(env: Environment, *args: str) -> str:
    cmd = [sys.executable, "-m", "cli.main", *args, "--kubeconfig", str(env.kubeconfig(FRONT))]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def test_views_tell_where_gangs_went_and_why_pods_wait(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    core = k8s.CoreV1Api(cluster_api("front"))
    ok = {keys.GANG_ID: "ok", keys.GANG_CARDINALITY: "2"}
    short = {keys.GANG_ID: "short", keys.GANG_CARDINALITY: "3"}
    for i in range(2):
        core.create_namespaced_pod(
            namespace, pod(f"ok-{i}", queue=namespace, annotations=ok, labels={"g": "ok"})
        )
        core.create_namespaced_pod(namespace, pod(f"short-{i}", queue=namespace, annotations=short))
    running = wait_running(cluster_api, namespace, 2, "g=ok")
    cluster = running[0].metadata.annotations[keys.ASSIGNED_CLUSTER]
    gangs = _cli(dev_env, "gangs", "-n", namespace)
    assert any(
        line.split()[1:] == ["armada/ok", namespace, "2/2", cluster, "Running"] for line in gangs.splitlines()
    ), gangs
    assert any(
        line.split()[1:] == ["armada/short", namespace, "2/3", "-", "Waiting"] for line in gangs.splitlines()
    ), gangs

    def why_short() -> str | None:
        text = _cli(dev_env, "why", "short-0", "-n", namespace)
        return text if "gang 2/3 present" in text else None

    why = wait_for("why names the missing member", why_short, timeout=20)
    assert f"queue: {namespace} (from the pod's label {keys.QUEUE_LABEL})" in why and "armada/short" in why
    assert f"admitted to remote cluster {cluster}" in _cli(dev_env, "why", "ok-0", "-n", namespace)
    assert namespace in _cli(dev_env, "queues")
    clusters = _cli(dev_env, "clusters")
    assert {line.split()[0] for line in clusters.splitlines()[1:]} >= {"remote-1", "remote-2"}
    unmanaged = pod("plain", queue=None)
    core.create_namespaced_pod(namespace, unmanaged)
    assert "not managed by armada-bridge" in _cli(dev_env, "why", "plain", "-n", namespace)


def test_why_finds_a_kind_installed_since_its_last_run(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    """`why KIND/NAME` for a kind whose CRD came after the CLI's previous run (an operator installed
    since, as a user does between two commands): what the client kept on disk of the API's kinds
    from that run is read anew, not trusted."""
    group = f"{namespace}.example.com"
    cli, kubeconfig = _commands()[0], ["--kubeconfig", str(dev_env.kubeconfig(FRONT))]
    before = _run(cli, "why", "job/none", "-n", namespace, *kubeconfig)
    assert f"no Job {namespace}/none" in before.stderr, before  # that run kept the kinds served then
    crds = k8s.ApiextensionsV1Api(cluster_api(FRONT))
    crd = {
        "metadata": {"name": f"widgets.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    crds.create_custom_resource_definition(crd)
    try:
        wait_for(  # as the CLI asks: the API's list of groups (a moment behind the CRD's Established)
            "the kind served",
            lambda: group in {g.name for g in k8s.ApisApi(cluster_api(FRONT)).get_api_versions().groups},
            timeout=60,
        )
        widget = {"apiVersion": f"{group}/v1", "kind": "Widget", "metadata": {"name": "w"}}
        k8s.CustomObjectsApi(cluster_api(FRONT)).create_namespaced_custom_object(
            group, "v1", namespace, "widgets", widget
        )
        why = _run(cli, "why", "widget/w", "-n", namespace, *kubeconfig)
        assert why.stdout.startswith(f"widget {namespace}/w: no pods (yet)"), why
    finally:
        crds.delete_custom_resource_definition(crd["metadata"]["name"])


def test_demo_runs_and_cleans_up_after_itself(dev_env: Environment, cluster_api: Api) -> None:
    from devenv.demo import NAMESPACE, OPERATORS_NAMESPACE

    cmd = [sys.executable, "-m", "cli.main", "demo"]
    shown = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert "armada-bridge demo --clean" in shown, shown
    subprocess.run([*cmd, "--clean"], capture_output=True, text=True, check=True)
    demo = {NAMESPACE, OPERATORS_NAMESPACE}
    names = {n.metadata.name for n in k8s.CoreV1Api(cluster_api("front")).list_namespace().items}
    assert not names & demo, names
    for c in ("remote-1", "remote-2"):  # the vkubelet collects the remote namespaces it created
        wait_for(
            f"demo namespaces gone from {c}",
            lambda c=c: (
                not {n.metadata.name for n in k8s.CoreV1Api(cluster_api(c)).list_namespace().items} & demo
            ),
            timeout=90,
        )


def _tenant_kubeconfig(env: Environment, cluster_api: Api, namespace: str, path: Path) -> Path:
    """A kubeconfig of a ServiceAccount with `edit` in `namespace` only, its context's namespace."""
    token = service_account_token(cluster_api, namespace, "team", "edit")
    return token_kubeconfig(env.kubeconfig(FRONT), token, path, namespace)


def _commands() -> list[list[str]]:
    """`armada-bridge` and `kubectl armada` (the pinned kubectl finding the plugin on PATH)."""
    kubectl = str(binaries.expected().kubectl)
    return [[sys.executable, "-m", "cli.main"], [kubectl, "armada"]]


def _run(command: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path}
    env.pop("KUBECONFIG", None)
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_a_tenant_reads_its_namespace_and_every_failure_is_one_line_with_its_status(
    namespace: str, cluster_api: Api, dev_env: Environment, tmp_path: Path
) -> None:
    core = k8s.CoreV1Api(cluster_api(FRONT))
    gang = {keys.GANG_ID: "t", keys.GANG_CARDINALITY: "2"}
    for i in range(2):
        core.create_namespaced_pod(namespace, pod(f"t-{i}", queue=namespace, annotations=gang))
    wait_running(cluster_api, namespace, 2)
    tenant = str(_tenant_kubeconfig(dev_env, cluster_api, namespace, tmp_path / "tenant.yaml"))
    unreachable = tmp_path / "unreachable.yaml"
    config = yaml.safe_load(Path(tenant).read_text())
    config["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"  # nothing listens there
    unreachable.write_text(yaml.safe_dump(config))
    for command in _commands():
        # With rights in its namespace only, every read-only command works, in the context's namespace.
        for args in (("queues",), ("clusters",), ("gangs",), ("why", "t-0")):
            r = _run(command, *args, "--kubeconfig", tenant)
            assert r.returncode == 0, (command, args, r.stderr)
        r = _run(command, "gangs", "--kubeconfig", tenant)
        assert any(
            line.split()[:3] == [namespace, "armada/t", namespace] for line in r.stdout.splitlines()
        ), r.stdout
        r = _run(command, "why", "t-0", "--kubeconfig", tenant)
        assert f"queue: {namespace} (from the pod's label {keys.QUEUE_LABEL})" in r.stdout, r.stdout
        r = _run(command, "gangs", "-o", "json", "--kubeconfig", tenant)
        (gang,) = json.loads(r.stdout)
        assert (gang["name"], gang["queue"], gang["state"]) == ("armada/t", namespace, "Running"), gang
        r = _run(command, "why", "t-0", "-o", "yaml", "--kubeconfig", tenant)
        assert yaml.safe_load(r.stdout)["pod"]["cluster"] in ("remote-1", "remote-2"), r.stdout
        # Each failure: one line on stderr, its own exit status.
        for args, status, says in (
            (("queues", "--kubeconfig", str(tmp_path / "missing.yaml")), 3, "no such file"),
            (("gangs", "--kubeconfig", str(unreachable)), 4, "cannot reach the API server"),
            (("why", "x", "-n", "kube-system", "--kubeconfig", tenant), 5, "forbidden"),
            (("why", "nope", "--kubeconfig", tenant), 6, f"no pod {namespace}/nope"),
        ):
            r = _run(command, *args)
            assert r.returncode == status, (command, args, r.returncode, r.stderr)
            assert len(r.stderr.strip().splitlines()) == 1 and says in r.stderr, (command, args, r.stderr)
            assert r.stdout == "", r.stdout
    # The plugin offers only the read-only commands.
    r = _run(_commands()[1], "dev", "down")
    assert r.returncode == 2 and "invalid choice" in r.stderr, r.stderr


def test_watch_prints_each_change_until_interrupted(
    namespace: str, cluster_api: Api, dev_env: Environment
) -> None:
    cmd = [sys.executable, "-m", "cli.main", "gangs", "--watch", "-n", namespace]
    proc = subprocess.Popen(
        [*cmd, "--kubeconfig", str(dev_env.kubeconfig(FRONT))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as in a terminal: a suite started in the background (CI's runner, `cmd &`) ignores
        # SIGINT, and a child would inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout or []], daemon=True).start()

    def seen(what: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if what in lines.get(timeout=1):
                    return
            except queue.Empty:
                continue
        raise AssertionError(f"--watch did not print {what!r} in {timeout:.0f}s")

    try:
        seen("no gangs", 30)
        gang = {keys.GANG_ID: "w", keys.GANG_CARDINALITY: "2"}
        core = k8s.CoreV1Api(cluster_api(FRONT))
        for i in range(2):
            core.create_namespaced_pod(namespace, pod(f"w-{i}", queue=namespace, annotations=gang))
        seen("Running", 90)  # the gang, once it runs: printed again as it changed
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err, err
