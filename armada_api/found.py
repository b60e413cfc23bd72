"""A job as the server finds it in the front: its pod, or its object with the pods its operator
made (:mod:`armada_api.objects`). Pure: one view of both for cancels, events and states."""

from __future__ import annotations

from dataclasses import dataclass

from armada_api import states
from armada_api.job_events import JobEvent, job_events
from armada_api.jobs import job_id_of
from armada_api.kind_states import StateRule
from armada_api.object_events import object_events
from armada_bridge.kube.resources import PODS, Resource
from armada_bridge.objects import ObjView


@dataclass(frozen=True)
class Found:
    resource: Resource
    #: the job's pod, or its object
    obj: ObjView
    #: an object's pods (those that took its queue: label ``bridge.armadaproject.io/queue-owner``)
    pods: tuple[ObjView, ...] = ()
    #: where an object's kind states its state, besides its conditions (:mod:`armada_api.kind_states`)
    rules: tuple[StateRule, ...] = ()

    @property
    def is_object(self) -> bool:
        return self.resource != PODS

    @property
    def job_id(self) -> str:
        return job_id_of(self.obj)

    @property
    def uid(self) -> str:
        return str(self.obj["metadata"]["uid"])

    def events(self, *, deleted: bool = False) -> list[JobEvent]:
        if self.is_object:
            return object_events(self.obj, self.pods, deleted=deleted, rules=self.rules)
        return job_events(self.obj, deleted=deleted)

    def state(self) -> int:
        if self.is_object:
            return states.AFTER_EVENT[self.events()[-1].message.WhichOneof("events") or "submitted"]
        return states.job_state(self.obj)

    def error(self) -> str:
        """Why the job failed ("" when it has not): its failed pod's message, or its object's."""
        if self.is_object:
            last = self.events()[-1].message
            return last.failed.reason if last.HasField("failed") else ""
        status = self.obj.get("status") or {}
        failed = status.get("phase") == "Failed"
        return str(status.get("message") or status.get("reason") or "failed") if failed else ""
