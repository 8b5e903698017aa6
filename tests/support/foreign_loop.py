"""Awaiting something from another thread's event loop (asyncio's or trio's), as a user's second loop would."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import trio

__all__ = ["from_thread"]


def _in_another_loop(foreign: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``fn()`` in a new event loop of ``foreign``'s library (``"asyncio"`` or ``"trio"``), in this thread."""
    if foreign == "asyncio":

        async def main() -> Any:
            return await fn()

        return asyncio.run(main())
    return trio.run(fn)


async def from_thread(foreign: str, fn: Callable[[], Awaitable[Any]]) -> Any:
    """``fn()`` awaited in a new ``foreign`` event loop in another thread: what it returned, or what it raised.

    Cancellation: the caller is cancelled at once; the other thread is abandoned (a reader stuck there must not
    hang the test).
    """
    outcome: list[Any] = []

    def other() -> None:
        try:
            outcome.append(_in_another_loop(foreign, fn))
        except BaseException as exc:
            outcome.append(exc)

    await anyio.to_thread.run_sync(other, abandon_on_cancel=True)
    return outcome[0]
