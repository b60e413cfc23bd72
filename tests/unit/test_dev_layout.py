"""Pure pieces of the dev environment: node shapes, version pins, the CLI's argument handling."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from armada_bridge import keys
from cli import main as cli
from devenv import binaries, versions
from devenv.base import BaseEnvironment
from devenv.operators import catalog, install
from devenv.operators.operator import Setup
from devenv.operators.spark_operator import spark_home
from devenv.simulated import nodes


def test_remote_nodes_match_the_documented_shape() -> None:
    ns = nodes.remote_nodes("remote-1", 4)
    assert [n["metadata"]["name"] for n in ns] == [f"remote-1-node-{i}" for i in range(4)]
    for n in ns:
        alloc = n["status"]["allocatable"]
        assert (alloc["cpu"], alloc["memory"], alloc["pods"]) == ("32", "128Gi", "110")
        assert n["metadata"]["annotations"] == {keys.KWOK_NODE_ANNOTATION: keys.KWOK_NODE_ANNOTATION_VALUE}
        assert n["status"]["capacity"] == alloc
    assert [n["status"]["allocatable"].get(keys.GPU_RESOURCE) for n in ns] == [None, None, "4", "4"]


@pytest.mark.parametrize(("count", "gpu_nodes"), [(1, 0), (2, 1), (3, 1), (5, 2)])
def test_half_the_remote_nodes_have_gpus(count: int, gpu_nodes: int) -> None:
    ns = nodes.remote_nodes("r", count)
    assert sum(keys.GPU_RESOURCE in n["status"]["allocatable"] for n in ns) == gpu_nodes


def test_versions_file_parses_and_binaries_are_keyed_by_version(tmp_path: Path) -> None:
    f = tmp_path / "versions.env"
    ops = "".join(f"{key}=v0.{i}\n" for i, key in enumerate(versions.OPERATOR_VERSION_KEYS.values()))
    f.write_text(
        "# c\nKUBERNETES_VERSION=v9.9.9\n\nETCD_VERSION=v1.2.3\nKWOK_VERSION=v0.0.1\nPYSPARK_VERSION=4.0.0\nHELM_VERSION=v3.0.1\nKIND_VERSION=v0.1.2\nCOREDNS_VERSION=v1.9.9\nARMADA_VERSION=v0.22.0\n"
        + ops
    )
    v = versions.load(f)
    operator_versions = {name: f"v0.{i}" for i, name in enumerate(versions.OPERATOR_VERSION_KEYS)}
    assert v == versions.Versions(
        "v9.9.9",
        "v1.2.3",
        "v0.0.1",
        operator_versions,
        pyspark="4.0.0",
        helm="v3.0.1",
        kind="v0.1.2",
        coredns="v1.9.9",
        armada="v0.22.0",
    )
    assert catalog.catalog(v)["kuberay"].dir.name == f"kuberay-{operator_versions['kuberay']}"
    assert spark_home(v).parent.name == "pyspark-4.0.0"
    b = binaries.expected(v)
    assert b.kube_apiserver.parent.name == "kubernetes-v9.9.9"
    assert b.etcd.parent.name == "etcd-v1.2.3"
    assert b.kwokctl.parent.name == "kwok-v0.0.1"
    assert binaries.armadactl_path(v).parent.name == "armadactl-v0.22.0"
    # kwok-exec: keyed by the kubelet streaming library of the Kubernetes release (v1.X.Y: v0.X.Y)
    # and its source's hash.
    assert binaries.kwok_exec_dir(tmp_path, "v1.99.3").name.startswith("kwok-exec-v0.99.3-")
    assert binaries.expected_node(v).coredns.parent.name.startswith("coredns-v1.9.9-")


@pytest.mark.parametrize("source", [binaries.KWOK_EXEC_SOURCE, binaries.COREDNS_SOURCE])
def test_a_source_built_binary_is_keyed_as_the_build_script_keys_it(source: Path) -> None:
    """The cache key of kwok-exec and CoreDNS: hack/build-binaries.sh's source_key, as the
    dev environment computes it to find the binary."""
    script = (
        f'source <(sed -n "/^source_key()/,/^}}/p" {binaries.BUILD_SCRIPT}); '
        f"here={source.parent}; source_key {source.name}"
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == binaries.source_key(source)


def test_versions_file_missing_key_is_a_clear_error(tmp_path: Path) -> None:
    f = tmp_path / "versions.env"
    f.write_text("KUBERNETES_VERSION=v1\n")
    with pytest.raises(RuntimeError, match="missing ETCD_VERSION"):
        versions.load(f)


def test_pinned_kubernetes_is_recent() -> None:
    major, minor = versions.load().kubernetes.lstrip("v").split(".")[:2]
    assert (int(major), int(minor)) >= (1, 34)


def test_cli_parses_dev_commands() -> None:
    p = cli.build_parser()
    a = p.parse_args(["dev", "up", "--workers", "3", "--nodes", "2"])
    assert (a.dev_command, a.workers, a.nodes, a.provider) == ("up", 3, 2, "binary")
    assert p.parse_args(["dev", "kubeconfig", "remote-2"]).name == "remote-2"
    with pytest.raises(SystemExit):
        p.parse_args(["dev", "up", "--workers", "many"])


def test_cli_rejects_nonsense_sizes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARMADA_BRIDGE_STATE", str(tmp_path / "state"))
    for option in ("--workers", "--nodes", "--extender-replicas"):
        assert cli.main(["dev", "up", option, "0"]) == 1
        assert "--workers, --nodes and --extender-replicas must be at least 1" in capsys.readouterr().err


def test_operators_option_names_known_operators() -> None:
    assert catalog.parse("all") == list(catalog.ALL)
    assert catalog.parse("kuberay, training-operator") == ["kuberay", "training-operator"]
    with pytest.raises(ValueError, match="unknown operator"):
        catalog.parse("kuberay,nope")
    assert cli.build_parser().parse_args(["dev", "up", "--operators", "all"]).operators == "all"


def test_operator_plan_puts_jobset_first_and_keeps_the_last_named_of_two_rivals() -> None:
    assert install.plan(["trainer", "jobset", "kuberay"]) == ["jobset", "trainer", "kuberay"]
    # The MPI operator and the training operator's MPIJob v1 define one CRD: the last named runs.
    rivals = ["mpi-operator", "kuberay", "training-operator-mpijob"]
    assert install.plan(rivals) == ["kuberay", "training-operator-mpijob"]
    assert install.plan(["training-operator-mpijob", *catalog.ALL]) == list(catalog.ALL)


def test_training_operator_processes_serve_their_own_kinds_and_crds() -> None:
    known = catalog.catalog()
    main, mx, mpi = (known[f"training-operator{s}"] for s in ("", "-mxjob", "-mpijob"))
    assert (mx.schemes, mx.crds) == (("mxjob",), ("manifests/base/crds/kubeflow.org_mxjobs.yaml",))
    assert mx.dir.name == f"training-operator-mxjob-{versions.load().operators['training-operator-mxjob']}"
    assert (mpi.schemes, mpi.dir) == (("mpijob",), main.dir)
    assert not {"mxjob", "mpijob"} & set(main.schemes)
    assert [c.rsplit("_", 1)[1] for c in main.crds] == [f"{s}s.yaml" for s in main.schemes]
    assert install.RIVALS["training-operator-mpijob"] == "mpi-operator"
    assert "training-operator-mpijob" not in catalog.ALL


def test_each_operator_starts_its_named_processes_on_its_own_ports(tmp_path: Path) -> None:
    """Every catalogued operator's processes, built from its module: one per component name, its
    its own executable among them, its loopback ports and nothing else's, the front's kubeconfig."""
    front = tmp_path / "front.yaml"
    front.write_text("clusters: [{cluster: {server: 'https://127.0.0.1:6443'}}]\n")
    certs = {name: tmp_path / name for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    for path in certs.values():
        path.write_text(path.name)
    env = BaseEnvironment(tmp_path / "state")
    for i, o in enumerate(catalog.catalog().values()):
        ports = {name: 20000 + 10 * i + j for j, name in enumerate(o.ports)}
        found = o.processes(Setup(env, binaries.expected(), front, ports, certs))
        assert [c.name for c in found] == list(o.components), o.name
        assert o.executable in {c.argv[0] for c in found}, o.name
        for c in found:
            assert c.env["KUBECONFIG"] == str(front), c.name
            used = {int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", " ".join(c.argv))}
            assert used <= set(ports.values()), (c.name, used, ports)


def test_called_as_a_function_the_cli_leaves_the_callers_sigpipe_alone(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Only the program (`armada-bridge ...`) ends quietly on a closed pipe by SIGPIPE's default
    action: set in the caller's process, it would kill it at a write to a closed socket."""
    before = signal.getsignal(signal.SIGPIPE)
    assert cli.main(["dev", "up", "--workers", "0"]) == 1
    assert signal.getsignal(signal.SIGPIPE) == before
    capsys.readouterr()
