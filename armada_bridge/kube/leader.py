"""Leader election on a coordination.k8s.io Lease, as client-go's leaderelection does it.

A candidate takes the Lease when it is free or its holder let it expire (judged by our own clock
from when we last saw it change, so clock skew between replicas does not matter), renews it while
it leads, and steps down when a renewal fails past the lease duration.
"""

from __future__ import annotations

import asyncio
import logging
import time

from armada_bridge.kube.client import ApiError, Kube
from armada_bridge.kube.resources import LEASES
from armada_bridge.kube.times import micro_time, now
from armada_bridge.objects import Obj

log = logging.getLogger(__name__)


class LeaderElector:
    def __init__(
        self,
        kube: Kube,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_seconds: int = 15,
        renew_seconds: float = 5.0,
        retry_seconds: float = 2.0,
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_seconds = lease_seconds
        self.renew_seconds = renew_seconds
        self.retry_seconds = retry_seconds
        self.is_leader = asyncio.Event()
        self.lost = asyncio.Event()
        self._observed: tuple[str, float] = ("", 0.0)  # (resourceVersion, monotonic time seen)
        self._last_renew = 0.0

    def _spec(self, transitions: int, acquire: bool, prev: Obj | None) -> Obj:
        stamp = micro_time(now())
        spec: Obj = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.lease_seconds,
            "renewTime": stamp,
            "leaseTransitions": transitions,
        }
        spec["acquireTime"] = stamp if acquire else (prev or {}).get("acquireTime", stamp)
        return spec

    async def try_acquire_or_renew(self) -> bool:
        try:
            lease = await self.kube.get_or_none(LEASES, self.name, self.namespace)
            if lease is None:
                await self.kube.create(
                    LEASES,
                    {
                        "metadata": {"name": self.name, "namespace": self.namespace},
                        "spec": self._spec(0, True, None),
                    },
                )
                return True
            spec = lease.get("spec", {})
            rv = lease["metadata"]["resourceVersion"]
            if rv != self._observed[0]:
                self._observed = (rv, time.monotonic())
            holder = spec.get("holderIdentity") or ""
            duration = float(spec.get("leaseDurationSeconds") or self.lease_seconds)
            expired = time.monotonic() - self._observed[1] > duration
            if holder and holder != self.identity and not expired:
                return False
            transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
            lease["spec"] = self._spec(transitions, holder != self.identity, spec)
            updated = await self.kube.replace(LEASES, lease)
            self._observed = (updated["metadata"]["resourceVersion"], time.monotonic())
            return True
        except ApiError as e:
            if not e.conflict:
                log.warning("lease %s/%s: %s", self.namespace, self.name, e)
            return False
        except (OSError, TimeoutError) as e:
            log.warning("lease %s/%s: %s", self.namespace, self.name, e)
            return False

    async def run(self) -> None:
        """Campaign until leader, then renew; on losing the lease set `lost` and return."""
        while not self.is_leader.is_set():
            if await self.try_acquire_or_renew():
                self._last_renew = time.monotonic()
                self.is_leader.set()
                log.info("%s became leader of %s/%s", self.identity, self.namespace, self.name)
                break
            await asyncio.sleep(self.retry_seconds)
        while True:
            await asyncio.sleep(self.renew_seconds)
            if await self.try_acquire_or_renew():
                self._last_renew = time.monotonic()
            elif time.monotonic() - self._last_renew > self.lease_seconds:
                log.error("%s lost the lease %s/%s", self.identity, self.namespace, self.name)
                self.is_leader.clear()
                self.lost.set()
                return

    async def release(self) -> None:
        """Give the lease up on clean shutdown so a standby takes over at once."""
        if not self.is_leader.is_set():
            return
        try:
            lease = await self.kube.get(LEASES, self.name, self.namespace)
            if lease.get("spec", {}).get("holderIdentity") == self.identity:
                lease["spec"]["holderIdentity"] = ""
                lease["spec"]["leaseDurationSeconds"] = 1
                await self.kube.replace(LEASES, lease)
        except (ApiError, OSError, TimeoutError) as e:
            log.warning("releasing lease: %s", e)
