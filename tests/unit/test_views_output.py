"""`-o json|yaml|wide` of the CLI's views: the same data as the tables, as plain data."""

from __future__ import annotations

import json

import yaml

from armada_bridge import keys
from cli.views import _gangs_table, rendered
from extender import overview
from tests.framework.pods import pod


def _pod(name: str) -> dict[str, object]:
    return pod(
        name, created="2026-12-06T00:00:00Z", annotations={keys.GANG_ID: "g", keys.GANG_CARDINALITY: "2"}
    )


def test_views_render_as_json_yaml_and_wide_tables() -> None:
    pods = [_pod("a"), _pod("b")]
    views = overview.read_pods(pods, {}, {"team-a": {keys.QUEUE_LABEL: "team-a"}})
    units = [u for u in overview.units(views) if u.kind == "gang"]
    as_json = json.loads(rendered(units, "json", lambda: "table"))
    assert (
        as_json[0]["name"] == "armada/g"
        and as_json[0]["queue"] == "team-a"
        and as_json[0]["pods"] == ["a", "b"]
    )
    assert yaml.safe_load(rendered(units, "yaml", lambda: "table")) == as_json
    assert rendered(units, "", lambda: "table") == "table"
    wide = _gangs_table(units, wide=True).splitlines()
    assert wide[0].split()[-2:] == ["CREATED", "PODS"] and wide[1].split()[-1] == "a,b", wide
    # a pod's story: its queue's source (an enum) and its gang (nested dataclasses) as plain data
    story = overview.story(pods[0], views[0], [])
    said = yaml.safe_load(rendered(story, "yaml", lambda: ""))
    assert said["pod"]["queue_source"] == "namespace-label" and said["pod"]["gang"]["key"] == "armada/g", said
