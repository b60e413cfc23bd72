"""The docs' shell cannot drift from the code: every `armada-bridge` and `kubectl armada` command in
README.md and docs/ parses with the CLI's own parser, and every `helm --set` names a value of the
chart's schema (the runnable blocks also run: tests/e2e/test_docs.py)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from typing import Any

import pytest

from cli.main import build_parser, build_plugin_parser
from tests.framework.docs_blocks import ROOT, Block, blocks, commands, program, shell_blocks

SCHEMA = json.loads((ROOT / "manifests/helm/armada-bridge/values.schema.json").read_text())


def _parses(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    """None if `args` parse, else what the parser said."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(args)
    except SystemExit as e:
        if e.code:
            return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else f"exit {e.code}"
    return None


def _in_schema(key: str) -> bool:
    node: dict[str, Any] = SCHEMA
    for part in re.sub(r"\[\d*\]", "", key).split("."):
        if node.get("type") == "array":
            node = node.get("items", {})
        props = node.get("properties")
        if props is None:  # a free-form map (e.g. nodeSelector): any key below it
            return bool(node.get("additionalProperties", True))
        if part not in props:
            return False
        node = props[part]
    return True


def _problems(block: Block) -> list[str]:
    out = []
    for words in commands(block.text):
        name, args = program(words)
        if name == "kubectl" and args[:1] == ["armada"]:
            name, args = "kubectl-armada", args[1:]
        if name == "armada-bridge":
            problem = _parses(build_parser(), args)
        elif name == "kubectl-armada":
            problem = _parses(build_plugin_parser(), args)
        elif name == "helm":
            sets = [args[i + 1] for i, a in enumerate(args[:-1]) if a in ("--set", "--set-string")]
            sets += [a.split("=", 1)[1] for a in args if a.startswith(("--set=", "--set-string="))]
            unknown = [s.split("=", 1)[0] for s in sets for s in s.split(",") if "=" in s]
            problem = ", ".join(k for k in unknown if not _in_schema(k)) or None
            problem = problem and f"not in values.schema.json: {problem}"
        else:
            continue
        if problem:
            out.append(f"{block.where}: `{' '.join(words)}`: {problem}")
    return out


def test_the_docs_commands_parse_and_their_chart_values_exist() -> None:
    found = [b for b in shell_blocks()]
    assert len(found) > 10
    problems = [p for b in found for p in _problems(b)]
    assert problems == [], "\n".join(problems)


def test_the_checker_finds_what_is_wrong(tmp_path: Any) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "```sh\n"
        'export KUBECONFIG="$(armada-bridge dev kubeconfig front --no-such-flag)"\n'
        "kubectl -n a apply -f - <<'EOF'\nnot: a command\nEOF\n"
        "armada-bridge gangs -n team-a && kubectl armada why \\\n  --nope x  # a comment\n"
        "helm install b chart --set image.repository=x,noSuchValue=1\n"
        "```\n"
    )
    (block,) = blocks(doc)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Block, "where", property(lambda self: "x.md"))
        problems = _problems(block)
    assert len(problems) == 3, problems
    assert "--no-such-flag" in problems[0] and "--nope" in problems[1] and "noSuchValue" in problems[2]
    assert problems[2].endswith("not in values.schema.json: noSuchValue")


def test_blocks_carry_their_tags_and_section_and_inline_code_opens_none(tmp_path: Any) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "# Guide\n\n## 3. Helm\n\n"
        "```` ```sh chart ```` blocks run where the chart is installed:\n\n"
        "```sh chart\nhelm install x chart\n```\n\n## 4. Python\n\n"
        "```python runnable\nprint(1)\n```\n"
    )
    found = blocks(doc)
    assert [(b.language, sorted(b.tags), b.section, b.chart, b.runnable) for b in found] == [
        ("sh", ["chart"], "3. Helm", True, False),
        ("python", ["runnable"], "4. Python", False, True),
    ]
