"""The actor runtime: one task group, actors activated on demand, ask/tell with backpressure, supervision.

``async with Runtime() as rt:`` owns one anyio task group.  Every task the
runtime starts (actor workers, helper tasks such as a provider stream's feeder)
lives under it, so leaving the block leaves nothing behind: actors drain for up
to ``drain_timeout`` seconds, then whatever is still running is cancelled.

An actor is any object with ``async def receive(self, message)``; the return
value answers an ``ask``.  Optional ``async def on_start(self)`` runs before the
first message is handled and ``async def on_stop(self)`` when the actor stops
(only if ``on_start`` ran, i.e. the actor was activated).

**Idle actors hold no task.**  A message arriving at an idle actor starts a
worker task in the runtime's task group; the worker handles messages until the
mailbox is empty and then ends (dropping the mailbox's buffer too).  An idle
actor is its :class:`ActorRef` plus the user's object — a few hundred bytes.

**Asks run with the asker's contextvars.**  The worker runs the handler of an
ask step by step inside a copy of the asker's context (see
:func:`~agentactors.actors.mailbox.in_context`), so a run's event sink and id
reach the decorators inside a provider actor without a task per message.
Tells run in the runtime's own context.  An ask to a started actor with an
empty mailbox and a free handler slot skips the mailbox: its handler runs the
same way, but in the asker's own task (:meth:`ActorRef.ask`), holding a slot
and a registered cancel scope like a worker's handler.

**Cancellation.**  An asker that is cancelled, or whose ``timeout`` expires,
abandons its ask: a message not yet started is skipped; a running handler is
cancelled (it sees anyio's cancellation exception at its next checkpoint).
"""

from __future__ import annotations

import contextvars
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast

import anyio
import attrs
from anyio.abc import TaskGroup

from ..errors import ActorStopped, redact
from ..events import EventSink, FanOut, Recorder, current_sink
from .mailbox import Ask, EventLike
from .ref import _CURRENT, DEAD, FINALIZING, OPEN, STOPPED, STOPPING, Actor, ActorLike, ActorRef
from .supervision import Supervisor
from .worker import Failure, work

if TYPE_CHECKING:
    from types import TracebackType

    from ..agent import Agent, AsCompleted, Prompt
    from ..loop.result import RunResult

__all__ = ["Actor", "ActorRef", "FailurePolicy", "Runtime", "RuntimeStats"]

log = logging.getLogger("agentactors.actors")

FailurePolicy: TypeAlias = Literal["resume", "restart", "stop", "escalate"]
_POLICIES: Final = frozenset({"resume", "restart", "stop", "escalate"})


@attrs.frozen(slots=True)
class RuntimeStats:
    """The runtime's own accounting, at the moment of the call.

    ``actors``: live (spawned, not finally stopped) actors.  ``tasks``: tasks
    the runtime is running (actor workers and helper tasks).  ``busy``: handlers
    running now.  ``queued``: messages waiting in mailboxes, with the depth per
    actor name (non-empty mailboxes only) in ``mailboxes``.
    """

    actors: int
    tasks: int
    busy: int
    queued: int
    mailboxes: Mapping[str, int]


ActorSource: TypeAlias = ActorLike | Callable[[], ActorLike]


class Runtime:
    """Structured-concurrency home of actors.  Use as ``async with Runtime() as rt:``.

    :param recorders: receive the runtime's events (``actor.*``) and, via a
        run's sink, the events of runs started in it.
    :param drain_timeout: seconds actors may keep working after the block is
        left (and the default for :meth:`stop`), before they are cancelled.

    Leaving the block waits until every actor is idle (at most
    ``drain_timeout``), cancels what still runs, rejects what is still queued
    (asks get :class:`~agentactors.errors.ActorStopped`, tells become dead
    letters), runs ``on_stop`` hooks and closes the providers started with
    :meth:`provider_ref`.  An actor whose ``on_failure="escalate"`` fails
    cancels the block, and its exception — bare, not in a group — leaves
    ``async with``.
    """

    __slots__ = (
        "_actors",
        "_closed",
        "_ctx",
        "_entered",
        "_escalated",
        "_event_cls",
        "_idle",
        "_ids",
        "_providers",
        "_running",
        "_scope_cls",
        "_sink",
        "_spawning",
        "_supervisors",
        "_tg",
        "_token",
        "drain_timeout",
    )

    def __init__(self, recorders: Iterable[Recorder] = (), drain_timeout: float = 5.0) -> None:
        if drain_timeout < 0:
            raise ValueError("drain_timeout must be >= 0")
        self.drain_timeout = float(drain_timeout)
        self._sink = EventSink(FanOut(tuple(recorders)))
        self._tg: TaskGroup | None = None
        self._ctx: contextvars.Context | None = None
        self._token: contextvars.Token[Runtime | None] | None = None
        self._actors: set[ActorRef] = set()
        self._providers: dict[int, tuple[Any, ActorRef, dict[str, Any]]] = {}
        self._supervisors: dict[tuple[str, int, float], Supervisor] = {}
        self._running = 0
        self._idle: EventLike | None = None
        self._escalated: BaseException | None = None
        self._entered = False
        self._closed = False
        self._spawning = False
        self._ids = itertools.count(1)
        self._event_cls: Callable[[], EventLike] = anyio.Event
        self._scope_cls: Callable[..., anyio.CancelScope] = anyio.CancelScope

    @staticmethod
    def current() -> Runtime | None:
        """The runtime the calling code runs in (inside ``async with`` or an actor), or ``None``."""
        return _CURRENT.get()

    @property
    def fanout(self) -> FanOut:
        """The runtime's recorders; a run's sink should include them (``rt.fanout.with_recorders(...)``)."""
        return self._sink.fanout

    @property
    def sink(self) -> EventSink:
        """Where events emitted outside any run go."""
        return self._sink

    @property
    def running(self) -> bool:
        """Inside ``async with``: actors can be spawned and messaged."""
        return self._entered and not self._closed

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Runtime:
        if self._entered:
            raise RuntimeError("a Runtime can be entered only once")
        self._entered = True
        # Resolve the backend's concrete classes once: anyio.Event() / CancelScope() look the
        # backend up on every call, which the ask hot path does not need to pay.
        self._event_cls = type(anyio.Event())
        self._scope_cls = type(anyio.CancelScope())
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._token = _CURRENT.set(self)
        # Workers start in this context, not the sender's: a tell must not inherit whatever
        # contextvars happened to be set where its actor was activated.
        self._ctx = contextvars.copy_context()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        tg = self._tg
        assert tg is not None, "Runtime.__aexit__ without __aenter__"
        cancelled = anyio.get_cancelled_exc_class()
        suppress = False
        try:
            if exc is None:
                try:
                    with anyio.move_on_after(self.drain_timeout):
                        await self.wait_idle()
                except cancelled as e:  # an escalation (or an outer cancellation) during the drain
                    exc = e
            tg.cancel_scope.cancel()
            if exc is None or isinstance(exc, cancelled):
                suppress = bool(await tg.__aexit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None))
            else:
                # The body raised: let its exception leave bare rather than wrapped in the group.
                await tg.__aexit__(None, None, None)
        finally:
            self._closed = True
            if self._token is not None:
                try:
                    _CURRENT.reset(self._token)
                except ValueError:
                    pass  # left in another context than it was entered in: nothing of ours to restore
                self._token = None
            with anyio.CancelScope(shield=True), anyio.move_on_after(max(self.drain_timeout, 0.1)):
                await self._close_all()
        escalated, self._escalated = self._escalated, None
        if escalated is not None:
            raise escalated
        return suppress

    async def wait_idle(self) -> None:
        """Wait until no actor handles a message and no runtime task runs."""
        while self._running:
            event = self._idle
            if event is None:
                event = self._idle = self._event_cls()
            await event.wait()

    async def _close_all(self) -> None:
        for ref in list(self._actors):
            self._halt(ref, "the runtime closed")
            await self._finalize(ref)
        providers, self._providers = list(self._providers.values()), {}
        for provider, _ref, _budgets in providers:
            try:
                await provider.aclose()
            except Exception as exc:
                log.warning("closing provider %r raised %s", provider, redact(f"{type(exc).__name__}: {exc}"))

    # -- spawning --------------------------------------------------------------------------------

    def spawn(
        self,
        actor_or_factory: ActorSource,
        *,
        name: str | None = None,
        mailbox_size: int = 256,
        concurrency: int = 1,
        on_failure: FailurePolicy = "resume",
        max_restarts: int = 3,
        restart_window: float = 60.0,
    ) -> ActorRef:
        """Register an actor and return its address.  Synchronous: the actor starts on its first message.

        ``actor_or_factory`` is an actor object, or a zero-argument factory (a
        class or function) that builds one; ``on_failure="restart"`` needs the
        factory, to rebuild the actor's state.  ``concurrency=1`` handles one
        message at a time (state needs no lock); ``N`` runs up to N handlers at
        once (per-sender order is then only the order of *starting*).
        ``on_failure``: ``"resume"`` (the error goes to the asker, or an
        ``actor.failed`` event for a tell; the actor goes on), ``"restart"``
        (rebuild from the factory; more than ``max_restarts`` failures within
        ``restart_window`` seconds stop it), ``"stop"``, ``"escalate"`` (cancel
        the runtime and raise the error out of ``async with Runtime()``).
        """
        self._check_running()
        key = (on_failure, max_restarts, restart_window)
        sup = self._supervisors.get(key)
        if sup is None:
            if on_failure not in _POLICIES:
                raise ValueError(f"on_failure must be one of {sorted(_POLICIES)}, not {on_failure!r}")
            if max_restarts < 0 or restart_window <= 0:
                raise ValueError("max_restarts must be >= 0 and restart_window > 0")
            # Supervisors are immutable policy objects, shared: an idle actor should not carry its own.
            sup = self._supervisors[key] = Supervisor(self, on_failure, max_restarts, float(restart_window))
        if mailbox_size < 1 or concurrency < 1:
            raise ValueError("mailbox_size and concurrency must be >= 1")
        factory: Callable[[], ActorLike] | None
        if not isinstance(actor_or_factory, type) and callable(getattr(actor_or_factory, "receive", None)):
            actor = cast(ActorLike, actor_or_factory)
            factory = None
        elif callable(actor_or_factory):
            factory = actor_or_factory
            actor = factory()
            if not callable(getattr(actor, "receive", None)):
                raise TypeError(f"the factory built a {type(actor).__name__}, which has no receive() method")
        else:
            raise TypeError(f"cannot spawn a {type(actor_or_factory).__name__}: it has no receive() method")
        if on_failure == "restart" and factory is None:
            raise ValueError(
                'on_failure="restart" needs a zero-argument factory (a class or function) to rebuild the '
                "actor's state from; pass the class (or a lambda) instead of an instance"
            )
        ref = ActorRef(self, actor, factory, name, next(self._ids), mailbox_size, concurrency, sup)
        if not _has_lifecycle_hooks(actor):
            # Nothing to run before the first message: started now, so the first asks can take
            # the direct path instead of each waiting for a worker task.
            ref._started = True
        self._actors.add(ref)
        sink = self._listening(None)
        if sink is not None:
            sink.emit("actor.started", actor=ref.name)
        return ref

    def spawn_task(self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Run ``fn(*args)`` in the runtime's task group, with the caller's contextvars.

        Counted in :meth:`stats` and cancelled when the runtime closes.  An
        exception escaping ``fn`` escalates: it cancels the runtime and leaves
        ``async with Runtime()``.
        """
        self._check_running()
        assert self._tg is not None
        self._running += 1
        self._tg.start_soon(self._run_task, fn, args, name=name)

    async def stop(self, ref: ActorRef, *, drain: bool = True, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Stop an actor.  With ``drain``, queued messages are handled first (at most ``timeout``,
        default the runtime's ``drain_timeout``); then running handlers are cancelled, anything
        still queued is rejected (asks: ``ActorStopped``; tells: dead letters) and ``on_stop`` runs.
        New messages are rejected from the moment this is called.  Idempotent; concurrent calls all
        return once the actor has stopped.

        From inside the actor's own handler use ``drain=False`` (the calling handler is then
        cancelled at its next checkpoint): a drain would wait for that very handler until the timeout.
        """
        if ref._rt is not self:
            raise ValueError(f"{ref!r} belongs to another runtime")
        if ref._state == OPEN:
            ref._state = STOPPING
            self._reject_waiters(ref)
            if drain:
                with anyio.move_on_after(self.drain_timeout if timeout is None else timeout):
                    while ref._active:
                        await self._wait_ref(ref)
            self._halt(ref, "stopped")
        while ref._active:
            await self._wait_ref(ref)
        await self._finalize(ref)
        while ref._state != DEAD:
            await self._wait_ref(ref)

    def provider_ref(self, provider: Any, **budgets: Any) -> ActorRef:
        """The runtime's one ProviderActor for ``provider`` (keyed by identity), spawned on first use.

        ``budgets`` are :class:`~agentactors.actors.provider.ProviderActor`'s
        keyword arguments (``max_concurrency``, ``requests_per_minute``,
        ``tokens_per_minute``, ...); asking again with different budgets for the
        same provider raises ``ValueError`` (spawn a ProviderActor yourself to
        hold a second budget).  The runtime closes the provider when it exits.
        """
        self._check_running()
        entry = self._providers.get(id(provider))
        if entry is not None and entry[1]._state == OPEN:
            if budgets and budgets != entry[2]:
                raise ValueError(
                    f"provider {getattr(provider, 'name', provider)!r} already has a ProviderActor in this runtime "
                    f"with budgets {entry[2]}; spawn a ProviderActor yourself for different budgets"
                )
            return entry[1]
        from .provider import ProviderActor

        actor = ProviderActor(provider, **budgets)
        ref = self.spawn(
            actor,
            name=f"provider:{getattr(provider, 'name', type(provider).__name__)}",
            concurrency=actor.max_concurrency,
            mailbox_size=max(256, actor.max_concurrency * 4),
        )
        self._providers[id(provider)] = (provider, ref, dict(budgets))
        return ref

    # -- many runs (implemented by agentactors.agent) ----------------------------------------------

    async def run_many(
        self,
        agent: Agent,
        inputs: Iterable[Prompt],
        *,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
    ) -> list[RunResult]:
        """Run ``agent`` on every input, at most ``concurrency`` at once; results in input order.

        ``progress(done, failed, total)`` is called as runs finish.  See
        :func:`agentactors.agent.run_many` for error and cancellation semantics.
        """
        from ..agent import run_many  # the agent module imports this one

        return await run_many(self, agent, inputs, concurrency=concurrency, progress=progress)

    def as_completed(self, agent: Agent, inputs: Iterable[Prompt], *, concurrency: int = 100) -> AsCompleted:
        """Run ``agent`` on every input and yield each result as it finishes (``async for``).

        See :func:`agentactors.agent.as_completed` for stopping early and cancellation.
        """
        from ..agent import as_completed

        return as_completed(self, agent, inputs, concurrency=concurrency)

    # -- accounting ------------------------------------------------------------------------------

    def stats(self) -> RuntimeStats:
        """Live actors, running tasks, busy handlers and mailbox depths (see :class:`RuntimeStats`)."""
        depths: dict[str, int] = {}
        busy = 0
        for ref in self._actors:
            busy += ref._busy
            if ref._mailbox:
                depths[ref.name] = depths.get(ref.name, 0) + len(ref._mailbox)
        return RuntimeStats(
            actors=len(self._actors), tasks=self._running, busy=busy, queued=sum(depths.values()), mailboxes=depths
        )

    # -- workers ---------------------------------------------------------------------------------

    def _new_event(self) -> EventLike:
        return self._event_cls()

    def _check_running(self) -> None:
        if not self._entered or self._closed:
            raise RuntimeError("the Runtime is not running: use `async with Runtime() as rt:`")

    def _activate(self, ref: ActorRef, failure: Failure | None = None) -> None:
        """Start a worker for ``ref`` (taking one of its slots).  ``failure``: a direct ask's failure
        the worker supervises first (see :func:`~agentactors.actors.worker.work`)."""
        if self._closed or self._tg is None:
            return
        ref._active += 1
        self._running += 1
        self._start_internal(work, self, ref, failure)

    def _finalize_soon(self, ref: ActorRef) -> None:
        """Finalize a halted actor in a runtime task (its ``on_stop`` must not run in, nor be
        cancelled with, the task of the direct ask that halted it)."""
        if self._closed or self._tg is None:
            return  # closing: _close_all finalizes every actor
        self._running += 1
        self._start_internal(self._run_task, self._finalize, (ref,))

    def _start_internal(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start a runtime task in the runtime's own context (never the caller's)."""
        assert self._tg is not None and self._ctx is not None
        if self._spawning:
            # Nested inside the ctx.run below (an eager task factory ran the new task at once):
            # the context cannot be entered twice, and we are already in a copy of it.
            self._tg.start_soon(fn, *args)
            return
        self._spawning = True
        try:
            self._ctx.run(self._tg.start_soon, fn, *args)
        finally:
            self._spawning = False

    def _fill(self, ref: ActorRef) -> None:
        """Start workers for queued messages up to the actor's concurrency (after ``on_start``)."""
        mailbox = ref._mailbox
        while (
            mailbox
            and ref._state <= STOPPING
            and ref._active - ref._busy < len(mailbox)
            and ref._active < ref._concurrency
            and not self._closed
        ):
            self._activate(ref)

    async def _run_task(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        try:
            await fn(*args)
        except Exception as exc:
            self._escalate(None, exc)
        finally:
            self._running -= 1
            if self._running == 0 and self._idle is not None:
                self._idle.set()
                self._idle = None

    # -- stopping --------------------------------------------------------------------------------

    async def _wait_ref(self, ref: ActorRef) -> None:
        event = ref._idle
        if event is None:
            event = ref._idle = self._event_cls()
        await event.wait()

    def _reject_waiters(self, ref: ActorRef) -> None:
        waiters = ref._waiters
        while waiters:
            waiter = waiters.popleft()
            waiter.admitted = False
            waiter.event.set()

    def _halt(self, ref: ActorRef, reason: str) -> None:
        """Stop handling now: reject queued messages and waiting senders, cancel running handlers."""
        if ref._state >= STOPPED:
            return
        ref._state = STOPPED
        self._reject_waiters(ref)
        mailbox = ref._mailbox
        if mailbox:
            items = list(mailbox)
            mailbox.clear()
            for item in items:
                if type(item) is Ask:
                    item.fail(ActorStopped(f"actor {ref.name!r} stopped before handling the message ({reason})"))
                else:
                    self._dead_letter(ref, item)
        if ref._scopes:
            for scope in ref._scopes:
                scope.cancel()

    async def _finalize(self, ref: ActorRef) -> None:
        """Run ``on_stop`` (if the actor started) and record ``actor.stopped``.  Once per actor."""
        if ref._state >= FINALIZING:
            return
        self._halt(ref, "stopped")  # nothing queued or waiting may be left without an answer
        ref._state = FINALIZING
        try:
            if ref._started:
                ref._started = False
                on_stop = getattr(ref._actor, "on_stop", None)
                if on_stop is not None:
                    try:
                        await on_stop()
                    except Exception as exc:
                        self._emit(None, "actor.failed", actor=ref.name, error=exc, phase="on_stop")
        finally:
            ref._state = DEAD
            ref._mailbox = None
            self._actors.discard(ref)
            sink = self._listening(None)
            if sink is not None:
                sink.emit("actor.stopped", actor=ref.name)
            if ref._idle is not None:
                ref._idle.set()
                ref._idle = None

    def _escalate(self, ref: ActorRef | None, exc: BaseException) -> None:
        if self._escalated is None:
            self._escalated = exc
        if ref is not None:
            self._halt(ref, "its failure escalated")
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # -- events ----------------------------------------------------------------------------------

    def emit(self, type: str, /, **data: Any) -> None:
        """Emit an event to the current run's sink if there is one, else to the runtime's recorders.

        With nobody listening this is a lookup and a check.  Never raises for a recorder's failure.
        """
        self._emit(None, type, **data)

    def _listening(self, ctx: contextvars.Context | None) -> EventSink | None:
        """The sink events go to — the current run's (the asker's, given ``ctx``) or else the
        runtime's — or ``None`` when nobody listens (so callers need not even build the payload)."""
        sink = current_sink() if ctx is None else ctx.run(current_sink)
        if sink is None:
            sink = self._sink
        return sink if sink.fanout.recorders else None

    def _emit(self, ctx: contextvars.Context | None, type: str, /, **data: Any) -> None:
        sink = self._listening(ctx)
        if sink is not None:
            sink.emit(type, **data)

    def _dead_letter(self, ref: ActorRef, message: Any) -> None:
        # The message's type only: its payload may be large or hold secrets.
        sink = self._listening(None)
        if sink is not None:
            sink.emit("actor.dead_letter", actor=ref.name, message_type=type(message).__name__)


def _has_lifecycle_hooks(actor: object) -> bool:
    """Whether ``actor`` has an ``on_start`` or ``on_stop`` of its own (not the base class's no-ops)."""
    cls = type(actor)
    for hook in ("on_start", "on_stop"):
        found = getattr(cls, hook, None) if hasattr(cls, hook) else getattr(actor, hook, None)
        if found is not None and found is not getattr(Actor, hook):
            return True
    return False
