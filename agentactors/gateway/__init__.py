"""The process's shared way to a vendor: the :class:`ProviderActor` and what decides who goes next.

``provider``
    ProviderActor (``Complete`` / ``Stream`` asks) and ProviderStream, the handle of a streamed answer.
``_pulled``
    PulledStream: a streamed answer read in its asker's own task (``Stream(request, pull=True)``).
``scheduling``
    which waiting request goes next (oldest run first, or fifo), and which is refused (``Overloaded``).
``budgets``
    rate budgets: token buckets for requests and tokens per minute.
``cost_budget``
    spending budgets in money (``CostBudget``): what runs — a run's, a session's, a runtime's — may spend.
``ticket``
    what a run carries to where it waits (its age, priority class, deadline), in a contextvar.
``_vendor``
    what the vendor itself says of its rate limits (``HTTPProvider.rate_limit``), as the scheduler holds it.
``_estimate``
    a request's token estimate before it is sent, and the charge of a call cut short.

Built on the actor kernel (:mod:`agentactors.actors`), which knows nothing of it.
"""

from __future__ import annotations

from ._pulled import PulledStream
from .provider import Complete, ProviderActor, ProviderStream, Stream, estimate_tokens

__all__ = ["Complete", "ProviderActor", "ProviderStream", "PulledStream", "Stream", "estimate_tokens"]
