"""Actors: the kernel (runtime, refs, mailbox, workers, supervision) and the domain actors built on it.

The kernel — ``runtime``, ``ref``, ``frame`` (one cancel scope for a task's many direct asks),
``_cell``, ``worker``, ``supervision``, ``mailbox`` and ``threads`` (worker threads for blocking
calls) — knows no agents, loops or providers.  The domain
actors import it: ``provider`` (:class:`ProviderActor`) and ``tools``
(:class:`~agentactors.actors.tools.ToolExecutorActor`).
"""

from __future__ import annotations

from .mailbox import ReleasableAnswer
from .provider import Complete, ProviderActor, ProviderStream, Stream, estimate_tokens
from .runtime import Actor, ActorRef, Completions, FailurePolicy, RunsMany, Runtime, RuntimeStats
from .threads import WorkerThreads, worker_threads

__all__ = [
    "Actor",
    "ActorRef",
    "Complete",
    "Completions",
    "FailurePolicy",
    "ProviderActor",
    "ProviderStream",
    "ReleasableAnswer",
    "RunsMany",
    "Runtime",
    "RuntimeStats",
    "Stream",
    "WorkerThreads",
    "estimate_tokens",
    "worker_threads",
]
