"""The dev remote clusters' KWOK stages name the keys the code defines (armada_bridge.keys)."""

from __future__ import annotations

from armada_bridge import keys
from devenv.simulated.stages import remote_stages


def test_run_to_completion_pods_end_after_the_runtime_their_annotation_gives() -> None:
    (stage,) = [s for s in remote_stages() if s["metadata"]["name"] == "pod-complete-after-runtime"]
    expression = f'.metadata.annotations["{keys.SIMULATED_RUNTIME}"]'
    selectors = {e["key"]: e for e in stage["spec"]["selector"]["matchExpressions"]}
    assert selectors[expression]["operator"] == "Exists"
    assert set(selectors[".spec.restartPolicy"]["values"]) == {"Never", "OnFailure"}
    assert stage["spec"]["delay"]["durationFrom"]["expressionFrom"] == expression
    assert "phase: Succeeded" in stage["spec"]["next"]["statusTemplate"]
