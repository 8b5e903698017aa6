"""Actor references: the address (``tell`` / ``try_tell`` / ``ask``) and the cell behind it.

An :class:`ActorRef` is both what senders hold and where the runtime keeps the
actor's state: the actor object, its mailbox (a deque created on the first
message and dropped when the actor goes idle), waiting senders and supervision
bookkeeping.  Keeping the two in one slotted object is what makes an idle
actor cost a few hundred bytes.
"""

from __future__ import annotations

import contextvars
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from ..errors import ActorStopped, AskTimeout
from .mailbox import DONE, Ask, CancelScopeLike, EventLike, Waiter, in_context

if TYPE_CHECKING:
    from collections.abc import Callable

    from .runtime import Runtime
    from .supervision import Supervisor

__all__ = ["Actor", "ActorLike", "ActorRef"]

# ActorRef states.  Only OPEN accepts messages; OPEN and STOPPING (draining) handle them.
OPEN: Final = 0
STOPPING: Final = 1
STOPPED: Final = 2  # halted: nothing more is handled; the last worker (or whoever sees no worker) finalizes
FINALIZING: Final = 3
DEAD: Final = 4

# The runtime the calling code runs in (Runtime.current()).
_CURRENT: contextvars.ContextVar[Runtime | None] = contextvars.ContextVar("agentactors_runtime", default=None)


# _offer() results.
_OK: Final = 0
_FULL: Final = 1
_STOPPED_CODE: Final = 2


class ActorLike(Protocol):
    """Anything with ``async def receive(self, message)``."""

    async def receive(self, message: Any, /) -> Any: ...


class Actor:
    """Optional base class for actors: ``receive`` plus no-op ``on_start`` / ``on_stop`` hooks.

    Subclassing is not required; any object with ``async def receive`` is an actor.
    """

    __slots__ = ()

    async def receive(self, message: Any, /) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must implement receive()")

    async def on_start(self) -> None:
        """Runs in the actor's first worker, before the first message is handled."""

    async def on_stop(self) -> None:
        """Runs once when the actor stops, if ``on_start`` ran."""


class ActorRef:
    """The address of a spawned actor: ``tell``, ``try_tell`` and ``ask``.

    Also the actor's cell: it holds the actor object, its mailbox (created on
    the first message, dropped when the actor goes idle) and its supervision
    state.  Slotted, because a runtime may hold a hundred thousand of them.
    """

    __slots__ = (
        "_active",
        "_actor",
        "_busy",
        "_concurrency",
        "_factory",
        "_id",
        "_idle",
        "_mailbox",
        "_name",
        "_restarts",
        "_rt",
        "_scopes",
        "_size",
        "_started",
        "_state",
        "_sup",
        "_waiters",
    )

    def __init__(
        self,
        rt: Runtime,
        actor: ActorLike,
        factory: Callable[[], ActorLike] | None,
        name: str | None,
        ident: int,
        size: int,
        concurrency: int,
        sup: Supervisor,
    ) -> None:
        self._rt = rt
        self._actor = actor
        self._factory = factory
        self._name = name
        self._id = ident
        self._size = size
        self._concurrency = concurrency
        self._sup = sup
        self._mailbox: deque[Any] | None = None
        self._waiters: deque[Waiter] | None = None
        self._scopes: set[CancelScopeLike] | None = None
        self._idle: EventLike | None = None
        self._active = 0  # slot holders: worker tasks alive plus direct asks running (see _ask_direct)
        self._busy = 0  # handlers running
        self._state = OPEN
        self._started = False
        self._restarts: list[float] | None = None  # failure times inside the restart window

    # -- public ----------------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The name given to ``spawn`` or ``"<Class>-<n>"``."""
        if self._name is None:
            self._name = f"{type(self._actor).__name__}-{self._id}"
        return self._name

    @property
    def stopped(self) -> bool:
        """Whether the actor no longer accepts messages."""
        return self._state != OPEN

    @property
    def runtime(self) -> Runtime:
        """The runtime the actor lives in."""
        return self._rt

    @property
    def actor(self) -> Any:
        """The actor object behind this reference (its current incarnation after a restart).

        For in-process introspection only (e.g. reading a ProviderActor's provider
        capabilities); talk to the actor with :meth:`tell` and :meth:`ask`.
        """
        return self._actor

    def __repr__(self) -> str:
        return f"<ActorRef {self.name} {('open', 'stopping', 'stopped', 'stopped', 'stopped')[self._state]}>"

    def try_tell(self, message: Any) -> bool:
        """Enqueue ``message`` if there is room now; never waits.

        Returns ``False`` when the mailbox is full (or senders are already
        waiting for room, who keep their turn) or the actor is stopped — the
        latter also records an ``actor.dead_letter`` event.
        """
        code = self._offer(message)
        if code == _STOPPED_CODE:
            self._rt._dead_letter(self, message)
        return code == _OK

    async def tell(self, message: Any) -> None:
        """Enqueue ``message``, waiting while the mailbox is full (backpressure).

        Returns without yielding when there is room.  A tell to a stopped actor
        (or one that stops while the sender waits) becomes an
        ``actor.dead_letter`` event; it does not raise.  A handler error for a
        tell never reaches the sender: it is an ``actor.failed`` event.  If the
        sender is cancelled while waiting for room, the message is not sent.
        """
        code = self._offer(message)
        if code == _OK:
            return
        if code == _STOPPED_CODE or not await self._wait_for_room(message):
            self._rt._dead_letter(self, message)

    # The timeout parameter is part of the public contract (docs/architecture.md), hence the noqa.
    async def ask(self, message: Any, timeout: float | None = None) -> Any:  # noqa: ASYNC109
        """Send ``message`` and return the handler's return value.

        The handler runs with the asker's contextvars (in a copy: changes it makes stay there).  When
        the actor has started, is open, has nothing queued and a free handler slot, the handler runs
        directly in the asker's task (no mailbox round trip, no worker task); otherwise the message
        goes through the mailbox.  Either way the actor's ``concurrency`` and per-sender order hold.
        If the handler raises, the same exception is raised here (under ``on_failure="resume"`` the
        actor goes on).  Raises :class:`~agentactors.errors.ActorStopped` if the actor is
        stopped or stops before answering.  ``timeout`` (seconds, covering the
        wait for mailbox room too) raises :class:`~agentactors.errors.AskTimeout`.
        On timeout or cancellation of the asker the ask is abandoned: not yet
        started, it is skipped; running, its handler is cancelled.  An answer
        that arrives at the very moment the timeout expires is returned.  (A handler run directly that
        shields itself from cancellation past the timeout keeps the asker waiting until it returns;
        the asker then gets ``AskTimeout``.)  An ask is a cancellation point: an already-cancelled
        asker raises before its message is handled directly.
        """
        if (
            self._state == OPEN
            and self._started
            and self._busy < self._concurrency
            and not self._mailbox
            and not self._waiters
            and (timeout is None or timeout > 0)
            and not self._rt._closed
        ):
            # The direct path: nothing queued ahead (per-sender order holds), a free slot and a started
            # actor — run the handler here instead of paying for a mailbox round trip (and, for an idle
            # actor, a new worker task).
            return await self._ask_direct(message, timeout)
        env = Ask(message, contextvars.copy_context(), self._rt._new_event())
        if timeout is None:
            return await self._ask(env, False)
        try:
            with anyio.move_on_after(timeout):
                return await self._ask(env, True)
        except BaseException:
            env.abandon()  # cancelled from outside: an answer already given is dropped (and released)
            raise
        if env.state == DONE:
            return env.outcome()
        raise AskTimeout(f"ask to actor {self.name!r} ({type(message).__name__}) got no answer within {timeout:g}s")

    # -- internals -------------------------------------------------------------------------------

    async def _ask_direct(self, message: Any, timeout: float | None) -> Any:  # noqa: ASYNC109
        """Run the handler in the asker's task, in a copy of its context, holding one of the actor's slots.

        The handler counts as busy (``_busy``: at most ``concurrency`` handlers run at once, whoever
        runs them) and as active (``_active``, as a worker: ``stop`` waits for it).  So a
        ``concurrency=1`` actor never runs a second handler meanwhile: messages arriving now queue,
        a lingering worker leaves them alone (see :func:`~agentactors.actors.worker.serve`), and
        :meth:`_leave_direct` starts a worker for them.  The handler's cancel scope is registered like
        a worker's, so a halt (``stop``, runtime shutdown, escalation) cancels it; its deadline is the
        ask's timeout.
        """
        rt = self._rt
        await anyio.lowlevel.checkpoint_if_cancelled()  # an ask is a cancellation point, whichever path
        if self._state != OPEN or self._busy >= self._concurrency or self._mailbox or self._waiters:
            # Only reached if that check raised nothing but let something run (never on anyio today):
            # fall back to the mailbox rather than reason about what changed.
            return await self.ask(message, timeout)
        ctx = contextvars.copy_context()
        if ctx.get(_CURRENT) is not rt:
            ctx.run(_CURRENT.set, rt)
        deadline = None if timeout is None else anyio.current_time() + timeout
        scope = rt._scope_cls() if deadline is None else rt._scope_cls(deadline=deadline)
        scopes = self._scopes
        if scopes is None:
            scopes = self._scopes = set()
        scopes.add(scope)
        self._active += 1
        self._busy += 1
        failure: Exception | None = None
        result: Any = None
        try:
            with scope:
                result = await in_context(ctx, self._actor.receive(message))
        except Exception as exc:
            failure = exc
        finally:
            scopes.discard(scope)
            self._leave_direct(failure, message, ctx)
        if failure is not None:
            raise failure
        # A handler that shielded itself past the deadline could not be left behind (it runs in this
        # task), but its late answer is still a timeout; one that finished at the deadline is an answer.
        if scope.cancelled_caught or (deadline is not None and anyio.current_time() > deadline):
            if timeout is None or self._state >= STOPPED:
                raise ActorStopped(f"actor {self.name!r} was stopped while handling the message")
            raise AskTimeout(f"ask to actor {self.name!r} ({type(message).__name__}) got no answer within {timeout:g}s")
        return result

    def _leave_direct(self, failure: Exception | None, message: Any, ctx: contextvars.Context) -> None:
        """Give back a direct ask's slot, applying supervision to its failure and serving what queued meanwhile."""
        rt = self._rt
        policy = self._sup.policy if failure is not None else "resume"
        if failure is not None and policy == "restart" and not rt._closed:
            # Rebuilding awaits on_stop / on_start: a worker takes over the slot, still counted busy
            # (so no other worker handles a message on the broken actor meanwhile), and does it, as
            # it would have in the mailbox path.
            self._active -= 1
            rt._activate(self, (failure, message, ctx))
            return
        self._busy -= 1
        if failure is not None and policy != "resume":
            # stop / escalate (or restart in a closed runtime, which just stops): synchronous.
            self._sup.failed_now(self, failure, message, ctx)
        self._active -= 1
        if self._mailbox and self._state <= STOPPING and self._started:
            # What queued behind the direct handler.  (Not started: another handler's failure is
            # restarting the actor, and its on_start fills the slots when it is done.)
            rt._fill(self)
        if self._active == 0:
            if self._state == STOPPED:
                rt._finalize_soon(self)
            elif self._mailbox is not None and not self._mailbox and self._state == OPEN:
                self._mailbox = None  # an idle actor keeps no buffer
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    async def _ask(self, env: Ask, keep_answer: bool) -> Any:
        rt = self._rt
        if env.ctx.get(_CURRENT) is not rt:
            # The handler must see its own runtime as Runtime.current(), whoever asks.
            env.ctx.run(_CURRENT.set, rt)
        code = self._offer(env)
        if code != _OK and (code == _STOPPED_CODE or not await self._wait_for_room(env)):
            raise ActorStopped(f"actor {self.name!r} is stopped")
        try:
            await env.done.wait()
        except BaseException:
            if not (keep_answer and env.state == DONE):
                env.abandon()
            raise
        return env.outcome()

    def _offer(self, item: Any) -> int:
        """Enqueue without waiting.  Returns _OK, _FULL or _STOPPED_CODE."""
        if self._state != OPEN:
            return _STOPPED_CODE
        mailbox = self._mailbox
        if mailbox is None:
            mailbox = self._mailbox = deque()
        elif len(mailbox) >= self._size or self._waiters:
            return _FULL
        mailbox.append(item)
        active = self._active
        # Start a worker when the live ones cannot take this message: idle actors hold no task.
        if active - self._busy < len(mailbox) and active < (self._concurrency if self._started else 1):
            self._rt._activate(self)
        return _OK

    async def _wait_for_room(self, item: Any) -> bool:
        """Wait until a worker hands ``item`` into the mailbox.  False if the actor stopped meanwhile."""
        waiter = Waiter(item, self._rt._new_event())
        waiters = self._waiters
        if waiters is None:
            waiters = self._waiters = deque()
        waiters.append(waiter)
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.admitted is None:
                try:
                    waiters.remove(waiter)
                except ValueError:
                    pass
            elif waiter.admitted and isinstance(item, Ask):
                item.abandon()  # already queued: make the worker skip it
            raise
        return bool(waiter.admitted)

    def _admit_waiter(self) -> None:
        """A slot was freed: move the first waiting sender's item into the mailbox (FIFO handoff)."""
        waiters = self._waiters
        mailbox = self._mailbox
        if not waiters or mailbox is None:
            return
        waiter = waiters.popleft()
        mailbox.append(waiter.item)
        waiter.admitted = True
        waiter.event.set()
        active = self._active
        if active - self._busy < len(mailbox) and active < (self._concurrency if self._started else 1):
            self._rt._activate(self)
