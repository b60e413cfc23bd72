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

# Remote pods and mirrored objects.
FRONT_UID = f"{GROUP}/front-uid"
MANAGED_BY = f"{GROUP}/managed-by"

# Virtual nodes.
NODE_TYPE_LABEL = "type"
NODE_TYPE_VIRTUAL = "virtual-kubelet"
CLUSTER_LABEL = f"{GROUP}/cluster"
VIRTUAL_NODE_TAINT_KEY = "virtual-kubelet.io/provider"
VIRTUAL_NODE_TAINT_VALUE = "armada-bridge"
VIRTUAL_NODE_TAINT_EFFECT = "NoSchedule"

# Local development environment (KWOK-simulated nodes).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
DEV_NODE_TYPE_VALUE = "kwok"
GPU_RESOURCE = "nvidia.com/gpu"
