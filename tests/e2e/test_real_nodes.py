"""Real nodes: managed pods whose containers really run in a remote cluster (kubelet + containerd +
runc, on the environment's pod network), and what the front sees of them: output, exit codes,
OOM kills, exec and cp into the real container, the front API used from inside, and a host left as
it was found when an environment with real nodes goes down (and `up` repairs one first)."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.stream import portforward

from armada_bridge import keys
from devenv import pods
from devenv.clients import api_client
from devenv.images.recipes import RECIPES
from devenv.network.podnet import PodNetwork
from devenv.ports import free_ports
from devenv.processes.environment import Environment
from devenv.realnode import host
from devenv.realnode.node import RealNodes
from devenv.realnode.placement import on_a_real_node
from devenv.simulated import kwok_exec
from tests.framework import PROGRAMS, REAL_NODE_ENVIRONMENTS
from tests.framework.bridge import Api
from tests.framework.kube import grant, kubectl, kubectl_argv, wait_for


@pytest.fixture
def real(dev_env: Environment, cluster_api: Api, namespace_in_its_queue: str) -> Iterator[k8s.CoreV1Api]:
    """The front's CoreV1Api, in an environment with real nodes, `namespace` in its own queue."""
    if dev_env.real_nodes() is None:
        pytest.fail("the environment has no real nodes: `armada-bridge dev up --real-nodes 1`")
    yield k8s.CoreV1Api(cluster_api("front"))


def real_pod(name: str, command: list[str], *, memory_limit: str = "64Mi", **spec: Any) -> dict[str, Any]:
    """A pod running `command` once on a real node, with a labels map (a test may add to it)."""
    return pods.real_pod(name, command, memory_limit=memory_limit, labels={}, **spec)


def ended(front: k8s.CoreV1Api, namespace: str, name: str, timeout: float = 90) -> Any:
    def probe() -> Any:
        p = front.read_namespaced_pod(name, namespace)
        return p if p.status.phase in ("Succeeded", "Failed") else None

    return wait_for(f"pod {name} ended", probe, timeout=timeout)


def running(front: k8s.CoreV1Api, namespace: str, name: str, timeout: float = 300) -> Any:
    """The front pod Running: admitted, then started on a real node once it has room (the suite's
    other real-node tests may hold it for minutes)."""

    def probe() -> Any:
        p = front.read_namespaced_pod(name, namespace)
        assert p.status.phase not in ("Succeeded", "Failed"), p.status
        return p if p.status.phase == "Running" else None

    return wait_for(f"pod {name} Running", probe, timeout=timeout)


def remote_node_of(api: Api, p: Any) -> str:
    """The remote node the front pod's remote copy runs on, as its own cluster says."""
    cluster = (p.metadata.annotations or {})[keys.ASSIGNED_CLUSTER]
    remote = k8s.CoreV1Api(api(cluster)).read_namespaced_pod(p.metadata.name, p.metadata.namespace)
    return str(remote.spec.node_name)


def test_a_managed_pods_command_really_runs(real: k8s.CoreV1Api, cluster_api: Api, namespace: str) -> None:
    token = uuid.uuid4().hex
    real.create_namespaced_pod(
        namespace, real_pod("exit3", ["sh", "-c", f"echo {token}; cat /proc/1/cmdline; exit 3"])
    )
    p = ended(real, namespace, "exit3")
    assert p.status.phase == "Failed"
    (status,) = p.status.container_statuses
    assert (status.state.terminated.exit_code, status.state.terminated.reason) == (3, "Error")
    # Its own output, through the front: the container's PID 1 was the command, not anything of the host.
    log = real.read_namespaced_pod_log("exit3", namespace)
    assert log.startswith(f"{token}\nsh\0-c\0"), log
    assert "-real-" in remote_node_of(cluster_api, p)


def test_the_busybox_images_network_tools_work(real: k8s.CoreV1Api, namespace: str) -> None:
    """What users debug a pod with: `wget` with a timeout (a served page by name, a closed port
    answered with an error, not a crash), `nc` and `nslookup` of a cluster name."""
    script = (
        "mkdir -p /tmp/www && echo hello-busybox > /tmp/www/index.html && httpd -p 8080 -h /tmp/www"
        " && wget -T 5 -q -O - http://localhost:8080/index.html"
        " ; wget -T 2 -q -O - http://127.0.0.1:9/ ; echo wget-closed=$?"
        " ; nc -w 2 127.0.0.1 9 </dev/null ; echo nc-closed=$?"
        " ; nslookup kubernetes.default.svc.cluster.local >/dev/null ; echo nslookup=$?"
    )
    real.create_namespaced_pod(namespace, real_pod("tools", ["sh", "-c", script]))
    done = ended(real, namespace, "tools")
    log = real.read_namespaced_pod_log("tools", namespace)
    assert done.status.phase == "Succeeded", log
    lines = log.splitlines()  # with the tools' own messages (stderr) between
    for expected in ("hello-busybox", "wget-closed=1", "nc-closed=1", "nslookup=0"):
        assert expected in lines, log


def test_an_over_limit_allocation_ends_oomkilled(real: k8s.CoreV1Api, namespace: str) -> None:
    # `tail` keeps the current line, and /dev/zero has no end of line: memory until the limit.
    real.create_namespaced_pod(
        namespace, real_pod("hog", ["sh", "-c", "echo allocating; tail /dev/zero"], memory_limit="24Mi")
    )
    p = ended(real, namespace, "hog")
    (status,) = p.status.container_statuses
    assert p.status.phase == "Failed"
    assert (status.state.terminated.reason, status.state.terminated.exit_code) == ("OOMKilled", 137)
    assert real.read_namespaced_pod_log("hog", namespace) == "allocating\n"


def test_a_successful_command_succeeds_and_a_restarting_one_counts_restarts(
    real: k8s.CoreV1Api, namespace: str
) -> None:
    real.create_namespaced_pod(namespace, real_pod("fine", ["sh", "-c", "echo fine"]))
    real.create_namespaced_pod(
        namespace, real_pod("again", ["sh", "-c", "echo try; exit 5"], restartPolicy="OnFailure")
    )
    p = ended(real, namespace, "fine")
    assert p.status.phase == "Succeeded"
    assert p.status.container_statuses[0].state.terminated.reason == "Completed"

    def restarted() -> Any:
        (s,) = real.read_namespaced_pod("again", namespace).status.container_statuses or [None]
        return s if s and s.restart_count >= 2 else None

    s = wait_for("pod again restarted twice", restarted, timeout=120)
    last = s.last_state.terminated
    assert (last.exit_code, last.reason) == (5, "Error")
    assert real.read_namespaced_pod("again", namespace).status.phase in ("Pending", "Running")


def test_exec_and_cp_reach_the_real_container(
    dev_env: Environment, real: k8s.CoreV1Api, namespace: str
) -> None:
    real.create_namespaced_pod(namespace, real_pod("shell", ["sleep", "3600"]))
    running(real, namespace, "shell")
    r = kubectl(dev_env, "exec", "-n", namespace, "shell", "--", "sh", "-c", "cat /proc/1/cmdline; exit 7")
    assert (r.returncode, r.stdout) == (7, "sleep\x003600\x00"), r.stderr
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "in.txt"
        src.write_text(f"through kubectl cp {uuid.uuid4().hex}\n")
        r = kubectl(dev_env, "cp", str(src), f"{namespace}/shell:/tmp/in.txt")
        assert r.returncode == 0, r.stderr
        r = kubectl(dev_env, "exec", "-n", namespace, "shell", "--", "cat", "/tmp/in.txt")
        assert r.stdout == src.read_text(), r.stderr
        back = Path(tmp) / "back.txt"
        r = kubectl(dev_env, "cp", f"{namespace}/shell:/tmp/in.txt", str(back))
        assert r.returncode == 0 and back.read_text() == src.read_text(), r.stderr


def test_a_remote_pod_uses_the_front_api_with_its_own_token(
    real: k8s.CoreV1Api, cluster_api: Api, namespace: str
) -> None:
    """A process in a real container creates a ConfigMap and a pod in the front with its own
    ServiceAccount's token, and finds the front API at `kubernetes.default.svc` too; the pod is
    queued and admitted by the extender like any other."""
    makes = [{"apiGroups": [""], "resources": ["configmaps", "pods"], "verbs": ["create", "get"]}]
    grant(k8s.RbacAuthorizationV1Api(cluster_api("front")), namespace, "maker", makes, "default")
    program = "front_api_client.py"
    real.create_namespaced_config_map(
        namespace, {"metadata": {"name": "programs"}, "data": {program: (PROGRAMS / program).read_text()}}
    )
    child = real_pod("child", ["sh", "-c", "echo child ran"])
    parent = real_pod(
        "parent",
        ["python3", f"/programs/{program}", json.dumps(child)],
        image=RECIPES["python"].name,
        volumes=[{"name": "programs", "configMap": {"name": "programs"}}],
    )
    parent["spec"]["containers"][0]["volumeMounts"] = [{"name": "programs", "mountPath": "/programs"}]
    real.create_namespaced_pod(namespace, parent)
    p = ended(real, namespace, "parent", timeout=120)
    log = real.read_namespaced_pod_log("parent", namespace)
    assert p.status.phase == "Succeeded", log
    made = real.read_namespaced_config_map("from-inside", namespace)
    assert made.data == {"written-by": "parent"}
    assert f"created configmap from-inside uid {made.metadata.uid}" in log
    assert f"read at kubernetes.default.svc: uid {made.metadata.uid}" in log  # the front's, not the remote's
    # The pod it made went the bridge's way: held, admitted by the extender, run on a real node.
    c = ended(real, namespace, "child")
    assert c.status.phase == "Succeeded"
    assert (c.metadata.annotations or {}).get(keys.DECISION_SIGNATURE), c.metadata.annotations
    assert real.read_namespaced_pod_log("child", namespace) == "child ran\n"
    # Bound to the virtual node of the cluster its decision named.
    assert c.spec.node_name == c.metadata.annotations.get(keys.ASSIGNED_CLUSTER), c.metadata.annotations


def _host_view(env: Environment, network: PodNetwork, real: RealNodes) -> dict[str, Any]:
    """What an environment with real nodes may have put on the host."""
    cgroups = [str(d) for d in host.cgroup_dirs(real.cgroup_root("x").rsplit("/", 1)[0]) if d.exists()]
    links = json.loads(
        subprocess.run(["ip", "-j", "link"], capture_output=True, text=True, check=True).stdout
    )
    return {
        "bridge": network.exists(),
        # On the bridge, or named after it (a cluster's veth outliving the bridge).
        "veths": [
            link["ifname"]
            for link in links
            if link.get("master") == network.bridge or link["ifname"].startswith(f"{network.bridge}-")
        ],
        "namespaces": network.namespaces(),
        # Through a cluster's router: the front's Service range (isolated, and its pod range).
        "routes": [
            r["dst"]
            for r in json.loads(
                subprocess.run(
                    ["ip", "-j", "route", "show", "table", "all"], capture_output=True, text=True
                ).stdout
                or "[]"
            )
            if str(r.get("dev", "")).startswith(network.bridge) and r.get("gateway")
        ],
        "cgroups": cgroups,
        "mounts": host.mounts_under(env.state_dir),
        "processes": env.pids(),
    }


def _host_rules() -> dict[str, list[str]]:
    """The host's own iptables and ip6tables rules and chains (not the namespaces')."""
    out = {}
    for command in ("iptables-save", "ip6tables-save"):
        text = subprocess.run([command], capture_output=True, text=True, check=True).stdout
        out[command] = [line for line in text.splitlines() if line.startswith(("-", ":", "*"))]
    return out


def _kill_and_repair(env: Environment, pid: int | None) -> None:
    """Kill one of the environment's processes: remote-1 shows unhealthy, and `up` repairs it."""
    assert pid
    subprocess.run(["kill", "-9", str(pid)], check=True)
    wait_for("remote-1 unhealthy", lambda: not env.status()[1].healthy, timeout=10)
    env.up(workers=1, nodes=1, real_nodes=1)
    assert [s.healthy for s in env.status()] == [True, True]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _ports(env: Environment) -> set[int]:
    """TCP ports the environment's processes listen on, from /proc/net/tcp and their socket inodes."""
    inodes: set[str] = set()
    for pid in env.pids():
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = str(fd.readlink()) if fd.is_symlink() else ""
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] == "0A" and cols[9] in inodes:  # 0A = LISTEN
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.mark.own_environment(REAL_NODE_ENVIRONMENTS)  # it checks the host's network is as found
def test_up_repairs_an_environment_and_down_leaves_the_host_as_found() -> None:
    """An environment of its own (one remote, one KWOK and one real node): a killed component (the
    remote's API server, its kubelet port kwok-exec, its real node's kubelet) is started again by
    `up`; it runs a container, then goes down: no process, port, nor anything else of it is left,
    and the kernel tunables kubelet changed are as they were, or, while the shared environment's
    real nodes run (it holds the host's record), left to it, with the record of the host as found
    (tests/unit/test_dev_realnode.py puts that back). It reads the shared environment's record
    without the `dev_env` fixture, which would start or repair that environment: this test holds no
    room there, and an exclusive test may be stopping its parts meanwhile."""
    record = host.HostRecord(Environment().state_dir).load()
    shared = [h for h in record.get("holders") or [] if Path(h).exists()]
    before = dict(record.get("sysctls") or host.read_sysctls())
    if not shared:
        for key, value in before.items():  # as found, so that the change and its undoing both show
            Path("/proc/sys", key).write_text(value)
    rules = _host_rules()
    kubelet_dir = host.KUBELET_DIR.exists()
    state = Path(tempfile.mkdtemp(prefix="ab-", dir="/tmp"))  # short: containerd's socket path
    env = Environment(state)
    try:
        env.up(workers=1, nodes=1, real_nodes=1)
        assert [s.healthy for s in env.status()] == [True, True]
        _kill_and_repair(env, env.cluster("remote-1").component_pids()["kube-apiserver"])
        # remote-1's kubelet port (kwok-exec) is part of the cluster: gone, the cluster is unhealthy.
        exec_server = env.supervisor.pid(kwok_exec.name("remote-1"))
        _kill_and_repair(env, exec_server)
        assert env.supervisor.pid(kwok_exec.name("remote-1")) not in (None, exec_server)
        kubelet = env.supervisor.pid("kubelet-remote-1-real-0")  # so is its real node's kubelet
        _kill_and_repair(env, kubelet)
        assert env.supervisor.pid("kubelet-remote-1-real-0") not in (None, kubelet)
        ports = _ports(env)
        assert env.port(kwok_exec.name("remote-1")) in ports
        assert len(ports) >= 8, ports  # etcd, apiserver, ... of two clusters
        network, real = env.pod_network(), env.real_nodes()
        assert network is not None and real is not None
        with api_client(env.kubeconfig("remote-1")) as api:
            core = k8s.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "hygiene"}})
            body = real_pod("probe", ["sleep", "3600"])
            body["spec"]["nodeName"] = "remote-1-real-0"
            core.create_namespaced_pod("hygiene", body)
            wait_for(
                "a container running on the real node",
                lambda: core.read_namespaced_pod("probe", "hygiene").status.phase == "Running" or None,
                timeout=60,
            )
        during = _host_view(env, network, real)
        during_sysctls = host.read_sysctls()
        assert during["bridge"] and during["veths"] and during["namespaces"] and during["cgroups"], during
        assert during["mounts"] and during["processes"], during
        front_routes = [env.settings()["front_services"], *([network.subnet] if network.outside else [])]
        assert sorted(during["routes"]) == sorted(front_routes), during
        assert host.read_sysctls() != before  # kubelet set its values
        # kubelet's and kube-proxy's iptables rules are in the cluster's network namespace only.
        assert _host_rules() == rules
        cluster_namespace = f"{network.bridge}-remote-1"
        assert cluster_namespace in during["namespaces"]
        inside = subprocess.run(
            ["nsenter", f"--net=/run/netns/{cluster_namespace}", "iptables-save"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "KUBE-SERVICES" in inside and "KUBE-FIREWALL" in inside, inside
        env.down()
        assert _host_view(env, network, real) == {
            "bridge": False,
            "veths": [],
            "namespaces": [],
            "routes": [],
            "cgroups": [],
            "mounts": [],
            "processes": [],
        }
        if shared:  # the shared environment's kubelets run on: nothing put back under them
            assert host.read_sysctls() == during_sysctls
            assert real.host.load() == {**record, "holders": shared}
        else:
            assert host.read_sysctls() == before
            assert not real.host.load()
        assert _host_rules() == rules
        assert host.KUBELET_DIR.exists() == kubelet_dir
        assert not state.exists()
        left = [p for p in ports if _listening(p)]
        assert not left, subprocess.run(["ss", "-ltnp"], capture_output=True, text=True).stdout
    finally:
        if state.exists():
            with contextlib.suppress(Exception):
                env.down()
            shutil.rmtree(state, ignore_errors=True)


def _gang_pair_talks(
    real: k8s.CoreV1Api, cluster_api: Api, namespace: str, service: dict[str, Any], target: str, port: int
) -> tuple[str, Any]:
    """A gang of two (Armada's annotations) on real nodes, `service` (a Service spec) selecting both,
    each pod named under the Service (hostname + subdomain, as operators write for their workers):
    the client calls the server (listening on 7000) at `target`:`port`, `target` a name resolved by
    the remote cluster's DNS. Return
    the client's log and the Service's copy in the cluster the gang ran in."""
    real.create_namespaced_config_map(
        namespace, {"metadata": {"name": "programs"}, "data": {"peer.py": (PROGRAMS / "peer.py").read_text()}}
    )
    real.create_namespaced_service(namespace, {"metadata": {"name": "peers"}, "spec": service})
    # The server stays a while after answering, and so does the Service's remote copy (the vkubelet
    # removes it once no pod there needs it).
    for name, args in (("server", ["serve", "7000", "30"]), ("client", ["call", target, str(port)])):
        body = real_pod(
            name,
            ["python3", "/programs/peer.py", *args],
            image=RECIPES["python"].name,
            hostname=name,
            subdomain="peers",
            volumes=[{"name": "programs", "configMap": {"name": "programs"}}],
        )
        body["metadata"]["labels"]["app"] = "peers" if name == "server" else "caller"
        body["metadata"]["annotations"] = {keys.GANG_ID: "peers", keys.GANG_CARDINALITY: "2"}
        body["spec"]["containers"][0]["volumeMounts"] = [{"name": "programs", "mountPath": "/programs"}]
        real.create_namespaced_pod(namespace, body)
    client = ended(real, namespace, "client", timeout=150)
    client_log = real.read_namespaced_pod_log("client", namespace)
    assert client.status.phase == "Succeeded", client_log
    remote = k8s.CoreV1Api(cluster_api(client.metadata.annotations[keys.ASSIGNED_CLUSTER]))
    remote_service = remote.read_namespaced_service("peers", namespace)
    server = ended(real, namespace, "server", timeout=90)
    assert server.status.phase == "Succeeded", real.read_namespaced_pod_log("server", namespace)
    clusters = {(p.metadata.annotations or {})[keys.ASSIGNED_CLUSTER] for p in (client, server)}
    assert len(clusters) == 1, clusters
    assert "served " in real.read_namespaced_pod_log("server", namespace)
    return client_log, remote_service


def test_two_pods_of_a_gang_talk_over_a_headless_service_by_its_dns_name(
    real: k8s.CoreV1Api, cluster_api: Api, namespace: str
) -> None:
    """`server.peers`, the server's own name under a headless Service, is the server pod's address."""
    headless = {"clusterIP": "None", "selector": {"app": "peers"}, "ports": [{"port": 7000}]}
    client_log, remote_service = _gang_pair_talks(
        real, cluster_api, namespace, headless, "server.peers", 7000
    )
    assert remote_service.spec.cluster_ip == "None"
    server_ip = (
        k8s.CoreV1Api(cluster_api(_cluster_of(real, namespace, "server")))
        .read_namespaced_pod("server", namespace)
        .status.pod_ip
    )
    assert f"server.peers is {server_ip}: HELLO FROM THE CLIENT" in client_log


def test_a_pod_reaches_another_through_a_mirrored_clusterip_service(
    real: k8s.CoreV1Api, cluster_api: Api, namespace: str
) -> None:
    """`peers`, a Service with a cluster IP (port 80 to the server's 7000), resolves to the IP its
    remote copy got, and a connection to it reaches the server: the remote cluster's kube-proxy."""
    service = {"selector": {"app": "peers"}, "ports": [{"port": 80, "targetPort": 7000}]}
    client_log, remote_service = _gang_pair_talks(real, cluster_api, namespace, service, "peers", 80)
    cluster_ip = remote_service.spec.cluster_ip
    assert cluster_ip not in (None, "", "None"), remote_service.spec
    assert f"peers is {cluster_ip}: HELLO FROM THE CLIENT" in client_log


def _cluster_of(front: k8s.CoreV1Api, namespace: str, name: str) -> str:
    return str((front.read_namespaced_pod(name, namespace).metadata.annotations or {})[keys.ASSIGNED_CLUSTER])


def _kubectl_background(env: Environment, *args: str) -> tuple[subprocess.Popen[str], list[str]]:
    """kubectl running in the background; its output lines gathered as they come."""
    proc = subprocess.Popen(
        kubectl_argv(env, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert proc.stdout is not None
    threading.Thread(target=lambda: lines.extend(proc.stdout or []), daemon=True).start()
    return proc, lines


def _websocket_port_forward(front: k8s.CoreV1Api, namespace: str, pod: str, port: int, request: bytes) -> str:
    """What the pod's `port` answers to `request`, through a WebSocket port-forward on the front."""
    forwarded = portforward(front.connect_get_namespaced_pod_portforward, pod, namespace, ports=str(port))
    try:
        sock = forwarded.socket(port)
        sock.settimeout(20)
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer.decode(errors="replace")
    finally:
        forwarded.close()


def test_port_forward_and_attach_reach_the_real_container(
    dev_env: Environment, real: k8s.CoreV1Api, namespace: str
) -> None:
    """A web server in a real container: fetched through `kubectl port-forward`, and its request
    log seen live by `kubectl attach`."""
    marker = uuid.uuid4().hex
    real.create_namespaced_pod(namespace, pods.web_pod("web", marker))
    running(real, namespace, "web")
    (port,) = free_ports(1)
    forward, forwarded = _kubectl_background(
        dev_env, "port-forward", "-n", namespace, "pod/web", f"{port}:{pods.WEB_PORT}"
    )
    attach, attached = _kubectl_background(dev_env, "attach", "-n", namespace, "web")
    try:

        def fetch(path: str) -> str | None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
                    return str(r.read().decode())
            except OSError:
                return None

        assert (
            wait_for("the page through port-forward", lambda: fetch("/index.html"), timeout=30)
            == f"{marker}\n"
        )

        def seen_attached() -> bool | None:
            fetch(f"/index.html?attached={marker}")  # 200, and a line in the server's log
            return any(f"attached={marker}" in line for line in attached) or None

        wait_for("the request in the attached output", seen_attached, timeout=30, interval=1)
        # A WebSocket client (the Kubernetes Python client, as kr8s and the Dask operator use one):
        # kube-apiserver hands its ports to the vkubelet as the kubelet's `port` query.
        assert f"{marker}\n" in _websocket_port_forward(
            real, namespace, "web", pods.WEB_PORT, b"GET /index.html HTTP/1.0\r\n\r\n"
        )
    finally:
        for proc in (forward, attach):
            proc.terminate()
            proc.wait(10)
    assert any("Forwarding from" in line for line in forwarded), forwarded


def test_the_fronts_control_plane_reaches_a_service_whose_pod_runs_on_the_fronts_real_node(
    dev_env: Environment, cluster_api: Api, namespace: str
) -> None:
    """The front has a real node, for the bridge's own pods when it is installed as an admin
    installs it (its image, its chart). A Service whose pod runs there answers at its ClusterIP
    from the host, where the front's kube-apiserver (calling a webhook) and kube-scheduler (an
    extender) run, and by its DNS name from another pod there. The pods are not managed (no
    queue): the front's scheduler places them itself."""
    real_nodes = dev_env.real_nodes()
    if real_nodes is None or "front-real-0" not in real_nodes.existing():
        pytest.fail("the front has no real node: `armada-bridge dev up --real-nodes 1`")
    front = k8s.CoreV1Api(cluster_api("front"))
    server = {
        "name": "main",
        "image": RECIPES["bridge"].name,
        "command": ["python", "-m", "http.server", "8080", "--directory", "/etc"],
        "resources": {"requests": {"cpu": "50m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    }
    front.create_namespaced_pod(
        namespace,
        {
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": on_a_real_node({"containers": [server]}),
        },
    )
    service = front.create_namespaced_service(
        namespace,
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]},
        },
    )
    web = running(front, namespace, "web")
    assert web.spec.node_name == "front-real-0", web.spec.node_name

    def answer() -> str | None:
        try:
            with urllib.request.urlopen(f"http://{service.spec.cluster_ip}/hostname", timeout=3) as r:
                return str(r.read().decode())
        except OSError:
            return None  # its endpoints not yet in kube-proxy's rules

    assert wait_for("the Service answering the host at its ClusterIP", answer, timeout=60).strip() == "web"
    url = f"http://web.{namespace}.svc.cluster.local/hostname"
    fetch = f"import urllib.request; print(urllib.request.urlopen({url!r}).read().decode())"
    client = real_pod("client", ["python", "-c", fetch], image=RECIPES["bridge"].name)
    client["metadata"]["labels"] = {}
    front.create_namespaced_pod(namespace, client)
    done = ended(front, namespace, "client")
    log = front.read_namespaced_pod_log("client", namespace)
    assert done.status.phase == "Succeeded" and log.strip() == "web", (done.status, log)
    assert done.spec.node_name == "front-real-0"
