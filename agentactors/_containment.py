"""Which exceptions out of user code end only the call that raised them, and which must travel on.

A tool, a tool policy or a whole run can raise anything.  The tool executor and the batch
machinery (``run_many`` / ``as_completed``) contain what they can — the call fails, its
neighbours go on — and let three kinds through, because they are not the call's to stop:

* **a real cancellation**: anyio's cancellation exception while an enclosing cancel scope is
  cancelled.  A scope that was cancelled makes :func:`anyio.current_effective_deadline` return
  ``-inf`` for as long as the code is inside it, which tells a real cancellation from a stray
  one without asking the event loop.  On asyncio, a ``task.cancel()`` of the running task is real
  too — ``asyncio.run`` answers Ctrl-C so, and raises ``KeyboardInterrupt`` only once its main task
  has ended cancelled: contained, it would leave the process ignoring Ctrl-C.  The task's
  ``cancelling()`` count says so (:func:`is_stray`).  A ``CancelledError`` that neither asked
  for — a library raising one, a future someone else cancelled, an inner ``wait_for`` — is
  *stray*: it is the call's own failure.
* **KeyboardInterrupt**: someone is stopping the process.
* **GeneratorExit**: the interpreter is closing the coroutine.

Everything else is contained: every :class:`Exception`, ``SystemExit`` (argparse in a wrapped
CLI raises it; the process is not the tool's to end), unknown ``BaseException`` subclasses and
stray cancellations.  A ``BaseExceptionGroup`` travels when anything in it does.

The questions must be asked where the exception is caught, still inside the scopes it passed
through: outside them, the cancelled scope is no longer there to say so.

The actor kernel asks :func:`is_stray` of what comes out of a worker's handler: a stray cancellation
there is that handler's failure, not the end of the worker's task; a native ``task.cancel()`` of the
worker's own task (``asyncio.run`` ending) is a real one for it.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from typing import TypeVar

import anyio

__all__ = [
    "cancellation_alone", "escapes", "first_in", "in_group_task", "interrupt_in", "is_cancellation", "is_stray",
]

E = TypeVar("E", bound=BaseException)

#: The id of the task agentactors started in a task group for one call (see :func:`in_group_task`), in that task.
_GROUP_TASK: ContextVar[int | None] = ContextVar("agentactors_group_task", default=None)


def in_group_task() -> None:
    """Say that the running task is one agentactors started in a task group for one call (a step's parallel tool
    call).  Its caller is cancelled through the group's cancel scope — a real cancellation :func:`is_cancellation`
    sees — never by a ``task.cancel()`` of this task: one here is stray (the tool's own doing, or a library's that
    forgot to ``uncancel()``), the call's failure.  Only this task: one it starts (``asyncio.wait_for``'s) is not.
    """
    _GROUP_TASK.set(anyio.get_current_task().id)


def is_cancellation(exc: BaseException) -> bool:
    """``exc`` is anyio's cancellation exception raised because an enclosing scope is cancelled."""
    return isinstance(exc, anyio.get_cancelled_exc_class()) and anyio.current_effective_deadline() == -math.inf


def escapes(exc: BaseException) -> bool:
    """Whether ``exc`` must leave the call it came out of (see the module docstring); ``False``: contain it."""
    if isinstance(exc, Exception):
        return False  # ExceptionGroup included: a group of Exceptions holds nothing that travels
    if isinstance(exc, BaseExceptionGroup):
        return any(escapes(inner) for inner in exc.exceptions)
    if isinstance(exc, KeyboardInterrupt | GeneratorExit):
        return True
    return is_cancellation(exc) or _cancelled_natively(exc)


def interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The :class:`KeyboardInterrupt` that ``exc`` is or holds (in a group, the first found), else ``None``."""
    return first_in(exc, KeyboardInterrupt)


def first_in(exc: BaseException | None, kind: type[E]) -> E | None:
    """The ``kind`` that ``exc`` is or holds (in a group, at any depth, the first found), else ``None``."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = first_in(inner, kind)
            if found is not None:
                return found
    return None


def cancellation_alone(group: BaseExceptionGroup[BaseException]) -> BaseException | None:
    """The cancellation ``group`` holds when it holds nothing else (at any depth), else ``None``.

    On trio, a request cancelled while its connection opens comes out of httpx as a ``BaseExceptionGroup`` of
    ``Cancelled`` (``trio.open_tcp_stream`` connects in a nursery), where asyncio raises its ``CancelledError``
    alone.  The layers around test for the cancellation itself (a call cut short is noted, and billed; a run that
    ends so is recorded ``cancelled``), so the HTTP layers raise this instead of the group: the rest of the group
    is the same cancellation, raised in the nursery's other tasks.
    """
    cancelled = anyio.get_cancelled_exc_class()
    matched, rest = group.split(cancelled)
    return first_in(matched, cancelled) if rest is None else None


def is_stray(exc: BaseException) -> bool:
    """Whether ``exc`` is a stray cancellation: anyio's cancellation exception that no cancel scope asked for
    (:func:`is_cancellation` says no) and, on asyncio, no ``task.cancel()`` either.

    A native ``task.cancel()`` of the running task (what ``asyncio.run`` does to the tasks left at its end)
    raises a ``CancelledError`` no anyio scope asked for, but it is a real cancellation of that task: the task's
    ``cancelling()`` count says so (anyio's scopes cancel through it too, then ``is_cancellation`` already
    said yes).  Call it from the ``except`` clause, inside the scopes the exception came through.
    """
    if not isinstance(exc, anyio.get_cancelled_exc_class()) or is_cancellation(exc):
        return False
    import asyncio  # (only asyncio has stray cancellations: trio's cannot be made by user code, only leaked)

    if not isinstance(exc, asyncio.CancelledError):
        return False  # a trio.Cancelled out of its scope: trio's own to deal with, as before
    return not _cancelled_natively(exc)


def _cancelled_natively(exc: BaseException) -> bool:
    """``exc`` is asyncio's ``CancelledError`` and the running task was cancelled with ``task.cancel()``."""
    import asyncio

    if not isinstance(exc, asyncio.CancelledError):
        return False
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no asyncio loop runs here: asyncio's exception leaked into trio, a stray one
        return False
    if _GROUP_TASK.get() == id(task):  # a group's task: never cancelled natively by its caller (in_group_task)
        return False
    cancelling = getattr(task, "cancelling", None)
    return bool(callable(cancelling) and cancelling())
