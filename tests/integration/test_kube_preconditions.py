"""UID preconditions on the real API server: a patch by name never changes a recreated object."""

from __future__ import annotations

import asyncio

import pytest

from armada_bridge.kube import PODS, Kube, load_config
from armada_bridge.kube.client import ApiError


def test_a_patch_with_another_objects_uid_changes_nothing(dev_env: object, namespace: str) -> None:
    from armada_bridge.dev.binary.environment import Environment

    assert isinstance(dev_env, Environment)

    async def scenario() -> None:
        async with Kube(load_config(dev_env.kubeconfig("remote-1"))) as kube:
            body = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
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
