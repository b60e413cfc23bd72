"""The suite's own tooling: pytest-xdist's groups take effect (hack/test.sh runs the tests in
several processes; a module with an environment of its own, such as test_install.py's, must run
in one of them, or each process would make that environment again)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    pass
"""


def test_a_group_runs_in_one_process(tmp_path: Path) -> None:
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "3", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    workers = re.findall(r"^\[(gw\d+)\] .*PASSED", done.stdout, re.M)
    assert len(workers) == 6, done.stdout[-3000:]
    assert len(set(workers)) == 1, f"one group spread over {sorted(set(workers))}"
