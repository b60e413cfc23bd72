"""What a real node changes on the host, and putting it back: the kernel tunables kubelet sets, the
cgroups its pods live in, the mounts it and containerd make, the directories containerd makes
outside its own. The last `dev down` of the environments with real nodes on a host leaves it as the
first `dev up` found it (tests/e2e/test_real_nodes.py, tests/unit/test_dev_realnode.py)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
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


PROC_SYS = Path("/proc/sys")
# One record for the host, whichever environments run real nodes on it: in /run, like what it
# records (a reboot resets both).
RECORD = Path("/run/armada-bridge/host.json")


def read_sysctls(proc_sys: Path = PROC_SYS) -> dict[str, str]:
    return {k: (proc_sys / k).read_text().strip() for k in KUBELET_SYSCTLS}


class HostRecord:
    """What the host looked like before the first real node of any environment started, kept until
    the last environment holding it is down: environments on one host may go down in any order,
    and the first to go must neither put the tunables back under the others' kubelets nor remove
    the directories their containers use. A holder is an environment's directory; one whose
    directory is gone (removed without `dev down`) no longer holds it."""

    def __init__(
        self,
        holder: Path,
        path: Path = RECORD,
        proc_sys: Path = PROC_SYS,
        runtime_dirs: tuple[Path, ...] = RUNTIME_DIRS,
    ) -> None:
        self.holder = str(holder)
        self.path = path
        self.proc_sys = proc_sys
        self.runtime_dirs = runtime_dirs

    def load(self) -> dict[str, Any]:
        try:
            return dict(json.loads(self.path.read_text()))
        except (OSError, ValueError):
            return {}

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The record, read and written back under the host-wide lock, held on the directory above
        the record's (so that nothing is left behind: an empty record is removed with its
        directory)."""
        lock = os.open(self.path.parent.parent, os.O_RDONLY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.path.parent.mkdir(exist_ok=True)
            record = self.load()
            yield record
            if record:
                self.path.write_text(json.dumps(record, indent=1))
            else:
                self.path.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    self.path.parent.rmdir()
        finally:
            os.close(lock)

    def take(self) -> None:
        """Hold the record; the first holder records the host as it is (nothing changed yet). A
        record whose holders are all gone is kept: it was taken before they changed anything."""
        with self._locked() as record:
            holders = [h for h in record.get("holders") or [] if Path(h).exists()]
            if "sysctls" not in record:
                record["sysctls"] = read_sysctls(self.proc_sys)
                record["absent_dirs"] = [str(d) for d in self.runtime_dirs if not d.exists()]
            record["holders"] = sorted({*holders, self.holder})

    def restore(self) -> list[str]:
        """Let go of the record; the last holder puts back what was recorded. Return what could not
        be put back (empty when all went back, or when others still hold the record)."""
        problems: list[str] = []
        with self._locked() as record:
            holders = [h for h in record.get("holders") or [] if h != self.holder and Path(h).exists()]
            if holders:
                record["holders"] = holders
                return problems
            for key, value in dict(record.get("sysctls") or {}).items():
                try:
                    if (self.proc_sys / key).read_text().strip() != value:
                        (self.proc_sys / key).write_text(str(value))
                except OSError as e:
                    problems.append(f"sysctl {key}={value}: {e}")
            for d in map(Path, list(record.get("absent_dirs") or [])):
                if d.exists():
                    problems += remove_tree(d)
            if problems:
                record["holders"] = [self.holder]
            else:
                record.clear()
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
