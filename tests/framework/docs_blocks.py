"""The shell in the docs: README.md's and docs/**/*.md's fenced blocks, those marked runnable
(```` ```sh runnable ```` or ```` ```python runnable ````, run as written against the dev
environment by tests/e2e/test_docs.py), those marked chart (```` ```sh chart ````, an admin's
commands run as written by tests/e2e/test_install.py where the chart is installed) and the others
(their `armada-bridge`, `kubectl armada` and `helm --set` lines checked by
tests/unit/test_docs_commands.py). Pure."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from devenv.versions import REPO_ROOT

ROOT = REPO_ROOT
SHELLS = ("sh", "bash", "shell", "console")
RUNNABLE = "runnable"
CHART = "chart"
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*$")
_FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(\S*)\s*(.*)$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)(\w+)\1")
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}"}


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # of its opening fence, from 1
    language: str
    tags: frozenset[str]  # the words after the language: RUNNABLE, CHART
    section: str  # the heading it is under ("" before the first)
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def runnable(self) -> bool:
        return RUNNABLE in self.tags

    @property
    def chart(self) -> bool:
        return CHART in self.tags


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    out: list[Block] = []
    lines = path.read_text().splitlines()
    section = ""
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m and m.group(2).startswith("`") and "`" in m.group(3) + m.group(4):
            m = None  # CommonMark: a backtick fence's info string has no backtick (inline code, then)
        if not m:
            if heading := _HEADING.match(lines[i]):
                section = heading.group(1)
            i += 1
            continue
        indent, fence, language, rest = m.groups()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        out.append(Block(path, i + 1, language, frozenset(rest.split()), section, "\n".join(body) + "\n"))
        i = j + 1
    return out


def chart_blocks() -> list[Block]:
    """Every block of the docs marked chart, in the docs' order."""
    return [b for path in doc_files() for b in blocks(path) if b.chart]


def shell_blocks() -> Iterator[Block]:
    for path in doc_files():
        yield from (b for b in blocks(path) if b.language in SHELLS)


def commands(script: str) -> Iterator[list[str]]:
    """The simple commands of a shell script as argument lists (heredocs' bodies skipped, line
    continuations joined, comments dropped; `$(...)` substitutions yielded as commands of their
    own; a `$ ` prompt dropped). Words stay as written (variables unexpanded)."""
    lines = script.splitlines()
    logical: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        while line.endswith("\\") and i + 1 < len(lines):
            i += 1
            line = line[:-1] + " " + lines[i]
        i += 1
        if heredoc := _HEREDOC.search(line):
            while i < len(lines) and lines[i].strip() != heredoc.group(2):
                i += 1
            i += 1
            line = _HEREDOC.sub("", line)
        logical.append(line.removeprefix("$ "))
    for line in logical:
        for inner in _SUBSTITUTION.findall(line):
            yield from commands(inner)
        lexer = shlex.shlex(_SUBSTITUTION.sub("SUBSTITUTED", line), posix=True, punctuation_chars=";&|(){}")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for word in lexer:
            if word in _SEPARATORS or set(word) <= set(";&|(){}"):
                if words:
                    yield words
                words = []
            else:
                words.append(word)
        if words:
            yield words


def program(words: list[str]) -> tuple[str, list[str]]:
    """(the program a command runs, its arguments), past `VAR=value` prefixes and `.venv/bin/`."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    if not words:
        return "", []
    return words[0].rsplit("/", 1)[-1], words[1:]
