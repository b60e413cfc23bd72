"""`armada-bridge` (its read-only commands also as the kubectl plugin `kubectl armada`).

Exit status: 0 done; 1 an error (bad input, a command that failed); 2 usage; 3 no usable kubeconfig;
4 the API server cannot be reached; 5 unauthorized or forbidden; 6 not found. Errors are one line on
stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import signal
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devenv.base import BaseEnvironment, ClusterStatus


def _dev(args: argparse.Namespace) -> int:
    from devenv.kind.kind_environment import open_environment

    if args.dev_command == "up":
        from devenv import base
        from devenv.kind import kind_environment
        from devenv.operators import catalog

        env = open_environment(provider=args.provider)
        names = catalog.parse(args.operators) if args.operators else []
        default_nodes = kind_environment.DEFAULT_NODES if args.provider == "kind" else base.DEFAULT_NODES
        if args.provider == "kind" and args.real_nodes:
            raise ValueError("--real-nodes is for the binary provider: kind's worker nodes are real already")
        statuses = env.up(
            workers=args.workers,
            nodes=default_nodes if args.nodes is None else args.nodes,
            operator_names=names,
            extender_replicas=args.extender_replicas,
            real_nodes=args.real_nodes,
            host_bridge=False if args.without_bridge else None,
            network=args.network,
        )
        _print_status(statuses)
        _print_operators(env)
        healthy = all(s.healthy for s in statuses)
        if healthy:
            _print_next_steps()
        return 0 if healthy else 1
    env = open_environment()
    if args.dev_command == "down":
        env.down()
        return 0
    if args.dev_command == "status":
        statuses = env.status()
        if not statuses:
            print("no environment (run `armada-bridge dev up`)")
            return 1
        _print_status(statuses)
        ops_ok = _print_operators(env)
        return 0 if all(s.healthy for s in statuses) and ops_ok else 1
    if args.dev_command == "kubeconfig":
        print(env.kubeconfig(args.name))
        return 0
    raise AssertionError(args.dev_command)


def _print_next_steps() -> None:
    print(
        "\nNext:\n"
        '  export KUBECONFIG="$(armada-bridge dev kubeconfig front)"\n'
        "  armada-bridge demo                  # a gang, a PyTorchJob and a RayCluster placed remotely\n"
        "  armada-bridge queues; armada-bridge clusters\n"
        "  a team's Queue and namespace, and a RayJob run for real: README.md, Try it\n"
        "  each operator's kind, where its queue comes from, what waiting looks like: docs/guides/submit.md\n"
        "  armada-bridge dev down              # when done"
    )


def _print_status(statuses: Sequence[ClusterStatus]) -> None:
    rows = [("CLUSTER", "HEALTHY", "NODES", "SERVER", "DETAIL")]
    for s in statuses:
        healthy = "yes" if s.healthy else "no"
        rows.append((s.name, healthy, f"{s.nodes_ready}/{s.nodes_total}", s.server or "-", s.detail))
    _print_table(rows)


def _print_operators(env: BaseEnvironment) -> bool:
    """The operators `dev up` runs, one row each; False when one is not running."""
    from devenv.operators import install
    from devenv.processes.environment import Environment

    if not isinstance(env, Environment):  # only the binary provider runs operators
        return True
    statuses = install.status(env)
    if not statuses:
        return True
    print()
    rows = [("OPERATOR", "VERSION", "RUNNING", "PID", "LOG")]
    for o in statuses:
        rows.append((o.name, o.version, "yes" if o.running else "no", str(o.pid or "-"), str(o.log)))
    _print_table(rows)
    return all(o.running for o in statuses)


def _print_table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def _simulate(argv: list[str]) -> int:
    from extender.simulator.cli import main as simulate_main

    return simulate_main(argv)


def _demo(args: argparse.Namespace) -> int:
    from cli import views
    from devenv.demo import clean_demo, run_demo

    return clean_demo() if args.clean else run_demo(views.queues)


#: how often `--watch` reads again
WATCH_SECONDS = 2.0
VIEWS = (
    ("queues", "queues with fair, adjusted and actual shares"),
    ("clusters", "remote clusters: readiness, nodes, free capacity"),
    ("gangs", "gangs: members present of their size, cluster, state"),
    ("why", "why a pod, or each pod of an object (rayjob/x), waits, or where it went"),
)


def _add_views(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> dict[str, argparse.ArgumentParser]:
    """The read-only commands, as both `armada-bridge` and `kubectl armada` offer them."""
    parsers = {}
    for name, text in VIEWS:
        c = sub.add_parser(name, help=text)
        c.add_argument(
            "--kubeconfig", help="front cluster (default: $KUBECONFIG, else the dev environment's front)"
        )
        c.add_argument("--context", help="the kubeconfig context to use (default: its current one)")
        c.add_argument(
            "-w",
            "--watch",
            action="store_true",
            help=f"then print it again each time it changes (every {WATCH_SECONDS:g} s)",
        )
        c.add_argument(
            "-o",
            "--output",
            choices=["wide", "json", "yaml"],
            default="",
            help="wide: more columns; json, yaml: the data",
        )
        if name in ("gangs", "why"):
            c.add_argument("-n", "--namespace", help="default: the kubeconfig context's namespace")
        if name == "gangs":
            c.add_argument("-A", "--all-namespaces", action="store_true", help="gangs of every namespace")
        if name == "why":
            c.add_argument(
                "target", metavar="POD|KIND/NAME", help="a pod, or an object whose pods to explain (rayjob/x)"
            )
        parsers[name] = c
    return parsers


def _add_join(clusters: argparse.ArgumentParser) -> None:
    """`clusters join NAME` and `clusters leave NAME` (`clusters` alone lists them)."""
    sub = clusters.add_subparsers(dest="cluster_command")
    join = sub.add_parser(
        "join",
        help="make a remote cluster one of the bridge's: its identity there, its kubeconfig Secret and "
        "RemoteCluster in the front; waits until its virtual node is Ready, or says what is wrong",
    )
    leave = sub.add_parser(
        "leave",
        help="undo a join: the RemoteCluster removed (its remote pods first), the Secret, and with "
        "--remote-kubeconfig the bridge's identity in the remote cluster",
    )
    for c in (join, leave):
        c.add_argument("name", help="the remote cluster's name in the front (its virtual node's)")
        c.add_argument(
            "--kubeconfig", default=argparse.SUPPRESS, help="the front cluster's, as for `clusters`"
        )
        c.add_argument("--context", default=argparse.SUPPRESS, help="its context")
        c.add_argument(
            "--remote-kubeconfig", required=c is join, help="an admin's kubeconfig of the remote cluster"
        )
        c.add_argument("--remote-context", help="its context (default: its current one)")
        c.add_argument(
            "--bridge-namespace",
            default="armada-bridge-system",
            help="the bridge's namespace in the front, where the kubeconfig Secret goes",
        )
    join.add_argument(
        "--server",
        help="the remote API server's address as the vkubelet in the front reaches it (default: the "
        "remote kubeconfig's)",
    )
    join.add_argument(
        "--front-api",
        metavar="HOST:PORT",
        help="the front API server as the remote cluster's pods reach it (default: the vkubelet's own)",
    )
    join.add_argument("--timeout", type=float, default=120, help="seconds to wait for the virtual node (120)")
    leave.add_argument("--timeout", type=float, default=600, help="seconds to wait for the cleanup (600)")


def build_plugin_parser() -> argparse.ArgumentParser:
    """`kubectl armada`: the read-only commands."""
    p = argparse.ArgumentParser(prog="kubectl armada", description="What armada-bridge decided, and why.")
    _add_views(p.add_subparsers(dest="command", required=True))
    return p


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="armada-bridge", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("dev", help="local multi-cluster environment (front + remote-1..N)")
    dsub = dev.add_subparsers(dest="dev_command", required=True)
    up = dsub.add_parser("up", help="start (or reuse, or repair) the environment")
    up.add_argument("--workers", type=int, default=2, help="number of remote clusters (default 2)")
    up.add_argument(
        "--nodes",
        type=int,
        help="nodes per remote cluster: KWOK nodes (default 4), or kind worker nodes with --provider kind (default 1)",
    )
    up.add_argument(
        "--real-nodes",
        type=int,
        help="real nodes (kubelet + containerd, containers really run) per remote cluster beside the KWOK "
        "nodes (default: as the last up, else 1; 0 for none)",
    )
    up.add_argument(
        "--network",
        choices=["isolated", "flat"],
        help="the real nodes' pod networks: isolated, each cluster its own with the same range and only "
        "the API servers reachable across (as clusters usually are), or flat, one network every pod "
        "reaches (default: as the last up, else isolated)",
    )
    up.add_argument(
        "--extender-replicas",
        type=int,
        help="extender processes electing a leader and sharing one port (default: as the last up, else 1)",
    )
    up.add_argument(
        "--without-bridge",
        action="store_true",
        help="the front without the bridge's host processes, to install it as an admin does (its image "
        "and Helm chart on the front's real node; docs/install.md); kept until `dev down`",
    )
    up.add_argument(
        "--provider",
        choices=["binary", "kind"],
        default="binary",
        help="binary: real Kubernetes processes on loopback, KWOK nodes (default); kind: kind clusters, a Docker engine needed",
    )
    up.add_argument(
        "--operators",
        metavar="all|NAME,...",
        help="also run released operators (training-operator, kuberay, mpi-operator, jobset, argo, dask, trainer, spark-operator, training-operator-mxjob; or all; training-operator-mpijob, MPIJob v1, in place of mpi-operator; cert-manager, for installing the bridge with its certificates)",
    )
    dsub.add_parser("down", help="stop everything and remove the state directory")
    dsub.add_parser("status", help="list clusters and whether each is healthy")
    kc = dsub.add_parser("kubeconfig", help="print the path of a cluster's kubeconfig")
    kc.add_argument("name", help="front, remote-1, remote-2, ...")

    sub.add_parser("simulate", help="run the scheduling core over Armada simulator input", add_help=False)
    demo = sub.add_parser("demo", help="run the demo on the local environment")
    demo.add_argument(
        "--clean", action="store_true", help="remove what the demos created, and wait until it is gone"
    )
    _add_join(_add_views(sub)["clusters"])
    rm = sub.add_parser(
        "remove-clusters",
        help="delete remote clusters and wait until the vkubelet has cleaned each up (its remote pods "
        "first); run before the vkubelet goes (the chart's uninstall hook does)",
    )
    rm.add_argument("names", nargs="*", metavar="NAME", help="RemoteClusters to remove")
    rm.add_argument("--all", action="store_true", help="every RemoteCluster")
    rm.add_argument("--timeout", type=float, default=600, help="seconds to wait in all (default 600)")
    rm.add_argument(
        "--kubeconfig", help="front cluster (default: $KUBECONFIG, else the dev environment's front)"
    )
    return p


def _remove_clusters(args: argparse.Namespace) -> int:
    from cli import views
    from cli.cluster_removal import remove_clusters

    if bool(args.names) == args.all:
        raise ValueError("name the remote clusters to remove, or give --all (not both)")
    with views.front_client(_front_kubeconfig(args.kubeconfig)) as api:
        remove_clusters(api, None if args.all else args.names, args.timeout, lambda s: print(s, flush=True))
    return 0


def _front_kubeconfig(given: str | None) -> str | None:
    """--kubeconfig, else $KUBECONFIG, else the running dev environment's front (else None:
    ~/.kube/config)."""
    if given or os.environ.get("KUBECONFIG"):
        return given or os.environ["KUBECONFIG"]
    try:
        from devenv.base import ClusterError
        from devenv.kind.kind_environment import open_environment
        from devenv.names import FRONT
    except ImportError:  # the runtime image has no dev environment
        return None

    try:
        return str(open_environment().kubeconfig(FRONT))
    except ClusterError:
        return None


def _view(args: argparse.Namespace) -> int:
    from cli import views

    kubeconfig = _front_kubeconfig(args.kubeconfig)
    namespace = getattr(args, "namespace", None)
    if args.command in ("gangs", "why") and namespace is None and not getattr(args, "all_namespaces", False):
        namespace = views.context_namespace(kubeconfig, args.context)
    with views.front_client(kubeconfig, args.context) as api:
        if getattr(args, "cluster_command", None):
            return _join_or_leave(args, api)

        def shown() -> str:
            if args.command == "queues":
                return views.queues(api, args.output)
            if args.command == "clusters":
                return views.clusters(api, args.output)
            if args.command == "gangs":
                return views.gangs(api, namespace, args.output)
            assert namespace is not None  # why takes no --all-namespaces
            return views.why(api, args.target, namespace, args.output)

        last = shown()
        print(last, flush=True)
        while args.watch:  # until interrupted: each change, as it is seen
            time.sleep(WATCH_SECONDS)
            now = shown()
            if now != last:
                print(f"\n--- {datetime.now().astimezone():%H:%M:%S}\n{now}", flush=True)
                last = now
    return 0


def _join_or_leave(args: argparse.Namespace, front: Any) -> int:
    from cli import cluster_join, views

    def say(line: str) -> None:
        print(line, flush=True)

    if args.remote_kubeconfig and not os.path.exists(args.remote_kubeconfig):
        raise FileNotFoundError(errno.ENOENT, "no such file", args.remote_kubeconfig)
    remote = (
        views.front_client(args.remote_kubeconfig, args.remote_context)
        if args.remote_kubeconfig
        else contextlib.nullcontext(None)
    )
    with remote as r:
        if args.cluster_command == "join":
            cluster_join.join(
                front,
                r,
                args.name,
                server=args.server,
                front_api=args.front_api,
                namespace=args.bridge_namespace,
                timeout=args.timeout,
                say=say,
            )
        else:
            cluster_join.leave(
                front, args.name, r, namespace=args.bridge_namespace, timeout=args.timeout, say=say
            )
    return 0


def _run(prog: str, args: argparse.Namespace) -> int:
    """The command, its errors one line on stderr with their exit status (the module's docstring)."""
    from cli import errors as cli_errors

    try:
        if args.command == "dev":
            return _dev(args)
        if args.command == "demo":
            return _demo(args)
        if args.command in [name for name, _ in VIEWS]:
            return _view(args)
        if args.command == "remove-clusters":
            return _remove_clusters(args)
    except KeyboardInterrupt:
        return 130
    except Exception as e:
        failure = cli_errors.failure(e, getattr(args, "kubeconfig", None))
        if failure is None:
            raise
        print(f"{prog}: error: {failure.message}", file=sys.stderr)
        return failure.status
    raise AssertionError(args.command)


def _arguments(argv: Sequence[str] | None) -> list[str]:
    """`argv`, or run as a program (None) its command line; then output piped into `head` ends it
    quietly, as kubectl's does. Never when called as a function: SIGPIPE's default action would kill
    the caller's process at its next write to a closed socket."""
    if argv is not None:
        return list(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return sys.argv[1:]


def main(argv: Sequence[str] | None = None) -> int:
    argv = _arguments(argv)
    if argv and argv[0] == "simulate":
        return _simulate(argv[1:])
    return _run("armada-bridge", build_parser().parse_args(argv))


def kubectl_main(argv: Sequence[str] | None = None) -> int:
    """`kubectl armada ...` (the executable `kubectl-armada` on PATH): the read-only commands."""
    return _run("kubectl armada", build_plugin_parser().parse_args(_arguments(argv)))


if __name__ == "__main__":
    sys.exit(main())
