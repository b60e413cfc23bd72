"""The dev environment's view of its processes: one that exited is gone, even while nobody has
reaped it yet (a zombie of the process that started it, as the chaos soak's restarts were)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from devenv.binaries import Binaries
from devenv.processes.control_plane import ControlPlane
from devenv.procs import alive


def test_an_exited_unreaped_process_counts_as_gone(tmp_path: Path) -> None:
    bins = Binaries(*(tmp_path / n for n in ("a", "b", "c", "d", "e", "f", "g", "h")))
    cluster = ControlPlane("c1", tmp_path, bins)
    pids = cluster.workdir / "pids"
    pids.mkdir(parents=True)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while alive(exited.pid) and time.monotonic() < deadline:  # exits, is not reaped
            time.sleep(0.05)
        (pids / "kube-scheduler.pid").write_text(f"{exited.pid}\n")
        (pids / "kube-apiserver.pid").write_text(f"{running.pid}\n")
        (pids / "etcd.pid").write_text("not a pid\n")
        assert Path(f"/proc/{exited.pid}").exists()  # still a zombie: os.kill(pid, 0) succeeds
        assert cluster.component_pids() == {
            "etcd": None,
            "kube-apiserver": running.pid,
            "kube-scheduler": None,
        }
    finally:
        running.kill()
        running.wait()
        exited.wait()
