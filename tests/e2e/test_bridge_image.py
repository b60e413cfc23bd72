"""The bridge's runtime image (the Dockerfile's, built without Docker by `hack/build-images.sh
bridge`: devenv/images/runtime.py) really runs in a container: `dev up` imports it into
every real node like the other recipes' images, and a pod made straight in a remote cluster, on its
real node, runs both components' `--help` through the image's own ENTRYPOINT, as the image's user,
with Debian's Python 3.11 as `python`, openssl, and without the local environment."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from devenv.images import runtime
from devenv.images.recipes import RECIPES
from devenv.processes.environment import Environment
from devenv.realnode.placement import on_a_real_node
from tests.framework.bridge import Api
from tests.framework.kube import wait_for

CLUSTER = "remote-1"
# Run by `python -c` in the image: who runs, which Python, and that the wheel left the local
# environment out.
IDENTITY = (
    "import importlib.util, os, sys, extender, vkubelet; "
    "print(os.getuid(), os.getgid(), '%d.%d' % sys.version_info[:2], "
    "importlib.util.find_spec('devenv') is None)"
)


def _container(name: str, **run: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "image": RECIPES["bridge"].name,
        **run,
        "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}, "limits": {"memory": "256Mi"}},
    }


def test_the_runtime_image_runs_the_extender_and_the_vkubelet(
    dev_env: Environment, cluster_api: Api, namespace: str
) -> None:
    real = dev_env.real_nodes()
    nodes = [n for n in real.existing() if n.startswith(f"{CLUSTER}-real-")] if real else []
    if not nodes:
        pytest.fail(f"{CLUSTER} has no real node: `armada-bridge dev up --real-nodes 1`")
    spec = on_a_real_node(
        {
            "restartPolicy": "Never",
            "nodeName": nodes[0],
            "containers": [
                # No command: the image's ENTRYPOINT (`python -m`) runs the arguments.
                _container("extender", args=["extender", "--help"]),
                _container("vkubelet", args=["vkubelet", "--help"]),
                _container("identity", command=["python", "-c", IDENTITY]),
                # The chart's uninstall hook runs the CLI so.
                _container("cli", args=["cli.main", "remove-clusters", "--help"]),
                _container("openssl", command=["openssl", "version"]),
            ],
        }
    )
    remote = k8s.CoreV1Api(cluster_api(CLUSTER))
    remote.create_namespaced_pod(namespace, {"metadata": {"name": "bridge-image"}, "spec": spec})

    def ended() -> Any:
        p = remote.read_namespaced_pod("bridge-image", namespace)
        return p if p.status.phase in ("Succeeded", "Failed") else None

    p = wait_for("the bridge image's pod ended", ended, timeout=180)
    logs = {
        c: remote.read_namespaced_pod_log("bridge-image", namespace, container=c)
        for c in ("extender", "vkubelet", "identity", "cli", "openssl")
    }
    assert p.status.phase == "Succeeded", (p.status.container_statuses, logs)
    assert logs["extender"].startswith("usage: ") and "--listen" in logs["extender"], logs["extender"]
    assert logs["vkubelet"].startswith("usage: ") and "--kubeconfig" in logs["vkubelet"], logs["vkubelet"]
    uid = str(runtime.UID)
    assert logs["identity"].split() == [uid, uid, runtime.PYTHON_VERSION, "True"]
    assert logs["cli"].startswith("usage: armada-bridge remove-clusters"), logs["cli"]
    assert logs["openssl"].startswith("OpenSSL 3."), logs["openssl"]
