"""What every part of the soak works on: the environment, the soak's namespace and report, a client of
each cluster, and the events that stop the workload, the faults and the soak."""

from __future__ import annotations

import json
import threading
from typing import Any

from kubernetes import client as k8s
from kubernetes.utils import parse_quantity

from armada_bridge.contract.capacity import open_to_all
from bench.chaos.report import Report
from devenv import binaries
from devenv.clients import api_client
from devenv.processes.environment import Environment

REMOTES = ("remote-1", "remote-2")
QUEUES = ("chaos-a", "chaos-b", "chaos-c")
#: the priority class of the soak's own pods (Jobs and operators' objects keep theirs)
PREEMPTIBLE = "armada-preemptible"


class SoakContext:
    def __init__(self, env: Environment, seed: int, namespace: str) -> None:
        self.env = env
        self.ns = namespace
        self.report = Report(seed)
        self.stop = threading.Event()  # the workload and the faults
        self.done = threading.Event()  # the soak (the supervisor runs until then)
        self.faults_on = threading.Event()
        self.apis = {c: api_client(env.kubeconfig(c)) for c in ("front", *REMOTES)}
        self.core = {c: k8s.CoreV1Api(a) for c, a in self.apis.items()}
        self.batch = k8s.BatchV1Api(self.apis["front"])
        self.custom = k8s.CustomObjectsApi(self.apis["front"])
        self.bins = binaries.expected()
        self.web_page = ""  # what the soak's web server serves (bench.chaos.served)

    def raw(self, cluster: str, call: str, *args: Any) -> list[dict[str, Any]]:
        """A list call's items as Kubernetes JSON (what armada_bridge.contract reads)."""
        resp = getattr(self.core[cluster], call)(*args, _preload_content=False)
        return list(json.loads(resp.data)["items"])

    def capacity_cpu(self) -> float:
        """CPU of the remote clusters' Ready nodes open to the soak's pods (not the tainted real ones)."""
        total = 0.0
        for c in REMOTES:
            for n in self.raw(c, "list_node"):
                if open_to_all(n):
                    total += float(parse_quantity(n["status"]["allocatable"]["cpu"]))
        return total

    def close(self) -> None:
        for a in self.apis.values():
            a.close()
