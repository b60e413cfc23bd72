"""A job item's services (Armada's ServiceConfig) as Kubernetes Services selecting the job's pod, as
Armada makes them (internal/server/submit/conversion). Pure.

Each config exposes the ports of the pod's containers (and native sidecars) that it names, except
host ports: `Headless` a headless ClusterIP Service, `NodePort` a NodePort one; named as given,
else `<pod name>-service-<n>`. In the bridge the vkubelet mirrors a pod's Services into the remote
cluster it runs in, so the names resolve there as in the front.
"""

from __future__ import annotations

from armada_client.armada import submit_pb2

from armada_bridge import keys
from armada_bridge.objects import Obj


def _ports(spec: Obj) -> list[Obj]:
    containers = list(spec.get("containers") or [])
    containers += [c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    out = []
    for c in containers:
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                continue  # the host's own port already
            port = {"name": f"{c['name']}-{p['containerPort']}", "port": p["containerPort"]}
            if p.get("protocol"):
                port["protocol"] = p["protocol"]
            out.append(port)
    return out


def job_services(
    configs: list[submit_pb2.ServiceConfig],
    *,
    job_id: str,
    pod_name: str,
    namespace: str,
    spec: Obj,
    labels: dict[str, str],
) -> list[Obj]:
    available = _ports(spec)
    out, index = [], 0
    for config in configs:
        ports = [p for p in available if p["port"] in set(config.ports)]
        if not ports:
            continue  # Armada makes none for a config that exposes nothing
        name = config.name
        if not name:
            name = f"{pod_name}-service-{index}"
            index += 1
        node_port = config.type == submit_pb2.ServiceType.NodePort
        service_spec: Obj = {
            "type": "NodePort" if node_port else "ClusterIP",
            "selector": {keys.ARMADA_JOB_ID_LABEL: job_id},
            "ports": ports,
        }
        if not node_port:
            service_spec["clusterIP"] = "None"  # headless
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                "spec": service_spec,
            }
        )
    return out


def owned_by(service: Obj, pod: Obj) -> Obj:
    """The Service, owned by the created pod: it goes when the pod goes."""
    md = pod["metadata"]
    ref = {"apiVersion": "v1", "kind": "Pod", "name": md["name"], "uid": md["uid"]}
    return {**service, "metadata": {**service["metadata"], "ownerReferences": [ref]}}
