"""The actor kernel: runtime, refs, mailbox, workers, supervision, frames, crossings and worker threads.

``runtime``
    :class:`Runtime`: owns every actor's task, spawns, stops, drains, counts (``stats()``).
``ref``
    :class:`ActorRef`: ``tell`` / ``try_tell`` / ``ask`` — the only way to talk to an actor.
``frame``
    one cancel scope for a task's many direct asks (a run's loop enters one per run).
``mailbox`` / ``worker`` / ``supervision``
    asks waiting for a handler; the tasks that run them; what a failure does (resume, restart, escalate).
``crossing`` / ``threads``
    calls from another thread's event loop; worker threads for blocking calls.
``_cell``
    an actor's state and its transitions (private: the one place they change).

The kernel knows no agents, loops, providers or tools and imports nothing above it (checked by
``tests/unit/test_architecture.py``): the domain actors built on it live in :mod:`agentactors.gateway`
(``ProviderActor``) and :mod:`agentactors.tools.executor` (``ToolExecutorActor``).
"""

from __future__ import annotations

from .mailbox import ReleasableAnswer
from .runtime import Actor, ActorRef, Completions, FailurePolicy, RunsMany, Runtime, RuntimeStats
from .threads import WorkerThreads, worker_threads

__all__ = [
    "Actor",
    "ActorRef",
    "Completions",
    "FailurePolicy",
    "ReleasableAnswer",
    "RunsMany",
    "Runtime",
    "RuntimeStats",
    "WorkerThreads",
    "worker_threads",
]
