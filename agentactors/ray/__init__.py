"""agentactors past one machine: one agent over many inputs on a Ray cluster (the ``[ray]`` extra).

::

    import ray
    from agentactors import Agent, OpenAIProvider
    from agentactors.ray import RayCluster, SharedBudget, with_shared_budget

    def make_agent():                         # runs once per worker, inside its Runtime
        return Agent(with_shared_budget(OpenAIProvider("gpt-4.1-mini"), "openai"))

    async def main():
        ray.init()                            # or RayCluster(..., init=dict(...))
        budgets = {"openai": SharedBudget(max_concurrency=64, requests_per_minute=3_000)}
        async with RayCluster(make_agent, workers=4, budgets=budgets) as cluster:
            results = await cluster.run_many(prompts)          # input order
            async with cluster.as_completed(prompts) as done:  # as they finish
                async for index, result in done: ...

- :class:`RayCluster` — workers that each host one :class:`~agentactors.Runtime`
  (a Ray actor is a whole process: never one per agent); chunks of inputs;
  exactly-once delivery; at-least-once (``retries > 0``) or at-most-once
  (``retries=0``) execution when a worker dies; cancellation that reaches the
  runs' HTTP requests.  The driver runs on asyncio or trio; workers run on
  Ray's asyncio event loop.
- :class:`SharedBudget` and :func:`with_shared_budget` — one concurrency and
  rate budget for the whole cluster, leased in batches.
- :class:`WorkerLostError`, :class:`RemoteError`, :class:`VersionMismatchError` — its errors
  (``WorkerLost`` and ``VersionMismatch``, their old names, are importable too, and
  ``WorkerUnavailableError``, a kind of ``WorkerLostError``: a call its worker did not answer).

docs/ray.md has the design and the failure semantics.  ray itself is imported
when a cluster starts (or a worker runs), never by ``import agentactors``.
"""

from __future__ import annotations

import agentactors._reexport as _reexport

from .budget import SharedBudget
from .cluster import ClusterCompletions, RayCluster
from .errors import RemoteError, VersionMismatchError, WorkerLostError, WorkerUnavailableError
from .errors import VersionMismatch as VersionMismatch  # the old names (the same classes), not listed
from .errors import WorkerLost as WorkerLost
from .shared import SharedBudgetProvider, with_shared_budget

__all__ = [
    "ClusterCompletions",
    "RayCluster",
    "RemoteError",
    "SharedBudget",
    "SharedBudgetProvider",
    "VersionMismatchError",
    "WorkerLostError",
    "WorkerUnavailableError",
    "with_shared_budget",
]

# Reprs, tracebacks and pickles (results and errors cross processes here) name agentactors.ray.X, where users
# import X from, not the module that defines it (agentactors._reexport says what that takes to keep type hints
# resolving).  A worker unpickles them by that name: importing agentactors.ray imports no ray.
_reexport.adopt(globals(), __all__, __name__)
