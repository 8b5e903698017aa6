"""The task group a batch's runs live in: trio's own nursery on trio, anyio's task group elsewhere.

Since anyio 4.14, ``TaskGroup.start_soon`` gives every task a handle: the coroutine is wrapped
in another that holds a cancel scope of its own (so the handle can cancel that task alone).  A
task costs ~3.4 KB where the backend's own costs ~1.5 KB; ``run_many`` starts one task per run
it keeps in flight, and 10,000 waiting runs pay it 10,000 times (W3).

On trio, anyio's task group *is* a nursery (``strict_exception_groups=True``) and anyio's cancel
scopes are trio's, so a batch uses the nursery itself: the same cancellation (a real trio
cancellation, which :func:`~agentactors._containment.is_cancellation` recognises), the same error
groups, ~1.3 KB less a run.  As anyio does, a group holding only ``trio.Cancelled`` leaves as a
single ``trio.Cancelled``, so the cancelled scope around the batch absorbs it as usual.

On asyncio (and any other backend) anyio's task group is kept: a bare asyncio task carries no anyio
cancel scope, so a batch cancelling its runs with ``task.cancel()`` would look to the code inside
them like a stray ``CancelledError`` (see :mod:`agentactors._containment`) — and a tool would
contain it as its own failure.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Protocol

import anyio

__all__ = ["BatchGroup", "open_batch_group"]


class BatchGroup(Protocol):
    """What a batch asks of its task group (the subset of anyio's ``TaskGroup`` it uses)."""

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start ``func(*args)`` as a task of the group; the group's exit waits for it."""
        ...

    def cancel(self) -> None:
        """Cancel every task of the group (and the body, if it still runs); the exit then raises nothing for it."""
        ...


class _AnyioGroup:
    """anyio's task group, behind :class:`BatchGroup`."""

    __slots__ = ("_tg",)

    def __init__(self) -> None:
        self._tg = anyio.create_task_group()

    async def __aenter__(self) -> BatchGroup:
        await self._tg.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._tg.__aexit__(exc_type, exc, tb)

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        self._tg.start_soon(func, *args)

    def cancel(self) -> None:
        self._tg.cancel_scope.cancel()


class _TrioGroup:
    """trio's nursery, behind :class:`BatchGroup` (see the module)."""

    __slots__ = ("_manager", "_nursery")

    def __init__(self) -> None:
        import trio

        self._manager = trio.open_nursery(strict_exception_groups=True)
        self._nursery: Any = None

    async def __aenter__(self) -> BatchGroup:
        self._nursery = await self._manager.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        import trio

        try:
            return await self._manager.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            cancelled, rest = group.split(trio.Cancelled)
            if rest is None and cancelled is not None:
                raise _first_leaf(cancelled) from None
            raise
        finally:
            del exc, tb

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        self._nursery.start_soon(func, *args)

    def cancel(self) -> None:
        self._nursery.cancel_scope.cancel()


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def open_batch_group() -> _AnyioGroup | _TrioGroup:
    """A task group for a batch's runs (``async with open_batch_group() as group:``), the lightest the backend allows.

    Call it inside the event loop that will run the group.

    Cancellation: as anyio's task group — a cancellation of the scope around it cancels every task
    and propagates once they have ended; :meth:`BatchGroup.cancel` cancels them and is absorbed.
    """
    if "trio" in sys.modules:
        import sniffio

        if sniffio.current_async_library() == "trio":
            return _TrioGroup()
    return _AnyioGroup()
