"""The pure scheduling core: Armada's queues, fair share, gangs, priority and preemption.

Entry point: :class:`extender.core.scheduler.Scheduler` (kept by the extender; ``schedule_round``
returns an :class:`extender.core.result.RoundResult`). Data model in :mod:`extender.core.model`,
quantities in :mod:`extender.core.resources`. No I/O anywhere in this package.
"""
