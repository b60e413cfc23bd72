"""The soak's run: the workload, the faults and the checks in their threads, then convergence, then
the namespace and queues removed; and its command line (`python -m bench.chaos`)."""

from __future__ import annotations

import argparse
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass

from kubernetes.client.rest import ApiException

from armada_bridge import keys
from bench.chaos import __doc__ as DESCRIPTION
from bench.chaos import served
from bench.chaos.context import QUEUES, REMOTES, SoakContext
from bench.chaos.faults import Faults
from bench.chaos.invariants import Invariants
from bench.chaos.report import CONVERGED, Report, log, output
from bench.chaos.workload import Workload
from devenv.bridge import extender_setup, vkubelet_setup
from devenv.processes.environment import Environment


@dataclass(frozen=True)
class Bounds:
    """How long a bad state may last before it is a violation (seconds)."""

    split: float = 30.0  # a gang partly placed
    gc: float = 90.0  # a remote pod outliving its front pod
    outage: float = 60.0  # a front pod Running with no remote pod (or showing no relay's address)
    served: float = 90.0  # the web server unreachable at its front address (a remote paused 45-60 s)
    converge: float = 180.0  # convergence after the faults


def run(
    env: Environment,
    *,
    minutes: float,
    seed: int,
    live_units: int = 12,
    load: float = 1.3,
    mean_fault_gap: float = 20.0,
    every_kind: bool = False,
    keep_failed: bool = False,
    bounds: Bounds = Bounds(),
) -> Report:
    """A soak of `minutes` of faults (with `every_kind`, on until each kind came once), then
    convergence; its namespace and queues removed (kept, with `keep_failed`, after a violation)."""
    ns = f"chaos-{uuid.uuid4().hex[:6]}"
    ctx = SoakContext(env, seed, ns)
    workload, faults, invariants = Workload(ctx, seed, load), Faults(ctx, seed), Invariants(ctx)
    workload.size_to_capacity(live_units)
    _create(ctx)
    log(
        f"seed {seed}, namespace {ns}, {minutes} min of faults {sorted(faults.kinds)}; pods of {workload.cpu} "
        f"CPU asking {load:.1f}x the remotes; operator objects: "
        f"{[k.plural for k in workload.operator_kinds] or 'none (no operator runs)'}"
    )
    try:
        _faults(ctx, workload, faults, invariants, bounds, live_units, mean_fault_gap, minutes, every_kind)
        # Every process back (a fault may have ended with one down), then convergence.
        extender_setup.setup(env, ctx.bins)
        vkubelet_setup.setup(env, ctx.bins)
        workload.top_up()
        _converge(ctx, invariants, bounds)
        ctx.report.judge()
    finally:
        ctx.stop.set()
        ctx.done.set()
        ctx.faults_on.clear()
        if keep_failed and ctx.report.violations:
            log(f"violations: namespace {ns} kept for a look (delete it when done)")
        else:
            _remove(ctx)
        ctx.close()
    return ctx.report


def _create(ctx: SoakContext) -> None:
    """The soak's namespace and its three queues, which take pods from it only; its Services and
    web server (bench.chaos.served)."""
    ctx.core["front"].create_namespace({"metadata": {"name": ctx.ns}})
    for q in QUEUES:
        queue = {
            "apiVersion": keys.API_VERSION,
            "kind": "Queue",
            "metadata": {"name": q},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ctx.ns}}},
        }
        try:
            ctx.custom.create_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", queue)
        except ApiException as e:
            if e.status != 409:
                raise
    served.services(ctx)


def _faults(
    ctx: SoakContext,
    workload: Workload,
    faults: Faults,
    invariants: Invariants,
    bounds: Bounds,
    live_units: int,
    mean_fault_gap: float,
    minutes: float,
    every_kind: bool,
) -> None:
    """The workload and the faults in their threads (the supervisor in its own, until the soak
    ends), the invariants checked all along; the workload and the faults stopped at the end."""
    ctx.faults_on.set()
    submit = threading.Thread(target=workload.submit_loop, args=(live_units,), daemon=True)
    chaos = threading.Thread(target=faults.chaos_loop, args=(mean_fault_gap,), daemon=True)
    for t in (submit, chaos, threading.Thread(target=faults.supervise_loop, daemon=True)):
        t.start()
    end = time.monotonic() + minutes * 60
    # With every_kind, faults go on past `minutes` until each kind has come once (a run of a few
    # minutes may otherwise draw only kills); bounded, in case a fault cannot be made at all.
    last = end + (max(5 * 60.0, minutes * 60) if every_kind else 0)
    while (now := time.monotonic()) < end or (now < last and faults.kinds_done != set(faults.kinds)):
        invariants.check(bounds.split, bounds.gc, bounds.outage, bounds.served)  # counts its runs and errors
        time.sleep(2)
    ctx.faults_on.clear()
    chaos.join()
    ctx.stop.set()
    submit.join()


def _converge(ctx: SoakContext, invariants: Invariants, bounds: Bounds) -> None:
    """Checked until converged, for `bounds.converge` at most; what is left unsettled then is a
    violation."""
    t0 = time.monotonic()
    problems = ["not checked yet"]
    while time.monotonic() - t0 < bounds.converge:
        began = time.monotonic()
        invariants.check(bounds.split, bounds.gc, bounds.outage, bounds.served)
        got = ctx.report.tally.run(
            CONVERGED,
            lambda: (
                invariants.converged() + [f"{s.name}: {s.detail}" for s in ctx.env.status() if not s.healthy]
            ),
        )
        problems = got if got is not None else [str(ctx.report.tally.last_error[CONVERGED])]
        took = time.monotonic() - began
        if not problems:
            ctx.report.converge_seconds = time.monotonic() - t0
            log(
                f"converged {ctx.report.converge_seconds:.0f}s after the top-up (that check took {took:.0f}s)"
            )
            return
        log(f"not converged yet ({len(problems)} problems, check took {took:.0f}s): {problems[0][:300]}")
        time.sleep(3)
    for p in problems[:20]:
        ctx.report.violation(f"not converged after {bounds.converge:.0f}s: {p}")


def _remove(ctx: SoakContext) -> None:
    """The namespace and queues deleted, and gone everywhere before returning: until its pods are,
    they hold room others count on."""
    try:
        ctx.core["front"].delete_namespace(ctx.ns)
        for q in QUEUES:
            ctx.custom.delete_cluster_custom_object(keys.GROUP, "v1alpha1", "queues", q)
        deadline = time.monotonic() + 300
        for c in ("front", *REMOTES):
            while time.monotonic() < deadline:
                try:
                    ctx.core[c].read_namespace(ctx.ns)
                except ApiException as e:
                    if e.status == 404:
                        break
                time.sleep(1)
    except ApiException as e:
        log(f"cleanup: {e.status} {e.reason}")


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.chaos",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--mean-fault-gap", type=float, default=20.0, help="mean seconds between faults")
    p.add_argument("--load", type=float, default=1.3, help="CPU the live work asks, times the remotes' CPU")
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--keep", action="store_true", help="keep the namespace and queues of a run with violations"
    )
    p.add_argument("--split-seconds", type=float, default=30.0, help="how long a gang may be partly placed")
    p.add_argument(
        "--gc-seconds", type=float, default=90.0, help="how long a remote pod may outlive its front pod"
    )
    p.add_argument(
        "--outage-seconds",
        type=float,
        default=60.0,
        help="how long a front pod may be Running with no remote pod",
    )
    p.add_argument("--converge-seconds", type=float, default=180.0, help="how long convergence may take")
    args = p.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    r = run(
        Environment(),
        minutes=args.minutes,
        seed=seed,
        mean_fault_gap=args.mean_fault_gap,
        load=args.load,
        keep_failed=args.keep,
        bounds=Bounds(args.split_seconds, args.gc_seconds, args.outage_seconds, args.converge_seconds),
    )
    print(output(r, args.minutes, as_json=args.json))
    sys.exit(1 if r.violations else 0)
