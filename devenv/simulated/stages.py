"""KWOK's pod and node lifecycles in the remote clusters (hack/kwok/remote-stages.yaml)."""

from __future__ import annotations

from typing import Any

import yaml

from devenv import versions

REMOTE_STAGES = versions.REPO_ROOT / "hack" / "kwok" / "remote-stages.yaml"


def remote_stages() -> list[dict[str, Any]]:
    """KWOK's pod and node lifecycles in remote clusters (mirrored Job pods complete too)."""
    return [d for d in yaml.safe_load_all(REMOTE_STAGES.read_text()) if d]
