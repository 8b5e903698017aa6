"""A resource closed in its own event loop when its owner is collected or the loop ends, whichever is first.

A provider owns an HTTP connection pool that belongs to the event loop that opened it.  Closed
explicitly (``async with provider`` / ``await provider.aclose()``, or by a runtime that owns it) it
goes at once; but a script's ``await agent.run(...)`` inside ``anyio.run(main)`` never closes it, and
neither does code that drops a provider mid-run.  Left to the garbage collector, its sockets are
collected unclosed — ``ResourceWarning: unclosed <socket ...>``, an error in any test suite that
turns ResourceWarnings into errors, as ours does — and aiohttp logs "Unclosed client session".

:func:`close_at_run_end` arranges for ``aclose()`` to run in the loop the resource belongs to:

* **asyncio**: an async generator, started here and held by the owner, that awaits ``aclose()`` when
  it is finalised.  asyncio finalises the async generators still alive when ``asyncio.run`` (and so
  ``anyio.run``) ends, and one collected earlier (its owner dropped) in a task of its own — without a
  warning.
* **trio**: trio warns about any async generator collected before it finished, so not that: a system
  task that sleeps until the run ends (trio cancels system tasks when the main task has returned) or
  until the owner is collected (a weak reference's callback wakes it through the run's token, which
  may be called from any thread), then awaits ``aclose()`` shielded, for at most
  :data:`CLOSE_TIMEOUT` seconds.  It holds the owner weakly: a dropped owner is not kept alive by it.

Both hold ``aclose`` (so the resource) until then.  The returned ``release`` ends the arrangement
early — call it where the owner closes the resource itself; it awaits ``aclose()`` (once more, if the owner
closed the resource first: ``aclose`` must be idempotent).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable

from ._backend import running_trio

__all__ = ["CLOSE_TIMEOUT", "close_at_run_end"]

log = logging.getLogger("agentactors.providers")

#: Seconds a close at the end of a trio run may take before the run ends without it.
CLOSE_TIMEOUT = 5.0

Release = Callable[[], Awaitable[None]]


async def close_at_run_end(owner: object, aclose: Callable[[], Awaitable[object]]) -> Release:
    """Run ``aclose()`` in this event loop when ``owner`` is collected or the loop (trio: the run) ends.

    Call it inside the loop the resource belongs to, and keep the returned ``release`` where the owner
    keeps the resource (on asyncio the arrangement lives exactly as long as ``release`` does).

    :returns: ``release``: awaited, it ends the arrangement and awaits ``aclose()`` (again).

    Cancellation: not a checkpoint (asyncio starts a generator; trio spawns a system task).
    """
    if running_trio():
        return _trio_closer(owner, aclose)
    keeper = _closed_when_finalised(aclose)
    await keeper.asend(None)
    return keeper.aclose


async def _closed_when_finalised(aclose: Callable[[], Awaitable[object]]) -> AsyncGenerator[None, None]:
    """Waits at its ``yield`` until it is closed or finalised (asyncio: see the module); then closes."""
    try:
        yield
    finally:
        await aclose()


def _trio_closer(owner: object, aclose: Callable[[], Awaitable[object]]) -> Release:
    import trio

    token = trio.lowlevel.current_trio_token()
    wait = trio.CancelScope()

    def collected(_: object) -> None:  # (a weakref callback: in GC context, maybe another thread)
        try:
            token.run_sync_soon(wait.cancel)
        except trio.RunFinishedError:
            pass  # the run ended first: its end closed the resource

    released = [False]

    async def closer(watch: weakref.ref[object]) -> None:
        # ``watch`` is held in this frame: a weak reference must live for its callback to be called.
        try:
            with wait:
                await trio.sleep_forever()
        finally:
            del watch
            if not released[0]:  # (released: release() closes it, in its caller's task)
                await _close_shielded(aclose)

    trio.lowlevel.spawn_system_task(closer, weakref.ref(owner, collected), name="agentactors: close at run end")

    async def release() -> None:
        released[0] = True
        wait.cancel()
        await aclose()

    return release


async def _close_shielded(aclose: Callable[[], Awaitable[object]]) -> None:
    """``aclose()`` in a trio system task at its run's end: shielded, bounded, and never raising."""
    import trio

    with trio.CancelScope(shield=True) as shield:
        shield.deadline = trio.current_time() + CLOSE_TIMEOUT
        try:
            await aclose()
        except Exception as exc:  # a system task's failure would crash the whole run
            log.debug("closing a resource at the end of its run raised %s", type(exc).__name__)
