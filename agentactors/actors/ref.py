"""Actor references: the address of an actor (``tell`` / ``try_tell`` / ``ask``).

An :class:`ActorRef` is what senders hold.  It holds the actor's
:class:`~agentactors.actors._cell.Cell`, where the kernel keeps the actor's
state, and nothing else: the cell owns every transition, the ref only asks for
them.  :func:`cell_of` is how the runtime reaches a ref's cell.

``ask`` has two paths.  Through the mailbox: the message is queued in an
:class:`~agentactors.actors.mailbox.Ask` envelope and a worker task answers it.
Direct: when the actor was spawned ``direct=True`` (the default), is open, has
nothing queued and a free handler slot, the handler runs in the asker's own
task — no mailbox round trip, no worker task — holding a slot, counted busy,
its cancel scope registered so ``stop``, a halt and the runtime's exit cancel
it, exactly as a worker's handler.  That path is written inline in
:meth:`ActorRef.ask` (a method of its own would add a coroutine frame to every
ask), and every step of it is the kernel's own: the slot is the cell's
(``enter_direct`` / ``leave_direct``), the handler runs through
:func:`~agentactors.actors._inline.run_inline`, an unstarted actor is started by
:func:`~agentactors.actors.supervision.start_direct`, and a failure goes to
:func:`~agentactors.actors.supervision.after_direct_failure`.

Every ``ask``, ``tell`` and ``try_tell`` first compares the calling thread with the one whose event loop
entered the actor's runtime (``threading.get_ident()``, ~35 ns: the cheapest check there is, where
asking the running loop costs ~0.2 µs on asyncio).  From another thread the call is refused
(:func:`~agentactors.actors.crossing.wrong_loop`, naming ``Runtime.call``) before it touches the actor:
the actor's state, its task group and its events all belong to that loop.
"""

from __future__ import annotations

import contextvars
import operator
from collections.abc import Callable
from threading import get_ident
from typing import Any, NoReturn

import anyio

import agentactors.actors.supervision as supervision

from .._backend import entered_here
from ..errors import ActorDeadlockError, ActorStopped, AskTimeout
from ._cell import ACCEPTED, CLOSED, OPEN, STOPPED, ActorLike, Cell, Failure
from ._inline import Suspended, run_inline
from .crossing import wrong_loop
from .mailbox import DONE, Ask, release_unclaimed

__all__ = ["Actor", "ActorLike", "ActorRef", "cell_of"]


class Actor:
    """Optional base class for actors: ``receive`` plus no-op ``on_start`` / ``on_stop`` hooks.

    Subclassing is not required; any object with ``async def receive`` is an actor.
    """

    __slots__ = ()

    async def receive(self, message: Any, /) -> Any:
        """Handle ``message``; what it returns answers an ask.  Subclasses implement it.

        Cancellation: a handler is cancelled (anyio's cancellation exception at its next checkpoint) when its
        asker gives up (cancelled, or its ask's timeout), when the actor is halted (``rt.stop`` — after its
        drain, or at once with ``drain=False`` — a failure under ``stop`` or ``escalate``), and at the
        runtime's exit after the drain.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement receive()")

    async def on_start(self) -> None:
        """Runs once before the first message is handled, in the runtime's own context.

        In the actor's first worker — or, for a direct actor, in the task of
        the first asker (see :meth:`ActorRef.ask`).

        Cancellation: an ``on_start`` cut short (its asker gave up, a halt, the runtime's exit) did not
        complete: the actor stays unstarted, the next message runs it again, and no ``on_stop`` runs for it.
        """

    async def on_stop(self) -> None:
        """Runs once when the actor stops, if ``on_start`` ran.

        Cancellation: at the runtime's exit every ``on_stop`` — one a ``stop()`` in another task is running
        included — is bounded (``max(drain_timeout, 0.1)`` seconds, then cancelled and logged); under
        :meth:`Runtime.stop <agentactors.actors.runtime.Runtime.stop>` it is not (``stop``'s timeout bounds the
        drain only); it runs in the task that finalizes the actor (the last worker's, or the caller's of
        ``stop``), and is cancelled with that task.
        """


#: ``cell_of(ref)``: the cell behind ``ref`` (for the kernel: the runtime reaches an actor's state through it).
#: An attribute getter, not a function: every ask in a frame reads it, and a Python call costs more than the read.
cell_of: Callable[[ActorRef], Cell] = operator.attrgetter("_cell")


class ActorRef:
    """The address of a spawned actor: ``tell``, ``try_tell`` and ``ask``.

    Holds one reference, to the actor's cell: a runtime may hold a hundred
    thousand idle actors, and each costs its cell plus this.
    """

    __slots__ = ("_cell",)

    def __init__(self, cell: Cell) -> None:
        self._cell = cell

    # -- public ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given to ``spawn`` or ``"<Class>-<n>"``."""
        return self._cell.name

    @property
    def stopped(self) -> bool:
        """Whether the actor no longer accepts messages."""
        return self._cell.state != OPEN

    @property
    def runtime(self) -> Any:
        """The :class:`~agentactors.actors.runtime.Runtime` the actor lives in.

        (Typed loosely because this module sits below the runtime's: the kernel has no import cycles.)
        """
        return self._cell.spec.runtime

    @property
    def actor(self) -> Any:
        """The actor object behind this reference (its current incarnation after a restart).

        For in-process introspection only (e.g. reading a ProviderActor's provider
        capabilities); talk to the actor with :meth:`tell` and :meth:`ask`.
        """
        return self._cell.actor

    def __repr__(self) -> str:
        return f"<ActorRef {self.name} {('open', 'stopping', 'stopped', 'stopped', 'stopped')[self._cell.state]}>"

    def try_tell(self, message: Any) -> bool:
        """Enqueue ``message`` if there is room now; never waits.

        Returns ``False`` when the mailbox is full (or senders are already
        waiting for room, who keep their turn) or the actor is stopped — the
        latter also records an ``actor.dead_letter`` event.

        :raises RuntimeError: called outside the thread of the runtime's event loop (see :meth:`ask`).
        """
        cell = self._cell
        if get_ident() != cell.spec.thread:
            _elsewhere(cell, "try_tell", "ref.runtime.call(ref.tell, message)")
            cell.spec.host.reject(cell, message, "stopped")
            return False
        code = cell.offer(message)
        if code == CLOSED:
            cell.spec.host.reject(cell, message, "stopped")
        return code == ACCEPTED

    async def tell(self, message: Any) -> None:
        """Enqueue ``message``, waiting while the mailbox is full (backpressure).

        Returns without yielding when there is room.  A tell to a stopped actor
        (or one that stops while the sender waits) becomes an
        ``actor.dead_letter`` event; it does not raise — except from the actor's own handler into its full
        mailbox, where it would wait forever (see "Asking itself" in :meth:`ask`): ``ActorDeadlockError``, nothing
        sent.  A handler error for a tell never reaches the sender: it is an ``actor.failed`` event.

        :raises RuntimeError: called from another event loop than the runtime's (see :meth:`ask`).

        Cancellation: a sender cancelled while it waits for room has not sent
        the message (a tell that returned was queued, and will be handled).
        """
        cell = self._cell
        if get_ident() != cell.spec.thread:
            _elsewhere(cell, "tell", "ref.runtime.call(ref.tell, message)")
            cell.spec.host.reject(cell, message, "stopped")
            return
        code = cell.offer(message)
        if code == ACCEPTED:
            return
        if code == CLOSED or not await self._wait_for_room(message):
            cell.spec.host.reject(cell, message, "stopped")

    # The timeout parameter is part of the public contract (docs/architecture.md), hence the noqa.
    async def ask(self, message: Any, timeout: float | None = None) -> Any:  # noqa: ASYNC109
        """Send ``message`` and return the handler's return value.

        The handler runs with the asker's contextvars (in a copy: changes it makes stay there) and
        sees the actor's runtime as ``Runtime.current()``.  If the handler raises, the same exception
        is raised here (under ``on_failure="resume"`` the actor goes on).  Raises
        :class:`~agentactors.errors.ActorStopped` if the actor is stopped or stops before answering.
        ``timeout`` (seconds, covering the wait for mailbox room too) raises
        :class:`~agentactors.errors.AskTimeout`; an answer that arrives at the very moment the timeout
        expires is returned.  ``timeout=0`` has expired before anything is sent: ``AskTimeout`` at once,
        the message not sent (``ActorStopped`` for a stopped actor).  A ``timeout`` that is not a number of
        seconds >= 0 (a bool, NaN, a negative one) is a ``TypeError`` / ``ValueError`` before anything is sent.

        **Asking itself.**  An ask made by the actor's own handler (in its own task) that would queue behind
        the slot that handler holds — ``concurrency=1``, or during ``on_start`` — could never be answered: it
        raises :class:`~agentactors.errors.ActorDeadlockError` at once, nothing sent (and so does a :meth:`tell` that
        would wait for room there).  The check is made only where an ask queues, never on the direct path.

        **Only from the runtime's event loop.**  The actor's state, tasks and events belong to the loop that
        entered its runtime: from another thread's loop this raises ``RuntimeError`` before touching the
        actor — hand the ask over with ``await ref.runtime.call(ref.ask, message)`` instead.  (A runtime that
        has closed answers any thread as a stopped actor: ``ActorStopped``.)

        **Direct asks.**  An actor spawned ``direct=True`` (the default) that is open, has nothing
        queued and a free handler slot runs the handler in the asker's own task (no mailbox round
        trip, no worker task); otherwise the message goes through the mailbox.  Either way the
        actor's ``concurrency`` and per-sender order hold, and ``rt.stats()``, ``rt.stop()`` and the
        runtime's exit see the handler.  The first ask to a direct actor that has not started runs its
        ``on_start`` first, in the asker's task but in the runtime's own context; asks arriving
        meanwhile queue and are served after.  If that ``on_start`` raises, supervision applies as for
        a worker's (``restart``: a new incarnation starts, then handles this message; any other policy
        stops the actor and this ask raises ``ActorStopped``).

        Cancellation: an ask is a cancellation point (an already-cancelled asker raises before its
        message is handled).  An asker that is cancelled, or whose ``timeout`` expires, abandons its
        ask: not yet started, it is skipped; running, its handler is cancelled (it sees anyio's
        cancellation exception at its next checkpoint); answered but not yet taken, an answer that
        owns work is released (:class:`~agentactors.actors.mailbox.ReleasableAnswer`).  An
        ``on_start`` run by an asker that gives up did not complete: the actor stays unstarted, and the
        next message runs ``on_start`` again.  A handler run directly that shields itself from
        cancellation past the timeout keeps the asker waiting until it returns; the asker then gets
        ``AskTimeout``.
        """
        cell = self._cell
        spec = cell.spec
        if get_ident() != spec.thread:
            _elsewhere(cell, "ask", "ref.runtime.call(ref.ask, message)")
            raise ActorStopped(f"actor {cell.name!r} is stopped (its runtime has closed)")
        if (timeout is None or _positive(timeout)) and cell.may_run_direct():
            await spec.checkpoint()  # an ask is a cancellation point, whichever path
            deadline = None if timeout is None else anyio.current_time() + timeout
            scope = spec.new_scope() if deadline is None else spec.new_scope(deadline=deadline)
            # Re-checked: None if that checkpoint let something run (never on anyio today): then the mailbox.
            # False: not started (and nobody starting it): this asker runs on_start first, not counted busy.
            busy = cell.enter_direct(scope)
            if busy is not None:
                # -- the direct path: the handler runs here, holding a slot like a worker's handler.
                ctx = contextvars.copy_context()
                env: Ask | None = None
                failure: Failure | None = None
                result: Any = None
                try:
                    with scope:
                        if not busy:
                            failure = await supervision.start_direct(cell)
                            busy = failure is None
                            if failure is not None:
                                # The message waits at the head of the mailbox (it came first) for what
                                # supervision does: a restarted actor handles it, a stopped one rejects it.
                                env = Ask(message, ctx, spec.new_event())
                                cell.queue_first(env)
                        if busy:
                            result = run_inline(ctx, spec.runtime, cell.actor.receive(message))
                            if type(result) is Suspended:
                                result = await result
                except Exception as exc:
                    failure = (exc, message, ctx, "receive")
                finally:
                    if failure is None:
                        cell.leave_direct(scope, busy)
                    else:
                        supervision.after_direct_failure(cell, scope, failure, busy)
                if env is None:
                    if failure is not None:
                        raise failure[0]
                    # A handler that shielded itself past the deadline could not be left behind (it runs in
                    # this task), but its late answer is still none; one that finished at the deadline is one.
                    if scope.cancelled_caught or (deadline is not None and anyio.current_time() > deadline):
                        _no_answer(cell, message, timeout, result)
                    return result
                # on_start failed: the answer comes through the mailbox (the message is queued already).
                if timeout is None:
                    return await self._ask(env, False, False)
                assert deadline is not None
                return await self._ask_by(env, deadline, timeout, False)
        # -- the mailbox path
        if cell.scopes and ((spec.concurrency == 1 and cell.busy) if cell.started else cell.slots == 1):
            _refuse_waiting_on_itself(cell, "ask", message)  # (rare: a handler asking its own actor)
        # A cancellation point before anything is sent, as on the direct path: a cancelled asker's message, once
        # queued, raced the asker's cancellation to a worker (on asyncio the worker came first and handled it).
        # Not for an actor that takes nothing (ActorStopped below, as before): a closed runtime's actor may be asked
        # from a later loop of another backend, where this runtime's checkpoint finds no loop of its own.
        if cell.state == OPEN:
            await spec.checkpoint()
        if timeout is None:
            return await self._ask(Ask(message, contextvars.copy_context(), spec.new_event()), False, True)
        if not timeout:  # 0 (never on the direct path): expired before anything could be sent
            _expired(cell, message)
        env = Ask(message, contextvars.copy_context(), spec.new_event())
        return await self._ask_by(env, anyio.current_time() + timeout, timeout, True)

    # -- internals -------------------------------------------------------------------------------

    async def _ask(self, env: Ask, keep_answer: bool, send: bool) -> Any:
        """Send ``env`` (unless it is already queued) and wait for its answer."""
        cell = self._cell
        if send:
            code = cell.offer(env)
            if code != ACCEPTED and (code == CLOSED or not await self._wait_for_room(env)):
                raise ActorStopped(f"actor {cell.name!r} is stopped")
        try:
            await env.done.wait()
        except BaseException:
            if not (keep_answer and env.state == DONE):
                env.abandon()
            raise
        return env.outcome()

    async def _ask_by(self, env: Ask, deadline: float, within: float, send: bool) -> Any:
        """:meth:`_ask` with a deadline: an answer that arrives as it expires is still returned.

        :raises AskTimeout: no answer by ``deadline`` (the ask's ``within`` seconds; it is abandoned).
        """
        try:
            with anyio.move_on_at(deadline):
                return await self._ask(env, True, send)
        except BaseException:
            env.abandon()  # cancelled from outside: an answer already given is dropped (and released)
            raise
        if env.state == DONE:
            return env.outcome()
        raise _timeout(self._cell, env.message, within)

    async def _wait_for_room(self, item: Any) -> bool:
        """Wait until a slot holder hands ``item`` into the mailbox.  False if the actor stopped meanwhile."""
        cell = self._cell
        if cell.scopes and ((cell.spec.concurrency == 1 and cell.busy) if cell.started else cell.slots == 1):
            _refuse_waiting_on_itself(cell, "tell" if type(item) is not Ask else "ask", item)
        waiter = cell.wait_in_line(item)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.admitted is None:
                cell.leave_line(waiter)
            elif waiter.admitted and type(item) is Ask:
                item.abandon()  # already queued: make the worker skip it
            raise
        return bool(waiter.admitted)


def _elsewhere(cell: Cell, call: str, via: str) -> None:
    """``call`` was made outside the thread of the runtime's loop: refused, unless the runtime has closed.

    A closed runtime's actors are stopped whichever loop asks (and no loop of theirs runs any more), so the
    caller then answers as for a stopped actor: this returns.

    :raises RuntimeError: the runtime still runs, in another thread's loop (the error names ``via``).
    """
    spec = cell.spec
    if spec.host.running:
        raise wrong_loop(f"{call}() to actor {cell.name!r}", spec.thread, via)


def _refuse_waiting_on_itself(cell: Cell, call: str, message: Any) -> None:
    """Refuse an ask (or a tell waiting for room) made by the actor's own handler, which it would wait on forever.

    Called only where the message would queue — never on the direct path — when one slot holder alone can hold
    the queue up: a started actor with ``concurrency=1`` whose handler runs, or an unstarted one with a single
    slot holder (the one running ``on_start`` or a restart).  That holder runs inside one of ``cell.scopes``; if
    the calling task entered it, what it queues is served only after it returns, and it would wait for that: a
    deadlock, refused here before anything is sent.  Only the caller's own task is recognised
    (:func:`~agentactors._backend.entered_here`); a task it started waits as before.  (With more slot holders,
    another may serve the message — or, while a restart runs beside older handlers, start the actor — so
    nothing is refused.)

    :raises ActorDeadlockError: the calling task holds the actor's only slot (``concurrency=1``), or runs its
        ``on_start``.
    """
    for scope in tuple(cell.scopes or ()):
        if entered_here(scope):
            if cell.started:
                why = (
                    f"its handler holds the actor's only slot (concurrency={cell.spec.concurrency}), so the "
                    "message would be handled only after the handler returns"
                )
            else:
                why = "the actor is still starting (on_start or a restart), so nothing is handled before that returns"
            if call == "tell":
                why = f"its mailbox is full and only handling makes room, but {why}"
                way = "try_tell() it (it never waits) or give the actor a larger mailbox_size"
            else:
                way = "call the code directly, tell() it instead, or spawn the actor with concurrency > 1"
            raise ActorDeadlockError(
                f"{call}() from actor {cell.name!r} to itself would wait forever: {why}; {way} "
                f"({type(message).__name__} not sent)"
            )


def _positive(timeout: Any) -> bool:
    """Whether an ask's ``timeout`` leaves time for a handler (> 0: it may run directly), once checked.

    :raises TypeError: not an int or a float (a bool is neither here).
    :raises ValueError: negative or NaN (``math.inf``: no deadline).
    """
    if type(timeout) is float or type(timeout) is int:
        if timeout >= 0:  # (NaN is not)
            return bool(timeout > 0)
        raise ValueError(f"an ask's timeout must be a number of seconds >= 0 (or None), not {timeout!r}")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool):  # a subclass of either
        return _positive(float(timeout))
    raise TypeError(f"an ask's timeout must be a number of seconds or None, not {type(timeout).__name__} {timeout!r}")


def _timeout(cell: Cell, message: Any, within: float) -> AskTimeout:
    return AskTimeout(f"ask to actor {cell.name!r} ({type(message).__name__}) got no answer within {within:g}s")


def _expired(cell: Cell, message: Any) -> NoReturn:
    """An ask whose ``timeout`` is 0: it has expired before anything is sent, so nothing is (the same on every backend).

    Queued, it raced its own deadline: on asyncio a worker started in the same loop iteration handled it and the
    answer came back (anyio delivers the deadline's cancellation at the asker's next yield); on trio the asker was
    cancelled at its first checkpoint and the message skipped — or handled anyway, by a worker that ran first.

    :raises ActorStopped: the actor is stopped (as for any ask to it).
    :raises AskTimeout: otherwise; the actor is untouched.
    """
    if cell.state != OPEN:
        raise ActorStopped(f"actor {cell.name!r} is stopped")
    raise _timeout(cell, message, 0)


def _no_answer(cell: Cell, message: Any, timeout: float | None, result: Any) -> NoReturn:
    """A direct handler's answer came too late (its scope was cancelled, or it ran past the deadline).

    The answer is released (:func:`release_unclaimed`): nobody will take it.

    :raises ActorStopped: the actor was halted (or the ask had no timeout: only a halt cancels it).
    :raises AskTimeout: the ask's timeout expired.
    """
    release_unclaimed(result)
    if timeout is None or cell.state >= STOPPED:
        raise ActorStopped(f"actor {cell.name!r} was stopped while handling the message")
    raise _timeout(cell, message, timeout)
