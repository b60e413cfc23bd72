"""Least privilege: every permission the shipped Roles and ClusterRoles grant is in a reviewed
list (tests/unit/rbac_reviewed.txt). A new grant fails here until someone reviews it and adds it;
a grant removed from the manifests must leave the list too, so the list is always the truth."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
REVIEWED = Path(__file__).with_name("rbac_reviewed.txt")
CHARTS = ROOT / "manifests" / "helm"


def granted() -> set[str]:
    out: set[str] = set()
    for path in sorted((ROOT / "manifests").rglob("*.yaml")):
        # The Helm chart's templates are not YAML; its RBAC is the kustomize files (links), and
        # with any values the same grants (tests/unit/test_helm_chart.py).
        if CHARTS in path.parents:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") not in ("Role", "ClusterRole"):
                continue
            role = f"{path.relative_to(ROOT)} {doc['kind']}/{doc['metadata']['name']}"
            for rule in doc.get("rules") or []:
                verbs = rule.get("verbs") or []
                for url in rule.get("nonResourceURLs") or []:
                    out.update(f"{role} url:{url} {v}" for v in verbs)
                for group in rule.get("apiGroups") or []:
                    for resource in rule.get("resources") or []:
                        names = rule.get("resourceNames")
                        scope = f"{group or 'core'}/{resource}" + (f"[{','.join(names)}]" if names else "")
                        out.update(f"{role} {scope} {v}" for v in verbs)
    return out


def reviewed() -> set[str]:
    lines = (line.split("#", 1)[0].strip() for line in REVIEWED.read_text().splitlines())
    return {" ".join(line.split()) for line in lines if line}


def test_every_grant_is_reviewed() -> None:
    new = sorted(granted() - reviewed())
    assert not new, (
        "permissions granted but not reviewed (add them to rbac_reviewed.txt once reviewed):\n"
        + "\n".join(new)
    )


def test_the_reviewed_list_has_nothing_no_longer_granted() -> None:
    gone = sorted(reviewed() - granted())
    assert not gone, "reviewed permissions no longer granted (remove them):\n" + "\n".join(gone)


def test_no_wildcard_write() -> None:
    """Wildcards are allowed only for reading (owners of any kind are looked up with get)."""
    writes = {
        "create",
        "update",
        "patch",
        "delete",
        "deletecollection",
        "*",
        "escalate",
        "bind",
        "impersonate",
    }
    for grant in granted():
        _path, _role, scope, verb = grant.split(" ")
        if "*" in scope:
            assert verb not in writes, grant
