"""Kueue pod groups: label ``kueue.x-k8s.io/pod-group-name`` and annotation
``kueue.x-k8s.io/pod-group-total-count`` on each pod. No PodGroup object: the smallest protocol."""

from __future__ import annotations

from armada_bridge import keys
from armada_bridge.objects import ObjView
from extender.protocols.base import (
    GangProtocol,
    GangSpec,
    IntentError,
    annotations_of,
    labels_of,
    to_int,
    where,
)

NAME = "kueue"


def read(pod: ObjView, _name: str | None, _podgroup: ObjView | None) -> GangSpec | None:
    group = labels_of(pod).get(keys.KUEUE_POD_GROUP_NAME_LABEL)
    if not group:
        return None
    raw = annotations_of(pod).get(keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION)
    if raw is None:
        raise IntentError(
            f"{where(pod)}: label {keys.KUEUE_POD_GROUP_NAME_LABEL} is set but annotation "
            f"{keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION} is missing"
        )
    total = to_int(raw, f"{where(pod)}: annotation {keys.KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION}", minimum=1)
    return GangSpec(key=f"{NAME}/{group}", protocol=NAME, min_member=total)


PROTOCOL = GangProtocol(NAME, read)
