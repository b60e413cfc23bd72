"""Armada's Jobs service, the part a client polls: a job's state (GetJobStatus) and why it failed
(GetJobErrors), from its front pod or object (:class:`~armada_api.found.Found`). They are found with
the server's read-only identity and answered only where the caller may list pods; a job the caller
cannot see, or whose pod is gone, is UNKNOWN (no error), as Armada answers for ids it does not know."""

from __future__ import annotations

from armada_api import states
from armada_api.event_stream import Visible
from armada_api.found import Found
from armada_api.front import Caller, Front
from armada_api.ids import is_job_id
from armada_api.submit import Jobs
from armada_bridge import keys


class JobStatus:
    def __init__(self, front: Front, jobs: Jobs) -> None:
        self.front = front
        self.jobs = jobs

    async def found(self, caller: Caller, job_ids: list[str]) -> dict[str, Found]:
        """job id -> its pod or object, of those the caller may see."""
        wanted = sorted({i for i in job_ids if is_job_id(i)})
        if not wanted:
            return {}
        found = await self.jobs.find(f"{keys.ARMADA_JOB_ID_LABEL} in ({','.join(wanted)})")
        visible = Visible(self.front, caller)
        return {f.job_id: f for f in found if await visible.may(f.obj)}

    async def states(self, caller: Caller, job_ids: list[str]) -> dict[str, int]:
        found = await self.found(caller, job_ids)
        return {i: found[i].state() if i in found else states.UNKNOWN for i in job_ids}

    async def errors(self, caller: Caller, job_ids: list[str]) -> dict[str, str]:
        """Why each failed job failed ("" for the others), as its pod (or its object) says."""
        found = await self.found(caller, job_ids)
        return {i: found[i].error() if i in found else "" for i in job_ids}
