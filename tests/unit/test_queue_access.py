"""Which namespaces a Queue takes pods from (armada_bridge/contract/queue_access.py)."""

from __future__ import annotations

from typing import Any

import pytest

from armada_bridge import keys
from armada_bridge.contract.queue_access import refusal, selector_matches


def queue(name: str = "team-a", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


def test_no_selector_takes_only_the_namespaces_labelled_for_it() -> None:
    assert refusal(queue(), "ns-a", {keys.QUEUE_LABEL: "team-a"}) is None
    why = refusal(queue(), "ns-b", {keys.QUEUE_LABEL: "team-b"})
    assert why is not None and why.startswith("queue team-a does not take pods from namespace ns-b")
    assert "no spec.namespaceSelector" in why
    assert refusal({"metadata": {"name": "team-a"}}, "ns-c", {}) is not None


def test_an_empty_selector_takes_every_namespace() -> None:
    assert refusal(queue(namespaceSelector={}), "anything", {}) is None


def test_a_selector_takes_the_namespaces_it_matches_and_its_labelled_ones() -> None:
    q = queue(namespaceSelector={"matchLabels": {"team": "a"}})
    assert refusal(q, "ns-a", {"team": "a"}) is None
    assert refusal(q, "ns-l", {keys.QUEUE_LABEL: "team-a"}) is None
    why = refusal(q, "ns-b", {"team": "b"})
    assert why is not None and "spec.namespaceSelector does not match" in why


@pytest.mark.parametrize(
    ("expression", "labels", "matches"),
    [
        (
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["x", "y"]},
            {"kubernetes.io/metadata.name": "y"},
            True,
        ),
        (
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["x"]},
            {"kubernetes.io/metadata.name": "y"},
            False,
        ),
        ({"key": "tier", "operator": "NotIn", "values": ["prod"]}, {}, True),
        ({"key": "tier", "operator": "NotIn", "values": ["prod"]}, {"tier": "prod"}, False),
        ({"key": "tier", "operator": "Exists"}, {"tier": ""}, True),
        ({"key": "tier", "operator": "DoesNotExist"}, {"tier": ""}, False),
        # Node affinity's operators are no label selector's: they match nothing.
        ({"key": "n", "operator": "Gt", "values": ["1"]}, {"n": "5"}, False),
    ],
)
def test_label_selector_expressions(
    expression: dict[str, Any], labels: dict[str, str], matches: bool
) -> None:
    assert selector_matches({"matchExpressions": [expression]}, labels) is matches


def test_match_labels_and_expressions_all_hold() -> None:
    selector = {"matchLabels": {"team": "a"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    assert selector_matches(selector, {"team": "a", "tier": "x"})
    assert not selector_matches(selector, {"team": "a"})
    assert not selector_matches(selector, {"tier": "x"})
