"""CPU time spent during a benchmark's phase, by the part of the environment that spent it: each
cluster's control plane (API server, etcd, scheduler, controller manager, KWOK), the extender
replicas, the vkubelet, this benchmark, and the whole machine (from /proc/stat, so "other" is
everything else: real nodes, operators, the rest of the host); and by process (`by_process`: the
front's and the remotes' kube-apiserver, etcd, ... apart).

CPU seconds per pod are far steadier than wall times on a shared, noisy machine, and say where a
pod's cost lies: a phase's figures are the sum over the processes alive at its end of the CPU
they used since its start, less what each group spends idle over as long (measured just before
the benchmark: heartbeats, leases, controllers' resyncs)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.pods import cpu_seconds, processes
from devenv.bridge import vkubelet_setup
from devenv.names import FRONT
from devenv.processes.environment import Environment
from devenv.procs import pids_under, process_cmdline

TICK = os.sysconf("SC_CLK_TCK")
MACHINE, OTHER = "machine", "other"
EXTENDER, VKUBELET, BENCHMARK = "extender", "vkubelet", "benchmark"
REMOTES = "remotes"  # every remote cluster's processes of one program, in `by_process`


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all cores; not idle, not waiting on I/O)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / TICK


def groups(env: Environment) -> dict[str, dict[int, str]]:
    """Group name -> pid -> process name, of the processes in it now. A cluster's group is every
    other process naming its directory (its control plane, KWOK; the bridge's processes name the
    front's too), each named by its program (`kube-apiserver`, `etcd`, ...)."""
    bridge = processes(env)
    named = {
        EXTENDER: {pid: EXTENDER for name, pid in bridge.items() if name != vkubelet_setup.COMPONENT},
        VKUBELET: {bridge[vkubelet_setup.COMPONENT]: VKUBELET},
        BENCHMARK: {os.getpid(): BENCHMARK},
    }
    taken = {pid for pids in named.values() for pid in pids}
    clusters: dict[str, dict[int, str]] = {}
    for name in env.cluster_names():
        clusters[name] = {}
        for pid in pids_under(env.kwok_workdir / "clusters" / name):
            argv = process_cmdline(pid)
            if pid not in taken and argv:
                clusters[name][pid] = Path(argv[0]).name
    return clusters | named


@dataclass(frozen=True)
class Sample:
    by_group: dict[str, dict[int, float]]  # group -> pid -> CPU seconds so far
    names: dict[int, str]  # pid -> process name
    machine: float
    at: float  # time.monotonic()


def sample(env: Environment) -> Sample:
    by_group: dict[str, dict[int, float]] = {}
    names: dict[int, str] = {}
    for group, pids in groups(env).items():
        by_group[group] = {}
        for pid, name in pids.items():
            with contextlib.suppress(OSError):  # exited meanwhile
                by_group[group][pid] = cpu_seconds(pid)
                names[pid] = name
    return Sample(by_group, names, machine_busy_seconds(), time.monotonic())


def process_key(group: str, name: str) -> str:
    """`front kube-apiserver`, `remotes etcd` (every remote cluster's summed), `extender`."""
    if group in (EXTENDER, VKUBELET, BENCHMARK):
        return group
    return f"{FRONT if group == FRONT else REMOTES} {name}"


def less_rest(out: dict[str, float], seconds: float, idle: Mapping[str, float] | None) -> dict[str, float]:
    """`out` (key -> amount over `seconds`) less what each key spends at rest (`idle`, per second)."""
    if not idle:
        return out
    return {key: s - idle.get(key, 0.0) * seconds for key, s in out.items()}


def spent(before: Sample, after: Sample, idle: dict[str, float] | None = None) -> dict[str, float]:
    """Group -> CPU seconds between the two samples (a process started meanwhile counts whole),
    plus the machine's and what no group accounts for; less `idle` (group -> CPU seconds per
    second) over the time between them."""
    out = {
        group: sum(cpu - before.by_group.get(group, {}).get(pid, 0.0) for pid, cpu in pids.items())
        for group, pids in after.by_group.items()
    }
    out[MACHINE] = after.machine - before.machine
    out[OTHER] = out[MACHINE] - sum(v for k, v in out.items() if k != MACHINE)
    return less_rest(out, after.at - before.at, idle)


def by_process(before: Sample, after: Sample, idle: dict[str, float] | None = None) -> dict[str, float]:
    """As `spent`, by `process_key` (the front's processes, the remotes' summed by program)."""
    out: dict[str, float] = {}
    for group, pids in after.by_group.items():
        for pid, cpu in pids.items():
            key = process_key(group, after.names[pid])
            out[key] = out.get(key, 0.0) + cpu - before.by_group.get(group, {}).get(pid, 0.0)
    return less_rest(out, after.at - before.at, idle)


@dataclass(frozen=True)
class Idle:
    """CPU seconds per second at rest, by group and by process."""

    groups: dict[str, float]
    processes: dict[str, float]


async def idle_rates(env: Environment, seconds: float, windows: int = 5) -> Idle:
    """CPU seconds per second while nothing is asked of the environment: the least of `windows`
    windows over `seconds`, so that a moment of work in one (an earlier run's pods torn down, a
    component's first sync) is not subtracted from the whole benchmark."""
    samples = [sample(env)]
    for _ in range(windows):
        await asyncio.sleep(seconds / windows)
        samples.append(sample(env))

    def least(spend: Callable[[Sample, Sample], dict[str, float]]) -> dict[str, float]:
        rates = [
            {key: s / (after.at - before.at) for key, s in spend(before, after).items()}
            for before, after in itertools.pairwise(samples)
        ]
        return {key: min(r.get(key, 0.0) for r in rates) for key in rates[-1]}

    return Idle(least(spent), least(by_process))


def per_pod_ms(seconds: dict[str, float], pods: int) -> dict[str, float]:
    return {group: 1000 * s / pods for group, s in seconds.items()}


def ceilings(
    direct: dict[str, float], bridge: dict[str, float], remotes: tuple[str, ...]
) -> dict[str, float]:
    """Where the bridge's throughput is bounded, from CPU per pod (ms by group) of the same pods
    created directly and through the bridge:

    - `shared_machine`: direct / bridge over the whole machine: the most the bridge passes while
      every cluster shares these cores (the throughput ratio, when both sides keep them busy);
    - `remotes_ratio`: what the remote clusters spend per pod through the bridge over what they
      spend per direct pod; `remotes_alone` its inverse: the most the bridge passes were the front
      and the bridge on machines of their own and the remotes on these;
    - `front_side_ratio`: what the front side (its control plane, the extender, the vkubelet)
      spends per pod over a direct pod's whole cost: how much more CPU than the remotes the front
      needs to keep pace with them."""
    remote_direct = sum(direct.get(r, 0.0) for r in remotes)
    remote_bridge = sum(bridge.get(r, 0.0) for r in remotes)
    front_side = sum(bridge.get(g, 0.0) for g in (FRONT, EXTENDER, VKUBELET))
    remotes_ratio = remote_bridge / remote_direct
    return {
        "shared_machine": direct[MACHINE] / bridge[MACHINE],
        "remotes_ratio": remotes_ratio,
        "remotes_alone": 1 / remotes_ratio,
        "front_side_ratio": front_side / direct[MACHINE],
    }


def cpu_line(ms: dict[str, float]) -> str:
    """`machine 112  front 38  remote-1 ...`: the machine first, then the groups by cost."""
    parts = [f"{MACHINE} {ms[MACHINE]:.0f}"]
    parts += [
        f"{g} {v:.0f}" for g, v in sorted(ms.items(), key=lambda kv: -kv[1]) if g != MACHINE and v >= 0.5
    ]
    return "  ".join(parts)
