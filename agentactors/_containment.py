"""Which exceptions out of user code end only the call that raised them, and which must travel on.

A tool, a tool policy or a whole run can raise anything.  The tool executor and the batch
machinery (``run_many`` / ``as_completed``) contain what they can — the call fails, its
neighbours go on — and let three kinds through, because they are not the call's to stop:

* **a real cancellation**: anyio's cancellation exception while an enclosing cancel scope is
  cancelled.  A scope that was cancelled makes :func:`anyio.current_effective_deadline` return
  ``-inf`` for as long as the code is inside it, which tells a real cancellation from a stray
  one without asking the event loop.  On asyncio, a ``CancelledError`` that no scope asked
  for — a library raising one, a future someone else cancelled, an inner ``wait_for`` — is
  *stray*: it is the call's own failure.  (So is, necessarily, a bare ``task.cancel()`` that
  reaches a running tool without going through an anyio scope: cancel agent code with anyio
  scopes — ``anyio.fail_after``, ``move_on_after``, task groups — as it is documented.)
* **KeyboardInterrupt**: someone is stopping the process.
* **GeneratorExit**: the interpreter is closing the coroutine.

Everything else is contained: every :class:`Exception`, ``SystemExit`` (argparse in a wrapped
CLI raises it; the process is not the tool's to end), unknown ``BaseException`` subclasses and
stray cancellations.  A ``BaseExceptionGroup`` travels when anything in it does.

The questions must be asked where the exception is caught, still inside the scopes it passed
through: outside them, the cancelled scope is no longer there to say so.
"""

from __future__ import annotations

import math

import anyio

__all__ = ["escapes", "interrupt_in", "is_cancellation"]


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
    return is_cancellation(exc)


def interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The :class:`KeyboardInterrupt` that ``exc`` is or holds (in a group, the first found), else ``None``."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = interrupt_in(inner)
            if found is not None:
                return found
    return None
