"""Every label, annotation, taint and finalizer key the bridge reads or writes, defined once."""

from __future__ import annotations

GROUP = "bridge.armadaproject.io"
API_VERSION = f"{GROUP}/v1alpha1"

# Queue selection (pod label, namespace label).
QUEUE_LABEL = "armadaproject.io/queue"

# Armada's own gang annotations.
GANG_ID = "armadaproject.io/gangId"
GANG_CARDINALITY = "armadaproject.io/gangCardinality"
GANG_NODE_UNIFORMITY_LABEL = "armadaproject.io/gangNodeUniformityLabel"

SYSTEM_NAMESPACE = "armada-bridge-system"

# The extender's decision, written on the front pod (annotations): the remote cluster (the same key
# as the virtual node's cluster label) and, when the core chose one, the node in that cluster.
ASSIGNED_REMOTE_NODE = f"{GROUP}/remote-node"

# Set aside by the admission webhook, restored remotely by the vkubelet: JSON object with the pod's
# own nodeSelector, affinity, tolerations and topologySpreadConstraints (absent keys: none set).
SCHEDULING_CONSTRAINTS = f"{GROUP}/scheduling-constraints"

# Remote pods (label: selectable) and every object the bridge creates in a remote cluster.
FRONT_UID = f"{GROUP}/front-uid"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "armada-bridge"

# Virtual nodes.
NODE_TYPE_LABEL = "type"  # also on KWOK nodes of the dev environment
NODE_TYPE_VIRTUAL = "virtual-kubelet"
CLUSTER_LABEL = f"{GROUP}/cluster"
ASSIGNED_CLUSTER = CLUSTER_LABEL  # the extender's decision on a front pod: the same key, as annotation
VIRTUAL_NODE_TAINT_KEY = "virtual-kubelet.io/provider"
VIRTUAL_NODE_TAINT_VALUE = "armada-bridge"
VIRTUAL_NODE_TAINT_EFFECT = "NoSchedule"

# Local development environment (KWOK-simulated nodes).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
DEV_NODE_TYPE_VALUE = "kwok"
GPU_RESOURCE = "nvidia.com/gpu"
