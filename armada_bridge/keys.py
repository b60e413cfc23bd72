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

# Armada's API in front of the bridge (armada_api/, docs/armada-api.md). Armada's executor keys on
# the pods of a job (internal/executor/domain/pod_metadata.go): job id and queue (labels), job set
# (annotation: any string); and the bridge's own: the job set as a label value (selectable), the
# client id a job was submitted with (deduplication), and Armada's per-job priority within its
# queue (lower first; read by the extender for the core, settable by kubectl users alike).
ARMADA_JOB_ID_LABEL = "armada_job_id"
ARMADA_QUEUE_ID_LABEL = "armada_queue_id"
ARMADA_JOB_SET_ID_ANNOTATION = "armada_jobset_id"
JOB_SET_LABEL = f"{GROUP}/job-set"
CLIENT_ID_ANNOTATION = f"{GROUP}/client-id"
JOB_PRIORITY_ANNOTATION = f"{GROUP}/job-priority"
# A job item's annotation that carries a Kubernetes object (its manifest, JSON or YAML) in place of a
# pod spec: the API creates that object, its operator makes the pods (docs/armada-api.md, "Objects").
OBJECT_ANNOTATION = f"{GROUP}/object"

# A pod with no queue of its own takes the queue label of its root controller (the topmost owner
# through ownerReferences, e.g. the JobSet of its Job): the admission webhook sets QUEUE_LABEL on it
# and this label, the UID of that root (extender.describe.Describer.inherited), and with the queue
# the root's INHERITED_ANNOTATIONS the pod does not set itself: the job's priority, so an object's
# pods are ordered in their queue as the object's job (the Armada API's ReprioritizeJobs patches
# the object and these pods alike).
QUEUE_OWNER_LABEL = f"{GROUP}/queue-owner"
INHERITED_ANNOTATIONS = (JOB_PRIORITY_ANNOTATION,)

# The extender's decision, written on the front pod (annotations): the remote cluster (the same key
# as the virtual node's cluster label) and, when the core chose one, the node in that cluster.
ASSIGNED_REMOTE_NODE = f"{GROUP}/remote-node"
# Written on the front pod by the vkubelet when the remote cluster left its remote pod unschedulable
# too long (JSON: {"node": remote node, "reason": ...}); while it names the assigned node, the pod
# waits for the extender to place it again in the same cluster (see armada_bridge.rejection).
REMOTE_REJECTION = f"{GROUP}/remote-rejection"
# The extender's signature of its decision (cluster, remote node) for that pod UID: HMAC-SHA256 with
# the key in Secret DECISION_KEY_SECRET (armada_bridge.contract.decisions). The vkubelet runs, and the
# extender trusts, only decisions whose signature verifies: nobody without the key can forge one.
DECISION_SIGNATURE = f"{GROUP}/decision-signature"
DECISION_KEY_SECRET = "armada-bridge-decision-key"
DECISION_KEY_FIELD = "key"
# A virtual RBAC resource (nothing serves it) checked by the admission policy
# manifests/extender/admission-policy.yaml: verb `write` may set or change BRIDGE_ONLY_ANNOTATIONS and
# lift SCHEDULING_GATE (the extender, the vkubelet); verb `bind` may put a pod on a virtual node by
# spec.nodeName or pods/binding (the extender, the front kube-scheduler).
DECISIONS_RESOURCE = "decisions"
DECISIONS_WRITE = "write"
DECISIONS_BIND = "bind"
# Bumped by the extender on an admitted pod the front scheduler has not bound yet: a pod update is
# what makes kube-scheduler retry a pod it had set aside (see reference: extender requeueing).
NUDGE = f"{GROUP}/nudge"
# The scheduling gate the admission webhook puts on a managed pod and the extender lifts with its
# decision: until then the front kube-scheduler leaves the pod alone (a pod an extender refuses is
# retried on every cluster event, which with thousands of queued pods is all the scheduler does).
SCHEDULING_GATE = f"{GROUP}/admission"

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

# Pod annotations only the bridge may set or change (the admission policy; docs/security.md). The
# constraints annotation is set at creation by the bridge's webhook on the creator's behalf (what
# it holds is the pod's own constraints), so it is only immutable afterwards.
BRIDGE_ONLY_ANNOTATIONS = (
    ASSIGNED_CLUSTER,
    ASSIGNED_REMOTE_NODE,
    DECISION_SIGNATURE,
    REMOTE_REJECTION,
    NUDGE,
)
IMMUTABLE_ANNOTATIONS = (SCHEDULING_CONSTRAINTS,)

# Local development environment (KWOK-simulated nodes).
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_NODE_ANNOTATION_VALUE = "fake"
DEV_NODE_TYPE_VALUE = "kwok"
# The real nodes of the dev remote clusters (a real kubelet and container runtime) are tainted, so
# work that asks for nothing stays on the KWOK nodes; a pod that wants one tolerates this taint and
# asks for a node whose `type` is not `kwok`.
DEV_REAL_NODE_TAINT_KEY = f"{GROUP}/dev-real-node"
DEV_REAL_NODE_TAINT_EFFECT = "NoSchedule"
GPU_RESOURCE = "nvidia.com/gpu"
# Pod annotation (dev remote clusters): how long the pod's containers "run" before they exit 0, as a
# Go duration ("5s"). KWOK ends such a pod Succeeded when its restartPolicy is not Always
# (hack/kwok/remote-stages.yaml, stage pod-complete-after-runtime); other pods run until deleted.
SIMULATED_RUNTIME = f"{GROUP}/simulated-runtime"

# vkubelet
# Front pod condition type the vkubelet sets once the remote pod exists: a remote pod that then goes
# missing was deleted out of band (the front pod fails), never created again.
REMOTE_POD_CONDITION = f"{GROUP}/RemotePod"
# Virtual node annotation: the node is cordoned because its RemoteCluster says `cordoned: true`
# (so uncordoning the spec uncordons the node, while `kubectl cordon` by hand is left alone).
CORDONED_BY_SPEC = f"{GROUP}/cordoned-by-remotecluster"
# RemoteCluster finalizer: remote pods and mirrors are cleaned up before the RemoteCluster goes.
REMOTECLUSTER_FINALIZER = f"{GROUP}/vkubelet-cleanup"
# Mirrored ConfigMaps/Secrets/Services/ServiceAccounts in a remote cluster: the front object's UID.
FRONT_OBJECT_UID = f"{GROUP}/front-object-uid"
# Remote Secret holding the front API credentials (token, ca.crt, namespace) of one front
# ServiceAccount, for the remote pods that run as it: label FRONT_API_TOKEN_LABEL ("true");
# annotations: when the token is renewed (RFC 3339), and the ServiceAccount's name.
FRONT_API_TOKEN_LABEL = f"{GROUP}/front-api-token"
FRONT_API_REFRESH_AT = f"{GROUP}/front-api-token-refresh-at"
FRONT_SERVICE_ACCOUNT = f"{GROUP}/front-service-account"
# Relay pods (RemoteCluster network Relay, vkubelet/relays.py): in the bridge's namespace, labelled
# RELAY_FOR with the UID of the front pod whose address they are; annotations: that pod's
# namespace/name, the token the relay shows the vkubelet, and a hash of what the relay was made for
# (ports, image, endpoint: another hash, another relay).
RELAY_FOR = f"{GROUP}/relay-for"
RELAY_FRONT_POD = f"{GROUP}/relay-front-pod"
RELAY_TOKEN = f"{GROUP}/relay-token"
RELAY_SPEC_HASH = f"{GROUP}/relay-spec-hash"
COMPONENT_LABEL = "app.kubernetes.io/component"
# A Routable RemoteCluster's status condition: False once a remote pod's address fell inside the
# front's pod or Service ranges (not shown: docs/networking.md).
ROUTABLE_CONDITION = "AddressesShown"
# On the vkubelet pod that holds the Lease (the relay endpoint's Service selects it).
VKUBELET_LEADER = f"{GROUP}/vkubelet-leader"
RELAY_COMPONENT = "relay"
# Default key of the kubeconfig in a RemoteCluster's Secret.
KUBECONFIG_SECRET_KEY = "kubeconfig"

# --- Gang and queue protocols other schedulers define (read by extender/intent.py; the bridge
# --- also writes the Volcano group-name annotation on pods of auto-grouped batch/v1 Jobs).
# Volcano (volcano-sh/apis pkg/apis/scheduling/v1beta1/labels.go): a pod's PodGroup (annotation).
VOLCANO_GROUP_NAME_ANNOTATION = "scheduling.k8s.io/group-name"
# Volcano: minMember of the PodGroup its controller auto-creates for a workload (owner annotation).
VOLCANO_GROUP_MIN_MEMBER_ANNOTATION = "scheduling.volcano.sh/group-min-member"
# Volcano: queue of an auto-created PodGroup (pod annotation).
VOLCANO_QUEUE_NAME_ANNOTATION = "scheduling.volcano.sh/queue-name"
# Volcano queue label that KubeRay copies from the CR onto its pods.
VOLCANO_QUEUE_NAME_LABEL = "volcano.sh/queue-name"
# scheduler-plugins Coscheduling (apis/scheduling/v1alpha1 PodGroupLabel): a pod's PodGroup.
COSCHEDULING_POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# Kueue plain-pod groups (pkg/controller/jobs/pod/constants) and the Kueue queue label.
KUEUE_POD_GROUP_NAME_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_POD_GROUP_TOTAL_COUNT_ANNOTATION = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"

# Pod Security Admission namespace labels (k8s.io/pod-security-admission/api): set on the remote
# namespaces the vkubelet creates, so the remote cluster's own admission applies its levels.
POD_SECURITY_ENFORCE = "pod-security.kubernetes.io/enforce"
POD_SECURITY_AUDIT = "pod-security.kubernetes.io/audit"
POD_SECURITY_WARN = "pod-security.kubernetes.io/warn"

# Node taints the DefaultTolerationSeconds admission plugin tolerates by default (NoExecute, 300s).
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
