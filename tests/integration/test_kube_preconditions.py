"""UID preconditions on the real API server: a patch by name never changes a recreated object."""

from __future__ import annotations

import asyncio

import pytest

from armada_bridge.kube import PODS, Kube, load_config
from armada_bridge.kube.client import ApiError
from devenv.pods import busybox_pod


def test_a_patch_with_another_objects_uid_changes_nothing(dev_env: object, namespace: str) -> None:
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("remote-1"))) as kube:
            body = busybox_pod("p")
            old = await kube.create(PODS, body, namespace)
            await kube.delete(PODS, "p", namespace, body={"gracePeriodSeconds": 0})
            while await kube.get_or_none(PODS, "p", namespace) is not None:
                await asyncio.sleep(0.1)
            new = await kube.create(PODS, body, namespace)
            for sub, patch in (
                (None, {"metadata": {"annotations": {"x": "y"}}}),
                ("status", {"status": {"message": "m"}}),
            ):
                with pytest.raises(ApiError) as got:
                    await kube.patch(PODS, "p", patch, namespace, subresource=sub, uid=old["metadata"]["uid"])
                assert got.value.uid_mismatch, got.value
            now = await kube.get(PODS, "p", namespace)
            assert now["metadata"]["uid"] == new["metadata"]["uid"]
            assert "x" not in (now["metadata"].get("annotations") or {})
            await kube.patch(
                PODS, "p", {"metadata": {"annotations": {"x": "y"}}}, namespace, uid=new["metadata"]["uid"]
            )

    asyncio.run(scenario())


def test_a_bind_is_done_only_when_that_pod_is_bound_to_that_node(dev_env: object, namespace: str) -> None:
    """extender/binding.py, what /bind answers kube-scheduler: done (None) only when the pod with
    that UID is bound to that node, by this call or before it; an error otherwise, so the
    scheduler forgets the pod it assumed there."""
    from devenv.processes.environment import Environment
    from extender.binding import bind

    assert isinstance(dev_env, Environment)

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as kube:
            body = busybox_pod(
                "p", schedulerName="nobody"
            )  # no scheduler takes it: only these binds place it
            uid = (await kube.create(PODS, body, namespace))["metadata"]["uid"]
            other_uid = "00000000-0000-0000-0000-000000000000"
            assert "Precondition failed: UID" in (await bind(kube, namespace, "p", other_uid, "n1") or "")
            assert (await kube.get(PODS, "p", namespace))["spec"].get("nodeName") is None
            assert await bind(kube, namespace, "p", uid, "n1") is None
            assert (await kube.get(PODS, "p", namespace))["spec"]["nodeName"] == "n1"
            assert await bind(kube, namespace, "p", uid, "n1") is None  # already there: done
            assert "already assigned to node" in (await bind(kube, namespace, "p", uid, "n2") or "")
            assert (await bind(kube, namespace, "p", other_uid, "n1") or "").startswith("409")
            await kube.delete(PODS, "p", namespace, body={"gracePeriodSeconds": 0})
            while await kube.get_or_none(PODS, "p", namespace) is not None:
                await asyncio.sleep(0.1)
            assert (await bind(kube, namespace, "p", uid, "n1") or "").startswith("404")

    asyncio.run(scenario())


def test_a_status_patch_on_an_older_version_never_undoes_a_newer_status(
    dev_env: object, namespace: str
) -> None:
    """The API server lets a Failed pod become Running again: a status computed from a cache that has
    not yet seen the Failed (the extender's Preempted) would undo it. With the version it was
    computed from (`resource_version`), the patch fails with a conflict and changes nothing."""
    from devenv.processes.environment import Environment

    assert isinstance(dev_env, Environment)
    running = {"status": {"phase": "Running"}}
    preempted = {"status": {"phase": "Failed", "reason": "Preempted"}}

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("front"))) as kube:
            for name in ("blind", "guarded"):
                body = busybox_pod(name, schedulingGates=[{"name": "test"}])
                await kube.create(PODS, body, namespace)
                seen = await kube.patch(PODS, name, running, namespace, subresource="status")
                await kube.patch(PODS, name, preempted, namespace, subresource="status")
                md = seen["metadata"]
                if name == "blind":  # why the version is needed: without it, Failed becomes Running
                    await kube.patch(PODS, name, running, namespace, subresource="status", uid=md["uid"])
                    assert (await kube.get(PODS, name, namespace))["status"]["phase"] == "Running"
                    continue
                for patch_type in ("merge", "strategic"):
                    with pytest.raises(ApiError) as got:
                        await kube.patch(
                            PODS,
                            name,
                            running,
                            namespace,
                            subresource="status",
                            patch_type=patch_type,
                            uid=md["uid"],
                            resource_version=md["resourceVersion"],
                        )
                    assert got.value.conflict and not got.value.uid_mismatch, got.value
                status = (await kube.get(PODS, name, namespace))["status"]
                assert (status["phase"], status["reason"]) == ("Failed", "Preempted")

    asyncio.run(scenario())
