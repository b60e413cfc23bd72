"""Armada's own gang annotations on the pod: ``armadaproject.io/gangId``, ``gangCardinality`` and
``gangNodeUniformityLabel``. No PodGroup object."""

from __future__ import annotations

from armada_bridge import keys
from armada_bridge.objects import ObjView
from extender.protocols.base import GangProtocol, GangSpec, IntentError, annotations_of, to_int, where

NAME = "armada"


def read(pod: ObjView, _name: str | None, _podgroup: ObjView | None) -> GangSpec | None:
    annotations = annotations_of(pod)
    gang_id = annotations.get(keys.GANG_ID)
    if not gang_id:
        return None
    raw = annotations.get(keys.GANG_CARDINALITY)
    if raw is None:
        raise IntentError(
            f"{where(pod)}: annotation {keys.GANG_ID} is set but {keys.GANG_CARDINALITY} is missing"
        )
    return GangSpec(
        key=f"{NAME}/{gang_id}",
        protocol=NAME,
        min_member=to_int(raw, f"{where(pod)}: annotation {keys.GANG_CARDINALITY}", minimum=1),
        node_uniformity_label=annotations.get(keys.GANG_NODE_UNIFORMITY_LABEL) or None,
    )


PROTOCOL = GangProtocol(NAME, read)
