"""Gang protocols: the ways operators already ask for gangs, one module each.

=============  ==========================================  =========================================
protocol       how a pod joins                              where the gang is described
=============  ==========================================  =========================================
armada         annotation ``armadaproject.io/gangId``       ``gangCardinality``,
                                                            ``gangNodeUniformityLabel`` annotations
workload       field ``spec.schedulingGroup.podGroupName``  native PodGroup ``scheduling.k8s.io``
                                                            (v1alpha2/v1alpha3/v1beta1):
                                                            ``spec.schedulingPolicy.gang.minCount``,
                                                            ``spec.schedulingConstraints.topology``
volcano        annotation ``scheduling.k8s.io/group-name``  PodGroup ``scheduling.volcano.sh/v1beta1``:
                                                            minMember, minResources, queue,
                                                            priorityClassName
coscheduling   label ``scheduling.x-k8s.io/pod-group``      PodGroup ``scheduling.x-k8s.io/v1alpha1``:
                                                            minMember, minResources,
                                                            scheduleTimeoutSeconds
kueue          label ``kueue.x-k8s.io/pod-group-name``      annotation
                                                            ``kueue.x-k8s.io/pod-group-total-count``
=============  ==========================================  =========================================

**Precedence** (a pod that speaks several protocols): :data:`PRECEDENCE`, the table's order.
Armada's annotations are the bridge's own, explicit intent; the native ``schedulingGroup`` is an
immutable first-class pod field; Volcano and scheduler-plugins PodGroups are written by operators
(Volcano first: it also carries the queue); a Kueue pod group is a quota-admission group, so it
counts only when no scheduler-level gang exists. A native PodGroup with the ``basic`` policy is
not a gang and falls through to the next protocol.

A pod that names a PodGroup the caller could not find raises :class:`PodGroupMissing`: the pod
must wait (Volcano and Coscheduling do not schedule such pods either) rather than run alone.

Adding a protocol: a module that defines ``PROTOCOL = GangProtocol(...)`` (see :mod:`.kueue`, the
smallest), and its line in :data:`PRECEDENCE`. The controller watches its PodGroups and writes
their status from that alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from armada_bridge.objects import ObjView
from extender.protocols import armada, coscheduling, kueue, volcano, workload
from extender.protocols.base import GangProtocol, GangSpec

#: Gang protocols in precedence order.
PRECEDENCE: tuple[GangProtocol, ...] = (
    armada.PROTOCOL,
    workload.PROTOCOL,
    volcano.PROTOCOL,
    coscheduling.PROTOCOL,
    kueue.PROTOCOL,
)

#: The protocols whose gangs are described by PodGroup objects (watched by the extender).
WITH_PODGROUPS: tuple[GangProtocol, ...] = tuple(p for p in PRECEDENCE if p.resource is not None)


def podgroup_names(pod: ObjView) -> dict[str, str]:
    """protocol name -> the PodGroup the pod names under it (protocols it names none of: absent)."""
    out: dict[str, str] = {}
    for p in WITH_PODGROUPS:
        name = p.podgroup_name(pod)
        if name:
            out[p.name] = name
    return out


def gang_of(pod: ObjView, podgroups: Mapping[str, ObjView | None]) -> GangSpec | None:
    """The pod's gang under the first protocol it speaks (:data:`PRECEDENCE`); None: no gang.

    ``podgroups``: protocol name -> the PodGroup the pod names under it, as found (None: not
    found). Raises PodGroupMissing when the winning protocol's PodGroup was not found, IntentError
    when the intent is malformed.
    """
    for p in PRECEDENCE:
        name = p.podgroup_name(pod) if p.resource is not None else None
        if p.resource is not None and not name:
            continue
        gang = p.read(pod, name, podgroups.get(p.name))
        if gang is not None:
            return gang
    return None
