"""The queue a front pod asks for, read from the protocols operators already speak (its gang:
:mod:`extender.protocols`). Pure.

**Queue precedence** (:func:`queue_of`): pod label ``armadaproject.io/queue``; else the pod's Volcano
PodGroup ``spec.queue`` (``default`` when empty, as Volcano defaults it); else the pod's Volcano
queue label ``volcano.sh/queue-name`` or annotation ``scheduling.volcano.sh/queue-name``; else the
pod label ``kueue.x-k8s.io/queue-name``; else the namespace label ``armadaproject.io/queue``. None
of these: the bridge does not manage the pod. (Between the last two comes the root controller's
queue label, which the webhook writes on the pod as its own label when it is created:
:meth:`extender.describe.Describer.inherited`.)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from armada_bridge import keys
from extender.protocols import volcano
from extender.protocols.base import Obj, annotations_of, labels_of


class QueueSource(enum.StrEnum):
    POD_LABEL = "pod-label"
    VOLCANO_PODGROUP = "volcano-podgroup"
    VOLCANO_POD = "volcano-pod"
    KUEUE_LABEL = "kueue-label"
    NAMESPACE_LABEL = "namespace-label"
    NONE = "none"


# --------------------------------------------------------------------------- queue
def queue_of(
    pod: Obj, *, volcano_podgroup: Obj | None, namespace_labels: Mapping[str, str]
) -> tuple[str | None, str]:
    """(queue, source) of a pod; (None, "none") when no protocol names one: the pod is not managed."""
    labels, annotations = labels_of(pod), annotations_of(pod)
    if labels.get(keys.QUEUE_LABEL):
        return labels[keys.QUEUE_LABEL], QueueSource.POD_LABEL
    if volcano_podgroup is not None and annotations.get(keys.VOLCANO_GROUP_NAME_ANNOTATION):
        return volcano.queue_of(volcano_podgroup), QueueSource.VOLCANO_PODGROUP
    for value in (
        labels.get(keys.VOLCANO_QUEUE_NAME_LABEL),
        annotations.get(keys.VOLCANO_QUEUE_NAME_ANNOTATION),
    ):
        if value:
            return value, QueueSource.VOLCANO_POD
    if labels.get(keys.KUEUE_QUEUE_NAME_LABEL):
        return labels[keys.KUEUE_QUEUE_NAME_LABEL], QueueSource.KUEUE_LABEL
    if namespace_labels.get(keys.QUEUE_LABEL):
        return namespace_labels[keys.QUEUE_LABEL], QueueSource.NAMESPACE_LABEL
    return None, QueueSource.NONE
