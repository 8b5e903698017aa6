"""The invocation paths: running a tool's own code under the call's timeout.

Four paths, chosen by what the tool is, each paying only for what it needs:

- a body with no ``await`` (:attr:`Tool.never_waits`) ends in its first step: :func:`run_to_end`, with no
  cancel scope, no timer and no frame (nothing could interrupt it anyway);
- no timeout: an async tool's coroutine is awaited as it is, a sync tool runs in a worker thread;
- an async tool with a timeout: its scope is entered before the coroutine starts (scopes it opens nest
  inside), its first step runs here and the deadline is armed only if it waits
  (:func:`_armed_at_first_wait`): most calls never do, and a timer is a good part of a scope's cost;
- a sync tool with a timeout runs in a worker thread under a scope with that deadline; a call abandoned at
  its timeout frees its slot and is reported (:class:`_Abandoned`).

A deadline that strikes is :class:`TimedOut`, mapped to a ``timeout`` result by the executor.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import Any

import anyio

from ..events import emit
from ..messages import ToolCall
from .registry import Tool, ToolContext

__all__ = ["TimedOut", "invoke", "run_to_end"]

log = logging.getLogger("agentactors.tools")


class TimedOut(Exception):
    """The call ran past its timeout (``seconds``): its scope's deadline struck and cancelled it."""

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.seconds = seconds


def run_to_end(awaitable: Awaitable[Any], name: str) -> Any:
    """The value of a coroutine that ends in its first step (:attr:`Tool.never_waits`).

    :raises RuntimeError: it waited after all (the bytecode check is wrong for this interpreter); the
        coroutine is closed and the call is an ``error``, never a call left running without its timeout.
    """
    coro: Any = awaitable
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError(f"tool {name!r} waited, though its body has no await; please report this")


async def invoke(
    t: Tool[Any, Any],
    call: ToolCall,
    ctx: ToolContext | None,
    seconds: float | None,
    since: float,
    new_scope: type[anyio.CancelScope],
) -> Any:
    """The tool's value, within ``seconds`` from ``since`` (``None``: no limit): the call's timeout.

    For a tool that may wait (one that never does is :func:`run_to_end`'s).  ``new_scope`` is the
    running backend's cancel scope class.  An exception the tool raises propagates.

    :raises TimedOut: the deadline struck (the tool's cancellation stopped it).
    """
    if seconds is None:
        if t.is_async:
            # Awaited here directly: Tool.invoke would add a frame per call.
            return await t.start(call.arguments, ctx)
        return await t.invoke(call.arguments, ctx, on_abandoned=_Abandoned(call.id, t.name))
    deadline = since + seconds
    if t.is_async:
        awaitable = t.start(call.arguments, ctx)
        with new_scope() as scope:
            if type(awaitable) is types.CoroutineType or isinstance(awaitable, Coroutine):
                try:
                    # The first step here: a call that never waits needs no trampoline, no timer.
                    first = awaitable.send(None)
                except StopIteration as stop:
                    value = stop.value
                else:
                    scope.deadline = deadline  # the same as from the start: it could not have struck
                    value = await _armed_at_first_wait(awaitable, first)
            else:
                scope.deadline = deadline
                value = await awaitable
    else:
        with new_scope(deadline=deadline) as scope:
            value = await t.invoke(call.arguments, ctx, on_abandoned=_Abandoned(call.id, t.name))
    if scope.cancelled_caught:
        raise TimedOut(seconds)
    return value


@types.coroutine
def _armed_at_first_wait(coro: Coroutine[Any, Any, Any], yielded: Any) -> Generator[Any, Any, Any]:
    """Go on awaiting ``coro`` from its first wait (``yielded``), once its scope's deadline is armed.

    A deadline can only strike while the tool waits, and most calls of an async
    tool never wait: the caller runs the first step itself, and only a call that
    waits pays for a timer and this trampoline (arming and disarming a timer is
    a good part of a cancel scope's cost).  The scope itself is entered before
    the coroutine starts, so scopes the tool opens nest inside it as they must.
    """
    while True:
        # Pass what the coroutine yields to the event loop, and what comes back (a value, or a
        # cancellation thrown in) to the coroutine.
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:
            try:
                yielded = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
            continue
        try:
            yielded = coro.send(sent)
        except StopIteration as stop:
            return stop.value


class _Abandoned:
    """Reports a sync call its caller left (timeout, cancellation): an event and a log line."""

    __slots__ = ("call_id", "name")

    def __init__(self, call_id: str, name: str) -> None:
        self.call_id = call_id
        self.name = name

    def __call__(self, alive: int) -> None:
        # The thread cannot be stopped; what can be done is to say so, with how many are stuck.
        log.info(
            "sync tool %r (call %s) was abandoned in its worker thread; %d abandoned thread(s) still running",
            self.name,
            self.call_id,
            alive,
        )
        emit("tools.thread_abandoned", call_id=self.call_id, name=self.name, alive=alive)
