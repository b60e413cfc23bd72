"""The pure scheduling core: Armada's queues, fair share, gangs, priority and preemption.

Entry point: :class:`armada_bridge.core.scheduler.Scheduler` (kept by the extender; ``schedule_round``
returns an :class:`armada_bridge.core.result.RoundResult`). Data model in :mod:`armada_bridge.core.model`,
quantities in :mod:`armada_bridge.core.quantities`. No I/O anywhere in this package.
"""
