"""What a worker's agent factory can see of its worker: its id and its budgets' lease clients.

The worker installs its environment (a contextvar) while it runs the user's
``agent_factory``, so :func:`~agentactors.ray.with_shared_budget` called inside
the factory finds the lease client of the budget it names without any global
state: a factory called anywhere else gets a clear error instead.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import attrs

from .lease import LeaseClient

__all__ = ["WorkerEnv", "current_env", "use_env"]


@attrs.frozen(slots=True)
class WorkerEnv:
    """One worker's id and the lease clients of the cluster's budgets, by name."""

    worker: str
    budgets: Mapping[str, LeaseClient]


_ENV: contextvars.ContextVar[WorkerEnv | None] = contextvars.ContextVar("agentactors_ray_worker_env", default=None)


def current_env() -> WorkerEnv | None:
    """The environment of the worker whose factory is running, or ``None`` outside one."""
    return _ENV.get()


@contextmanager
def use_env(env: WorkerEnv) -> Iterator[None]:
    """Install ``env`` for the duration of the block (the worker, around the factory call)."""
    token = _ENV.set(env)
    try:
        yield
    finally:
        _ENV.reset(token)
