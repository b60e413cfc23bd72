"""Armada's Jobs service, the part a client polls: a job's state (GetJobStatus) and why it failed
(GetJobErrors), from its front pod. The pods are found with the server's read-only identity and
answered only where the caller may list pods; a job the caller cannot see, or whose pod is gone, is
UNKNOWN (no error), as Armada answers for ids it does not know."""

from __future__ import annotations

from typing import Any

from armada_api import states
from armada_api.event_stream import Visible
from armada_api.front import Front
from armada_api.ids import is_job_id
from armada_api.jobs import job_id_of
from armada_bridge import keys
from armada_bridge.kube.resources import PODS

Obj = dict[str, Any]


class JobStatus:
    def __init__(self, front: Front) -> None:
        self.front = front

    async def pods(self, token: str, job_ids: list[str]) -> dict[str, Obj]:
        """job id -> its pod, of those the caller may see."""
        wanted = sorted({i for i in job_ids if is_job_id(i)})
        if not wanted:
            return {}
        selector = f"{keys.ARMADA_JOB_ID_LABEL} in ({','.join(wanted)})"
        listed = await self.front.own.list_all(PODS, None, labelSelector=selector)
        visible = Visible(self.front, token)
        return {job_id_of(p): p for p in await visible.of(listed.get("items") or [])}

    async def states(self, token: str, job_ids: list[str]) -> dict[str, int]:
        pods = await self.pods(token, job_ids)
        return {i: states.job_state(pods[i]) if i in pods else states.UNKNOWN for i in job_ids}

    async def errors(self, token: str, job_ids: list[str]) -> dict[str, str]:
        """Why each failed job failed ("" for the others), as the pod says."""
        pods = await self.pods(token, job_ids)
        out = {}
        for i in job_ids:
            status = (pods.get(i) or {}).get("status") or {}
            failed = status.get("phase") == "Failed"
            out[i] = str(status.get("message") or status.get("reason") or "failed") if failed else ""
        return out
