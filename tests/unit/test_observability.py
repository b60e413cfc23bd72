"""The Grafana dashboard and the alerts of manifests/observability: every metric they query is one
the extender or the vkubelet exports, the dashboard shows every exported metric, and the rules
pass `promtool check rules` and their own `promtool test rules` cases."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from extender.metrics import Metrics as ExtenderMetrics
from vkubelet.metrics import Metrics as VkubeletMetrics

pytestmark = pytest.mark.unit

OBSERVABILITY = Path(__file__).parents[2] / "manifests" / "observability"
DASHBOARD = OBSERVABILITY / "grafana-dashboard.json"
RULES = OBSERVABILITY / "prometheusrule.yaml"
RULE_TESTS = OBSERVABILITY / "prometheusrule-test.yaml"
#: the name prometheusrule-test.yaml gives the plain rules file (the PrometheusRule's spec)
RULES_FILE_NAME = "armada-bridge.rules.yaml"

# --------------------------------------------------------------------------- metric names in PromQL
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_VARIABLES = re.compile(r"\$\{[^}]*\}|\$\w+")
_IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
_KEYWORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool"}
    | {"offset", "atan2", "inf", "nan"}
)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (Grafana variables allowed): what is left of
    the identifiers once strings, label matchers, ranges, grouping clauses, functions, keywords
    and numbers are set aside."""
    s = _STRINGS.sub('""', expr)
    s = _MATCHERS.sub(" ", s)
    s = _RANGES.sub(" ", s)
    s = _VARIABLES.sub(" ", s)
    s = _GROUPING.sub(" ", s)
    names = set()
    for m in _IDENTIFIER.finditer(s):
        word, before = m.group(), s[m.start() - 1] if m.start() else " "
        if word.lower() in _KEYWORDS or before.isdigit() or before == ".":  # 1e3, 2.5e-1, 5m
            continue
        if s[m.end() :].lstrip().startswith("("):  # a function or an aggregation
            continue
        names.add(word)
    return names


def test_metric_names_reads_selectors_and_nothing_else() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, endpoint) (rate(a_bucket{endpoint=~"filter|b_total",'
        ' queue=~"$queue"}[$__rate_interval]))) > 1e3 and on (instance) (c == 1)'
        ' unless ignoring(x) d offset 5m or absent(e{le="+Inf"}) / sum(f) by (g) or vector(1)'
    )
    assert metric_names(expr) == {"a_bucket", "c", "d", "e", "f"}


# --------------------------------------------------------------------------- what the code exports
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "info": ("_info",),
}


def _families(registry: CollectorRegistry) -> dict[str, str]:
    """family name -> type, for every collector registered (labelled ones with no series yet too)."""
    return {family.name: family.type for family in registry.collect()}


def exported_families() -> dict[str, str]:
    return {**_families(ExtenderMetrics().registry), **_families(VkubeletMetrics().registry)}


def exported_names() -> dict[str, str]:
    """Every series name the extender and the vkubelet can expose -> its family."""
    return {
        f"{family}{suffix}": family
        for family, kind in exported_families().items()
        for suffix in _SUFFIXES[kind]
    }


# --------------------------------------------------------------------------- the artifacts
def _dashboard() -> dict[str, Any]:
    data = json.loads(DASHBOARD.read_text())
    assert isinstance(data, dict)
    return data


def _rule_groups() -> dict[str, Any]:
    rule = yaml.safe_load(RULES.read_text())
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["kind"] == "PrometheusRule"
    assert rule["metadata"]["name"] and rule["metadata"]["namespace"]
    spec = rule["spec"]
    assert isinstance(spec, dict) and spec["groups"]
    return spec


def _panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])  # inside a collapsed row


def _dashboard_exprs() -> dict[str, str]:
    """ "panel title / refId" -> expression, of every panel target and template variable query."""
    dashboard = _dashboard()
    exprs = {
        f"{p['title']} / {t['refId']}": t["expr"] for p in _panels(dashboard) for t in p.get("targets", [])
    }
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
            exprs[f"variable {var['name']}"] = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", query)
    return exprs


def _rule_exprs() -> dict[str, str]:
    return {
        rule.get("alert") or rule["record"]: rule["expr"]
        for group in _rule_groups()["groups"]
        for rule in group["rules"]
    }


def _rule_test_series() -> dict[str, str]:
    tests = yaml.safe_load(RULE_TESTS.read_text())
    return {
        f"{t['name']}: {s['series']}": s["series"] for t in tests["tests"] for s in t.get("input_series", [])
    }


# --------------------------------------------------------------------------- the tests
@pytest.mark.parametrize(
    "source", [_dashboard_exprs, _rule_exprs, _rule_test_series], ids=["dashboard", "rules", "rule-tests"]
)
def test_every_metric_queried_is_one_the_code_exports(source: Any) -> None:
    exported = exported_names()
    unknown = {
        where: sorted(names - exported.keys())
        for where, expr in source().items()
        if (names := metric_names(expr)) - exported.keys()
    }
    assert not unknown, (
        f"metrics no collector of extender/metrics.py or vkubelet/metrics.py exports: {unknown}"
    )
    assert all(metric_names(expr) for expr in source().values())  # each selects something


def test_the_dashboard_shows_every_exported_metric() -> None:
    exported = exported_names()
    shown = {exported[n] for expr in _dashboard_exprs().values() for n in metric_names(expr)}
    assert set(exported_families()) - shown == set()


def test_the_dashboard_is_grafana_json_on_a_datasource_variable() -> None:
    dashboard = _dashboard()
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in _panels(dashboard)]
    assert len(ids) == len(set(ids))
    graphs = [p for p in _panels(dashboard) if p["type"] != "row"]
    assert graphs
    for panel in _panels(dashboard):
        assert {"h", "w", "x", "y"} <= panel["gridPos"].keys() and panel["gridPos"]["x"] + panel["gridPos"][
            "w"
        ] <= 24
    for panel in graphs:
        assert panel["type"] in {"timeseries", "stat"}, panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"] and target["expr"] and target["refId"]
    for var in variables.values():
        if var["type"] == "query":
            assert var["datasource"] == {"type": "prometheus", "uid": "${datasource}"}


def test_the_alerts_an_admin_expects_are_there_each_tested_firing_and_quiet() -> None:
    alerts = {r["alert"]: r for g in _rule_groups()["groups"] for r in g["rules"] if "alert" in r}
    expected = {
        "ArmadaBridgeRemoteClusterNotReady",  # a remote cluster NotReady
        "ArmadaBridgeGangWaitingTooLong",  # gangs waiting past a threshold
        "ArmadaBridgeWebhookErrors",  # webhook errors
        "ArmadaBridgeRoundLatencyHigh",  # round latency
    }
    assert expected <= alerts.keys()
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in {"warning", "critical"}, name
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], name
    tests = yaml.safe_load(RULE_TESTS.read_text())
    assert tests["rule_files"] == [RULES_FILE_NAME]
    cases = [c for t in tests["tests"] for c in t.get("alert_rule_test", [])]
    fires = {c["alertname"] for c in cases if c.get("exp_alerts")}
    quiet = {c["alertname"] for c in cases if not c.get("exp_alerts")}
    assert fires == alerts.keys() and quiet == alerts.keys()


# --------------------------------------------------------------------------- promtool
def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip(
            "promtool not found: hack/setup.sh installs it (Debian's prometheus package), as "
            "hack/test.sh and CI run it first"
        )
    return found


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's spec as the plain rules file promtool reads, with the rule tests beside it."""
    (tmp_path / RULES_FILE_NAME).write_text(yaml.safe_dump(_rule_groups(), sort_keys=False))
    shutil.copy(RULE_TESTS, tmp_path / RULE_TESTS.name)
    return tmp_path


def _run(cwd: Path, *args: str) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def test_promtool_checks_the_rules(rules_dir: Path) -> None:
    output = _run(rules_dir, _promtool(), "check", "rules", RULES_FILE_NAME)
    assert "SUCCESS" in output


def test_promtool_rule_tests_pass(rules_dir: Path) -> None:
    output = _run(rules_dir, _promtool(), "test", "rules", RULE_TESTS.name)
    assert "SUCCESS" in output and "FAILED" not in output
