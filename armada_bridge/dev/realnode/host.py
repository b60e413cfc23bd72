"""What a real node changes on the host, and putting it back: the kernel tunables kubelet sets, the
cgroups its pods live in, the mounts it and containerd make, the directories containerd makes
outside its own. `dev down` leaves the host as `dev up` found it (tests/e2e/test_real_nodes.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

CGROUP_V1 = Path("/sys/fs/cgroup")
# The v1 hierarchies kubelet needs a cgroup root in before it starts (it makes the unified one).
CGROUP_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "systemd")
# kubelet's setupKernelTunables (protectKernelDefaults: false) sets these host-wide.
KUBELET_SYSCTLS = (
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
)
# Made outside the nodes' own directories: by containerd (shim sockets, network namespaces) and by
# kubelet (its device plugin socket's directory is fixed, whatever its root).
KUBELET_DIR = Path("/var/lib/kubelet")
RUNTIME_DIRS = (Path("/run/containerd"), Path("/run/netns"), KUBELET_DIR)


def _sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key


def read_sysctls() -> dict[str, str]:
    return {k: _sysctl_path(k).read_text().strip() for k in KUBELET_SYSCTLS}


class HostRecord:
    """What the host looked like before the first real node started, kept in the state directory
    until the last one is gone."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return {}

    def take(self) -> None:
        """Record the host's state, unless a record exists (it was taken before anything changed)."""
        if self.path.is_file():
            return
        record = {"sysctls": read_sysctls(), "absent_dirs": [str(d) for d in RUNTIME_DIRS if not d.exists()]}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(record, indent=1))

    def restore(self) -> list[str]:
        """Put back what was recorded; return what could not be (empty when all went back)."""
        record = self.load()
        problems = []
        for key, value in dict(record.get("sysctls") or {}).items():
            try:
                if _sysctl_path(key).read_text().strip() != value:
                    _sysctl_path(key).write_text(str(value))
            except OSError as e:
                problems.append(f"sysctl {key}={value}: {e}")
        for d in map(Path, list(record.get("absent_dirs") or [])):
            if d.exists():
                problems += remove_tree(d)
        if not problems:
            self.path.unlink(missing_ok=True)
        return problems


def remove_tree(path: Path) -> list[str]:
    """Unmount what is mounted under `path`, then remove it."""
    unmount_under(path)
    r = subprocess.run(["rm", "-rf", str(path)], capture_output=True, text=True, check=False)
    return [f"rm -rf {path}: {r.stderr.strip()}"] if r.returncode else []


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below `path`, deepest first."""
    prefix = str(path).rstrip("/")
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point == prefix or point.startswith(prefix + "/"):
            points.append(point)
    return sorted(set(points), key=lambda p: (-p.count("/"), p))


def unmount_under(path: Path) -> None:
    for _ in range(5):  # a bind mount of a directory onto itself shows twice; mounts can stack
        points = mounts_under(path)
        if not points:
            return
        for point in points:
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)


# ---------------------------------------------------------------------------- cgroups
def cgroup_dirs(root: str) -> list[Path]:
    """`root` (e.g. /armada-bridge-1a2b/remote-1-real-0) in every mounted hierarchy, v1 and unified."""
    out = []
    for hierarchy in sorted(CGROUP_V1.iterdir()) if CGROUP_V1.is_dir() else []:
        if hierarchy.is_dir() and (hierarchy / "cgroup.procs").exists():
            out.append(hierarchy / root.lstrip("/"))
    return out


def create_cgroup_root(root: str) -> None:
    """kubelet's cgroupRoot must already exist in each v1 hierarchy it uses; cpuset needs its CPUs and
    memory nodes copied down from the parent before anything can join it."""
    for controller in CGROUP_CONTROLLERS:
        hierarchy = CGROUP_V1 / controller
        if not (hierarchy / "cgroup.procs").exists():
            continue
        current = hierarchy
        for part in root.strip("/").split("/"):
            current = current / part
            current.mkdir(exist_ok=True)
            if controller == "cpuset":
                for f in ("cpuset.cpus", "cpuset.mems"):
                    if not (current / f).read_text().strip():
                        (current / f).write_text((current.parent / f).read_text())


def cgroup_pids(root: str) -> set[int]:
    pids: set[int] = set()
    for top in cgroup_dirs(root):
        if top.is_dir():
            for procs in top.rglob("cgroup.procs"):
                with contextlib.suppress(OSError, ValueError):
                    pids |= {int(p) for p in procs.read_text().split()}
    return pids


def kill_cgroup(root: str, timeout: float = 15) -> list[int]:
    """SIGKILL every process in `root`'s cgroups (a node's containers) until none is left; return
    those still there after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        pids = cgroup_pids(root)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        if not pids or time.monotonic() > deadline:
            return sorted(pids)
        time.sleep(0.1)


def remove_cgroup_root(root: str) -> list[str]:
    """rmdir `root` and everything below it in every hierarchy, deepest first, then the parents the
    root added (its first component); return what could not be removed."""
    problems: list[str] = []
    for top in cgroup_dirs(root):
        if not top.is_dir():
            continue
        for d in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            with contextlib.suppress(FileNotFoundError):
                _rmdir(d, problems)
        _rmdir(top, problems)
    return problems


def _rmdir(d: Path, problems: list[str]) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError as e:  # EBUSY while the last tasks are leaving
            err = e
            time.sleep(0.1)
    problems.append(f"cgroup {d}: {err}")


def remove_empty_parents(root: str) -> None:
    """Remove `root`'s parent cgroups (e.g. /armada-bridge-1a2b) once no node's root is left in them."""
    parts = root.strip("/").split("/")
    for depth in range(len(parts) - 1, 0, -1):
        for top in cgroup_dirs("/".join(parts[:depth])):
            if top.is_dir() and not any(p.is_dir() for p in top.iterdir()):
                with contextlib.suppress(OSError):
                    top.rmdir()
