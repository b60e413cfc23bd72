"""The bridge's own processes in the dev environment (vkubelet, extender): started, kept, stopped.

Each component has a pid file and a log file under `<state>/components/`; the command line of each
names a path under the state directory, so `Environment.pids()` finds it too.
"""

from __future__ import annotations

import hashlib
import json
import os
import ssl
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from devenv.procs import alive, kill_and_wait, process_cmdline, processes
from devenv.versions import REPO_ROOT

# The packages the bridge's processes run (the dev environment's own edits restart none of them).
CODE_PACKAGES = ("armada_bridge", "extender", "vkubelet", "armada_api")


@dataclass(frozen=True)
class Component:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    # Polled after start until it answers 200 (http or https; certificates are not checked here).
    ready_url: str | None = None
    # The bridge's own processes run this repository's code and restart when it changes; other
    # programs (containerd, kubelet) restart only when their command does.
    follows_code: bool = True
    # What else the process reads at start (its configuration files' text): a change restarts it.
    inputs: str = ""
    # A named network namespace (/run/netns/...) to run in instead of the host's.
    netns: Path | None = None

    @property
    def fingerprint(self) -> str:
        """Changes with the command (and the code it runs), so `dev up` restarts what changed."""
        code = code_version() if self.follows_code else ""
        parts = [self.argv, self.env, code, self.inputs, str(self.netns or "")]
        return hashlib.sha1(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


def code_version() -> str:
    """Size and mtime of every Python file of the project's packages."""
    h = hashlib.sha1()
    for package in CODE_PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            st = path.stat()
            h.update(f"{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


class Supervisor:
    def __init__(self, state_dir: Path) -> None:
        self.dir = state_dir / "components"

    def _files(self, name: str) -> tuple[Path, Path]:
        return self.dir / f"{name}.pid", self.dir / f"{name}.log"

    def log_file(self, name: str) -> Path:
        return self._files(name)[1]

    def _running(self, name: str) -> tuple[int, str] | None:
        """(pid, fingerprint) of the component's live process, from its pid file; None when that
        pid is gone or now belongs to another program (pids are reused after a reboot)."""
        try:
            record = json.loads(self._files(name)[0].read_text())
            pid, fingerprint, cmdline = int(record["pid"]), str(record["fingerprint"]), record["cmdline"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not alive(pid) or process_cmdline(pid) != cmdline:
            return None
        return pid, fingerprint

    def pid(self, name: str) -> int | None:
        running = self._running(name)
        return running[0] if running else None

    def ensure(self, c: Component) -> tuple[int, bool]:
        """Start `c` unless the same command is already running; (pid, started)."""
        running = self._running(c.name)
        if running and running[1] == c.fingerprint:
            return running[0], False
        self.stop(c.name)
        # A process running this very command without our record of it (a lost or older pid file)
        # would hold the ports: stop it too.
        command = " ".join(c.argv)
        kill_and_wait([pid for pid, cmd in processes().items() if cmd.strip() == command])
        self.dir.mkdir(parents=True, exist_ok=True)
        pid_file, log_file = self._files(c.name)
        # In a network namespace: nsenter enters it and execs the command, whose argument vector
        # is then the one recorded.
        argv = ["nsenter", f"--net={c.netns}", "--", *c.argv] if c.netns else c.argv
        with open(log_file, "ab") as log:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **c.env},
                start_new_session=True,
            )
        # Until the new program's argument vector shows, /proc/<pid>/cmdline is nsenter's or, for
        # a moment after exec (the kernel sets it up after the parent saw the exec succeed),
        # empty: read then, the pid would look gone ("exited at start", with an empty log: seen
        # on a loaded machine).
        deadline = time.monotonic() + 10
        while process_cmdline(proc.pid) != c.argv and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        record = {"pid": proc.pid, "fingerprint": c.fingerprint, "cmdline": c.argv}
        pid_file.write_text(json.dumps(record) + "\n")
        return proc.pid, True

    def wait_ready(self, c: Component, timeout: float = 30) -> None:
        """Wait for `c.ready_url`; if the process dies or never answers, fail with its log's tail."""
        deadline = time.monotonic() + timeout
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        while True:
            if self.pid(c.name) is None:
                raise RuntimeError(f"{c.name} exited at start:\n{self.tail(c.name)}")
            if c.ready_url is None:
                return
            try:
                with urllib.request.urlopen(c.ready_url, timeout=2, context=insecure) as r:
                    if r.status == 200 and self.pid(c.name) is not None:
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{c.name} not ready at {c.ready_url} after {timeout:.0f}s:\n{self.tail(c.name)}"
                )
            time.sleep(0.2)

    def tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, name: str) -> None:
        pid = self.pid(name)
        if pid is not None:
            kill_and_wait([pid])
        self._files(name)[0].unlink(missing_ok=True)

    def names(self) -> list[str]:
        return sorted(p.stem for p in self.dir.glob("*.pid"))

    def stop_all(self) -> None:
        for name in self.names():
            self.stop(name)
