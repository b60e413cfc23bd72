"""Shared by the benchmarks: create pods with bounded concurrency and time each to Running."""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.capacity import open_to_all
from armada_bridge.kube import NAMESPACES, NODES, PODS, SERVICEACCOUNTS, Kube
from devenv.bridge import extender_setup, vkubelet_setup
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment

CONCURRENCY = 16
#: the dev environment's queue: the benchmarks label their front namespaces for it.
QUEUE = "default"


def bench_pod(
    name: str,
    *,
    cpu: str,
    memory: str,
    labels: dict[str, str],
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A one-container busybox pod asking for `cpu` and `memory`, deleted at once; `spec` adds
    fields to its spec (nodeName, schedulerName, automountServiceAccountToken, ...)."""
    spec = {"terminationGracePeriodSeconds": 0, **spec}
    return busybox_pod(name, cpu=cpu, memory=memory, labels=labels, annotations=annotations or {}, **spec)


def run_cli(
    parser: argparse.ArgumentParser,
    main_async: Callable[[argparse.Namespace], Coroutine[Any, Any, dict[str, Any]]],
) -> dict[str, Any] | None:
    """Parse the benchmark's arguments (plus --json), run it; with --json print its figures as
    JSON and return None, else return them for the benchmark to print."""
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    r = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(r, indent=2))
        return None
    return r


Pod = dict[str, Any]
Predicate = Callable[[Pod], bool]
CREATED = "created"  # when the benchmark sent the create
RUNNING = "running"  # when a watcher saw the pod Running
# Where a managed pod is on its way, as watched: front stages, then remote ones.
DECIDED, BOUND, REMOTE_CREATED, REMOTE_RUNNING = "decided", "bound", "remote created", "remote running"
BRIDGE_STAGES = (CREATED, DECIDED, BOUND, REMOTE_CREATED, REMOTE_RUNNING, RUNNING)


def is_running(pod: Pod) -> bool:
    return bool(pod.get("status", {}).get("phase") == "Running")


def is_bound(pod: Pod) -> bool:
    return bool(pod["spec"].get("nodeName"))


def is_decided(pod: Pod) -> bool:
    """The core's decision is written on the pod (the cluster it runs in)."""
    return bool((pod["metadata"].get("annotations") or {}).get(keys.ASSIGNED_CLUSTER))


def bridge_stages(front: Kube, remotes: Iterable[Kube]) -> list[tuple[Kube, dict[str, Predicate]]]:
    """What to watch where to time BRIDGE_STAGES but RUNNING (watched by the caller): the front's
    decision and bind, the remote pod's creation and Running (in the namespace of the same name)."""
    return [(front, {DECIDED: is_decided, BOUND: is_bound})] + [
        (k, {REMOTE_CREATED: lambda _: True, REMOTE_RUNNING: is_running}) for k in remotes
    ]


@dataclass
class Times:
    """Per stage, per pod name: when it was first seen there (monotonic seconds)."""

    stages: dict[str, dict[str, float]] = field(default_factory=lambda: defaultdict(dict))

    @property
    def created(self) -> dict[str, float]:
        return self.stages[CREATED]

    @property
    def running(self) -> dict[str, float]:
        return self.stages[RUNNING]

    def between(self, first: str, then: str) -> list[float]:
        """Seconds from stage `first` to stage `then`, for each pod seen at both."""
        a, b = self.stages[first], self.stages[then]
        return [b[n] - a[n] for n in a if n in b]


async def watch_stages(
    kube: Kube, ns: str, stages: Mapping[str, Predicate], times: Times, done: asyncio.Event, want: int
) -> None:
    """Note when each pod of `ns` first meets each stage's predicate, until `done` is set; set it
    once `want` pods are Running (when RUNNING is one of the stages)."""
    while not done.is_set():
        try:
            async for kind, obj in kube.watch(PODS, ns, timeout_seconds=120):
                if kind == "BOOKMARK":
                    continue
                name, t = obj["metadata"]["name"], time.monotonic()
                for stage, holds in stages.items():
                    seen = times.stages[stage]
                    if name not in seen and holds(obj):
                        seen[name] = t
                if RUNNING in stages and len(times.running) >= want:
                    done.set()
                    return
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a dropped watch: resume (pods already there are re-sent as ADDED)
            print(f"watch restarted: {e}", file=sys.stderr)


async def batch(
    targets: list[tuple[Kube, str, dict[str, Any]]], watchers: list[Kube], ns: str
) -> list[float]:
    """Create the pods (bounded concurrency) and return each one's seconds from create to Running."""
    return (await batch_times(targets, watchers, ns)).between(CREATED, RUNNING)


async def batch_times(
    targets: list[tuple[Kube, str, dict[str, Any]]],
    watchers: list[Kube],
    ns: str,
    timeout: float = 600,
    stages: Sequence[tuple[Kube, Mapping[str, Predicate]]] = (),
    create_pod: Callable[[Kube, dict[str, Any], str], Awaitable[Any]] | None = None,
) -> Times:
    """Create the pods (bounded concurrency; with `create_pod(kube, body, ns)` instead of a plain
    create, timed from when it returns); when each was created and seen Running (by any of
    `watchers`), and when each met the predicates of `stages` (watched in `ns` of their cluster)."""
    times = Times()
    done = asyncio.Event()
    tasks = [
        asyncio.create_task(watch_stages(k, ns, {RUNNING: is_running}, times, done, len(targets)))
        for k in watchers
    ]
    tasks += [asyncio.create_task(watch_stages(k, ns, s, times, done, len(targets))) for k, s in stages]
    await asyncio.sleep(0.5)  # watches established
    sem = asyncio.Semaphore(CONCURRENCY)

    async def create(kube: Kube, body: dict[str, Any]) -> None:
        async with sem:
            if create_pod is not None:
                await create_pod(kube, body, ns)
                times.created[body["metadata"]["name"]] = time.monotonic()
                return
            times.created[body["metadata"]["name"]] = time.monotonic()
            await kube.create(PODS, body, ns)

    await asyncio.gather(*(create(k, b) for k, _, b in targets))
    await asyncio.wait_for(done.wait(), timeout)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return times


def stage_table(times: Times, order: Sequence[str]) -> list[dict[str, Any]]:
    """Where a pod's time goes: p50 and p99 seconds for each consecutive pair of stages in `order`."""
    out = []
    for a, b in itertools.pairwise(order):
        d = times.between(a, b)
        if d:
            out.append({"step": f"{a} -> {b}", "p50_s": pct(d, 0.5), "p99_s": pct(d, 0.99)})
    return out


def print_stages(stages: dict[str, list[dict[str, Any]]]) -> None:
    for side, rows in stages.items():
        print(f"  where a pod's time goes, {side} (p50 / p99):")
        for st in rows:
            print(f"    {st['step']:<34} {st['p50_s']:7.3f}s {st['p99_s']:7.3f}s")


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def compare(direct: list[float], via: list[float], name: str) -> dict[str, float]:
    """p50/p99 of the baseline (`direct`) and of `via` (keys `<name>_p50_s`...), and their ratios."""
    out = {"direct_p50_s": pct(direct, 0.5), "direct_p99_s": pct(direct, 0.99)}
    out |= {f"{name}_p50_s": pct(via, 0.5), f"{name}_p99_s": pct(via, 0.99)}
    out |= {"p50_ratio": pct(via, 0.5) / pct(direct, 0.5), "p99_ratio": pct(via, 0.99) / pct(direct, 0.99)}
    return out


async def cleanup(kubes: Iterable[Kube], namespaces: Iterable[str]) -> None:
    """Delete the benchmark's namespaces and close the clients (errors only reported). A remote
    namespace the bridge made for managed pods is left to the bridge, as a user's would be: deleted
    under it, each remote pod would go before its front pod, which the vkubelet would then fail
    (RemotePodDeleted: a status write and an Event per pod, load spilling into the next run)."""
    kubes = list(kubes)
    for ns in namespaces:
        for k in kubes:
            try:
                found = await k.get_or_none(NAMESPACES, ns)
                labels = ((found or {}).get("metadata") or {}).get("labels") or {}
                if found is not None and labels.get(keys.MANAGED_BY_LABEL) != keys.MANAGED_BY_VALUE:
                    await k.delete(NAMESPACES, ns)
            except Exception as e:
                print(f"cleanup {ns}: {e}", file=sys.stderr)
    for k in kubes:
        await k.close()


async def wait_for_earlier_runs(kubes: Iterable[Kube], timeout: float = 600) -> None:
    """Wait until no benchmark namespace is being deleted in any cluster: the pods of an earlier
    run still being torn down (the bridge deletes its remote ones after their front pods) would
    hold pod slots and load the machine during this run's measurements."""
    kubes = list(kubes)
    start = time.monotonic()
    next_note = 0.0
    while True:
        going = sorted(
            {
                ns["metadata"]["name"]
                for k in kubes
                for ns in (await k.list(NAMESPACES))["items"]
                if ns["metadata"]["name"].startswith("bench-") and ns["metadata"].get("deletionTimestamp")
            }
        )
        waited = time.monotonic() - start
        if not going:
            return
        if waited > timeout:
            raise SystemExit(
                f"namespaces of an earlier run still being deleted after {timeout:.0f}s: {going}"
            )
        if waited >= next_note:
            next_note = waited + 10
            print(f"waiting for an earlier run's namespaces to go: {', '.join(going)}", file=sys.stderr)
        await asyncio.sleep(1)


async def create_namespace(kube: Kube, ns: str, timeout: float = 60, *, queue: str | None = None) -> None:
    """Create `ns` (labelled for `queue`, which then takes its pods) and wait for its `default`
    ServiceAccount (pods are refused until it exists)."""
    labels = {keys.QUEUE_LABEL: queue} if queue else {}
    await kube.create(NAMESPACES, {"metadata": {"name": ns, "labels": labels}})
    deadline = time.monotonic() + timeout
    while await kube.get_or_none(SERVICEACCOUNTS, "default", ns) is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {ns}: no default ServiceAccount after {timeout:.0f}s")
        await asyncio.sleep(0.1)


async def delete_namespace(kubes: Mapping[str, Kube], ns: str) -> None:
    """Delete `ns` everywhere and wait until it is gone (its pods no longer hold slots)."""
    for k in kubes.values():
        await k.delete(NAMESPACES, ns)
    deadline = time.monotonic() + 300
    for k in kubes.values():
        while await k.get_or_none(NAMESPACES, ns) is not None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"namespace {ns} still there after 300s")
            await asyncio.sleep(0.5)


async def free_slots(remotes: Iterable[Kube]) -> int:
    """Pod slots of the remotes' Ready nodes open to the bench's pods, not taken by a pod."""
    total = 0
    for k in remotes:
        nodes = (await k.list(NODES))["items"]
        open_nodes = {n["metadata"]["name"] for n in nodes if open_to_all(n)}
        total += sum(
            int(n["status"]["allocatable"].get("pods", "0"))
            for n in nodes
            if n["metadata"]["name"] in open_nodes
        )
        pods = (await k.list(PODS, None))["items"]
        total -= sum(
            1
            for p in pods
            if p["status"].get("phase") in ("Pending", "Running") and p["spec"].get("nodeName") in open_nodes
        )
    return total


def processes(env: Environment) -> dict[str, int]:
    """Component name -> pid: every extender replica, and the vkubelet."""
    names = [*extender_setup.replica_names(env.extender_replicas()), vkubelet_setup.COMPONENT]
    out = {}
    for name in names:
        pid = env.supervisor.pid(name)
        if pid is None:
            raise SystemExit(f"{name} is not running: `armada-bridge dev up` first")
        out[name] = pid
    return out


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user + system), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    """A process's resident memory now (VmRSS) and at its peak (VmHWM), KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0])
    return out
