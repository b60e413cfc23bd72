"""`armada-bridge demo`: show the local environment working, one remote cluster at a time.

For every remote cluster: a namespace, a Job of three pods on its KWOK nodes, watched until it
completes, and a check that the other remote clusters do not see it.
"""

from __future__ import annotations

import sys
import time

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge.dev.environment import FRONT, Environment, api_client

NAMESPACE = "armada-bridge-demo"


def _say(msg: str) -> None:
    print(msg, flush=True)


def _job(name: str) -> dict[str, object]:
    pod = {
        "restartPolicy": "Never",
        "containers": [{"name": "main", "image": "busybox", "command": ["true"]}],
    }
    return {
        "metadata": {"name": name},
        "spec": {"completions": 3, "parallelism": 3, "template": {"spec": pod}},
    }


def run_demo(timeout: float = 120) -> int:
    env = Environment()
    statuses = env.status()
    remotes = [s for s in statuses if s.name != FRONT]
    if not remotes or not all(s.healthy for s in statuses):
        print(
            "armada-bridge demo: the environment is not up; run `armada-bridge dev up` first", file=sys.stderr
        )
        return 1
    for s in remotes:
        _say(f"== {s.name}: {s.nodes_ready} nodes Ready at {s.server}")
        with api_client(env.kubeconfig(s.name)) as api:
            core, batch = k8s.CoreV1Api(api), k8s.BatchV1Api(api)
            try:
                core.create_namespace({"metadata": {"name": NAMESPACE}})
            except ApiException as e:
                if e.status != 409:
                    raise
            name = f"hello-{s.name}-{int(time.time())}"
            batch.create_namespaced_job(NAMESPACE, _job(name))
            _say(f"   created Job {NAMESPACE}/{name} (3 pods)")
            deadline = time.monotonic() + timeout
            last = ""
            while True:
                job = batch.read_namespaced_job_status(name, NAMESPACE)
                st = job.status
                line = f"   active={st.active or 0} succeeded={st.succeeded or 0} failed={st.failed or 0}"
                if line != last:
                    _say(line)
                    last = line
                if (st.succeeded or 0) >= 3:
                    _say(f"   Job {name} complete")
                    break
                if time.monotonic() > deadline:
                    print(
                        f"armada-bridge demo: Job {name} did not complete in {timeout:.0f}s", file=sys.stderr
                    )
                    return 1
                time.sleep(0.5)
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name={name}").items
            for p in pods:
                _say(f"   pod {p.metadata.name} ran on {p.spec.node_name}: {p.status.phase}")
        for other in remotes:
            if other.name == s.name:
                continue
            with api_client(env.kubeconfig(other.name)) as api:
                seen = k8s.BatchV1Api(api).list_namespaced_job(NAMESPACE).items
            visible = any(j.metadata.name == name for j in seen)
            _say(f"   visible in {other.name}: {'yes (unexpected!)' if visible else 'no'}")
            if visible:
                return 1
    _say("demo finished: every remote cluster ran its Job on its own KWOK nodes")
    return 0
