"""Running a handler inline (``actors/_inline.py``): first step here, a trampoline only if it suspends.

Direct asks, frames and workers all run handlers through :func:`run_inline`; what they rely on is that a
handler that never suspends comes back as its value (no ``Suspended`` to await), that one that does
comes back as a ``Suspended`` whose await runs the rest, and that every step — the first one included —
runs in the given context, seeing the given runtime as ``Runtime.current()``, while the task, its cancel
scopes and the caller's own contextvars stay untouched.
"""

from __future__ import annotations

import contextvars

import anyio
import anyio.lowlevel
import pytest

from agentactors.actors._inline import Suspended, in_context, run_inline
from agentactors.actors.runtime import Runtime

pytestmark = pytest.mark.anyio

SEEN: contextvars.ContextVar[str] = contextvars.ContextVar("SEEN", default="caller")
RUNTIME = object()  # stands for the actor's runtime: what a handler must see as Runtime.current()


def _ctx(value: str) -> contextvars.Context:
    ctx = contextvars.copy_context()
    ctx.run(SEEN.set, value)
    return ctx


async def answers_at_once() -> str:
    assert Runtime.current() is RUNTIME
    seen = SEEN.get()
    SEEN.set("changed by the handler")
    return seen


async def waits_then_answers(waits: int) -> list[str]:
    seen = [SEEN.get()]
    for _ in range(waits):
        await anyio.lowlevel.checkpoint()
        assert Runtime.current() is RUNTIME
        seen.append(SEEN.get())
    SEEN.set("changed by the handler")
    return seen


async def test_a_handler_that_never_suspends_comes_back_as_its_value_run_in_the_context() -> None:
    ctx = _ctx("asker")
    result = run_inline(ctx, RUNTIME, answers_at_once())
    assert type(result) is not Suspended
    assert result == "asker"
    assert ctx[SEEN] == "changed by the handler"  # its changes stay in the context it ran in
    assert SEEN.get() == "caller"
    assert Runtime.current() is not RUNTIME


async def test_a_handler_that_suspends_comes_back_suspended_and_its_await_runs_the_rest_in_the_context() -> None:
    ctx = _ctx("asker")
    result = run_inline(ctx, RUNTIME, waits_then_answers(3))
    assert type(result) is Suspended
    assert await result == ["asker"] * 4  # the first step and every step after it
    assert ctx[SEEN] == "changed by the handler"
    assert SEEN.get() == "caller"


async def test_a_failure_in_the_first_step_is_raised_by_run_inline_and_a_later_one_by_the_await() -> None:
    async def fails(waits: int) -> None:
        for _ in range(waits):
            await anyio.lowlevel.checkpoint()
        raise LookupError(SEEN.get())

    with pytest.raises(LookupError, match="asker"):
        run_inline(_ctx("asker"), RUNTIME, fails(0))
    suspended = run_inline(_ctx("asker"), RUNTIME, fails(1))
    assert type(suspended) is Suspended
    with pytest.raises(LookupError, match="asker"):
        await suspended


async def test_a_cancellation_reaches_a_suspended_handler_in_its_context_and_its_scope_catches_it() -> None:
    seen: list[str] = []

    async def sleeps() -> None:
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen.append(SEEN.get())
            raise

    with anyio.CancelScope() as scope:
        suspended = run_inline(_ctx("asker"), RUNTIME, sleeps())
        assert type(suspended) is Suspended
        scope.cancel()
        await suspended
    assert scope.cancelled_caught
    assert seen == ["asker"]


async def test_in_context_awaits_the_whole_handler_either_way() -> None:
    assert await in_context(_ctx("asker"), RUNTIME, answers_at_once()) == "asker"
    assert await in_context(_ctx("asker"), RUNTIME, waits_then_answers(2)) == ["asker"] * 3
    assert SEEN.get() == "caller"
