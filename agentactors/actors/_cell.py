"""An actor's cell: its state and every transition of that state, in one place.

A :class:`Cell` is what the runtime keeps per actor: the actor object (its
current incarnation), the mailbox (a deque created on the first message and
dropped when the actor goes idle), the senders waiting for room, the cancel
scopes of the handlers running now, the count of slot holders (worker tasks
plus asks handled directly in their askers' tasks) and of handlers running,
the state, whether ``on_start`` has run, and the restart history.

The state moves one way::

    OPEN ──stop()──▶ STOPPING ──halt──▶ STOPPED ──finalize──▶ FINALIZING ──▶ DEAD
      └───────────── halt (failure, runtime exit, stop(drain=False)) ──▶┘

``OPEN`` accepts and handles messages; ``STOPPING`` (a draining ``stop``)
handles what is queued but accepts nothing new; ``STOPPED`` handles nothing
more (queued messages were rejected, running handlers cancelled) and waits for
its last slot holder to leave; ``FINALIZING`` runs ``on_stop``; ``DEAD`` is
gone from the runtime.  The states are named module constants (plain ints: the
ask hot path compares them, and an int compare measured faster than an enum's).

Everything the runtime, the worker, supervision and :class:`ActorRef` do to an
actor is a method here — offer, admit a waiting sender, enter and leave a
handler slot, go idle, halt, finalize — so each bookkeeping rule exists once.
What a cell needs from its runtime (start a worker, finalize in a runtime task,
reject an item, record an event) goes through the :class:`Host` protocol, which
the runtime implements: this module imports no other module of the kernel.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import attrs

__all__ = [
    "ACCEPTED",
    "CLOSED",
    "CURRENT_RUNTIME",
    "DEAD",
    "FINALIZING",
    "FULL",
    "OPEN",
    "STOPPED",
    "STOPPING",
    "ActorLike",
    "CancelScopeLike",
    "Cell",
    "EventLike",
    "Failure",
    "Host",
    "Spec",
    "Waiter",
]

# -- states ---------------------------------------------------------------------------------------

OPEN: Final = 0
STOPPING: Final = 1
STOPPED: Final = 2
FINALIZING: Final = 3
DEAD: Final = 4
STATE_NAMES: Final = ("open", "stopping", "stopped", "finalizing", "dead")

# -- what offer() answers ----------------------------------------------------------------------------

ACCEPTED: Final = 0
FULL: Final = 1  # no room now (or senders already wait for room, who keep their turn)
CLOSED: Final = 2  # the actor accepts nothing more

#: The runtime the calling code runs in (``Runtime.current()``): set by the runtime when entered and, in the
#: context an ask's handler runs in, to the actor's runtime.  Typed loosely: this module sits below the runtime's.
CURRENT_RUNTIME: contextvars.ContextVar[Any] = contextvars.ContextVar("agentactors_runtime", default=None)


class ActorLike(Protocol):
    """Anything with ``async def receive(self, message)``."""

    async def receive(self, message: Any, /) -> Any:
        """Handle ``message``; what it returns answers an ask.

        Cancellation: the handler is cancelled (anyio's cancellation at its next checkpoint) when its asker
        gives up, when the actor is halted, and at the runtime's exit after the drain.
        """
        ...


class EventLike(Protocol):
    """The subset of ``anyio.Event`` the kernel uses."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...


class CancelScopeLike(Protocol):
    """The subset of ``anyio.CancelScope`` the kernel uses."""

    def cancel(self) -> None: ...

    @property
    def cancel_called(self) -> bool: ...


#: A failure handed to a worker for supervision: (error, message or None, the asker's context or None, phase).
Failure = tuple[Exception, Any, "contextvars.Context | None", str]


class Host(Protocol):
    """What a cell needs from the runtime it lives in; the runtime implements it.

    None of these blocks.  ``start_worker`` and ``finalize_soon`` start runtime
    tasks in the runtime's own context and do nothing once the runtime closed.
    """

    @property
    def running(self) -> bool:
        """Whether the runtime still runs (a restart needs a running runtime to start into)."""
        ...

    def start_worker(self, cell: Cell, failure: Failure | None) -> bool:
        """Start a worker task for ``cell`` (its slot is already counted); False when the runtime closed.

        :raises RuntimeError: called from another event loop than the runtime's (nothing was started).
        """
        ...

    def worker_done(self) -> None:
        """A worker task ends (the runtime's own task accounting)."""
        ...

    def finalize_soon(self, cell: Cell) -> None:
        """Finalize ``cell`` in a runtime task (not in, nor cancelled with, the task that halted it)."""
        ...

    def reject(self, cell: Cell, item: Any, reason: str) -> None:
        """``item`` left the mailbox unhandled: an ask fails with ``ActorStopped``, a tell is a dead letter."""
        ...

    def record(self, ctx: contextvars.Context | None, type: str, /, **data: Any) -> None:
        """Emit an event to the sink of the run ``ctx`` belongs to (``None``: the current one) if anyone listens."""
        ...

    def escalate(self, cell: Cell, error: BaseException) -> None:
        """Halt ``cell`` and cancel the runtime; ``error`` leaves ``async with Runtime()``."""
        ...

    def forget(self, cell: Cell) -> None:
        """``cell`` is dead: drop it from the runtime's actors and record ``actor.stopped``."""
        ...

    def own_context(self) -> contextvars.Context:
        """A fresh copy of the runtime's own context (where ``on_start`` runs, whoever triggers it)."""
        ...


@attrs.frozen(slots=True, eq=False)
class Spec:
    """Settings shared by every actor spawned in one runtime with the same arguments.

    Immutable and shared (the runtime keeps one per distinct setting), so an
    idle actor pays one reference for all of them.  ``new_event`` and
    ``new_scope`` are the running backend's own classes, and ``checkpoint`` its
    ``checkpoint_if_cancelled`` (``scope_checkpoint`` the same from a known scope), resolved
    once: ``anyio.Event()`` (and the others) look the backend up on every call.
    """

    host: Host
    runtime: Any  # the public runtime object (ActorRef.runtime, Runtime.current() in handlers)
    new_event: Callable[[], EventLike]
    new_scope: Callable[..., Any]
    checkpoint: Callable[[], Awaitable[None]]
    policy: str
    max_restarts: int
    window: float
    size: int
    concurrency: int
    direct: bool
    #: The ident of the thread whose event loop entered the runtime: refs compare it with the caller's first
    #: (an ask or tell from another thread's loop is refused, :func:`~agentactors.actors.crossing.wrong_loop`).
    thread: int | None
    quiet: bool = False  # no actor.started / actor.stopped events (an actor per run: the run has its own)
    #: ``checkpoint_if_cancelled`` from a known innermost scope (:func:`agentactors._backend.scope_checkpoint`):
    #: a frame's, between the asks made in it.  ``None``: made by hand; the frame uses ``checkpoint``.
    scope_checkpoint: Callable[[Any], Awaitable[None]] | None = None


class Waiter:
    """A sender waiting for room in a full mailbox.

    The slot holder that frees room hands the waiting item straight into the
    mailbox (``admitted = True``) and wakes the sender, so a new sender cannot
    overtake one that is already waiting (FIFO, per-sender order kept).
    ``admitted = False`` means the actor stopped while the sender waited.
    """

    __slots__ = ("admitted", "event", "item")

    def __init__(self, item: Any, event: EventLike) -> None:
        self.item = item
        self.event = event
        self.admitted: bool | None = None


class _Rare:
    """The parts of a cell most actors never use, kept out of the cell itself (W4: 100,000 idle actors)."""

    __slots__ = ("factory", "idle", "restarts")

    def __init__(self, factory: Callable[[], ActorLike] | None) -> None:
        self.factory = factory
        self.idle: EventLike | None = None  # set when the cell goes idle (or dies): wakes stop() and drains
        self.restarts: list[float] | None = None  # failure times inside the restart window


class Cell:
    """One actor's state and its transitions (see the module docstring).

    Attributes are read freely by the kernel's modules (``state``, ``busy``,
    ``mailbox``, ...); they change only through the methods below.
    """

    __slots__ = ("actor", "busy", "label", "mailbox", "rare", "scopes", "slots", "spec", "started", "state", "waiters")

    def __init__(
        self, spec: Spec, actor: ActorLike, label: str | int, factory: Callable[[], ActorLike] | None
    ) -> None:
        self.actor = actor
        self.spec = spec
        self.label: str | int = label  # the name, or the spawn number the default name is made from
        self.mailbox: deque[Any] | None = None
        self.waiters: deque[Waiter] | None = None
        self.scopes: set[CancelScopeLike] | None = None
        # Only a restarting actor needs its factory: every other policy never rebuilds the object.
        self.rare: _Rare | None = _Rare(factory) if factory is not None and spec.policy == "restart" else None
        self.slots = 0  # slot holders: worker tasks alive plus direct asks running
        self.busy = 0  # handlers running (at most spec.concurrency, whoever runs them)
        self.state = OPEN
        # An actor with no on_start has nothing to run before its first message: started at spawn.
        self.started = getattr(actor, "on_start", None) is None

    @property
    def name(self) -> str:
        """The name given to ``spawn`` or ``"<Class>-<n>"`` (made on first use)."""
        label = self.label
        if isinstance(label, str):
            return label
        name = self.label = f"{type(self.actor).__name__}-{label}"
        return name

    @property
    def factory(self) -> Callable[[], ActorLike] | None:
        """What rebuilds the actor on restart (only kept under ``on_failure="restart"``)."""
        return self.rare.factory if self.rare is not None else None

    @property
    def restarts(self) -> tuple[float, ...]:
        """The times of the restarts still inside the restart window (oldest first)."""
        rare = self.rare
        return tuple(rare.restarts) if rare is not None and rare.restarts else ()

    def __repr__(self) -> str:
        return f"<Cell {self.name} {STATE_NAMES[self.state]} slots={self.slots} busy={self.busy}>"

    # -- admission -------------------------------------------------------------------------------

    def offer(self, item: Any) -> int:
        """Enqueue ``item`` without waiting: ACCEPTED, FULL or CLOSED.  Starts a worker if none can take it."""
        if self.state != OPEN:
            return CLOSED
        mailbox = self.mailbox
        if mailbox is None:
            mailbox = self.mailbox = deque()
        elif len(mailbox) >= self.spec.size or self.waiters:
            return FULL
        mailbox.append(item)
        slots = self.slots
        # Idle actors hold no task: start a worker when the live ones cannot take this message.  Before
        # on_start has run, one slot holder only (it runs on_start; the others would have to wait for it).
        if slots - self.busy < len(mailbox) and slots < (self.spec.concurrency if self.started else 1):
            try:
                self._start_worker(None)
            except BaseException:
                mailbox.pop()  # refused (another event loop's sender): the item was not sent
                raise
        return ACCEPTED

    def queue_first(self, item: Any) -> None:
        """Put ``item`` at the head of the mailbox (an ask that came first, handed back to the mailbox)."""
        mailbox = self.mailbox
        if mailbox is None:
            mailbox = self.mailbox = deque()
        mailbox.appendleft(item)

    def wait_in_line(self, item: Any) -> Waiter:
        """Register a sender waiting for room (FIFO); it waits on ``waiter.event``."""
        waiter = Waiter(item, self.spec.new_event())
        waiters = self.waiters
        if waiters is None:
            waiters = self.waiters = deque()
        waiters.append(waiter)
        return waiter

    def leave_line(self, waiter: Waiter) -> None:
        """A waiting sender gave up before it was admitted."""
        waiters = self.waiters
        if waiters is not None:
            try:
                waiters.remove(waiter)
            except ValueError:
                pass

    def take(self) -> Any:
        """Pop the next queued item for a handler, admitting the first waiting sender into the room it frees.

        The caller then runs the handler and calls :meth:`handler_done`; the
        handler counts as busy from here.
        """
        mailbox = self.mailbox
        assert mailbox is not None, "take() with nothing queued"
        item = mailbox.popleft()
        self.busy += 1  # (before the check below: the taking slot holder is not free for the item let in)
        waiters = self.waiters
        if waiters:
            # FIFO handoff: the first waiting sender's item goes into the room just freed.
            waiter = waiters.popleft()
            mailbox.append(waiter.item)
            waiter.admitted = True
            waiter.event.set()
            slots = self.slots
            if slots - self.busy < len(mailbox) and slots < (self.spec.concurrency if self.started else 1):
                self._start_worker(None)
        return item

    def handler_done(self) -> None:
        """A handler (started by :meth:`take`, or a failed direct one handed to a worker) finished."""
        self.busy -= 1

    def fill(self) -> None:
        """Start workers for queued messages, up to the actor's concurrency (after ``on_start``, or a handler)."""
        mailbox = self.mailbox
        concurrency = self.spec.concurrency
        while (
            mailbox
            and self.state <= STOPPING
            and self.slots - self.busy < len(mailbox)
            and self.slots < concurrency
            and self._start_worker(None)
        ):
            pass

    def _start_worker(self, failure: Failure | None) -> bool:
        # Counted before the task starts: an eager task factory may run it inside start_worker().
        self.slots += 1
        try:
            started = self.spec.host.start_worker(self, failure)
        except BaseException:
            self.slots -= 1  # refused (called from another event loop): nothing started
            raise
        if started:
            return True
        self.slots -= 1
        return False

    # -- handler slots ---------------------------------------------------------------------------

    def may_run_direct(self) -> bool:
        """Whether an ask may run its handler in the asker's task now.

        Direct actors only; open; nothing queued ahead (per-sender order holds)
        and nobody waiting for room; a free handler slot; and started — or not
        started with nobody starting it (the asker then runs ``on_start`` first).
        """
        return (
            self.state == OPEN
            and self.spec.direct
            and self.busy < self.spec.concurrency
            and not self.mailbox
            and not self.waiters
            and (self.started or self.slots == 0)
        )

    def enter_direct(self, scope: CancelScopeLike) -> bool | None:
        """A direct ask takes a slot, re-checking :meth:`may_run_direct` (its asker passed a checkpoint since).

        ``None``: the direct path closed meanwhile, nothing was taken (the ask goes through the mailbox).
        Otherwise the scope is registered, so a halt cancels it, and the result says whether the actor
        was started: the handler then counts as busy at once; if not, the asker runs ``on_start`` first
        and then calls :meth:`started_now`.
        """
        if not (
            self.state == OPEN
            and self.busy < self.spec.concurrency
            and not self.mailbox
            and not self.waiters
            and (self.started or self.slots == 0)
        ):
            return None
        self.slots += 1
        scopes = self.scopes
        if scopes is None:
            scopes = self.scopes = set()
        scopes.add(scope)
        if self.started:
            self.busy += 1
            return True
        return False

    def enter_framed(self, scope: CancelScopeLike) -> bool:
        """:meth:`enter_direct` for an ask that brings its own scope (a frame's) to a started actor.

        True: a slot is taken, the handler counts as busy and ``scope`` is registered.  False: the
        direct path is closed now (or the actor is not started): nothing was taken.
        """
        spec = self.spec
        if not (
            self.started
            and self.state == OPEN
            and spec.direct
            and self.busy < spec.concurrency
            and not self.mailbox
            and not self.waiters
        ):
            return False
        self.slots += 1
        self.busy += 1
        scopes = self.scopes
        if scopes is None:
            scopes = self.scopes = set()
        scopes.add(scope)
        return True

    def started_now(self, busy: bool) -> None:
        """``on_start`` returned: the actor handles messages.  ``busy``: a direct handler runs next, in a slot."""
        self.started = True
        if busy:
            self.busy += 1
        self.fill()

    def leave_direct(self, scope: CancelScopeLike, busy: bool) -> None:
        """A direct ask gives its slot back (``busy``: its handler ran) and serves what queued meanwhile."""
        scopes = self.scopes
        if scopes is not None:
            scopes.discard(scope)
        if busy:
            self.busy -= 1
        self.slots -= 1
        if self.mailbox and self.state <= STOPPING:
            if self.started:
                self.fill()  # what queued behind the direct handler
            elif not self.slots:
                # The asker was running on_start and gave up (cancelled, timed out): the actor is still not
                # started, and a worker starts it over for what queued meanwhile.  (With a slot holder left,
                # that one is starting the actor — a restart — and fills the slots when it is done.)
                self._start_worker(None)
        if not self.slots:
            if self.mailbox is not None or self.rare is not None:  # (else there is nothing to drop or wake)
                self._go_idle()
            if self.state == STOPPED:
                self.spec.host.finalize_soon(self)

    def hand_over(self, scope: CancelScopeLike, failure: Failure, busy: bool) -> None:
        """A direct ask's slot passes to a worker that applies supervision to ``failure`` (a restart awaits).

        The slot stays held — and the handler stays busy when ``busy`` — so no other handler runs on the
        broken actor meanwhile; the worker calls :meth:`handler_done` once it has dealt with the failure.
        """
        self.unregister(scope)
        try:
            if self.spec.host.start_worker(self, failure):
                return
        except BaseException:
            self._give_back(busy)  # refused (another event loop): the slot is not handed to anyone
            raise
        # The runtime closed under us: nothing to restart into (its exit finalizes every actor).
        self._give_back(busy)

    def _give_back(self, busy: bool) -> None:
        if busy:
            self.busy -= 1
        self.slots -= 1
        self._settle()

    def register(self, scope: CancelScopeLike) -> None:
        """A handler's cancel scope, cancelled by a halt."""
        scopes = self.scopes
        if scopes is None:
            scopes = self.scopes = set()
        scopes.add(scope)

    def unregister(self, scope: CancelScopeLike) -> None:
        scopes = self.scopes
        if scopes is not None:
            scopes.discard(scope)

    def leave_worker(self) -> bool:
        """A worker ends.  True when it was the last slot holder of a halted actor: it must finalize it.

        The worker reports its end to the runtime (``host.worker_done()``) after that: its ``on_stop``
        is still the runtime's work, which a drain waits for.
        """
        self.slots -= 1
        return self._settle()

    def _settle(self) -> bool:
        """After a slot holder left: go idle if it was the last.  True when a halted actor is then due to finalize."""
        if self.slots:
            return False
        self._go_idle()
        return self.state == STOPPED

    def _go_idle(self) -> None:
        # The one place an actor goes quiet: an idle actor keeps no buffer, and whoever waits for quiet
        # (stop(), a drain) is woken.
        mailbox = self.mailbox
        if mailbox is not None and not mailbox:
            self.mailbox = None
        rare = self.rare
        if rare is not None and rare.idle is not None:
            rare.idle.set()
            rare.idle = None

    async def wait_quiet(self) -> None:
        """Wait until no slot holder is left (no worker, no direct ask).

        Cancellation: a cancelled waiter leaves at once; nothing about the actor changes.
        """
        while self.slots:
            await self._idle_event().wait()

    def cut_off_stop(self) -> None:
        """Cancel the ``on_stop`` running now (FINALIZING: the only scope registered is its own), wherever it runs."""
        if self.state == FINALIZING and self.scopes:
            for scope in tuple(self.scopes):
                scope.cancel()

    async def wait_dead(self) -> None:
        """Wait until the cell is finalized.  Cancellation: as :meth:`wait_quiet`."""
        while self.state != DEAD:
            await self._idle_event().wait()

    def _idle_event(self) -> EventLike:
        rare = self.rare
        if rare is None:
            rare = self.rare = _Rare(None)
        event = rare.idle
        if event is None:
            event = rare.idle = self.spec.new_event()
        return event

    # -- restarts --------------------------------------------------------------------------------

    def replace(self, fresh: ActorLike, restarts: list[float]) -> tuple[ActorLike, bool]:
        """Make ``fresh`` the actor's incarnation (not started yet).  Returns the old one and whether it had started."""
        old, was_started = self.actor, self.started
        self.actor = fresh
        self.started = False
        rare = self.rare
        if rare is None:
            rare = self.rare = _Rare(None)
        rare.restarts = restarts
        return old, was_started

    def forget_restarts(self) -> None:
        if self.rare is not None:
            self.rare.restarts = None

    # -- stopping --------------------------------------------------------------------------------

    def begin_stopping(self) -> bool:
        """OPEN → STOPPING (accept nothing new, handle what is queued).  False if it was not open."""
        if self.state != OPEN:
            return False
        self.state = STOPPING
        self._reject_waiters()
        return True

    def halt(self, reason: str) -> None:
        """Stop handling now: reject what is queued and waiting, cancel running handlers.  Idempotent."""
        if self.state >= STOPPED:
            return
        self.state = STOPPED
        self._reject_waiters()
        mailbox = self.mailbox
        if mailbox:
            items = list(mailbox)
            mailbox.clear()
            host = self.spec.host
            for item in items:
                host.reject(self, item, reason)
        if self.scopes:
            for scope in tuple(self.scopes):
                scope.cancel()

    def _reject_waiters(self) -> None:
        waiters = self.waiters
        while waiters:
            waiter = waiters.popleft()
            waiter.admitted = False
            waiter.event.set()

    async def finalize(self) -> None:
        """Run ``on_stop`` (if the actor started), then the cell is DEAD.  Once per actor; later calls return.

        ``on_stop`` runs in a cancel scope registered with the cell while it runs: the runtime's exit cuts off
        (:meth:`cut_off_stop`) a hook that a ``stop()`` in another task is running, as it bounds its own.

        Cancellation: ``on_stop`` sees it like any await; the cell is DEAD afterwards all the same.
        """
        if self.state >= FINALIZING:
            return
        self.halt("stopped")  # nothing queued or waiting may be left without an answer
        self.state = FINALIZING
        host = self.spec.host
        try:
            if self.started:
                self.started = False
                on_stop = getattr(self.actor, "on_stop", None)
                if on_stop is not None:
                    scope = self.spec.new_scope()
                    self.register(scope)
                    try:
                        with scope:
                            await on_stop()
                    except Exception as exc:
                        host.record(None, "actor.failed", actor=self.name, error=exc, phase="on_stop")
                    finally:
                        self.unregister(scope)
        finally:
            self.state = DEAD
            host.forget(self)
            self._go_idle()
