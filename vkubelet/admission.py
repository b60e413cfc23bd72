"""What the vkubelet checks before it runs a front pod, as a kubelet's admission does: the pod
carries a decision the extender made for it, for this remote cluster.

A pod bound to a virtual node by anyone but the bridge (``spec.nodeName`` set at creation, a
``pods/binding``, the bridge's annotations written by hand) has no decision whose signature
verifies (:mod:`armada_bridge.contract.decisions`): it is refused, never run.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey, claimed, key_of
from armada_bridge.kube.informer import Informer

#: Reason of a front pod the vkubelet refuses to run (its phase Failed, an Event).
NOT_ADMITTED = "NotAdmitted"


class Verdict(enum.Enum):
    ADMIT = "admit"
    WAIT = "wait"  # the key is not known yet: tried again later
    REFUSE = "refuse"


@dataclass(frozen=True)
class Check:
    verdict: Verdict
    message: str = ""


class PodAdmission:
    """Verifies decisions with the key read from the front Secrets informer (the vkubelet already
    watches Secrets to mirror them), so a key made after the vkubelet started is seen at once."""

    def __init__(self, secrets: Informer, namespace: str = keys.SYSTEM_NAMESPACE) -> None:
        self.secrets = secrets
        self.namespace = namespace
        self._key: tuple[str, DecisionKey] | None = None  # (resourceVersion, key)

    def key(self) -> DecisionKey | None:
        secret = self.secrets.get(keys.DECISION_KEY_SECRET, self.namespace)
        if secret is None:
            return None
        version = str(secret["metadata"].get("resourceVersion") or "")
        if self._key is None or self._key[0] != version:
            try:
                self._key = (version, key_of(secret))
            except ValueError:
                return None
        return self._key[1]

    def check(self, pod: dict[str, Any], cluster: str) -> Check:
        key = self.key()
        if key is None:
            return Check(
                Verdict.WAIT,
                f"waiting for the decision key (Secret {self.namespace}/{keys.DECISION_KEY_SECRET}, "
                "made by the extender) to verify this pod's admission",
            )
        decision = key.verified(pod)
        if decision is not None and decision.cluster == cluster:
            return Check(Verdict.ADMIT)
        node = (pod.get("spec") or {}).get("nodeName") or cluster
        if decision is not None:
            why = f"armada-bridge admitted it to remote cluster {decision.cluster}, not {cluster}"
        elif claimed(pod):
            why = (
                "its decision annotations were not written by armada-bridge (their signature does not verify)"
            )
        else:
            why = "armada-bridge's scheduler never admitted it (spec.nodeName or a binding set by hand?)"
        return Check(
            Verdict.REFUSE,
            f"not run in remote cluster {cluster}: bound to virtual node {node} but {why}; only pods "
            "admitted through their queue run in remote clusters",
        )
