"""The queue a front pod asks for, read from the protocols operators already speak (its gang:
:mod:`extender.protocols`). Pure.

**Queue precedence** (:func:`queue_of`), the first that names one:

1. the pod's label ``armadaproject.io/queue`` (or its root controller's, which the webhook writes
   on the pod as its own label when it is created: :meth:`extender.describe.Describer.inherited`);
2. the queue its Volcano PodGroup names in ``spec.queue``, unless that is Volcano's ``default``;
3. the pod's Volcano queue label ``volcano.sh/queue-name`` or annotation
   ``scheduling.volcano.sh/queue-name``;
4. the pod's label ``kueue.x-k8s.io/queue-name``;
5. the namespace's label ``armadaproject.io/queue``;
6. Volcano's ``default``, for a pod whose Volcano PodGroup names no other queue.

Volcano's ``default`` is what a PodGroup says when nobody named a queue: the PodGroup CRD fills
it in, and KubeRay, training-operator and the Spark operator write it for objects that name none.
So it does not beat the namespace's queue: an operator's job in a namespace an admin opened to
``team-a`` runs in ``team-a``. None of these: the bridge does not manage the pod. Whichever names
the queue, the queue must take the pod's namespace (:mod:`armada_bridge.contract.queue_access`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from armada_bridge import keys
from armada_bridge.objects import ObjView
from extender.protocols import volcano
from extender.protocols.base import annotations_of, labels_of


class QueueSource(enum.StrEnum):
    POD_LABEL = "pod-label"
    VOLCANO_PODGROUP = "volcano-podgroup"
    VOLCANO_POD = "volcano-pod"
    KUEUE_LABEL = "kueue-label"
    NAMESPACE_LABEL = "namespace-label"
    VOLCANO_DEFAULT = "volcano-default"
    NONE = "none"

    @property
    def explains(self) -> str:
        """Where the queue came from, for ``why``."""
        return _EXPLAINS[self]


_EXPLAINS = {
    QueueSource.POD_LABEL: f"the pod's label {keys.QUEUE_LABEL}",
    QueueSource.VOLCANO_PODGROUP: "its Volcano PodGroup's spec.queue",
    QueueSource.VOLCANO_POD: (
        f"the pod's label {keys.VOLCANO_QUEUE_NAME_LABEL} or annotation {keys.VOLCANO_QUEUE_NAME_ANNOTATION}"
    ),
    QueueSource.KUEUE_LABEL: f"the pod's label {keys.KUEUE_QUEUE_NAME_LABEL}",
    QueueSource.NAMESPACE_LABEL: f"the namespace's label {keys.QUEUE_LABEL}",
    QueueSource.VOLCANO_DEFAULT: (
        f"Volcano's default (its PodGroup names no other queue, nor does the namespace's label {keys.QUEUE_LABEL})"
    ),
    QueueSource.NONE: "nothing",
}


# --------------------------------------------------------------------------- queue
def queue_of(
    pod: ObjView, *, volcano_podgroup: ObjView | None, namespace_labels: Mapping[str, str]
) -> tuple[str | None, QueueSource]:
    """(queue, source) of a pod; (None, "none") when no protocol names one: the pod is not managed."""
    labels, annotations = labels_of(pod), annotations_of(pod)
    if labels.get(keys.QUEUE_LABEL):
        return labels[keys.QUEUE_LABEL], QueueSource.POD_LABEL
    if not annotations.get(keys.VOLCANO_GROUP_NAME_ANNOTATION):
        volcano_podgroup = None  # a PodGroup the pod does not name is not its own
    if volcano_podgroup is not None and (named := volcano.named_queue(volcano_podgroup)):
        return named, QueueSource.VOLCANO_PODGROUP
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
    if volcano_podgroup is not None:
        return volcano.DEFAULT_QUEUE, QueueSource.VOLCANO_DEFAULT
    return None, QueueSource.NONE


#: sources that name a queue for this pod itself (not its namespace, not a protocol's default).
OWN_SOURCES = frozenset(
    {QueueSource.POD_LABEL, QueueSource.VOLCANO_PODGROUP, QueueSource.VOLCANO_POD, QueueSource.KUEUE_LABEL}
)
