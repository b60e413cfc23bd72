"""Benchmark: what the extender costs the front kube-scheduler (issue 12, item 3).

    .venv/bin/python bench/scheduler_cost.py [--pods 1000] [--nodes 10] [--json]

The same pods, on the same nodes, scheduled by the front kube-scheduler as it runs (every profile
calls the extender, which answers /filter for pods it does not manage too) and by a second
kube-scheduler process of the same binary and configuration without the extender (profile
`bench-plain`), in the same run. The pods are not managed by the bridge (no queue): they are what
every other workload of a front cluster that runs the extender on its own scheduler pays.

Each side: `--pods` pods are created with a node selector no node matches yet (kube-scheduler
tries each once and sets it aside), then one label on the `--nodes` KWOK nodes the benchmark adds
makes them all schedulable at once; the time from that label to the last pod bound gives the
scheduling throughput (pods/s). Ratio: with the extender / without. Uses the running
`armada-bridge dev up` environment. Not a test: prints figures.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from armada_bridge.kube import NODES, PODS, Kube, load_config
from bench.pods import (
    CONCURRENCY,
    Times,
    bench_pod,
    cleanup,
    create_namespace,
    delete_namespace,
    run_cli,
    watch_stages,
)
from devenv import binaries
from devenv.processes.environment import Environment
from devenv.simulated.nodes import NodeShape, node_manifest

PLAIN = "bench-plain"
BOUND = "bound"
LABEL = "bench.armadaproject.io/scheduler-cost"


def pod(name: str, scheduler: str) -> dict[str, Any]:
    return bench_pod(
        name,
        cpu="10m",
        memory="16Mi",
        labels={"bench": "scheduler-cost"},
        schedulerName=scheduler,
        nodeSelector={LABEL: "open"},
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def plain_scheduler(env: Environment, workdir: Path) -> subprocess.Popen[bytes]:
    """The front kube-scheduler's binary and configuration, without the extender, under profile
    `bench-plain` (so it takes only the pods that name it)."""
    cfg_path = env.kwok_workdir / "clusters" / "front" / "scheduler.yaml"
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.pop("extenders", None)
    cfg["profiles"] = [{"schedulerName": PLAIN}]
    cfg["leaderElection"] = {"leaderElect": False}
    path = workdir / "plain-scheduler.yaml"
    path.write_text(yaml.safe_dump(cfg))
    binary = binaries.expected().kube_scheduler
    args = [
        str(binary),
        f"--config={path}",
        "--feature-gates=GenericWorkload=true",
        "--bind-address=127.0.0.1",
        f"--secure-port={_free_port()}",
        "--kube-api-qps=5000",
        "--kube-api-burst=10000",
    ]
    log = (workdir / "plain-scheduler.log").open("wb")
    return subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)


async def side(front: Kube, ns: str, scheduler: str, pods: int, nodes: list[str]) -> float:
    """Seconds from opening the nodes to the last of `pods` pods bound."""
    times = Times()
    done = asyncio.Event()

    def bound(p: dict[str, Any]) -> bool:
        return bool(p["spec"].get("nodeName"))

    watch = asyncio.create_task(watch_stages(front, ns, {BOUND: bound}, times, done, 1 << 30))
    sem = asyncio.Semaphore(CONCURRENCY)

    async def create(i: int) -> None:
        async with sem:
            await front.create(PODS, pod(f"{scheduler}-{i}", scheduler), ns)

    await asyncio.gather(*(create(i) for i in range(pods)))
    await asyncio.sleep(3)  # each tried once, set aside (no node matches)
    t0 = time.monotonic()
    for n in nodes:
        await front.patch(NODES, n, {"metadata": {"labels": {LABEL: "open"}}})
    deadline = t0 + 600
    while len(times.stages[BOUND]) < pods:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{scheduler}: {len(times.stages[BOUND])}/{pods} bound after 600s")
        await asyncio.sleep(0.05)
    took = max(times.stages[BOUND].values()) - t0
    done.set()
    watch.cancel()
    await asyncio.gather(watch, return_exceptions=True)
    for n in nodes:
        await front.patch(NODES, n, {"metadata": {"labels": {LABEL: None}}})
    return took


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    env = Environment()
    front = Kube(load_config(env.kubeconfig("front")))
    tag = uuid.uuid4().hex[:6]
    nodes = [f"bench-sched-{tag}-{i}" for i in range(args.nodes)]
    made: list[str] = []  # namespaces not deleted yet
    with tempfile.TemporaryDirectory() as tmp:
        plain = plain_scheduler(env, Path(tmp))
        try:
            for n in nodes:
                await front.create(NODES, node_manifest(n, NodeShape(cpu="64", memory="256Gi", pods="250")))
            await asyncio.sleep(5)  # KWOK makes them Ready; the plain scheduler is up
            # Alternate sides twice, so neither always runs on a colder or warmer machine.
            with_ext: list[float] = []
            without: list[float] = []
            for r in range(args.rounds):
                for scheduler, took in (("default-scheduler", with_ext), (PLAIN, without)):
                    ns = f"bench-sched-{tag}-{r}-{len(took)}{scheduler[0]}"
                    made.append(ns)
                    await create_namespace(front, ns)
                    took.append(await side(front, ns, scheduler, args.pods, nodes))
                    await delete_namespace({"front": front}, ns)
                    made.remove(ns)
        finally:
            plain.terminate()
            plain.wait(30)
            for n in nodes:
                try:
                    await front.delete(NODES, n)
                except Exception as e:
                    print(f"cleanup {n}: {e}", file=sys.stderr)
            await cleanup([front], made)
    best_with, best_without = min(with_ext), min(without)
    return {
        "pods": args.pods,
        "nodes": args.nodes,
        "with_extender_s": best_with,
        "without_extender_s": best_without,
        "with_extender_pods_per_s": args.pods / best_with,
        "without_extender_pods_per_s": args.pods / best_without,
        "throughput_ratio": best_without / best_with,
        "load_average_1m": os.getloadavg()[0],
        "cores": os.cpu_count(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pods", type=int, default=1000)
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--rounds", type=int, default=2, help="each side this many times, alternating; best kept")
    r = run_cli(p, main_async)
    if r is None:
        return
    print(
        f"{r['pods']} pods on {r['nodes']} nodes ({r['cores']} cores, load average {r['load_average_1m']:.1f})"
    )
    print(f"  front kube-scheduler with the extender   : {r['with_extender_pods_per_s']:.0f} pods/s")
    print(f"  same binary and config, without extender : {r['without_extender_pods_per_s']:.0f} pods/s")
    print(f"  ratio with / without                     : {r['throughput_ratio']:.2f}")


if __name__ == "__main__":
    main()
