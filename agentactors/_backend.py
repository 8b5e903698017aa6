"""The running event loop's own anyio functions, found once instead of on every call.

anyio's top-level functions find the running backend on every call (``sniffio``, then a
table): ``anyio.lowlevel.checkpoint_if_cancelled()`` and ``anyio.current_time()`` pay it
before doing their work.  The kernel calls the first once per ask and the tool executor the
second twice per call, so the runtime resolves them once (as it resolves the backend's
``Event`` and ``CancelScope`` classes) and the hot paths call the backend's own function.

The backend class is read from its module's ``backend_class`` (as anyio finds it); should a
later anyio not have it there, the public function is used as it is: slower, never different.

:func:`scope_checkpoint` is ``checkpoint_if_cancelled`` for a task that knows its innermost cancel
scope (a run's loop, inside its frame): on asyncio anyio finds that scope through a per-task table
(``current_task()``, a weak-keyed lookup) before walking the scopes outwards; starting the walk from
the known scope does the same walk without the lookup — a good part of a zero-latency step's cost.
"""

from __future__ import annotations

import contextvars
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Protocol, TypeVar

import anyio
import anyio.lowlevel

__all__ = [
    "OneShotEvent",
    "backend_function",
    "entered_here",
    "ignoring_scope",
    "loop_clock",
    "one_shot_event",
    "run_loop",
    "running_trio",
    "scope_checkpoint",
    "spawn_detached",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def backend_function(name: str, public: F) -> F:
    """The running backend's own ``name`` — what ``public`` calls once it has found the backend — or ``public``.

    Call it inside the event loop whose backend it is for.
    """
    module = sys.modules.get(type(anyio.CancelScope()).__module__)
    backend = getattr(module, "backend_class", None)
    fn = getattr(backend, name, None)
    return fn if callable(fn) else public


def loop_clock() -> Callable[[], float]:
    """``anyio.current_time`` for the running event loop, read the cheapest way its backend allows.

    Call it inside the event loop whose clock it is, and call what it returns only inside that loop.  On
    asyncio that clock is the loop's ``time()``: ``time.monotonic`` itself (one C call instead of anyio's
    function, the running-loop lookup and the loop's method) when the loop keeps the base class's, else the
    loop's own method — a loop with a clock of its own (virtual time in tests, uvloop's) is read through it.
    On trio, trio's ``current_time`` (its clock may be a test's ``MockClock``), as :func:`backend_function`.
    """
    if running_trio():
        return backend_function("current_time", anyio.current_time)
    import asyncio  # loaded already: the running loop is asyncio's

    clock = asyncio.get_running_loop().time
    if getattr(clock, "__func__", None) is asyncio.BaseEventLoop.time:
        return time.monotonic
    return clock


class OneShotEvent(Protocol):
    """An event one task waits on, once (what :func:`one_shot_event` makes)."""

    def set(self) -> None:
        """Wake the waiter (now, or at once when it comes).  Idempotent."""
        ...

    async def wait(self) -> None:
        """Return once :meth:`set` was called.  Cancellation: a cancellation point while it waits."""
        ...


def one_shot_event() -> Callable[[], OneShotEvent]:
    """The cheapest event the running backend offers for one wait by one task: a class to call per wait.

    Call it inside the event loop whose backend it is for.  On asyncio a future: ``asyncio.Event``
    allocates a waiters ``deque`` (~0.6 KB) when it is made, and a stream's reader parks on a new event
    between every two deltas, seconds at a time — at 10,000 live streams, 6 MB (W12).  Elsewhere the
    backend's ``Event`` class, as :func:`backend_function` finds functions.
    """
    if not running_trio():
        return _FutureEvent
    return type(anyio.Event())


def run_loop(main: Callable[[], Coroutine[Any, Any, T]], backend: str) -> T:
    """``anyio.run(main, backend=backend)``, with Ctrl-C delivered where it cannot break anything.

    For the event loops agentactors starts itself (``Agent.run_sync``, the demo).  trio by default raises
    Ctrl-C's ``KeyboardInterrupt`` in whatever code is running when the signal arrives (unless that code is
    trio's own): in a finaliser or a weakref callback, where Python prints "Exception ignored" and the
    interrupt is lost — the program runs on as if no Ctrl-C came — or between a cancel scope's entry and the
    ``with`` block that exits it, which trio reports as "Cancel scope stack corrupted".  Asked to
    (``restrict_keyboard_interrupt_to_checkpoints``), trio raises it in the main task at its next checkpoint
    instead: a clean exception at an ``await``, as a cancellation is.  asyncio's ``Runner`` does the like on
    its own: it cancels the main task, and raises ``KeyboardInterrupt`` once that has unwound.
    """
    if backend == "trio":
        return anyio.run(main, backend=backend, backend_options={"restrict_keyboard_interrupt_to_checkpoints": True})
    return anyio.run(main, backend=backend)


def running_trio() -> bool:
    """Whether the running backend is trio, else asyncio (anyio's two).  Call it inside the event loop.

    trio depends on sniffio (anyio no longer does): it is there whenever trio is.
    """
    if "trio" not in sys.modules:
        return False
    import sniffio

    return bool(sniffio.current_async_library() == "trio")


def running_loop_library() -> str | None:
    """The library whose event loop runs this thread's code now (``"asyncio"``, ``"trio"``), or ``None``: safe to call
    anywhere (a plain thread, a worker thread, an event loop's callback).

    sniffio knows a task's library (trio brings it); in a plain callback of asyncio's loop (``loop.call_soon``) no
    task runs and sniffio says none, but the loop is running there all the same: asyncio is asked then.
    """
    if "sniffio" in sys.modules or "trio" in sys.modules:
        import sniffio

        try:
            return str(sniffio.current_async_library())
        except sniffio.AsyncLibraryNotFoundError:
            pass
    if "asyncio" not in sys.modules:
        return None  # (no asyncio loop can run where asyncio was never imported)
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return "asyncio"


#: The asyncio tasks :func:`spawn_detached` started that still run: the event loop holds its tasks only weakly.
_detached: set[Any] = set()


def spawn_detached(fn: Callable[..., Coroutine[Any, Any, None]], *args: Any, name: str) -> None:
    """Start ``fn(*args)`` in a task of no task group (a trio system task, an asyncio task held here), in a copy
    of the caller's contextvars.  ``fn`` must never raise: nothing awaits the task.  Both kinds of task are
    cancelled when their event loop's run ends."""
    context = contextvars.copy_context()
    if running_trio():
        import trio

        trio.lowlevel.spawn_system_task(fn, *args, name=name, context=context)
        return
    import asyncio  # loaded already: the running loop is asyncio's

    task = asyncio.get_running_loop().create_task(fn(*args), name=name, context=context)
    _detached.add(task)
    task.add_done_callback(_detached.discard)


class _FutureEvent:
    """A one-shot event on asyncio: a future (see :func:`one_shot_event`)."""

    __slots__ = ("_future",)

    def __init__(self) -> None:
        import asyncio  # loaded already: the running loop is asyncio's

        self._future: Any = asyncio.get_running_loop().create_future()

    def set(self) -> None:
        if not self._future.done():  # done: set already, or its waiter was cancelled
            self._future.set_result(None)

    async def wait(self) -> None:
        await self._future


def scope_checkpoint(checkpoint_if_cancelled: Callable[[], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    """``check(scope)``: ``checkpoint_if_cancelled()`` for a task whose innermost cancel scope is ``scope``.

    Call it inside the event loop whose backend it is for, with that backend's ``checkpoint_if_cancelled``
    (:func:`backend_function`).  ``check(scope)`` is a checkpoint only when ``scope`` or a scope around it
    (up to the first shielded one) was cancelled — as anyio's function, which finds that innermost scope
    itself.  On asyncio the walk starts from ``scope``, through what anyio's scopes keep: the parent link
    (``_parent_scope``) and the two flags its ``cancel_called`` and ``shield`` properties return
    (``_cancel_called``, ``_shield``: anyio's own, read here only — a property is a Python call, and a run
    checks twice, walking two scopes each time).  A backend whose scopes have no such slots (trio's are
    trio's own, a later anyio's may differ) gets ``checkpoint_if_cancelled`` itself, the argument ignored.

    When nothing is cancelled the check returns an awaitable that is already done (a resolved future:
    awaiting it runs no Python code), not a coroutine.

    The caller must pass the task's innermost scope: a scope entered inside it and cancelled would be missed.
    """
    global _passed
    scope_cls = type(anyio.CancelScope())
    slots = getattr(scope_cls, "__slots__", ())
    if not all(name in slots for name in ("_parent_scope", "_cancel_called", "_shield")) or not all(
        isinstance(getattr(scope_cls, name, None), property) for name in ("cancel_called", "shield")
    ):
        return ignoring_scope(checkpoint_if_cancelled)
    if _passed is None:
        import asyncio  # loaded already: anyio's asyncio scopes are the running backend's

        done = asyncio.get_running_loop().create_future()
        done.set_result(None)  # awaited from any loop: a done future never reaches its loop again
        _passed = done
    return _walk_from


def ignoring_scope(checkpoint_if_cancelled: Callable[[], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
    """``checkpoint_if_cancelled`` as a ``check(scope)``: it finds the task's scopes itself, the argument ignored."""
    return lambda scope: checkpoint_if_cancelled()


def entered_here(scope: Any) -> bool:
    """Whether the calling task itself entered ``scope`` and is inside it now; ``False`` when that cannot be told.

    ``scope`` is an anyio cancel scope of the running backend, or an object holding one as ``.scope`` (a
    kernel frame).  Only the task that entered the scope counts, not the tasks it started inside it.  For the
    kernel's slow paths (an ask that would queue behind a slot the asker itself may hold), never a hot one: no
    public API links a scope to a task, so it reads the backends' own bookkeeping — anyio's asyncio scope keeps
    the task that entered it (``_host_task``); a trio scope (inside anyio's wrapper) is looked for on the calling
    task's chain of cancel statuses, up to the status the task began in (its parent nursery's).  A backend
    whose internals differ gets ``False``: no answer, never a wrong yes (checked by
    tests/unit/actors/test_an_actor_asking_itself.py on both backends).
    """
    scope = getattr(scope, "scope", scope)
    try:
        try:
            host = scope._host_task  # anyio's asyncio scope
        except AttributeError:
            pass
        else:
            import asyncio  # loaded already: the scope is asyncio's

            return host is not None and host is asyncio.current_task()
        import trio  # (anyio's trio scope: trio is loaded)

        original = scope._CancelScope__original
        wanted = original._cancel_status  # None once the scope was left
        if wanted is None:
            return False
        task = trio.lowlevel.current_task()
        nursery = task.parent_nursery
        root = None if nursery is None else nursery._cancel_status
        here: Any = task._cancel_status
        while here is not None and here is not root:
            if here is wanted:
                return True
            here = here.parent
    except Exception:  # not in a task of that backend, or internals of another shape: no answer
        return False
    return False


_passed: Any = None  # what _walk_from returns when nothing is cancelled: a done future (scope_checkpoint)


def _walk_from(scope: Any) -> Awaitable[None]:
    """anyio's ``checkpoint_if_cancelled`` for asyncio, from ``scope`` outwards (see :func:`scope_checkpoint`)."""
    while scope is not None:
        if scope._cancel_called:
            return anyio.lowlevel.checkpoint()  # the cancellation is delivered there
        if scope._shield:
            break
        scope = scope._parent_scope
    return _passed  # type: ignore[no-any-return]
