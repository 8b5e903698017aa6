"""The task groups the runtime and batches start their tasks in: the lightest each backend allows, anyio's semantics.

Since anyio 4.14, ``TaskGroup.start_soon`` gives every task a handle: the coroutine is wrapped
in another that holds a cancel scope of its own and an event (so the handle can cancel that task
alone, and be waited for).  On asyncio a task so started costs ~4.4 KB where a bare task entering
one cancel scope costs ~1.9 KB, and its start ~20 µs of CPU where the bare one's costs ~12.
``run_many`` starts one task per run it keeps in flight (10,000 waiting runs pay it 10,000 times:
W3), and a runtime one per streamed request (its feed) and per actor worker.  Neither asks
anything of its group but to start a task, cancel them all and wait for them, so each backend
gets the least that gives anyio's semantics:

* **trio**: anyio's task group *is* a nursery (``strict_exception_groups=True``) and anyio's cancel
  scopes are trio's, so the group is the nursery itself: the same cancellation (a real trio
  cancellation, which :func:`~agentactors._containment.is_cancellation` recognises), the same error
  groups, ~1.3 KB less a task.  As anyio does, a group holding only ``trio.Cancelled`` leaves as a
  single ``trio.Cancelled``, so the cancelled scope around the group absorbs it as usual.
* **asyncio**: a bare task whose coroutine enters an anyio cancel scope of its own first.  The
  group cancels a task through that scope, never with ``task.cancel()``: to the code inside, the
  group's cancellation is then a real anyio cancellation (its scope is cancelled), not the stray
  ``CancelledError`` a bare ``task.cancel()`` would look like (:mod:`agentactors._containment`),
  which a tool would contain as its own failure.  The scope is a root scope — anyio does not know
  the task's parent — so what a nested scope would inherit is handed down explicitly: each task's
  scope takes the deadline in effect where the group was entered (read then: a deadline moved later
  is not seen by the tasks), and a cancellation of the scopes around the group reaches its tasks
  through the group (its exit, waiting for them, cancels them first), as it does through anyio's.
  ~2.4 KB less a task.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.lowlevel

from ._backend import running_trio
from ._lean_scope import scope_class

if TYPE_CHECKING:
    import asyncio

__all__ = ["NO_SCOPE", "TaskGroup", "open_task_group"]


class TaskGroup(Protocol):
    """What the runtime and batches ask of a task group (the subset of anyio's ``TaskGroup`` they use).

    Use it as ``async with open_task_group() as group:``; the exit waits for every task.  A task
    that raises cancels the others, and the exit raises every such failure in a ``BaseExceptionGroup``.
    """

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: object = None) -> None:
        """Start ``func(*args)`` as a task of the group (named ``name`` where the backend names tasks).

        Never blocks.  A task started into a cancelled group is cancelled at its first checkpoint.

        :raises RuntimeError: the group is not active — not entered yet, or exited (as anyio's).
        """
        ...

    def start_scoped(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start ``func(scope, *args)`` as a task of the group, ``func`` entering ``scope`` itself.

        ``func`` must begin with ``with scope if scope is not None else NO_SCOPE:`` and do all its work
        inside: on asyncio the group cancels the task through that scope, which :meth:`start_soon` enters in
        a wrapping coroutine of its own — a frame (~0.23 KB) every task holds for as long as it runs, which
        a batch's 10,000 waiting runs each hold (W3).  On trio ``scope`` is ``None`` (the nursery's own
        scope covers its tasks).  Never blocks; a task started into a cancelled group is cancelled at its
        first checkpoint.

        :raises RuntimeError: the group is not active (as :meth:`start_soon`).
        """
        ...

    def cancel(self) -> None:
        """Cancel every task of the group (and the body, if it still runs); the exit then raises nothing for it."""
        ...

    async def __aenter__(self) -> TaskGroup:
        """Enter the group in the task that will wait for it (its host)."""
        ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Wait for every task; ``True`` when the cancellation that ended the body was the group's own.

        Cancellation: a cancellation of the host cancels every task and propagates once they have ended.
        """
        ...


class _TrioGroup:
    """trio's nursery, behind :class:`TaskGroup` (see the module)."""

    __slots__ = ("_manager", "_nursery")

    def __init__(self) -> None:
        import trio

        self._manager = trio.open_nursery(strict_exception_groups=True)
        self._nursery: Any = None

    async def __aenter__(self) -> TaskGroup:
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

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: object = None) -> None:
        nursery = self._nursery
        if nursery is None:
            raise RuntimeError(_INACTIVE)
        nursery.start_soon(func, *args, name=name)  # (a closed nursery raises trio's own RuntimeError)

    def start_scoped(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        self.start_soon(func, None, *args)

    def cancel(self) -> None:
        self._nursery.cancel_scope.cancel()


class _AsyncioGroup:
    """Bare asyncio tasks, each inside an anyio cancel scope of its own, behind :class:`TaskGroup` (see the module)."""

    __slots__ = ("_context", "_deadline", "_errors", "_idle", "_loop", "_new_scope", "_on_end", "_scope", "_tasks")

    def __init__(self) -> None:
        # Every scope of the group is of the lightest class anyio's semantics allow (:mod:`._lean_scope`).
        self._new_scope: Any = scope_class()
        # The group's own scope, around its body and its exit's wait (as anyio's): cancel() cancels it
        # too, and its exit absorbs that cancellation.
        self._scope: anyio.CancelScope = self._new_scope()
        self._tasks: dict[asyncio.Task[None], anyio.CancelScope] = {}
        self._errors: list[BaseException] = []
        self._idle: asyncio.Future[None] | None = None  # set while the exit waits: resolved by the last task's end
        self._loop: asyncio.AbstractEventLoop | None = None
        self._deadline = math.inf
        # What each task's done-callback is registered with: one bound method and one context for the group.
        # Without them add_done_callback makes both per task (a bound method, a copy of the context: 128 B
        # a task in flight, which W3's 10,000 waiting runs each hold); _ended reads no context variable.
        self._on_end = self._ended
        self._context = contextvars.Context()

    async def __aenter__(self) -> TaskGroup:
        import asyncio

        self._loop = asyncio.get_running_loop()
        self._scope.__enter__()
        # What a task's scope would inherit through anyio's group (see the module): the deadline in effect
        # here, not where start_soon is called (a runtime's tasks are started from any task of its loop).
        self._deadline = anyio.current_effective_deadline()
        return self

    def start_soon(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any, name: object = None) -> None:
        scope = self._task_scope()
        self._started(_scoped(scope, func(*args)), scope, None if name is None else str(name))

    def start_scoped(self, func: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        scope = self._task_scope()
        self._started(func(scope, *args), scope, _SCOPED_NAME)

    def _task_scope(self) -> anyio.CancelScope:
        """A new task's scope: the deadline in effect where the group was entered, cancelled if the group is."""
        if self._loop is None:  # not entered yet, or exited: a task now would be waited for by no one
            raise RuntimeError(_INACTIVE)
        deadline = self._deadline
        scope: anyio.CancelScope = self._new_scope() if deadline == math.inf else self._new_scope(deadline=deadline)
        if self._scope.cancel_called:
            scope.cancel()  # started into a cancelled group: cancelled at its first checkpoint, as anyio's
        return scope

    def _started(self, coro: Coroutine[Any, Any, Any], scope: anyio.CancelScope, name: str | None) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro) if name is None else self._loop.create_task(coro, name=name)
        self._tasks[task] = scope
        task.add_done_callback(self._on_end, context=self._context)

    def cancel(self) -> None:
        self._scope.cancel()
        for scope in self._tasks.values():
            scope.cancel()

    def _ended(self, task: asyncio.Task[None]) -> None:
        del self._tasks[task]
        if task.cancelled():  # by a task.cancel() from outside the group: the group is cancelled, as anyio's is
            failure: BaseException | None = None
            self._cancel_once()
        else:
            failure = task.exception()
        if failure is not None:
            import asyncio

            if not isinstance(failure, asyncio.CancelledError):
                self._errors.append(failure)
            self._cancel_once()
        if not self._tasks and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    def _cancel_once(self) -> None:
        if not self._scope.cancel_called:
            self.cancel()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        import asyncio

        assert self._loop is not None
        try:
            if exc is not None:
                self.cancel()
                if not isinstance(exc, asyncio.CancelledError):
                    self._errors.append(exc)
            if self._tasks:
                with anyio.CancelScope() as waiting:
                    while self._tasks:
                        self._idle = self._loop.create_future()
                        try:
                            await self._idle
                        except asyncio.CancelledError as cancelled:
                            # Cancelled around the group (or by it): the tasks end first; waiting for them
                            # is shielded from here on, since cancelling again would only interrupt the wait.
                            waiting.shield = True
                            self.cancel()
                            if exc is None:
                                exc = cancelled
                        self._idle = None
            else:
                await anyio.lowlevel.cancel_shielded_checkpoint()  # an exit is a checkpoint, as anyio's
            if self._errors:
                raise BaseExceptionGroup("unhandled errors in a TaskGroup", self._errors) from None
            if exc is not None:
                raise exc
        except BaseException as raised:
            if self._scope.__exit__(type(raised), raised, raised.__traceback__):
                return True
            raise
        finally:
            del exc, tb
            self._errors = []
            self._loop = None  # exited: start_soon refuses from here on (the exit waited for every task)
        return self._scope.__exit__(None, None, None)


async def _scoped(scope: anyio.CancelScope, coro: Coroutine[Any, Any, Any]) -> None:
    """A task's body: ``coro`` inside ``scope`` (the group cancels the task through it)."""
    with scope:
        await coro


# Every start_scoped task's name: one string for them all (asyncio's own "Task-<n>" is a string a task, 58 B).
_SCOPED_NAME = "agentactors task group task"

NO_SCOPE = contextlib.nullcontext()
"""What a :meth:`TaskGroup.start_scoped` task enters when it is given no scope (on trio): nothing."""

_INACTIVE = "this task group is not active (not entered yet, or exited): no new task can be started in it"


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def open_task_group() -> _TrioGroup | _AsyncioGroup:
    """A task group (``async with open_task_group() as group:``), the lightest the backend allows.

    Call it inside the event loop that will run the group.

    Cancellation: as anyio's task group — a cancellation of the scope around it cancels every task
    and propagates once they have ended; :meth:`TaskGroup.cancel` cancels them and is absorbed.
    """
    return _TrioGroup() if running_trio() else _AsyncioGroup()
