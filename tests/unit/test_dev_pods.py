"""The busybox pods made on the local environment's clusters (devenv/pods.py)."""

from __future__ import annotations

from armada_bridge import keys
from devenv.pods import busybox, busybox_pod, real_pod


def test_a_busybox_pod_says_only_what_it_is_given() -> None:
    assert busybox_pod("p") == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    pod = busybox_pod("q", cpu="1", memory="1Gi", labels={"a": "b"}, annotations={}, nodeName="n")
    assert pod["metadata"] == {"name": "q", "labels": {"a": "b"}, "annotations": {}}
    assert pod["spec"] == {
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ],
        "nodeName": "n",
    }
    assert busybox_pod("r", cpu="1", containers=[])["spec"] == {"containers": []}
    assert busybox(memory="8Mi", limits={"memory": "8Mi"}, command=["true"]) == {
        "name": "main",
        "image": "busybox",
        "resources": {"requests": {"memory": "8Mi"}, "limits": {"memory": "8Mi"}},
        "command": ["true"],
    }


def test_a_real_pod_runs_its_command_once_on_a_real_node() -> None:
    pod = real_pod("r", ["echo", "hi"], memory_limit="64Mi", image="other:1")
    spec = pod["spec"]
    (container,) = spec["containers"]
    assert container == {
        "name": "main",
        "image": "other:1",
        "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "command": ["echo", "hi"],
        "imagePullPolicy": "IfNotPresent",
    }
    assert spec["restartPolicy"] == "Never"
    assert [t["key"] for t in spec["tolerations"]] == [keys.DEV_REAL_NODE_TAINT_KEY]
