"""kubectl exec / attach / port-forward / cp on front pods, on the real path:
kubectl -> front kube-apiserver -> vkubelet kubelet API -> remote kube-apiserver -> the remote
node's kubelet port: kwok-exec (exec, as local commands, with the kubelet's streaming library),
which passes attach and port-forward on to KWOK."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import socket
import ssl
import struct
import subprocess
import termios
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client as k8s

from devenv.bridge import vkubelet_setup
from devenv.clients import token_kubeconfig
from devenv.ports import free_ports
from devenv.processes.environment import Environment
from tests.framework.kube import grant, kubectl, kubectl_argv, wait_for
from tests.framework.vkubelet_pods import bound_pod, kubelet_status, run_bound


@pytest.fixture
def running(vkubelet: Environment, front: k8s.CoreV1Api, namespace: str) -> Iterator[str]:
    run_bound(front, namespace, bound_pod("shell", "remote-1"))
    yield "shell"


def test_exec_output_and_exit_code(vkubelet: Environment, namespace: str, running: str) -> None:
    r = kubectl(
        vkubelet, "exec", "-n", namespace, running, "--", "sh", "-c", "echo hi; echo oops >&2; exit 3"
    )
    assert r.stdout == "hi\n"
    assert "oops" in r.stderr
    # The exit status is what the remote kubelet writes on the error channel (NonZeroExitCode,
    # ExitCode=3), relayed untouched: kubectl exits 3.
    assert r.returncode == 3, r.stderr
    assert "command terminated with exit code 3" in r.stderr, r.stderr
    r = kubectl(vkubelet, "exec", "-n", namespace, running, "--", "sh", "-c", "echo fine; exit 0")
    assert (r.returncode, r.stdout) == (0, "fine\n"), r.stderr

    # stdin: the end of kubectl's stdin reaches the process, so `cat` ends (kubectl() times out
    # otherwise) and every byte came back.
    text = "".join(f"line {i} of the input\n" for i in range(2000))
    r = kubectl(vkubelet, "exec", "-i", "-n", namespace, running, "--", "cat", stdin=text)
    assert r.returncode == 0, r.stderr
    assert r.stdout == text
    # A command that ends before its input does ends the exec, with its status.
    r = kubectl(
        vkubelet,
        "exec",
        "-i",
        "-n",
        namespace,
        running,
        "--",
        "sh",
        "-c",
        "read l; echo got:$l; exit 4",
        stdin=text,
    )
    assert (r.returncode, r.stdout) == (4, "got:line 0 of the input\n"), r.stderr

    # The kubelet's /run (the output in one answer), called as the front apiserver does (its
    # client certificate).
    pki = vkubelet.kwok_workdir / "clusters" / "front" / "pki"
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    req = urllib.request.Request(
        f"https://127.0.0.1:{vkubelet_setup.kubelet_port(vkubelet)}/run/{namespace}/{running}/main?cmd=echo+run-ok",
        method="POST",
    )
    with urllib.request.urlopen(req, context=ctx, timeout=20) as resp:
        assert resp.read() == b"run-ok\n"


def test_exec_with_a_tty(vkubelet: Environment, namespace: str, running: str) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    argv = kubectl_argv(
        vkubelet,
        *("exec", "-it", "-n", namespace, running, "--", "sh", "-c"),
        # kubectl sends the terminal's size as a resize once the session is up: read it a moment
        # later; then, after a line of input, the size again.
        "test -t 0 && echo is-a-tty; sleep 1; stty size; read l; echo got:$l; stty size; exit 5",
    )
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
    os.close(slave)
    out = b""

    def read_until(needle: bytes | None, timeout: float = 30) -> None:
        """Read the terminal until `needle` shows (None: until kubectl exits)."""
        nonlocal out
        deadline = time.monotonic() + timeout
        while (needle is None or needle not in out) and proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    out += os.read(master, 4096)
                except OSError:
                    break

    try:
        read_until(b"33 101")  # the terminal size travelled
        # The user resizes the terminal (kubectl follows SIGWINCH), then types a line.
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        os.kill(proc.pid, signal.SIGWINCH)
        time.sleep(1)
        os.write(master, b"typed\r")
        read_until(None)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    text = out.decode(errors="replace")
    assert "is-a-tty" in text, text
    assert "33 101" in text, text
    assert "got:typed" in text, text
    assert "40 120" in text, text  # the resize reached the process's terminal
    assert proc.returncode == 5, text  # the exit status, with a TTY too


def test_cp_both_ways(vkubelet: Environment, namespace: str, running: str, tmp_path: Path) -> None:
    exec_dir = vkubelet_setup.remote_exec_dir(vkubelet.state_dir)  # where the "container" runs
    name = f"{namespace}.bin"
    payload = os.urandom(300_001)  # not a multiple of tar's blocks or records
    src = tmp_path / "up.bin"
    src.write_bytes(payload)
    try:
        # To the pod: `tar -xmf -` in the container, which ends when kubectl's input does.
        r = kubectl(vkubelet, "cp", str(src), f"{namespace}/{running}:{name}")
        assert r.returncode == 0, r.stderr
        assert (exec_dir / name).read_bytes() == payload
        # From the pod: `tar cf -` in the container.
        (exec_dir / name).write_bytes(payload[::-1])
        back = tmp_path / "down.bin"
        r = kubectl(vkubelet, "cp", f"{namespace}/{running}:{name}", str(back))
        assert r.returncode == 0, r.stderr
        assert back.read_bytes() == payload[::-1]
    finally:
        (exec_dir / name).unlink(missing_ok=True)


def test_port_forward_both_ways(vkubelet: Environment, namespace: str, running: str) -> None:
    port = free_ports(1)[0]
    argv = kubectl_argv(vkubelet, "port-forward", "-n", namespace, running, f"{port}:8080")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "Forwarding from" in line, line
        for message in (b"ping\n", b"second message\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
                s.sendall(message)
                got = b""
                while len(got) < len(message):
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
                assert got == message  # KWOK's forward for the pod echoes (cat)
    finally:
        proc.kill()
        proc.wait(10)


def test_attach_sees_output(vkubelet: Environment, namespace: str, running: str) -> None:
    argv = kubectl_argv(vkubelet, "attach", "-n", namespace, running, "-c", "main")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = f"attached to {namespace}"
    log = vkubelet_setup.remote_attach_log(vkubelet.state_dir)
    try:
        assert proc.stdout is not None
        # KWOK follows the attach file from its end: "print" lines until one reaches kubectl.
        for i in range(60):
            with log.open("a") as f:
                f.write(f"2026-01-01T00:01:{i % 60:02d}.000000000Z stdout F {line}\n")
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                break
        assert line in proc.stdout.readline()
    finally:
        proc.kill()
        proc.wait(10)


def _kubelet_post(env: Environment, path: str, headers: dict[str, str]) -> int:
    """A streaming request (an SPDY upgrade) straight to the kubelet API."""
    return kubelet_status(env, path, {"Connection": "Upgrade", "Upgrade": "SPDY/3.1", **headers}, "POST")


def test_exec_refused_without_rights(
    vkubelet: Environment,
    front: k8s.CoreV1Api,
    cluster_api: object,
    namespace: str,
    running: str,
    tmp_path: Path,
) -> None:
    # Anonymous callers of the kubelet API get 401 on every streaming endpoint.
    for path in (
        f"/exec/{namespace}/{running}/main?command=id&output=1",
        f"/attach/{namespace}/{running}/main?output=1",
        f"/portForward/{namespace}/{running}",
    ):
        assert _kubelet_post(vkubelet, path, {}) == 401

    # A user who may read pods but not exec into them: 403 from the front apiserver (pods/exec)...
    front.create_namespaced_service_account(namespace, {"metadata": {"name": "reader"}})
    rbac = k8s.RbacAuthorizationV1Api(cluster_api("front"))  # type: ignore[operator]
    reads = [{"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]}]
    grant(rbac, namespace, "pod-reader", reads, "reader")
    token = front.create_namespaced_service_account_token(
        "reader", namespace, {"spec": {"audiences": [], "expirationSeconds": 600}}
    ).status.token
    cfg = token_kubeconfig(vkubelet.kubeconfig("front"), token, tmp_path / "reader.kubeconfig")

    def forbidden() -> bool:
        r = kubectl(vkubelet, "exec", "-n", namespace, running, "--", "id", kubeconfig=cfg)
        return r.returncode != 0 and "forbidden" in r.stderr.lower()

    wait_for("kubectl exec forbidden", forbidden, timeout=15)
    for sub in ("attach", "port-forward"):
        args = ["attach", running] if sub == "attach" else ["port-forward", running, f"{free_ports(1)[0]}:80"]
        r = kubectl(vkubelet, *args, "-n", namespace, kubeconfig=cfg, timeout=20)
        assert r.returncode != 0 and "forbidden" in r.stderr.lower(), r.stderr

    # ...and 403 from the kubelet API itself when called directly (no nodes/proxy).
    assert (
        _kubelet_post(
            vkubelet,
            f"/exec/{namespace}/{running}/main?command=id&output=1",
            {"Authorization": f"Bearer {token}"},
        )
        == 403
    )
