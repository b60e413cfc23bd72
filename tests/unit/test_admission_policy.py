"""The admission policies name the keys, the gate and the virtual resource keys.py defines (one
definition: the YAML cannot import them, so this keeps them equal). What they do is tested on the
real API server (tests/e2e/test_tenant_integrity.py)."""

from __future__ import annotations

import ast
import re

import pytest
import yaml

from armada_bridge import keys
from devenv.versions import REPO_ROOT

pytestmark = pytest.mark.unit

POLICY = REPO_ROOT / "manifests" / "extender" / "admission-policy.yaml"


def _docs() -> dict[str, dict]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(POLICY.read_text())}


def _variable(policy: dict, name: str) -> str:
    return next(v["expression"] for v in policy["spec"]["variables"] if v["name"] == name)


def test_the_policy_names_the_keys_of_keys_py() -> None:
    policy = _docs()["ValidatingAdmissionPolicy/armada-bridge-decisions"]
    assert tuple(ast.literal_eval(_variable(policy, "bridgeOnly"))) == keys.BRIDGE_ONLY_ANNOTATIONS
    assert tuple(ast.literal_eval(_variable(policy, "immutable"))) == keys.IMMUTABLE_ANNOTATIONS
    gate = _variable(policy, "gateLifted")
    assert set(re.findall(r"g\.name == '([^']+)'", gate)) == {keys.SCHEDULING_GATE}


def test_the_permissions_checked_are_the_ones_rbac_grants() -> None:
    docs = _docs()
    wanted = {
        "ValidatingAdmissionPolicy/armada-bridge-decisions": ("mayDecide", keys.DECISIONS_WRITE),
        "ValidatingAdmissionPolicy/armada-bridge-virtual-nodes": ("mayBind", keys.DECISIONS_BIND),
    }
    for name, (variable, verb) in wanted.items():
        policy = docs[name]
        assert "matchConditions" not in policy["spec"]  # every caller is matched; the check is in each rule
        assert _variable(policy, variable).strip() == (
            f"authorizer.group('{keys.GROUP}').resource('{keys.DECISIONS_RESOURCE}').check('{verb}').allowed()"
        )
        # Each rule holds for whoever has the permission, asked last (only when the rule fails).
        for rule in policy["spec"]["validations"]:
            assert rule["expression"].endswith(f" || variables.{variable}"), rule["expression"]
    # Every policy is bound, and denies (not only warns or audits).
    for doc in docs.values():
        if doc["kind"] == "ValidatingAdmissionPolicy":
            binding = docs[f"ValidatingAdmissionPolicyBinding/{doc['metadata']['name']}"]
            assert binding["spec"]["validationActions"] == ["Deny"]
            assert doc["spec"]["failurePolicy"] == "Fail"


def test_virtual_nodes_are_the_remoteclusters() -> None:
    policy = _docs()["ValidatingAdmissionPolicy/armada-bridge-virtual-nodes"]
    assert policy["spec"]["paramKind"] == {"apiVersion": keys.API_VERSION, "kind": "RemoteCluster"}
