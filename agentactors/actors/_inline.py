"""Running a handler inline: in the calling task, with other contextvars, its first step with no trampoline.

An ask's handler runs with the asker's contextvars (a copy) in whichever task
handles it — the asker's own for a direct ask or a frame's, a worker's
otherwise — so no task is started per message, and it sees its actor's
runtime as ``Runtime.current()``, whoever asks.  Most handlers answer without
ever suspending, so the first step is run inline (``ctx.run(coro.send, None)``)
and only a coroutine that suspends pays for a trampoline.  That idiom is
written once, here, as a plain function: a shared coroutine would add a frame
to every ask.  The hot paths (direct asks, workers) write::

    result = run_inline(ctx, runtime, coro)
    if type(result) is Suspended:
        result = await result

(The runtime is set in the same call: one call per handler, as many as when
the first step was written out in each of them beside a call that set it.)
A frame's ask (:func:`~agentactors.actors.frame.ask_in`), where a run of the
loop waits on its model call, is itself the trampoline: it takes the first step
as :func:`first_step` does (written out there: one frame less for the handler's
StopIteration to leave through) and drives the rest as :func:`_trampoline` does, so a
waiting run holds one frame for its ask, not a coroutine, a trampoline and a
:class:`Suspended`.  Neither keeps the coroutine's bound ``send`` / ``throw``
while it waits (~70 bytes each): they are taken at each step.

:func:`in_context` is the same as one awaitable, for callers that need not
save the frame (``on_start``, ``Runtime.call``).
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Coroutine, Generator
from typing import Any

from ._cell import CURRENT_RUNTIME

__all__ = ["Suspended", "first_step", "in_context", "run_inline"]


def run_inline(ctx: contextvars.Context, runtime: Any, coro: Coroutine[Any, Any, Any]) -> Any:
    """Run the first step of ``coro`` in ``ctx``, here: its result if it ended there, else a :class:`Suspended`.

    ``ctx`` is made to see ``runtime`` as ``Runtime.current()`` first (it stays so).  An exception
    ``coro`` raises in that step propagates (the coroutine is then finished).  A :class:`Suspended`
    must be awaited, in the same task: it runs the rest of ``coro``.
    """
    try:
        yielded = first_step(ctx, runtime, coro)
    except StopIteration as stop:
        return stop.value
    return Suspended(_trampoline(ctx, coro, yielded))


def first_step(ctx: contextvars.Context, runtime: Any, coro: Coroutine[Any, Any, Any]) -> Any:
    """Run the first step of ``coro`` in ``ctx``, made to see ``runtime`` as ``Runtime.current()`` first.

    :returns: what ``coro`` yielded (it suspended: the caller drives the rest, each step in ``ctx``).
    :raises StopIteration: ``coro`` ended in that step (its result is the exception's ``value``).
    """
    if ctx.get(CURRENT_RUNTIME) is not runtime:
        ctx.run(CURRENT_RUNTIME.set, runtime)
    return ctx.run(coro.send, None)


class Suspended:
    """A coroutine that suspended in the first step :func:`run_inline` ran: await it for its result.

    Private to the kernel: no handler can return one, so ``type(result) is Suspended`` tells the two apart.
    """

    __slots__ = ("rest",)

    def __init__(self, rest: Generator[Any, Any, Any]) -> None:
        self.rest = rest

    def __await__(self) -> Generator[Any, Any, Any]:
        return self.rest


@types.coroutine
def in_context(
    ctx: contextvars.Context, runtime: Any, coro: Coroutine[Any, Any, Any]
) -> Generator[Any, Any, Any]:
    """``await in_context(ctx, runtime, coro)``: run ``coro`` to completion inside ``ctx``, in the current task.

    :func:`run_inline`, then the rest if it suspended.  The task, its cancel scopes and the backend's
    bookkeeping stay those of the calling task — only the contextvars differ, and changes the coroutine
    makes to them stay in ``ctx``.
    """
    result = run_inline(ctx, runtime, coro)
    if type(result) is Suspended:
        result = yield from result.rest
    return result


def _trampoline(ctx: contextvars.Context, coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """The rest of ``coro`` after a first step that yielded ``yielded``, each step run with ``ctx.run``.

    What the coroutine yields to the event loop (asyncio futures, trio traps) is passed through
    unchanged, and what the loop sends or throws back (a value, a cancellation) is forwarded.
    """
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            value = yield yielded
        except GeneratorExit:
            ctx.run(coro.close)
            raise
        except BaseException as exc:
            error = exc
            value = None
        try:
            if error is None:
                yielded = ctx.run(coro.send, value)
            else:
                pending, error = error, None
                yielded = ctx.run(coro.throw, pending)
        except StopIteration as stop:
            return stop.value
