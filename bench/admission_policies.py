"""Benchmark: what the bridge's admission policies cost the front API server per pod write.

    .venv/bin/python bench/admission_policies.py [--writes 3000] [--rounds 3] [--json]

The two ValidatingAdmissionPolicies of manifests/extender/admission-policy.yaml run in the front
kube-apiserver on every pod create and update (docs/security.md: only the core's decisions run).
This writes pods the way a tenant's controller does — half metadata patches, half status patches,
8 at a time, as a ServiceAccount that may only touch pods in its namespace — and measures the front
kube-apiserver's CPU per write (from /proc) with the policies in place and with them removed,
alternating `--rounds` times (the baseline in the same run; this machine is noisy). The policies
are put back at the end, also when the run fails. Uses the running `armada-bridge dev up`
environment. Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge.kube import PODS, Kube, load_config
from bench.pods import cpu_seconds, run_cli, wait_for_earlier_runs
from devenv import binaries, clients
from devenv.bridge import bridge
from devenv.names import FRONT
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment

POLICIES = bridge.ADMISSION_POLICY
NAMESPACE = "bench-admission-policies"
PODS_WRITTEN = 20  # pods the writes go round
CONCURRENCY = 8
TENANT = f"""
apiVersion: v1
kind: Namespace
metadata: {{name: {NAMESPACE}}}
---
apiVersion: v1
kind: ServiceAccount
metadata: {{name: writer, namespace: {NAMESPACE}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: writer, namespace: {NAMESPACE}}}
rules: [{{apiGroups: [""], resources: [pods, pods/status], verbs: [get, create, patch]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: writer, namespace: {NAMESPACE}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: writer}}
subjects: [{{kind: ServiceAccount, name: writer, namespace: {NAMESPACE}}}]
"""


def kubectl(env: Environment, *args: str, stdin: str | None = None) -> str:
    """kubectl (the environment's own) on the front cluster."""
    return clients.kubectl(binaries.expected(), env.kubeconfig(FRONT), *args, stdin=stdin)


def front_apiserver(env: Environment) -> int:
    pid = env.cluster(FRONT).component_pids().get("kube-apiserver")
    if pid is None:
        raise SystemExit("the front kube-apiserver is not running: `armada-bridge dev up` first")
    return pid


def tenant_kubeconfig(env: Environment, directory: Path) -> Path:
    """A kubeconfig for the ServiceAccount (a bound token, the front's CA, no client certificate)."""
    token = kubectl(env, "-n", NAMESPACE, "create", "token", "writer", "--duration", "1h").strip()
    return clients.token_kubeconfig(env.kubeconfig(FRONT), token, directory / "tenant.kubeconfig")


async def write(kube: Kube, writes: int) -> None:
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(i: int) -> None:
        name = f"p{i % PODS_WRITTEN}"
        async with sem:
            if i % 2:
                condition = {"type": "bench.armada-bridge/written", "status": "True", "message": str(i)}
                await kube.patch(
                    PODS, name, {"status": {"conditions": [condition]}}, NAMESPACE, subresource="status"
                )
            else:
                await kube.patch(PODS, name, {"metadata": {"labels": {"written": str(i)}}}, NAMESPACE)

    await asyncio.gather(*(one(i) for i in range(writes)))


def set_policies(env: Environment, present: bool) -> None:
    if present:
        bridge.apply(binaries.expected(), env.kubeconfig(FRONT), POLICIES)  # as `dev up` does
    else:
        kubectl(env, "delete", "--ignore-not-found", "-f", str(POLICIES))
    time.sleep(3)  # the API server's policy informer catches up


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    async with Kube(load_config(env.kubeconfig(FRONT))) as admin:
        await wait_for_earlier_runs([admin])  # this benchmark's own namespace among them
    # The pods are unmanaged (no queue) and fit no node: they stay Pending.
    pods = [
        busybox_pod(f"p{i}", nodeSelector={"bench.armada-bridge/nowhere": "true"})
        for i in range(PODS_WRITTEN)
    ]
    for p in pods:
        p["metadata"]["namespace"] = NAMESPACE
    kubectl(env, "apply", "-f", "-", stdin=TENANT + "---\n" + yaml.safe_dump_all(pods))
    pid = front_apiserver(env)
    per_write: dict[str, list[float]] = {"with policies": [], "without": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            async with Kube(load_config(tenant_kubeconfig(env, Path(tmp)))) as kube:
                for r in range(args.rounds):
                    order = ("with policies", "without") if r % 2 == 0 else ("without", "with policies")
                    for case in order:
                        set_policies(env, case == "with policies")
                        await write(kube, 200)  # warm: connections, the policies compiled
                        c0 = cpu_seconds(pid)
                        await write(kube, args.writes)
                        per_write[case].append((cpu_seconds(pid) - c0) / args.writes * 1000)
                        print(f"  {case:14s}: {per_write[case][-1]:.3f} ms per write", file=sys.stderr)
    finally:
        set_policies(env, True)
        kubectl(env, "delete", "namespace", NAMESPACE, "--wait=false")
    with_p, without = statistics.median(per_write["with policies"]), statistics.median(per_write["without"])
    with open("/proc/loadavg") as f:
        load = float(f.read().split()[0])
    return {
        "writes": args.writes,
        "rounds": args.rounds,
        "load_average": load,
        "cpu_ms_per_write": per_write,
        "median_with_policies_ms": with_p,
        "median_without_ms": without,
        "ratio": with_p / without,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--writes", type=int, default=3000, help="pod writes measured per round and case")
    p.add_argument("--rounds", type=int, default=3)
    r = run_cli(p, main_async)
    if r is None:
        return
    print(f"front kube-apiserver CPU per pod write by a tenant ({r['writes']} writes x {r['rounds']} rounds,")
    print(
        f"load average {r['load_average']:.1f}): with the admission policies {r['median_with_policies_ms']:.3f} ms,"
    )
    print(f"without {r['median_without_ms']:.3f} ms: {r['ratio']:.2f}x")


if __name__ == "__main__":
    main()
