"""`dev up --provider kind`: the kind cluster configurations (pure), the wiring of the bridge to a
front that runs in a container, and the checks that fail fast where Docker or kind is missing.
Nothing here runs Docker or kind (the CI machine has no Docker engine)."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli import main as cli
from devenv import base, versions
from devenv.base import FRONT_FEATURE_GATES, FRONT_RUNTIME_CONFIG, ClusterError
from devenv.bridge import extender_setup, vkubelet_setup
from devenv.kind import kind
from devenv.kind.kind_environment import KindEnvironment, open_environment
from devenv.names import FRONT
from devenv.processes.environment import Environment

HOST = "172.18.0.1"  # a Docker network's gateway, as `docker network inspect` would say
PINNED = versions.load()


def _files(tmp_path: Path) -> kind.FrontFiles:
    return kind.FrontFiles(tmp_path / "mount", tmp_path / "ca" / "ca.crt", tmp_path / "ca" / "ca.key")


def _front(tmp_path: Path) -> dict[str, Any]:
    return kind.front_cluster_config(
        "ab-12345678-front",
        kind.node_image(PINNED.kubernetes),
        24001,
        _files(tmp_path),
        FRONT_FEATURE_GATES,
        FRONT_RUNTIME_CONFIG,
    )


def test_node_images_are_pinned_to_the_kubernetes_version(tmp_path: Path) -> None:
    image = kind.node_image(PINNED.kubernetes)
    assert image == f"kindest/node:{PINNED.kubernetes}"
    remote = kind.remote_cluster_config("ab-12345678-remote-1", image, 24002, 3)
    for cfg in (_front(tmp_path), remote):
        assert cfg["kind"] == "Cluster" and cfg["apiVersion"] == "kind.x-k8s.io/v1alpha4"
        assert {n["image"] for n in cfg["nodes"]} == {image}
        assert yaml.safe_load(kind.to_yaml(cfg)) == cfg  # what `kind create cluster --config` reads


def test_front_config_mounts_the_scheduler_files_and_our_ca(tmp_path: Path) -> None:
    cfg = _front(tmp_path)
    files = _files(tmp_path)
    assert cfg["name"] == "ab-12345678-front"
    # kube-apiserver published on the host's loopback at the environment's port.
    assert cfg["networking"] == {"apiServerAddress": "127.0.0.1", "apiServerPort": 24001}
    # The native Workload API, as on the binary provider's front.
    assert cfg["featureGates"] == {"GenericWorkload": True}
    assert cfg["runtimeConfig"] == {"scheduling.k8s.io/v1beta1": "true"}
    [node] = cfg["nodes"]
    assert node["role"] == "control-plane"
    mounts = {m["containerPath"]: m for m in node["extraMounts"]}
    assert mounts[kind.BRIDGE_DIR_IN_NODE]["hostPath"] == str(files.mount_dir)
    assert mounts["/etc/kubernetes/pki/ca.crt"]["hostPath"] == str(files.ca_cert)
    assert mounts["/etc/kubernetes/pki/ca.key"]["hostPath"] == str(files.ca_key)
    assert all(m["readOnly"] for m in mounts.values())
    [patch_text] = node["kubeadmConfigPatches"]
    patch = yaml.safe_load(patch_text)
    # No apiVersion: kind patches whichever kubeadm API version it generates.
    assert patch["kind"] == "ClusterConfiguration" and "apiVersion" not in patch
    scheduler = patch["scheduler"]
    assert scheduler["extraArgs"] == {"config": f"{kind.BRIDGE_DIR_IN_NODE}/{kind.SCHEDULER_CONFIG_FILE}"}
    [volume] = scheduler["extraVolumes"]
    assert volume["hostPath"] == volume["mountPath"] == kind.BRIDGE_DIR_IN_NODE
    assert volume["readOnly"] is True


def test_front_scheduler_config_calls_the_extender_at_the_host_with_mounted_tls_files() -> None:
    template = yaml.safe_load(extender_setup.SCHEDULER_CONFIG_TEMPLATE.read_text())
    before = yaml.safe_dump(template)
    url = f"https://{HOST}:25000"
    cfg = kind.front_scheduler_config(
        extender_setup.scheduler_configuration(template, url, kind.scheduler_tls_in_node())
    )
    assert yaml.safe_dump(template) == before  # the template is not changed
    assert cfg["clientConnection"]["kubeconfig"] == "/etc/kubernetes/scheduler.conf"
    assert [p["schedulerName"] for p in cfg["profiles"]] == [p["schedulerName"] for p in template["profiles"]]
    [ext] = cfg["extenders"]
    assert ext["urlPrefix"] == url
    assert ext["tlsConfig"] == {
        "caFile": f"{kind.BRIDGE_DIR_IN_NODE}/{kind.EXTENDER_CA_FILE}",
        "certFile": f"{kind.BRIDGE_DIR_IN_NODE}/{kind.SCHEDULER_CERT_FILE}",
        "keyFile": f"{kind.BRIDGE_DIR_IN_NODE}/{kind.SCHEDULER_KEY_FILE}",
    }
    # Everything else of the repo's extender stanza is kept.
    assert (ext["filterVerb"], ext["ignorable"], ext["nodeCacheCapable"]) == ("filter", False, True)


def test_remote_config_has_workers_in_two_zones() -> None:
    cfg = kind.remote_cluster_config("ab-1-remote-2", "kindest/node:v1", 24003, 3)
    assert [n["role"] for n in cfg["nodes"]] == ["control-plane", "worker", "worker", "worker"]
    zones = [n["labels"][kind.ZONE_LABEL] for n in cfg["nodes"][1:]]
    assert zones == ["ab-1-remote-2-zone-a", "ab-1-remote-2-zone-b", "ab-1-remote-2-zone-a"]
    assert cfg["networking"]["apiServerPort"] == 24003
    with pytest.raises(ValueError, match="at least one worker"):
        kind.remote_cluster_config("x", "kindest/node:v1", 1, 0)


def test_names_are_unique_per_environment(tmp_path: Path) -> None:
    a, b = kind.environment_id(tmp_path / "a"), kind.environment_id(tmp_path / "b")
    assert a != b and a == kind.environment_id(tmp_path / "a" / ".." / "a")
    names = {kind.cluster_name(i, n) for i in (a, b) for n in ("front", "remote-1", "remote-2")}
    assert len(names) == 6
    assert kind.network_name(a) != kind.network_name(b)
    for name in names:
        # kind's node containers are `<name>-control-plane`, `<name>-worker2`, ...: DNS labels.
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name) and len(f"{name}-control-plane") <= 63
    assert kind.internal_server(kind.cluster_name(a, "front")) == f"https://ab-{a}-front-control-plane:6443"


# ---------------------------------------------------------------- the bridge, wired to a kind front


def _kind_env(tmp_path: Path) -> KindEnvironment:
    env = KindEnvironment(tmp_path / "state")
    env.state_dir.mkdir(parents=True)
    settings = {
        "provider": "kind",
        "workers": 1,
        "nodes": 1,
        "extender_replicas": 1,
        "ports": {"extender": 25001, "webhook": 25002, "kubelet": 25003},
        "api_ports": {"front": 24001, "remote-1": 24002},
        "host": HOST,
    }
    env.settings_file.write_text(json.dumps(settings))
    for name in ("front", "remote-1"):
        env.cluster(name).kubeconfig.parent.mkdir(parents=True)
        env.cluster(name).kubeconfig.write_text("{}")
    return env


def test_bridge_processes_serve_the_front_at_the_host_address(tmp_path: Path) -> None:
    env = _kind_env(tmp_path)
    assert env.bridge_host == HOST
    extender = extender_setup.replica(env, "extender", 1).argv
    assert extender[extender.index("--secure-listen") + 1] == f"{HOST}:25002"
    assert extender[extender.index("--listen") + 1] == "127.0.0.1:25001"  # probes stay on loopback
    assert extender_setup.secure_url(env) == f"https://{HOST}:25002"
    vk = vkubelet_setup.component(env).argv
    assert vk[vk.index("--listen") + 1] == f"{HOST}:25003"
    assert vk[vk.index("--node-address") + 1] == HOST
    # Remote pods reach the front API at its control-plane container, on the environment's network.
    assert env.front_api_server() == kind.internal_server(kind.cluster_name(env.env_id, FRONT))
    assert env.remote_kubeconfigs() == {"remote-1": env.cluster("remote-1").kubeconfig}
    with pytest.raises(ClusterError, match="no cluster named 'remote-9'"):
        env.kubeconfig("remote-9")


def test_front_files_are_what_the_front_config_names(tmp_path: Path) -> None:
    env = _kind_env(tmp_path)
    definition = env._write_front_files()
    files = env.front_files()
    assert files.ca_cert.is_file() and files.ca_key.is_file()
    for in_node in kind.scheduler_tls_in_node().values():
        assert (files.mount_dir / Path(in_node).name).is_file()
    cfg = yaml.safe_load((files.mount_dir / kind.SCHEDULER_CONFIG_FILE).read_text())
    assert cfg["extenders"][0]["urlPrefix"] == f"https://{HOST}:25002"
    # The extender's certificate names the host address the scheduler and the API server call.
    cert = extender_setup.serving_certificate(env)[0]
    assert (files.mount_dir / kind.EXTENDER_CA_FILE).read_text() == cert.read_text()
    assert HOST in (cert.parent / "webhook.hosts").read_text()
    assert env._write_front_files() == definition  # kept: the front is not recreated for nothing


def test_binary_front_scheduler_config_is_unchanged(tmp_path: Path) -> None:
    env = Environment(tmp_path / "state")
    env.state_dir.mkdir(parents=True)
    env._write_scheduler_config(25002)
    cfg = yaml.safe_load((env.state_dir / "front-kube-scheduler-config.yaml").read_text())
    [ext] = cfg["extenders"]
    assert ext["urlPrefix"] == "https://127.0.0.1:25002"
    assert ext["tlsConfig"]["certFile"].endswith("/kwok/clusters/front/pki/admin.crt")
    assert "clientConnection" not in cfg


# ---------------------------------------------------------------- failing fast


def test_provider_of_an_environment_is_kept(tmp_path: Path) -> None:
    env = _kind_env(tmp_path)
    assert isinstance(open_environment(env.state_dir), KindEnvironment)
    assert type(open_environment(tmp_path / "none")) is Environment
    with pytest.raises(ClusterError, match="made with --provider kind"):
        Environment(env.state_dir).check_provider()
    env.check_provider()


def test_no_docker_on_path_names_docker_and_the_default_provider(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match="needs a Docker engine, and there is no `docker` on PATH") as e:
        kind.require_docker()
    assert "use the default provider" in str(e.value)
    monkeypatch.setenv("ARMADA_BRIDGE_STATE", str(tmp_path / "state"))
    assert cli.main(["dev", "up", "--provider", "kind"]) == 1
    err = capsys.readouterr().err
    assert "Docker engine" in err and "`docker`" in err and "armada-bridge dev up" in err
    assert not (tmp_path / "state" / "environment.json").exists()  # nothing was started or written


def test_docker_without_an_engine_says_what_docker_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "docker"
    fake.write_text(
        "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2\nexit 1\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match="`docker info` failed: Cannot connect to the Docker daemon"):
        kind.require_docker()


def test_missing_kind_says_how_to_install_the_pinned_version() -> None:
    assert re.fullmatch(r"v\d+\.\d+\.\d+", PINNED.kind)
    with pytest.raises(RuntimeError, match=re.escape(f"go install sigs.k8s.io/kind@{PINNED.kind}")):
        kind.require_kind(PINNED.kind, which=lambda _: None)
    assert kind.require_kind(PINNED.kind, which=lambda name: f"/opt/bin/{name}") == "/opt/bin/kind"


def test_operators_are_refused_with_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ARMADA_BRIDGE_STATE", str(tmp_path / "state"))
    assert cli.main(["dev", "up", "--provider", "kind", "--operators", "kuberay"]) == 1
    assert "--operators is not available with --provider kind" in capsys.readouterr().err


def test_kind_nodes_default_to_one_worker() -> None:
    a = cli.build_parser().parse_args(["dev", "up", "--provider", "kind"])
    assert (a.provider, a.nodes) == ("kind", None)
    assert base.DEFAULT_NODES == 4
