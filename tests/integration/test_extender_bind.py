"""The extender's /bind on the real API server, when its cache is behind: kube-scheduler may see
the core's decision written on a pod (and bind it) before the extender's own watch has."""

from __future__ import annotations

import asyncio

from armada_bridge import keys
from armada_bridge.contract.decisions import DecisionKey
from armada_bridge.kube import PODS, Kube, load_config
from devenv.pods import busybox_pod
from devenv.processes.environment import Environment
from extender.controller import Controller, Settings
from extender.metrics import Metrics
from extender.server import Api, ExtenderBindingArgs

NODE, CLUSTER = "vn-bind-test", "c-bind-test"


def test_a_bind_is_checked_against_the_pod_read_again_when_the_cache_shows_no_decision(
    dev_env: Environment, namespace: str
) -> None:
    key = DecisionKey(b"integration-test-decision-key-0123")

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as kube:
            controller = Controller(kube, Settings(), Metrics(), key)  # its informers never started
            inputs = controller.inputs
            inputs.vnodes.remember({"metadata": {"name": NODE, "labels": {keys.CLUSTER_LABEL: CLUSTER}}})
            api = Api(controller)

            async def cached_then_decided(name: str, cluster: str | None) -> ExtenderBindingArgs:
                """A pod cached without a decision, then given `cluster`'s (None: none) in the API."""
                body = busybox_pod(name, schedulerName="nobody")
                pod = await kube.create(PODS, body, namespace)
                inputs.pods.remember(pod)
                uid = pod["metadata"]["uid"]
                if cluster is not None:
                    decision = {"metadata": {"annotations": key.annotations(uid, cluster, "n1")}}
                    await kube.patch(PODS, name, decision, namespace, uid=uid)
                return ExtenderBindingArgs(PodName=name, PodNamespace=namespace, PodUID=uid, Node=NODE)

            admitted = await cached_then_decided("admitted", CLUSTER)
            assert api.c.describer.decision_of(inputs.pods.get("admitted", namespace) or {}) is None
            assert await api.bind_refusal(admitted) is None  # the decision, read from the API server

            for name, cluster in (("elsewhere", "another-cluster"), ("undecided", None)):
                args = await cached_then_decided(name, cluster)
                why = await api.bind_refusal(args)
                assert why is not None and f"not admitted to remote cluster {CLUSTER}" in why, why

            # A forged decision (not signed with the extender's key) is no decision.
            forged = await cached_then_decided("forged", None)
            annotations = DecisionKey(b"someone-elses-key-0123456789").annotations(
                forged.PodUID, CLUSTER, "n1"
            )
            await kube.patch(PODS, "forged", {"metadata": {"annotations": annotations}}, namespace)
            assert await api.bind_refusal(forged) is not None

    asyncio.run(scenario())
