"""The tests the docs cite exist: `tests/...py::test_name` (and `::other` after it, in the same
file) names a test function of that file, so a renamed or deleted test cannot leave a doc, such as
docs/testing.md's acceptance points, pointing at nothing."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

from devenv.versions import REPO_ROOT

# A backquoted test id: `tests/a/b.py::name[param]` (or `b.py::name`, the test file's name
# alone), or `::name` after one.
CITED = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)?::(\w+)(?:\[[^\]`]*\])?`")
FILE = re.compile(r"`((?:tests/[\w/]+/)?test_\w+\.py)(?:::|`)")


@cache
def _functions(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    return frozenset(
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    )


def _test_file(cited: str) -> Path | None:
    """The test file a citation names: its path, or its name alone when one file has it."""
    if "/" in cited:
        path = REPO_ROOT / cited
        return path if path.is_file() else None
    found = list((REPO_ROOT / "tests").rglob(cited))
    return found[0] if len(found) == 1 else None


def _citations(text: str) -> list[tuple[int, str, str]]:
    """(line, file, name) for each test id the text cites, `::name` taking the file of the id before
    it on the same line."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        current = ""
        for m in re.finditer(rf"{CITED.pattern}|{FILE.pattern}", line):
            if m.group(1) or m.group(3):
                current = m.group(1) or m.group(3)
            if m.group(2):
                found.append((number, current, m.group(2)))
    return found


def test_a_citation_after_a_file_takes_that_file() -> None:
    line = (
        "| `tests/e2e/test_a.py::test_one`, `::test_two[p]`; `tests/unit/test_b.py`, `::c`; `test_d.py::e` |"
    )
    assert _citations(line) == [
        (1, "tests/e2e/test_a.py", "test_one"),
        (1, "tests/e2e/test_a.py", "test_two"),
        (1, "tests/unit/test_b.py", "c"),
        (1, "test_d.py", "e"),
    ]


def test_every_test_the_docs_cite_exists() -> None:
    docs = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]
    missing, count = [], 0
    for doc in docs:
        for line, file, name in _citations(doc.read_text()):
            count += 1
            path = _test_file(file) if file else None
            if path is None or name not in _functions(path):
                missing.append(f"{doc.relative_to(REPO_ROOT)}:{line}: {file or '?'}::{name}")
    assert count > 100, count  # docs/testing.md's acceptance points alone cite more
    assert not missing, "cited tests that do not exist:\n" + "\n".join(missing)
