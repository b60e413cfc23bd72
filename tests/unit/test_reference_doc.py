"""docs/reference.md cannot drift from the code: it names every metric the extender and the
vkubelet export, every alert of the PrometheusRule, every Event reason the extender and the
vkubelet write, every field of the Queue and RemoteCluster CRDs, every command and flag of the CLI
and every exit status; and no metric or alert the code lacks."""

from __future__ import annotations

import argparse
import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.errors import Status
from cli.main import build_parser, build_plugin_parser
from extender.metrics import Metrics as ExtenderMetrics
from extender.simulator.cli import build_parser as build_simulate_parser
from vkubelet.metrics import Metrics as VkubeletMetrics

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "reference.md"
RULES = ROOT / "manifests" / "observability" / "prometheusrule.yaml"
CRDS = ROOT / "manifests" / "crds"


def _page() -> str:
    return PAGE.read_text()


def _code_spans(text: str) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", text))


# --------------------------------------------------------------------------- metrics
_SERIES_SUFFIXES = {"histogram": ("_bucket", "_count", "_sum")}


def exported_metrics() -> dict[str, str]:
    """Every metric the extender and the vkubelet register (counters with their `_total`) -> type."""
    out = {}
    for registry in (ExtenderMetrics().registry, VkubeletMetrics().registry):
        for family in registry.collect():
            name = family.name + ("_total" if family.type == "counter" else "")
            out[name] = family.type
    return out


def test_the_page_names_every_metric_and_none_the_code_lacks() -> None:
    metrics = exported_metrics()
    assert len(metrics) > 20 and "vkubelet_remote_cluster_ready" in metrics
    spans = _code_spans(_page())
    assert sorted(m for m in metrics if m not in spans) == []
    series = set(metrics) | {
        f"{name}{suffix}" for name, kind in metrics.items() for suffix in _SERIES_SUFFIXES.get(kind, ())
    }
    named = set(re.findall(r"\b(?:armada_bridge|vkubelet)_[a-z0-9_]+", _page()))
    assert sorted(named - series) == []


# --------------------------------------------------------------------------- alerts
def alerts() -> set[str]:
    rule = yaml.safe_load(RULES.read_text())
    return {r["alert"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}


def test_the_page_names_every_alert_and_none_the_rules_lack() -> None:
    defined = alerts()
    assert len(defined) > 5
    assert sorted(defined - _code_spans(_page())) == []
    assert sorted(set(re.findall(r"\bArmadaBridge[A-Za-z]+", _page())) - defined) == []


# --------------------------------------------------------------------------- Event reasons
#: The calls that write an Event (or fail a pod with an Event), and the position of their reason.
EVENT_CALLS = {
    "emit": 1,  # extender.events.EventRecorder.emit(obj, reason, message)
    "pod_event": 2,  # vkubelet.events.Recorder.pod_event(pod, type_, reason, message)
    "cluster_event": 2,  # vkubelet.events.Recorder.cluster_event(rc, type_, reason, message)
    "_fail": 1,  # vkubelet.pods: the pod fails with that reason and an Event
    "_wait": 1,  # vkubelet.pods: the pod waits, with an Event
}
#: Functions that pass on a reason they were given without being one of EVENT_CALLS themselves:
#: extender.events.EventRecorder._write writes what `emit` queued.
EVENT_WRITERS = {"_write"}
EVENT_PACKAGES = ("extender", "vkubelet")


class _Reasons(ast.NodeVisitor):
    """The reasons of the Event calls of one module: a string literal, a constant of the module
    (imported to read it), or a local variable assigned string literals; a parameter of the
    function making the call is passed through (that function is noted in `wrappers`: its callers
    are read instead, if it is one of EVENT_CALLS)."""

    def __init__(self, module: str, path: Path) -> None:
        self.module, self.path = module, path
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.found: set[str] = set()
        self.unknown: list[str] = []
        self.wrappers: set[str] = set()

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name not in EVENT_CALLS:
            return
        arg = next((k.value for k in node.keywords if k.arg == "reason"), None)
        if arg is None and len(node.args) > EVENT_CALLS[name]:
            arg = node.args[EVENT_CALLS[name]]
        if arg is not None:
            self._resolve(arg)

    def _resolve(self, arg: ast.expr) -> None:
        where = f"{self.path.relative_to(ROOT)}:{arg.lineno}"
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            self.found.add(arg.value)
            return
        if isinstance(arg, ast.Name):
            fn = self.functions[-1] if self.functions else None
            params = (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs) if fn is not None else ()
            if fn is not None and arg.id in {a.arg for a in params}:
                self.wrappers.add(fn.name)  # passed through
                return
            value = getattr(importlib.import_module(self.module), arg.id, None)
            if isinstance(value, str):
                self.found.add(value)
                return
            values = [
                _literals(n.value)
                for n in (ast.walk(fn) if fn is not None else ())
                if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == arg.id for t in n.targets)
            ]
            if values and all(v is not None for v in values):
                self.found.update(r for v in values if v is not None for r in v)
                return
        self.unknown.append(f"{where}: {ast.unparse(arg)}")


def _literals(expr: ast.expr) -> list[str] | None:
    """The strings an expression of string literals and conditionals can be; None: anything else."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.IfExp):
        body, orelse = _literals(expr.body), _literals(expr.orelse)
        return None if body is None or orelse is None else body + orelse
    return None


def _modules() -> Iterator[tuple[str, Path]]:
    for package in EVENT_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def event_reasons() -> set[str]:
    found: set[str] = set()
    unknown: list[str] = []
    wrappers: set[str] = set()
    for module, path in _modules():
        reader = _Reasons(module, path)
        reader.visit(ast.parse(path.read_text(), str(path)))
        found |= reader.found
        unknown += reader.unknown
        wrappers |= reader.wrappers
    assert unknown == [], f"Event reasons this test cannot read (extend _Reasons): {unknown}"
    unread = wrappers - EVENT_CALLS.keys() - EVENT_WRITERS
    assert not unread, f"functions passing an Event reason on whose callers are not read: {unread}"
    return found


def test_event_reasons_are_read_from_the_code() -> None:
    reasons = event_reasons()
    assert {"ArmadaWaiting", "ArmadaBound", "Preempted", "NotAdmitted", "CleanupBlocked"} <= reasons
    assert {"RemotePodDeleted", "RemotePodEvicted", "RemoteUnschedulable"} <= reasons
    assert len(reasons) > 15


def test_the_page_names_every_event_reason() -> None:
    assert sorted(event_reasons() - _code_spans(_page())) == []


# --------------------------------------------------------------------------- CRD fields
def _fields(schema: dict[str, Any], path: str) -> Iterator[str]:
    """The dotted paths of an object schema's fields; a map's keys are `<...>`; lists not entered."""
    for name, sub in (schema.get("properties") or {}).items():
        yield f"{path}.{name}"
        yield from _fields(sub, f"{path}.{name}")
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("properties"):
        yield from _fields(extra, f"{path}.<>")


def crd_fields(file: str) -> list[str]:
    crd = yaml.safe_load((CRDS / file).read_text())
    (version,) = crd["spec"]["versions"]
    top = version["schema"]["openAPIV3Schema"]["properties"]
    return [f for part in ("spec", "status") for f in _fields(top[part], part)]


def _named(page: str, spans: set[str], field: str) -> bool:
    """`field` is written out (a map key as any `<name>`) or, for an object, its fields are; or its
    parent is and its own name is a code span of the page (a selector's `matchLabels`)."""
    pattern = r"\.<[^>`]+>".join(re.escape(p) for p in field.split(".<>"))
    if re.search(rf"`{pattern}[`.]", page):
        return True
    parent, _, leaf = field.rpartition(".")
    return "." in parent and _named(page, spans, parent) and leaf in spans


@pytest.mark.parametrize("file", ["queues.yaml", "remoteclusters.yaml"])
def test_the_page_names_every_crd_field(file: str) -> None:
    page = _page()
    spans = _code_spans(page)
    fields = crd_fields(file)
    assert len(fields) > 8
    assert [f for f in fields if not _named(page, spans, f)] == []


# --------------------------------------------------------------------------- CLI
def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_commands() -> dict[str, set[str]]:
    """Every command ("dev up", "clusters join", ...) -> its long options."""
    out: dict[str, set[str]] = {}

    def walk(prefix: str, parser: argparse.ArgumentParser) -> None:
        subs = _subcommands(parser)
        for name, sub in subs.items():
            walk(f"{prefix} {name}".strip(), sub)
        options = {o for a in parser._actions for o in a.option_strings if o.startswith("--")} - {"--help"}
        if prefix and (options or not subs):
            out[prefix] = options

    walk("", build_parser())
    walk("", build_plugin_parser())
    out["simulate"] = {
        o for a in build_simulate_parser()._actions for o in a.option_strings if o.startswith("--")
    } - {"--help", "--workloads"}  # --workloads: an alias of --workload
    return out


def test_the_page_names_every_command_and_flag() -> None:
    spans = _code_spans(_page())
    flags = {f for span in spans for f in re.findall(r"--[a-z][a-z-]*", span)}
    commands = cli_commands()
    assert {"queues", "why", "clusters join", "remove-clusters", "dev up", "simulate"} <= commands.keys()
    missing = {}
    for command, options in commands.items():
        named = any(f"{s} ".startswith(f"{command} ") for s in spans)
        if options - flags or not named:
            missing[command] = sorted(options - flags) + ([] if named else ["(the command)"])
    assert missing == {}


def test_the_page_names_every_exit_status() -> None:
    rows = set(re.findall(r"^\| (\d+) \|", _page(), re.M))
    assert {str(int(s)) for s in Status} | {"0", "2"} <= rows
