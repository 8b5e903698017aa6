"""Frames: one cancel scope for the many direct asks one task makes, one after another.

A direct ask (:meth:`~agentactors.actors.ref.ActorRef.ask`) runs its handler in
the asker's task inside a cancel scope of its own, registered with the actor, so
that ``rt.stop()``, a halt and the runtime's exit cancel the handler as they
cancel a worker's.  Entering and leaving an anyio cancel scope costs about as
much as the rest of a small ask — and a run's loop asks three times or more per
run (model, tools, model …), always from the same task, one ask at a time.

A :class:`Frame` is a cancel scope such a task enters *once*, around all of
those asks; :func:`ask_in` is an ask that registers the frame with the actor
instead of entering a scope of its own.  What a halt does is unchanged for the
handler (it is cancelled at its next checkpoint) and for the asker (the ask
raises :class:`~agentactors.errors.ActorStopped`).  What differs is the frame:
a cancel scope once cancelled stays cancelled, so everything after that in the
frame is cancelled too — the asker must treat an ``ActorStopped`` from
:func:`ask_in` as the end of what it was doing in the frame (a run's loop ends
the run), and turn a cancellation that reaches the frame's edge into that
error (:attr:`Frame.halted` says it was a halt, not the frame's deadline).

Only an ask that can take the direct path now uses the frame; any other (the
actor is busy, has something queued, is not started, or is not a local
:class:`~agentactors.actors.ref.ActorRef`) is an ordinary :meth:`ask`, with its
own scope and cancellation point.
"""

from __future__ import annotations

import contextvars
import threading
import types
from collections.abc import Awaitable, Callable, Generator
from threading import get_ident
from typing import Any

import anyio
from anyio.lowlevel import checkpoint_if_cancelled

import agentactors.actors.supervision as supervision

from .._backend import ignoring_scope
from ..errors import ActorStopped
from ._cell import CURRENT_RUNTIME, STOPPED
from .crossing import wrong_loop
from .ref import ActorRef, cell_of

__all__ = ["Frame", "ask_in", "hold", "open_frame", "release"]


class Frame:
    """A cancel scope entered once by a task for the direct asks it makes inside it (see the module).

    ``scope`` is the cancel scope: the task enters it (``with frame.scope:``) and must make every
    :func:`ask_in` with this frame from inside it, in that same task.  ``halted`` turns true when a
    halt of an actor whose handler ran in the frame cancelled it.  ``thread``: the ident of the thread
    the frame was made in (its task's): an :func:`ask_in` compares it with the actor's runtime's, which
    is cheaper than asking for the current thread's at every ask (the slot costs a frame no memory:
    pymalloc's 16-byte size classes hold it; tracemalloc, which counts requested bytes, shows 8).
    """

    __slots__ = ("_check", "halted", "scope", "thread")

    def __init__(
        self,
        scope: anyio.CancelScope,
        checkpoint: Callable[[], Awaitable[None]] = checkpoint_if_cancelled,
        scope_checkpoint: Callable[[Any], Awaitable[None]] | None = None,
        thread: int | None = None,
    ) -> None:
        self.scope = scope
        # (current_thread().ident: the Thread's own int, where get_ident() makes a new one the frame would hold.)
        self.thread = threading.current_thread().ident if thread is None else thread
        # How checkpoint() checks: from this frame's scope outwards when the runtime resolved that
        # (agentactors._backend.scope_checkpoint), else the backend's checkpoint_if_cancelled itself.
        self._check: Callable[[Any], Awaitable[None]] = (
            scope_checkpoint if scope_checkpoint is not None else ignoring_scope(checkpoint)
        )
        self.halted = False

    def checkpoint(self) -> Awaitable[None]:
        """``await frame.checkpoint()``: a cancellation point, between asks made in the frame.

        An ask in a frame is no cancellation point, so a task that needs one between its asks calls this,
        directly inside ``with frame.scope:`` (the frame's scope must be the task's innermost one).

        Cancellation: raises anyio's cancellation exception when the frame's scope, or one around it up to
        the first shielded one, was cancelled; otherwise returns at once, without yielding to the event loop.
        """
        return self._check(self.scope)

    def cancel(self) -> None:
        """What a halt calls (the frame is registered with the actor like a handler's own scope)."""
        self.halted = True
        self.scope.cancel()

    @property
    def cancel_called(self) -> bool:
        """Whether the frame's scope was cancelled: by a halt, its deadline, or its owner."""
        return self.scope.cancel_called

    def __repr__(self) -> str:
        return f"<Frame{' halted' if self.halted else ''}>"


def open_frame(ref: Any, deadline: float | None = None) -> Frame:
    """A new frame (not entered yet) whose scope has ``deadline`` (``None``: none).

    ``ref`` is one of the actors the frame's asks go to: its runtime's own cancel scope class and
    checkpoint are used (resolved once per runtime, as a direct ask's are); any other object gets
    ``anyio.CancelScope`` and ``anyio.lowlevel.checkpoint_if_cancelled``.

    :raises RuntimeError: called from another thread than the one whose loop entered ``ref``'s runtime
        (that runtime's scope class and checkpoint are its loop's backend's, not necessarily this one's).
    """
    if type(ref) is not ActorRef:
        return Frame(anyio.CancelScope() if deadline is None else anyio.CancelScope(deadline=deadline))
    cell = cell_of(ref)
    spec = cell.spec
    thread = spec.thread  # (the runtime's own int, not a new one from get_ident(): a waiting run holds it)
    if get_ident() != thread:
        if spec.host.running:
            raise wrong_loop(f"open_frame() for actor {cell.name!r}", thread, "rt.call(fn) with the whole run in fn")
        thread = None  # a closed runtime's actor: the frame is this thread's, as any other
    new_scope: Any = spec.new_scope
    scope = new_scope() if deadline is None else new_scope(deadline=deadline)
    return Frame(scope, spec.checkpoint, spec.scope_checkpoint, thread)


@types.coroutine
def ask_in(frame: Frame | None, ref: Any, message: Any) -> Generator[Any, Any, Any]:
    """``await ref.ask(message)``, its handler — when it runs directly — cancelled by a halt through ``frame``.

    Call it from inside ``frame.scope``, in the task that entered it (``frame=None``: a plain ask).
    The handler runs as in a direct ask: in this task, with a copy of its contextvars, holding one
    of the actor's handler slots, its failures supervised alike.

    One generator-based coroutine, the whole ask: its first step is run inline (most handlers answer
    there, as :func:`~._inline.first_step` runs it) and, when the handler suspends, the rest is driven from here as
    the kernel's trampoline drives it — each step inside the handler's contextvars, what the event loop
    sends or throws in (a value, a cancellation) forwarded, what the handler yields passed out unchanged.
    A run waiting on a model call waits in this ask: it holds this one frame, not a coroutine, a
    trampoline and the bound methods it kept.

    :raises ActorStopped: the actor was halted while its handler ran here.  The frame is cancelled
        from then on (see the module): the caller ends what it does in the frame.
    :raises RuntimeError: asked from another thread than the one whose loop entered the actor's runtime
        (refused by the plain ask this then is, as :meth:`ActorRef.ask` refuses it).  Here the frame's
        thread is compared (:attr:`Frame.thread`, the asker's own: the frame is used in the task that made it).

    Cancellation: unlike :meth:`ActorRef.ask` this is not a cancellation point by itself when the
    handler runs directly (its own awaits are).  A handler cancelled by anything but a halt
    propagates the cancellation unchanged.
    """
    if frame is None or type(ref) is not ActorRef:
        return (yield from ref.ask(message).__await__())
    cell = cell_of(ref)
    # Started actors only: an unstarted one runs on_start first, which the ordinary ask does.  Another
    # thread's loop asks the ordinary way too, which refuses it (see ActorRef.ask).
    if frame.thread != cell.spec.thread or not cell.enter_framed(frame):
        return (yield from ref.ask(message).__await__())
    ctx = contextvars.copy_context()
    coro = cell.actor.receive(message)
    try:
        try:
            # first_step(ctx, runtime, coro), written out: its StopIteration, the common end of a handler,
            # then leaves through one frame less (a traceback entry and a call, per ask).
            if ctx.get(CURRENT_RUNTIME) is not cell.spec.runtime:  # (no local: a waiting run holds this frame)
                ctx.run(CURRENT_RUNTIME.set, cell.spec.runtime)
            # One local for what passes through (yielded out, sent in, returned at the end), and few others: the
            # generator's frame is what a waiting run holds, eight bytes a local.
            passing = ctx.run(coro.send, None)
            while True:  # the handler suspended: the rest of it, one step at a time (see the docstring)
                thrown: BaseException | None = None
                try:
                    passing = yield passing
                except GeneratorExit:
                    ctx.run(coro.close)
                    raise
                except BaseException as exc:  # thrown in by the event loop: the handler's to see
                    thrown = exc
                if thrown is None:
                    passing = ctx.run(coro.send, passing)
                else:
                    passing, thrown = ctx.run(coro.throw, thrown), None
        except StopIteration as exc:
            passing = exc.value
    except Exception as exc:
        supervision.after_direct_failure(cell, frame, (exc, message, ctx, "receive"), True)
        raise
    except BaseException as exc:
        cell.leave_direct(frame, True)
        if not (frame.halted and cell.state >= STOPPED and isinstance(exc, anyio.get_cancelled_exc_class())):
            raise
        # The halt's cancellation, answered as a direct ask answers it (raised below: no cancellation in its context).
    else:
        cell.leave_direct(frame, True)
        return passing
    raise ActorStopped(f"actor {cell.name!r} was stopped while handling the message")


def hold(frame: Frame, ref: ActorRef) -> bool:
    """The task that entered ``frame`` becomes a handler of ``ref``'s actor until :func:`release`.

    For an actor whose body *is* a task's work — a run of the tool loop is one: its steps are the
    actor's handler, in the run's own task, with no message to carry them.  The task holds one of the
    actor's handler slots (busy in ``rt.stats()``, waited for by a drain); a halt (``rt.stop(ref)``,
    the runtime's exit) cancels ``frame`` as it cancels a direct handler's scope (``frame.halted``).

    :returns: False when the actor cannot take a handler now (not open or started, or busy): nothing held.
    :raises RuntimeError: called from another thread than the one whose loop entered the actor's runtime.
    """
    cell = cell_of(ref)
    spec = cell.spec
    if frame.thread != spec.thread and spec.host.running:  # (the frame's thread is its task's: see Frame)
        raise wrong_loop(f"hold() of actor {cell.name!r}", spec.thread, "rt.call(fn) with the whole run in fn")
    return cell.enter_framed(frame)


def release(frame: Frame, ref: ActorRef) -> None:
    """Give back the handler slot :func:`hold` took (once, from the same task)."""
    cell_of(ref).leave_direct(frame, True)
