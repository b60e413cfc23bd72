"""The docs' blocks run as their reader runs them: in a directory with the repository's files
linked in and a home of their own (the machine's caches linked in), in one `bash -euo pipefail`, a
Python block pasted into the repository's `python`; output to files (what a block leaves running
may keep a pipe open), and what it leaves running stopped with its process group after."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

from devenv import binaries
from tests.framework.docs_blocks import ROOT, Block

_PYTHON_END = "END_OF_THE_DOCS_PYTHON"
_HOME_LINKED = (".cache", "go")  # the machine's caches, as the reader's (the state: ARMADA_BRIDGE_STATE)


def reader(where: Path) -> tuple[Path, Path]:
    """A reader's directory (the repository's files linked in) and home, under `where`."""
    cwd, home = where / "repository", where / "home"
    cwd.mkdir()
    home.mkdir()
    for entry in ROOT.iterdir():
        (cwd / entry.name).symlink_to(entry)
    for name in _HOME_LINKED:
        if (Path.home() / name).exists():
            (home / name).symlink_to(Path.home() / name)
    return cwd, home


def reader_env(home: Path, kubeconfig: Path, path: Sequence[Path] = (), **extra: str) -> dict[str, str]:
    """What README's "Try it" exports (the front's kubeconfig; `armada-bridge`, `kubectl-armada`
    and the pinned kubectl on PATH), with the reader's home, the folders `path` on PATH too, and
    `extra`."""
    dirs = [ROOT / ".venv/bin", binaries.expected().kubectl.parent, *path]
    return {
        **os.environ,
        "HOME": str(home),
        "KUBECONFIG": str(kubeconfig),
        "PATH": ":".join([*map(str, dirs), os.environ["PATH"]]),
        **extra,
    }


def _shell(block: Block) -> str:
    if block.language == "python":
        return f"python - <<'{_PYTHON_END}'\n{block.text}{_PYTHON_END}\n"
    return block.text


def script(blocks: Iterable[Block]) -> str:
    return "\n".join(f"echo '== {b.where}' >&2\n{_shell(b)}" for b in blocks)


class Run:
    """A script (`script(blocks)`) run in the background, its output in files in `out`: `finish`
    waits for it, `stop` stops it."""

    def __init__(self, text: str, cwd: Path, env: dict[str, str], out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out, self.err = out / "stdout", out / "stderr"
        with self.out.open("w") as stdout, self.err.open("w") as stderr:
            self.shell = subprocess.Popen(
                ["bash", "-euo", "pipefail", "-c", text],
                cwd=cwd,
                env=env,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,  # what it leaves running is stopped with its process group
            )

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.shell.pid, signal.SIGTERM)
        if self.shell.poll() is None:
            self.shell.kill()
            self.shell.wait()

    def finish(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds), stop what it left running; fail with its output
        unless it exited 0."""
        try:
            self.shell.wait(timeout=timeout)
        finally:
            self.stop()
        assert self.shell.returncode == 0, (
            f"exit {self.shell.returncode}\n{self.out.read_text()[-4000:]}\n{self.err.read_text()[-4000:]}"
        )
