"""Benchmark: a managed pod reached from the front through its relay (RemoteCluster network
`Relay`: relay pod, the vkubelet's relay endpoint, the remote API server's port-forward, the remote
kubelet), against a client in the remote cluster reaching the same pod directly (the baseline,
measured in the same run).

    .venv/bin/python bench/relay.py [--requests 200] [--megabytes 64] [--concurrent 100] [--json]

A web server (Python's http.server, threaded) runs as a managed pod on a remote real node behind a
front Service. The same client program runs twice: in a pod on the front's real node, by the
Service's name (through the relay), and in a pod made directly in the remote cluster, at the
server's own address. Each measures connection setup (a new connection and one small GET, p50 and
p99 of `--requests` in a row), one stream's throughput (a GET of `--megabytes` MiB) and
`--concurrent` connections at once (one small GET each: wall time, failures). Uses the running
`armada-bridge dev up` environment with real nodes. Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from armada_bridge import keys
from devenv.clients import api_client
from devenv.images.recipes import RECIPES
from devenv.processes.environment import Environment
from devenv.realnode.placement import on_a_real_node

PORT = 8000
CLIENT = r"""
import concurrent.futures, json, sys, time, urllib.request
base, requests, megabytes, concurrent_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def get(path):
    t = time.perf_counter()
    with urllib.request.urlopen(base + path, timeout=60) as r:
        n = len(r.read())
    return time.perf_counter() - t, n
for _ in range(3):  # warm: the relay, the server
    get("/small")
setup = sorted(get("/small")[0] for _ in range(requests))
t, n = get("/big")
assert n == megabytes * 2**20, n
def one(_):
    try:
        return get("/small")[0]
    except OSError:
        return None
start = time.perf_counter()
with concurrent.futures.ThreadPoolExecutor(concurrent_n) as pool:
    results = list(pool.map(one, range(concurrent_n)))
wall = time.perf_counter() - start
print(json.dumps({
    "setup_p50_ms": 1000 * setup[len(setup) // 2],
    "setup_p99_ms": 1000 * setup[min(len(setup) - 1, int(len(setup) * 0.99))],
    "stream_mb_s": n / 2**20 / t,
    "concurrent_wall_s": wall,
    "concurrent_failed": sum(r is None for r in results),
}))
"""
RESOURCES = {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"memory": "512Mi"}}


def _container(image: str, command: list[str]) -> dict[str, Any]:
    return {"name": "main", "image": image, "command": command, "resources": RESOURCES}


def _server(megabytes: int) -> dict[str, Any]:
    script = (
        f"mkdir -p /tmp/www && cd /tmp/www && echo ok > small && head -c {megabytes * 2**20} /dev/zero > big"
        f" && exec python3 -m http.server {PORT}"
    )
    c = _container(RECIPES["python"].name, ["sh", "-c", script])
    c["ports"] = [{"containerPort": PORT}]
    return {
        "metadata": {"name": "server", "labels": {"app": "relay-bench"}},
        "spec": on_a_real_node({"containers": [c]}),
    }


def _client(
    name: str, image: str, base: str, args: argparse.Namespace, node: str | None = None
) -> dict[str, Any]:
    argv = ["python3", "-c", CLIENT, base, str(args.requests), str(args.megabytes), str(args.concurrent)]
    spec = on_a_real_node({"restartPolicy": "Never", "containers": [_container(image, argv)]})
    if node:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"metadata": {"name": name}, "spec": spec}


def _wait(
    core: k8s.CoreV1Api, namespace: str, name: str, phases: tuple[str, ...], timeout: float = 600
) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = core.read_namespaced_pod(name, namespace)
        if p.status.phase in phases:
            return p
        time.sleep(1)
    raise SystemExit(f"pod {namespace}/{name} not {'/'.join(phases)} after {timeout:.0f}s")


def _result(core: k8s.CoreV1Api, namespace: str, name: str) -> dict[str, float]:
    done = _wait(core, namespace, name, ("Succeeded", "Failed"))
    log = core.read_namespaced_pod_log(name, namespace, _preload_content=False).data.decode()
    if done.status.phase != "Succeeded":
        raise SystemExit(f"{name} failed:\n{log}")
    return dict(json.loads(log.strip().splitlines()[-1]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--requests", type=int, default=200)
    p.add_argument("--megabytes", type=int, default=64)
    p.add_argument("--concurrent", type=int, default=100)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    env = Environment()
    namespace = f"relay-bench-{uuid.uuid4().hex[:6]}"
    system = keys.SYSTEM_NAMESPACE
    front_client = f"relay-bench-client-{namespace[-6:]}"
    with api_client(env.kubeconfig("front")) as api:
        front = k8s.CoreV1Api(api)
        front.create_namespace({"metadata": {"name": namespace, "labels": {keys.QUEUE_LABEL: "default"}}})
        try:
            front.create_namespaced_pod(namespace, _server(args.megabytes))
            front.create_namespaced_service(
                namespace,
                {
                    "metadata": {"name": "server"},
                    "spec": {"selector": {"app": "relay-bench"}, "ports": [{"port": PORT}]},
                },
            )
            server = _wait(front, namespace, "server", ("Running",))
            cluster = server.metadata.annotations[keys.ASSIGNED_CLUSTER]
            with api_client(env.kubeconfig(cluster)) as rapi:
                remote = k8s.CoreV1Api(rapi)
                rserver = remote.read_namespaced_pod("server", namespace)
                base = f"http://{rserver.status.pod_ip}:{PORT}"
                remote.create_namespaced_pod(
                    namespace, _client("direct", RECIPES["python"].name, base, args, rserver.spec.node_name)
                )
                direct = _result(remote, namespace, "direct")
                with contextlib.suppress(ApiException):
                    remote.delete_namespaced_pod("direct", namespace, grace_period_seconds=0)
            url = f"http://server.{namespace}.svc.cluster.local:{PORT}"
            front.create_namespaced_pod(system, _client(front_client, RECIPES["bridge"].name, url, args))
            relayed = _result(front, system, front_client)
        finally:
            with contextlib.suppress(ApiException):
                front.delete_namespaced_pod(front_client, system, grace_period_seconds=0)
            front.delete_namespace(namespace)
    ratios = {
        k: relayed[k] / direct[k] if direct[k] else float("inf") for k in direct if k != "concurrent_failed"
    }
    report = {"direct": direct, "relayed": relayed, "ratio": ratios, "args": vars(args)}
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"{'':24}{'direct':>12}{'relayed':>12}{'ratio':>9}")
    for k in direct:
        ratio = f"{ratios[k]:.2f}x" if k in ratios else ""
        print(f"{k:24}{direct[k]:>12.2f}{relayed[k]:>12.2f}{ratio:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
