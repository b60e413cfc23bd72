"""The webhook's view of a pod being created, on the real API server: what its watches have not
seen yet (a PodGroup or a namespace created just before the pod) is read from the API server."""

from __future__ import annotations

import asyncio
import uuid

from armada_bridge import keys
from armada_bridge.kube import NAMESPACES, Kube, load_config
from armada_bridge.kube.resources import VOLCANO_PODGROUPS
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment
from extender.inputs import Inputs
from extender.protocols import volcano


def test_what_the_caches_have_not_seen_is_read_from_the_api_server(dev_env: Environment) -> None:
    ns = f"t-read-through-{uuid.uuid4().hex[:6]}"
    pod = busybox_pod("p", annotations={keys.VOLCANO_GROUP_NAME_ANNOTATION: "vg"})
    pod["metadata"]["namespace"] = ns

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as kube:
            inputs = Inputs(kube)  # its informers never started: every cache misses
            assert await inputs.read_through(pod) == ({volcano.NAME: None}, {})
            await kube.create(NAMESPACES, {"metadata": {"name": ns, "labels": {keys.QUEUE_LABEL: "team"}}})
            try:
                body = {"metadata": {"name": "vg"}, "spec": {"minMember": 2, "queue": "q"}}
                await kube.create(
                    VOLCANO_PODGROUPS,
                    {"apiVersion": VOLCANO_PODGROUPS.api_version, "kind": "PodGroup", **body},
                    ns,
                )
                podgroups, labels = await inputs.read_through(pod)
                found = podgroups[volcano.NAME]
                assert found is not None and found["spec"]["minMember"] == 2
                assert labels[keys.QUEUE_LABEL] == "team"
                assert inputs.podgroups_of(pod) == {volcano.NAME: None}  # the caches were not filled
            finally:
                await kube.delete(NAMESPACES, ns)

    asyncio.run(scenario())
