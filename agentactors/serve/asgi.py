"""An ASGI lifespan that owns a Runtime: the one-line recipe for Starlette and FastAPI services.

A server runs its request handlers in tasks that do not inherit the lifespan's context, so a Runtime
opened there is not ``Runtime.current()`` in a handler.  :func:`lifespan` opens the runtime for the
application's lifetime and hands it to the handlers through the ASGI lifespan state::

    from agentactors.serve.asgi import lifespan

    app = Starlette(routes=routes, lifespan=lifespan(recorders=[OTelRecorder()]))

    async def ask(request):
        result = await agent.run(prompt, runtime=request.state.runtime)

The runtime is also ``app.state.runtime``.  Nothing here imports Starlette: the lifespan protocol is a
callable taking the app and returning an async context manager (Starlette's, FastAPI's), and the state
it yields reaches ``request.state`` in both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from ..actors.runtime import Runtime
from ..events import Recorder

__all__ = ["lifespan"]


def lifespan(
    *,
    recorders: Iterable[Recorder] = (),
    drain_timeout: float = 5.0,
    setup: Callable[[Runtime], Any] | None = None,
) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """A lifespan for ``Starlette(lifespan=...)`` / ``FastAPI(lifespan=...)`` that runs a :class:`Runtime`.

    Each start of the application opens a new ``Runtime(recorders, drain_timeout)``; ``setup(rt)``
    (optional, sync) runs in it first — the place for ``ProviderActor.shared(rt, provider,
    max_concurrency=...)`` budgets.  Handlers find the runtime as ``request.state.runtime`` (and
    ``app.state.runtime``); pass it on: ``agent.run(..., runtime=...)``, ``agent.stream(..., runtime=...)``.
    At shutdown the runtime drains its runs for up to ``drain_timeout`` seconds, closes its providers and
    flushes its recorders.

    Cancellation: a cancelled lifespan (the server cancelled at shutdown) leaves the runtime as
    ``async with Runtime()`` does: what still runs is cancelled, then cleaned up.
    """
    recorders = tuple(recorders)

    @asynccontextmanager
    async def run_in(app: Any) -> AsyncIterator[dict[str, Any]]:
        async with Runtime(recorders=recorders, drain_timeout=drain_timeout) as rt:
            if setup is not None:
                setup(rt)
            state = getattr(app, "state", None)
            if state is not None:
                state.runtime = rt
            yield {"runtime": rt}

    return run_in
