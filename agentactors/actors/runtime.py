"""The actor runtime: one task group, actors activated on demand, ask/tell with backpressure, supervision.

``async with Runtime() as rt:`` owns one anyio task group.  Every task the
runtime starts (actor workers, helper tasks such as a provider stream's feeder)
lives under it, so leaving the block leaves nothing behind: actors drain for up
to ``drain_timeout`` seconds, then whatever is still running is cancelled.

An actor is any object with ``async def receive(self, message)``; the return
value answers an ``ask``.  Optional ``async def on_start(self)`` runs before the
first message is handled and ``async def on_stop(self)`` when the actor stops
(only if ``on_start`` ran).  An actor without ``on_start`` is started at spawn.

**Idle actors hold no task.**  A message arriving at an idle actor starts a
worker task in the runtime's task group; the worker handles messages until the
mailbox is empty and then ends (dropping the mailbox's buffer too).  An idle
actor is its :class:`ActorRef`, its cell and the user's object — a few hundred bytes.

**Asks run with the asker's contextvars.**  The worker runs the handler of an
ask step by step inside a copy of the asker's context (see
:mod:`~agentactors.actors._inline`), so a run's event sink and id
reach the decorators inside a provider actor without a task per message.
Tells run in the runtime's own context.  An actor spawned ``direct=True`` (the
default) that is open, idle enough (nothing queued, a free handler slot) runs
an ask's handler in the asker's own task (:meth:`ActorRef.ask`), holding a slot
and a registered cancel scope like a worker's handler.

**Cancellation.**  An asker that is cancelled, or whose ``timeout`` expires,
abandons its ask: a message not yet started is skipped; a running handler is
cancelled (it sees anyio's cancellation exception at its next checkpoint).

The kernel — this module, :mod:`.ref`, :mod:`._cell`, :mod:`.worker`,
:mod:`.supervision`, :mod:`.mailbox` — knows nothing of agents, loops or
providers.  What the domain needs of a runtime goes through domain-free hooks:
:meth:`Runtime.service` (per-runtime shared values with a cleanup at exit: the
shared-provider registry of :meth:`~agentactors.gateway.provider.ProviderActor.shared`
is one) and the :class:`RunsMany` protocol behind :meth:`Runtime.run_many` and
:meth:`Runtime.as_completed`.
"""

from __future__ import annotations

import collections
import contextvars
import inspect
import itertools
import logging
import math
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, Protocol, Self, TypeAlias, TypeVar, cast

import anyio
import anyio.lowlevel
import attrs

from .._backend import backend_function, entered_here, scope_checkpoint
from .._containment import is_stray
from .._lean_scope import scope_class
from .._task_group import TaskGroup, open_task_group
from ..errors import ActorStopped, RunNotFoundError, redact
from ..events import EventSink, FanOut, Recorder, current_sink
from ._cell import CURRENT_RUNTIME, FINALIZING, Cell, EventLike, Failure, Spec
from ._inline import in_context
from .crossing import Crossing, Waker, current_waker, loop_probe, wrong_loop
from .mailbox import Ask
from .ref import Actor, ActorLike, ActorRef, cell_of
from .threads import worker_threads
from .worker import work

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "Actor", "ActorRef", "Completions", "FailurePolicy", "HasSessions", "PrivateRuntime", "RunsMany", "Runtime",
    "RuntimeStats",
]

log = logging.getLogger("agentactors.actors")

FailurePolicy: TypeAlias = Literal["resume", "restart", "stop", "escalate"]
_POLICIES: Final = frozenset({"resume", "restart", "stop", "escalate"})


class _Unset(int):
    """The type of ``Runtime.spawn(concurrency=)``'s default: 1 (as it reads), unless the actor declares its own."""

    __slots__ = ()


#: ``concurrency`` not passed to :meth:`Runtime.spawn`: the actor's ``spawn_concurrency`` when it declares one, else 1.
#: Told apart from a ``1`` the caller wrote by identity; it is an int equal to 1, so a signature still reads
#: ``concurrency=1``.
_DEFAULT_CONCURRENCY: Final = _Unset(1)

#: The :meth:`Runtime.service` key under which the layer that runs agents registers how :meth:`Runtime.run_ref`
#: finds a live run: a function ``run_id -> handle`` raising :class:`~agentactors.errors.RunNotFoundError`.
#: The kernel knows no runs: it only looks the function up.
RUN_RESOLVER: Final = ("agentactors.actors.runtime", "run_resolver")

T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)

# Runtimes inside ``async with`` in this process, in any thread: what lets a run that finds no runtime of its
# own tell a script (none anywhere: a private runtime is right) from a server whose handlers do not see the
# one its lifespan opened (warned about by the agent).  Changed only on enter and exit, hence the plain lock.
_RUNNING_LOCK = threading.Lock()
_running_in_process = 0


#: How many names' latest bindings a runtime with a journal holds strongly (:meth:`Runtime.keep_bound`).
_MOST_KEPT = 256


@attrs.frozen(slots=True)
class RuntimeStats:
    """The runtime's own accounting, at the moment of the call.

    ``actors``: live (spawned, not finally stopped) actors.  ``tasks``: tasks
    the runtime is running (actor workers, helper tasks and background tasks).  ``busy``: handlers
    running now (in workers, or in askers' tasks for direct asks).  ``queued``:
    messages waiting in mailboxes, with the depth per actor name (non-empty
    mailboxes only) in ``mailboxes``.  ``abandoned_threads``: worker threads of
    this event loop still running a blocking call its caller gave up on (a sync
    tool past its timeout, say); they cannot be killed, only counted (see
    :mod:`agentactors.actors.threads`).
    """

    actors: int
    tasks: int
    busy: int
    queued: int
    mailboxes: Mapping[str, int]
    abandoned_threads: int = 0


ActorSource: TypeAlias = ActorLike | Callable[[], ActorLike]


class Completions(Protocol[R_co]):
    """Results yielded as they finish (``async for``); leaving ``async with`` (or ``aclose()``) stops the rest.

    Cancellation (of each method): the runs belong to the runtime, not to the consumer — cancelling the
    consumer leaves them running until ``aclose()``, the end of ``async with``, the iterator's collection or
    the runtime's exit; ``aclose()`` cancels them and waits, shielded, until they have ended
    (:meth:`agentactors.Agent.as_completed`).
    """

    def __aiter__(self) -> AsyncIterator[R_co]: ...

    async def __anext__(self) -> R_co:
        """The next result to finish.

        Cancellation: the caller leaves at once, taking no result; the runs go on (see the class).
        """
        ...

    async def aclose(self) -> None:
        """Cancel the unfinished runs and wait until they have ended.

        Cancellation: that wait is shielded: a cancelled caller still leaves no run going.
        """
        ...

    async def __aenter__(self) -> Self:
        """The iterator itself.

        Cancellation: it starts nothing and never waits.
        """
        ...

    async def __aexit__(self, *exc: object) -> None:
        """:meth:`aclose`.

        Cancellation: as :meth:`aclose`'s (its wait is shielded).
        """
        ...


class _RunsInOrder(Protocol[R]):
    """What :meth:`Runtime.run_many` needs of an agent: its own ``run_many``.

    One method to a protocol, so a type checker infers ``R`` from the method the call uses alone: an
    ``Agent[T]``'s ``rt.run_many(agent, ...)`` is a ``list[RunResult[T]]`` whatever its ``as_completed`` says.
    """

    async def run_many(
        self,
        inputs: Iterable[Any],
        *,
        runtime: Runtime | None = None,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
    ) -> list[R]:
        """Run the agent on every input, at most ``concurrency`` at once; the results in input order.

        (A run option given to :meth:`Runtime.run_many` — ``deps=``, ``input_key=``, ... — is passed on as a keyword
        too: an agent that takes none is asked without them.)

        Cancellation: as :meth:`agentactors.Agent.run_many`'s — every run is cancelled and the cancellation
        propagates, the list of results (each slot filled) riding on it as ``exc.results``.
        """
        ...


class _RunsAsCompleted(Protocol[R_co]):
    """What :meth:`Runtime.as_completed` needs of an agent: its own ``as_completed``."""

    def as_completed(
        self, inputs: Iterable[Any], *, runtime: Runtime | None = None, concurrency: int = 100
    ) -> Completions[R_co]: ...


class RunsMany(_RunsInOrder[R], _RunsAsCompleted[R], Protocol[R]):
    """What :meth:`Runtime.run_many` and :meth:`Runtime.as_completed` need of an agent.

    :class:`agentactors.Agent` implements it (``Agent.run_many`` / ``Agent.as_completed``); the
    runtime only hands itself over, so the kernel needs to know nothing about agents.  (Each method of
    the runtime asks only for the half it calls.)
    """


class HasSessions(Protocol[R_co]):
    """What :meth:`Runtime.session` needs of an agent: :meth:`agentactors.Agent.session` implements it."""

    def session(
        self,
        key: str,
        *,
        runtime: Runtime | None = None,
        store: Any = None,
        idle_timeout: float = 60.0,
        cost_limit: Any = None,
    ) -> R_co: ...


class Runtime:
    """Structured-concurrency home of actors.  Use as ``async with Runtime() as rt:``.

    :param recorders: receive the runtime's events (``actor.*``) and, via a
        run's sink, the events of runs started in it.
    :param drain_timeout: seconds actors may keep working after the block is
        left (and the default for :meth:`stop`), before they are cancelled.
    :param journal: a step journal (``SqliteJournal(path)``, :mod:`agentactors.journal`): every run
        started in this runtime records each step there as it completes (``docs/durability.md``).  The
        runtime does not close it — several runtimes, one after another, may share one: open it around
        them (``async with SqliteJournal(path) as journal, Runtime(journal=journal) as rt:``).  Anything
        without ``open_run`` (a path, a journal class) is a ``TypeError`` here.
    :param cost_limit: the most the runs of this runtime may spend together (a number, in the price
        table's currency), or a :class:`~agentactors.gateway.cost_budget.CostBudget` they share; a run that
        would pass it stops with ``CostLimitExceededError`` in its result (``docs/costs.md``).

    Leaving the block waits until every actor is idle (at most
    ``drain_timeout``), cancels what still runs (the whole exit's bound:
    :meth:`__aexit__`), rejects what is still queued (asks get
    :class:`~agentactors.errors.ActorStopped`, tells become dead
    letters), runs ``on_stop`` hooks, then the cleanups registered with
    :meth:`service` (which is how the providers behind
    :meth:`ProviderActor.shared <agentactors.gateway.provider.ProviderActor.shared>`
    get closed), and last flushes the recorders that have a ``flush()`` (a
    :class:`~agentactors.events.JsonlRecorder`'s buffer, an exporter's queue):
    the runtime's own and those of the agents that ran in it
    (:meth:`flush_at_exit`), each once.  An actor whose ``on_failure="escalate"`` fails cancels the
    block, and its exception — bare, not in a group — leaves ``async with``; so does,
    once the rest of the exit has run, a ``KeyboardInterrupt`` (``SystemExit``, ...)
    out of an ``on_stop`` or a cleanup the exit runs.

    A runtime belongs to the event loop (and so the thread) that entered it: any
    task of that loop may use it — a request handler, a task the server
    spawned — whether or not it runs inside the ``async with`` block (pass it
    along: ``agent.run(..., runtime=rt)``, ``agent.bind(rt)``).  From another
    thread's loop, asks, tells, :meth:`spawn`, :meth:`stop` and :meth:`wait_idle`
    raise ``RuntimeError`` before touching anything (they name the way across:
    :meth:`call`); from another loop of the same thread, whatever needs the
    runtime's own tasks does (a runtime left open in a loop that has ended or is
    not running, such as a fixture's).
    """

    __slots__ = (
        "__weakref__",  # (what a watch of when_collected holds: never the runtime itself)
        "_actors",
        "_background",
        "_checkpoint",
        "_cleanups",
        "_closed",
        "_closing",
        "_collected",
        "_crossings",
        "_crossings_lock",
        "_ctx",
        "_entered",
        "_escalated",
        "_event_cls",
        "_flushed_too",
        "_guests",
        "_here",
        "_home",
        "_host",
        "_idle",
        "_ids",
        "_kept",
        "_reaping",
        "_running",
        "_scope_checkpoint",
        "_scope_cls",
        "_services",
        "_sink",
        "_spawning",
        "_specs",
        "_tg",
        "_thread",
        "_token",
        "_waker",
        "_watched",
        "bound",
        "cost_limit",
        "drain_timeout",
        "journal",
    )

    # Whether running_in_process() counts it: a runtime the library opens for a run of its own does not.
    _counted: ClassVar[bool] = True

    def __init__(
        self,
        recorders: Iterable[Recorder] = (),
        drain_timeout: float = 5.0,
        *,
        journal: Any = None,
        cost_limit: Any = None,
    ) -> None:
        drain_timeout = _seconds(drain_timeout, "drain_timeout")  # (NaN would fail the exit half-way)
        if cost_limit is not None and not callable(getattr(cost_limit, "charge", None)) and not _amount(cost_limit):
            raise ValueError(
                f"cost_limit must be a finite, non-negative number, a CostBudget or None (no limit), not {cost_limit!r}"
            )
        if journal is not None:
            _check_journal(journal)
        #: What the runs of this runtime may spend together: a number or a budget (the kernel knows neither: the
        #: loop charges it, :mod:`agentactors.gateway.cost_budget`), or ``None``.
        self.cost_limit = cost_limit
        self.drain_timeout = float(drain_timeout)
        #: Where the runs of this runtime record their steps (:mod:`agentactors.journal`), or ``None``.  Any
        #: object with the loop's ``open_run`` (:class:`agentactors.loop.tape.Journal`): the kernel knows none.
        self.journal = journal
        #: What was bound to this runtime (``agent.bind(rt)``), held weakly: where :meth:`recover` looks for agents.
        self.bound: weakref.WeakSet[Any] = weakref.WeakSet()
        # With a journal, the latest of each name bound here, held strongly (keep_bound).
        self._kept: dict[str, Any] = {}
        self._sink = EventSink(FanOut(_recorders(recorders)))
        # Recorders flushed at the exit besides the runtime's own, by the owner that attached them (an agent that
        # ran here), held weakly: an owner dropped takes its entry with it (flush_at_exit).
        self._flushed_too: weakref.WeakKeyDictionary[Any, tuple[Recorder, ...]] = weakref.WeakKeyDictionary()
        self._tg: TaskGroup | None = None
        self._ctx: contextvars.Context | None = None
        self._token: contextvars.Token[Any] | None = None
        self._actors: set[Cell] = set()
        self._services: dict[Hashable, Any] = {}
        self._cleanups: list[tuple[Hashable, Callable[[], Awaitable[object]]]] = []  # (its service's key, cleanup)
        self._specs: dict[tuple[Any, ...], Spec] = {}
        self._host = _Host(self)
        self._running = 0
        self._background = 0  # background tasks (spawn_task(background=True)): not waited for by a drain
        self._idle: EventLike | None = None
        self._escalated: BaseException | None = None
        self._entered = False
        self._closed = False
        # The exit has cancelled the task group (or closed): no task starts from then on (trio's nursery refuses
        # one once its last task ended, before the exit sets _closed; any task started then would be cancelled at
        # once).  A message queued meanwhile waits for the exit's halt, which rejects it (ActorStopped, a dead
        # letter).  Where the runtime's tasks start, this one flag is read instead of _closed.
        self._closing = False
        self._spawning = False
        self._thread: int | None = None
        self._waker: Waker | None = None
        # The identity of the loop that entered the runtime, and the backend's lookup of the one running now
        # (loop_probe): what tells another loop of the same thread from the runtime's own.
        self._home: object = None
        self._here: Callable[[], object] = _nowhere
        self._guests: set[anyio.CancelScope] = set()
        # Calls from other threads' loops handed over and not yet hosted (call()), and the lock under which
        # they are added and the runtime closes: the exit fails those left, so none waits for a loop that ended.
        self._crossings: set[Crossing] = set()
        self._crossings_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._event_cls: Callable[[], EventLike] = anyio.Event
        # when_collected: the watches (weak references to their owners, by the id of the reference) with their
        # work; the ids of those whose owner was collected, enqueued from any thread (a deque's append and popleft
        # are atomic); whether a pass over them is scheduled in the runtime's loop already.
        self._watched: dict[int, tuple[weakref.ref[Any], Callable[..., Awaitable[Any]], tuple[Any, ...]]] = {}
        self._collected: collections.deque[int] = collections.deque()
        self._reaping = False
        self._scope_cls: Callable[..., anyio.CancelScope] = anyio.CancelScope
        self._checkpoint: Callable[[], Awaitable[None]] = anyio.lowlevel.checkpoint_if_cancelled
        self._scope_checkpoint: Callable[[Any], Awaitable[None]] | None = None

    @staticmethod
    def current() -> Runtime | None:
        """The runtime the calling code runs in (inside ``async with`` or an actor), or ``None``."""
        current: Runtime | None = CURRENT_RUNTIME.get()  # (no cast() call: this is read once per run)
        return current

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

    @property
    def closed(self) -> bool:
        """The runtime has left (or is leaving) ``async with``: it will not run anything again."""
        return self._closed

    @property
    def thread(self) -> int | None:
        """The ident of the thread whose event loop entered the runtime (``None`` before ``async with``).

        Only tasks of that loop may use the runtime; from another thread's event loop, :meth:`call` hands a
        call to it (``agent.run`` on an agent bound to the runtime does so by itself).
        """
        return self._thread

    @staticmethod
    def running_in_process() -> int:
        """How many runtimes are inside ``async with`` in this process right now, in any thread (the library's
        private ones for a run that found none, :class:`PrivateRuntime`, not counted)."""
        return _running_in_process

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Enter the runtime in the calling task: its task group opens, and :meth:`current` is this runtime here.

        :raises RuntimeError: entered before (a runtime runs once).

        Cancellation: entering opens the task group and never waits for anything else; a caller cancelled
        around it is cancelled at its next checkpoint, inside the block, and leaving the block then runs the
        exit as for any cancellation (:meth:`__aexit__`).
        """
        if self._entered:
            raise RuntimeError("a Runtime can be entered only once")
        self._entered = True
        self._thread = threading.get_ident()
        self._waker = current_waker()  # how calls from other threads' loops reach this one (call())
        self._here, self._home = loop_probe()
        # Resolve the backend's concrete classes once: anyio.Event() / CancelScope() look the
        # backend up on every call, which the ask hot path does not need to pay.
        self._event_cls = type(anyio.Event())
        self._scope_cls = scope_class()  # anyio's, or its lighter subclass (:mod:`.._lean_scope`)
        self._checkpoint = backend_function("checkpoint_if_cancelled", anyio.lowlevel.checkpoint_if_cancelled)
        self._scope_checkpoint = scope_checkpoint(self._checkpoint)
        # Not anyio's task group: the backend's own tasks, without the handle anyio gives each (~2 KB a task;
        # a streamed request and an actor's worker each are one: :mod:`.._task_group`).
        tg = open_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._token = CURRENT_RUNTIME.set(self)
        # Workers start in this context, not the sender's: a tell must not inherit whatever
        # contextvars happened to be set where its actor was activated.
        self._ctx = contextvars.copy_context()
        if self._counted:
            _count_running(+1)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool:
        """Drain, cancel, stop every actor, run the cleanups (see the class docstring).

        Cancellation: an outer cancellation during the drain ends the drain at
        once; the actors are then cancelled and stopped, their ``on_stop``
        hooks run shielded and side by side (for at most ``drain_timeout``,
        0.1 s at least), then the cleanups, shielded, within a bound of their
        own (the same), and the cancellation propagates.  Before ``on_stop``,
        direct handlers still running in askers' tasks (cancelled by the halt)
        are waited for, shielded too, within a bound of their own (the same).
        A hook or cleanup cut off by its bound is logged (a warning naming it);
        it skips none of the others.  An ``on_stop`` that a :meth:`stop` in another task is running is
        waited for and cut off alike.  A message that needs a worker once the task group is cancelled
        (sent by a task outside the block) starts none: the halt rejects it as one still queued.

        **How long it takes.**  At most ``drain_timeout`` (the drain) plus three
        times ``max(drain_timeout, 0.1)`` (direct handlers, then hooks, then
        cleanups), plus whatever the cancelled code takes to end, for code that
        lets itself be cancelled.  A direct handler that ignores its cancellation runs on in its
        asker's task: the exit does not wait for it past its bound.  Code the
        runtime's own tasks run (a worker's handler or ``on_start``, a task of
        :meth:`spawn_task`, an ``on_stop`` run by a worker) that shields itself
        from cancellation, or blocks the event loop, keeps the exit waiting until
        it returns: a task cannot be abandoned under structured concurrency.
        """
        tg = self._tg
        assert tg is not None, "Runtime.__aexit__ without __aenter__"
        cancelled = anyio.get_cancelled_exc_class()
        suppress = False
        try:
            if exc is None:
                try:
                    with anyio.move_on_after(self.drain_timeout):
                        await self._wait_idle()
                except cancelled as e:  # an escalation (or an outer cancellation) during the drain
                    exc = e
            # Watches end as the exit stops the runtime's tasks (when_collected): an owner a cancelled task lets go
            # is collected while the task group closes, which takes no new task (trio: "Nursery is closed to new
            # arrivals") — and the exit stops every actor anyway.
            self._watched.clear()
            self._closing = True
            tg.cancel()
            for scope in list(self._guests):
                scope.cancel()  # calls into the runtime from other tasks (call()) end with it
            if exc is None or isinstance(exc, cancelled):
                suppress = bool(await tg.__aexit__(type(exc) if exc else None, exc, exc.__traceback__ if exc else None))
            else:
                # The body raised: let its exception leave bare rather than wrapped in the group.
                await tg.__aexit__(None, None, None)
        finally:
            self._closing = True  # (if the exit failed before it cancelled the group: closed is closing too)
            if not self._closed and self._counted:
                _count_running(-1)
            with self._crossings_lock:  # from here on, no call from another thread's loop is handed over
                self._closed = True
                stranded, self._crossings = self._crossings, set()
            # Watches end with the runtime: their references die here, so their owners' collection calls nothing
            # (and their work, with what it holds, is let go now, not when the owners go).
            self._watched.clear()
            self._collected.clear()
            for crossing in stranded:  # handed over, never hosted: their wake-ups may never run (see call())
                crossing.finish(error=RuntimeError("the Runtime is not running: it closed before the call started"))
            if self._token is not None:
                try:
                    CURRENT_RUNTIME.reset(self._token)
                except ValueError:
                    pass  # left in another context than it was entered in: nothing of ours to restore
                self._token = None
            with anyio.CancelScope(shield=True):
                bound = max(self.drain_timeout, 0.1)
                with anyio.move_on_after(bound):
                    await self._halt_all()
                await self._close_all(bound)
            self._flush_recorders()
        escalated, self._escalated = self._escalated, None
        if escalated is not None:
            raise escalated
        return suppress

    def flush_at_exit(self, recorders: Iterable[Recorder], *, owner: object) -> None:
        """Flush ``recorders`` too when this runtime exits, with its own (each recorder once), while ``owner`` lives.

        How an agent's own recorders (``Agent(..., recorders=[...])``), which its runs here report to, get the
        flush the runtime's get: the agent calls this when it is first bound to the runtime — once per agent
        and runtime, not per run.  ``owner`` is held weakly (a runtime that lives as long as a server must not
        keep every agent that ran in it alive, nor its recorders): an owner dropped before the exit takes its
        entry with it, and its recorders are flushed as their own finalizers see to.  A second call for the
        same owner replaces its recorders.

        :raises TypeError: ``owner`` cannot be referenced weakly.
        """
        self._flushed_too[owner] = tuple(recorders)

    def _flush_recorders(self) -> None:
        """Flush the recorders that can be flushed, now that no event of this runtime will come.

        The runtime's own and those :meth:`flush_at_exit` was given, each once.  Synchronous, like
        ``record()``: a recorder's ``flush()`` must not block for long either.  One that raises is logged; the
        others are still flushed.
        """
        recorders = {id(r): r for r in self._sink.fanout.recorders}
        for more in list(self._flushed_too.values()):
            recorders.update((id(r), r) for r in more)
        self._flushed_too.clear()
        for recorder in recorders.values():
            flush = getattr(recorder, "flush", None)
            if not callable(flush):
                continue
            try:
                flush()
            except Exception as exc:
                log.warning(
                    "recorder %s raised %s when flushed at the runtime's exit",
                    type(recorder).__name__,
                    redact(f"{type(exc).__name__}: {exc}"),
                )

    async def wait_idle(self) -> None:
        """Wait until no handler runs and no runtime task runs.

        Handlers run in workers and, for direct asks, in their askers' own tasks: both count (a
        drain waits for both).

        :raises RuntimeError: called from another event loop than the runtime's (its events are that loop's), or
            from a handler (or ``on_start``) of one of the runtime's actors, in its own task: it would wait for
            that very handler forever.

        Cancellation: a cancelled waiter leaves at once; nothing else changes.
        """
        if self._entered and not self._closed:
            self._check_loop("Runtime.wait_idle()", "rt.call(rt.wait_idle)")
            for cell in self._actors:  # (only cells with a handler running have scopes: one pass, no await)
                if cell.scopes and any(entered_here(scope) for scope in tuple(cell.scopes)):
                    raise RuntimeError(
                        f"Runtime.wait_idle() from a handler of actor {cell.name!r} would wait for itself forever "
                        "(it waits until no handler runs); wait for what the handler needs instead"
                    )
        await self._wait_idle()

    async def _wait_idle(self) -> None:
        """:meth:`wait_idle`, unchecked (the runtime's own drain)."""
        while True:
            if self._running:
                event = self._idle
                if event is None:
                    event = self._idle = self._event_cls()
                await event.wait()
                continue
            # No runtime task: what is left are direct asks, in tasks that are not ours.
            for cell in self._actors:
                if cell.slots:
                    await cell.wait_quiet()
                    break  # the set may have changed meanwhile: look again from the start
            else:
                return

    async def _halt_all(self) -> None:
        """Halt every actor, then wait for the handlers still running in tasks that are not the runtime's.

        The task group has ended, so every worker has; a direct handler (or a frame holding a slot) runs in
        its asker's task, which outlives the drain.  The halt cancels it; it ends before any ``on_stop``
        runs and before ``async with`` is left, as :meth:`stop` waits for it before ``on_stop``.
        """
        cells = list(self._actors)
        for cell in cells:
            cell.halt("the runtime closed")
        for cell in cells:
            await cell.wait_quiet()

    async def _close_all(self, bound: float) -> None:
        """Run every actor's ``on_stop``, side by side, within ``bound``; then the cleanups within ``bound`` more.

        Side by side, so that one hook that runs past the bound is cut off alone, not every hook after it;
        the cleanups (shared providers' ``aclose``, sessions', MCP links') have a bound of their own, so that
        no hook can leave them unrun.  The cleanups run one after another, newest first (a newer service may
        use an older one); one still running at the bound is cut off, and those after it run cancelled (to
        their first await: a close that cannot wait releases what it holds at once).  Each hook or cleanup
        cut off is logged.
        """
        cells = list(self._actors)
        # Every actor halts before any on_stop runs: an on_stop that asks another actor gets
        # ActorStopped at once rather than waiting on a mailbox no worker will serve.
        for cell in cells:
            cell.halt("the runtime closed")
        hooked: list[Cell] = []
        for cell in cells:
            # (A cell finalizing already runs its on_stop in another task — a stop() called from outside the
            # runtime — and is waited for alike: the exit does not leave a hook of its actors running.)
            if cell.state == FINALIZING or (cell.started and getattr(cell.actor, "on_stop", None) is not None):
                hooked.append(cell)
            else:
                await cell.finalize()  # no hook to run: the cell is only marked dead (nothing awaited)
        if hooked:
            pending = {id(cell): cell.name for cell in hooked}
            with anyio.move_on_after(bound):
                async with anyio.create_task_group() as hooks:
                    for cell in hooked:
                        hooks.start_soon(self._finalize, cell, pending)
            for name in pending.values():
                log.warning(
                    "the on_stop of actor %r was cut off at the runtime's exit: still running after %.3g s", name, bound
                )
        cleanups, self._cleanups = self._cleanups, []
        self._services.clear()
        deadline = anyio.current_time() + bound
        for key, cleanup in reversed(cleanups):
            with anyio.CancelScope(deadline=deadline) as scope:
                try:
                    await cleanup()
                except Exception as exc:
                    log.warning("a runtime cleanup raised %s", redact(f"{type(exc).__name__}: {exc}"))
                except BaseException as exc:
                    self._interrupted(exc)
            if scope.cancelled_caught:
                log.warning(
                    "the runtime cleanup of service %r was cut off at the runtime's exit: the cleanups' %.3g s "
                    "had passed",
                    key,
                    bound,
                )

    async def _finalize(self, cell: Cell, pending: dict[int, str]) -> None:
        """Finalize ``cell`` at the exit (its ``on_stop``), then take it off ``pending`` — unless cut off."""
        try:
            await cell.finalize()
            if cell.state == FINALIZING:  # finalizing elsewhere already (a stop() from another task): its on_stop
                try:  # ends there, and is waited for and cut off at the bound as one run here is
                    await cell.wait_dead()
                except BaseException:
                    cell.cut_off_stop()
                    raise
        except BaseException as exc:
            self._interrupted(exc)
        del pending[id(cell)]

    def _interrupted(self, exc: BaseException) -> None:
        """An ``on_stop`` or a cleanup run by the exit raised ``exc``, a ``BaseException`` that is no failure.

        ``KeyboardInterrupt``, ``SystemExit``, the user's own: kept, the first one only (an escalation before it
        wins), to leave ``async with`` bare once the rest of the exit — the other hooks, the cleanups, the
        recorders' flush — has run, as one out of a worker's handler does.  A cancellation (the exit's own bound)
        and ``GeneratorExit`` (the exit's coroutine is being closed: it must not await again) go on at once; a
        stray cancellation (no scope asked for it: :func:`~agentactors._containment.is_stray`) is the
        hook's own failure, logged like a cleanup's.  Call it from the ``except`` clause, inside the exit's scopes.
        """
        if isinstance(exc, GeneratorExit):
            raise exc
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            if not is_stray(exc):
                raise exc
            # A stray one (see the worker): the hook's own failure.
            log.warning("an on_stop or a runtime cleanup raised %s that no cancel scope asked for", type(exc).__name__)
            return
        if self._escalated is None:
            self._escalated = exc

    # -- spawning --------------------------------------------------------------------------------

    def spawn(
        self,
        actor_or_factory: ActorSource,
        *,
        name: str | None = None,
        mailbox_size: int = 256,
        concurrency: int = _DEFAULT_CONCURRENCY,
        on_failure: FailurePolicy = "resume",
        max_restarts: int = 3,
        restart_window: float = 60.0,
        direct: bool = True,
        quiet: bool = False,
    ) -> ActorRef:
        """Register an actor and return its address.  Synchronous: the actor starts on its first message.

        ``actor_or_factory`` is an actor object, or a zero-argument factory (a
        class or function) that builds one; ``on_failure="restart"`` needs the
        factory, to rebuild the actor's state.  ``concurrency=1`` handles one
        message at a time (state needs no lock); ``N`` runs up to N handlers at
        once (per-sender order is then only the order of *starting*).  Not passed, it is the actor's own
        ``spawn_concurrency`` when it declares one, else 1: an int attribute or property (anything else declares
        nothing).  A :class:`~agentactors.gateway.provider.ProviderActor` declares one, so that requests past its
        ``max_concurrency`` wait in its scheduler, where ``max_waiting``, ``max_wait`` and priorities apply.  The
        settings are checked before a factory is called.
        ``on_failure``: ``"resume"`` (the error goes to the asker, or an
        ``actor.failed`` event for a tell; the actor goes on), ``"restart"``
        (rebuild from the factory; more than ``max_restarts`` failures within
        ``restart_window`` seconds stop it), ``"stop"``, ``"escalate"`` (cancel
        the runtime and raise the error out of ``async with Runtime()``).

        ``direct``: whether an ask may run its handler in the asker's own task
        when the actor is idle enough (open, nothing queued, a free handler
        slot) — no mailbox round trip, no worker task; see :meth:`ActorRef.ask`.
        With ``direct=False`` every message goes through the mailbox and is
        handled in a worker task (for an actor whose handlers must never run in
        a caller's task, e.g. one that relies on its own task's state).  An
        actor without ``on_start`` is started at spawn; one with it is started
        by its first message (by the first asker itself, when direct).  ``quiet``: no ``actor.started`` /
        ``actor.stopped`` events for it (an actor that stands for something with events of its own: a run).

        :raises TypeError: a count (``mailbox_size``, ``concurrency``, ``max_restarts``) that is not an int (a bool
            is not one), a ``restart_window`` that is not a number, a ``name`` that is not a string, a ``direct`` or
            ``quiet`` that is not a bool; an actor whose ``receive`` (or ``on_start`` / ``on_stop``) is not an
            ``async def``.
        :raises ValueError: a setting out of its range (a count below 1, or 0 for ``max_restarts``; a window that is
            not > 0; an actor's declared ``spawn_concurrency`` below 1), or an unknown ``on_failure``.
        :raises RuntimeError: outside ``async with``, or from another thread than the runtime's loop's.
        """
        self._check_running()
        if threading.get_ident() != self._thread:
            raise wrong_loop("Runtime.spawn()", self._thread, "rt.call(fn) with an async fn that spawns")
        # The types first, on every call (a few identity compares): True == 1 and 1.0 == 1 would otherwise find
        # the settings of an int in the cache below, and be taken only when another spawn came first.
        if (
            type(mailbox_size) is not int
            or (type(concurrency) is not int and concurrency is not _DEFAULT_CONCURRENCY)
            or type(max_restarts) is not int
            or type(restart_window) is not float
            or (name is not None and not isinstance(name, str))
            or type(direct) is not bool
            or type(quiet) is not bool
        ):
            _check_spawn(name, mailbox_size, concurrency, max_restarts, restart_window, direct, quiet)
        # The settings are checked (and their shared Spec found) before a factory is called: one refused would
        # otherwise have built its actor first.  Not passed, the concurrency is the actor's to say (below).
        declared = concurrency is _DEFAULT_CONCURRENCY
        key = (on_failure, max_restarts, restart_window, mailbox_size, 1 if declared else concurrency, direct, quiet)
        spec = self._specs.get(key)
        if spec is None:
            spec = self._new_spec(key)
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
        _check_hooks(actor)
        if declared:
            own = _declared_concurrency(actor)
            if own != 1:
                key = (on_failure, max_restarts, restart_window, mailbox_size, own, direct, quiet)
                spec = self._specs.get(key)
                if spec is None:
                    spec = self._new_spec(key)
        if on_failure == "restart" and factory is None:
            raise ValueError(
                'on_failure="restart" needs a zero-argument factory (a class or function) to rebuild the '
                "actor's state from; pass the class (or a lambda) instead of an instance"
            )
        number = next(self._ids)
        cell = Cell(spec, actor, number if name is None else name, factory)
        self._actors.add(cell)
        if not quiet:
            sink = self._listening(None)
            if sink is not None:
                sink.emit("actor.started", actor=cell.name)
        return ActorRef(cell)

    def _new_spec(self, key: tuple[Any, ...]) -> Spec:
        """The :class:`Spec` of spawn settings ``key`` (checked here: the types were already), kept for every actor
        spawned with them — an idle actor should not carry its own.

        :raises ValueError: a setting out of its range, or an unknown ``on_failure``.
        """
        on_failure, max_restarts, restart_window, mailbox_size, concurrency, direct, quiet = key
        if on_failure not in _POLICIES:
            raise ValueError(f"on_failure must be one of {sorted(_POLICIES)}, not {on_failure!r}")
        if max_restarts < 0:
            raise ValueError(f"max_restarts must be >= 0, not {max_restarts!r}")
        if not restart_window > 0:  # (NaN too)
            raise ValueError(f"restart_window must be a number of seconds > 0, not {restart_window!r}")
        if mailbox_size < 1:
            raise ValueError(f"mailbox_size must be >= 1, not {mailbox_size!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, not {concurrency!r}")
        spec = self._specs[key] = Spec(
            self._host,
            self,
            new_event=self._event_cls,
            new_scope=self._scope_cls,
            checkpoint=self._checkpoint,
            policy=on_failure,
            max_restarts=max_restarts,
            window=float(restart_window),
            size=mailbox_size,
            concurrency=concurrency,
            direct=bool(direct),
            thread=self._thread,
            quiet=bool(quiet),
            scope_checkpoint=self._scope_checkpoint,
        )
        return spec

    def keep_bound(self, obj: Any, name: str | None) -> None:
        """Note ``obj`` — an agent bound to this runtime, named ``name`` — for :meth:`recover`.

        Held weakly (a service that binds an agent per request must not keep them all); but with a journal, the
        latest one bound under each name is also held strongly, so that a bound copy nobody kept
        (``agent.bind(rt)`` written as a statement, its value dropped) is still there to recover that name's
        crashed runs — recovery finds agents by name, and one name's latest binding is as good as any.  At most
        the :data:`_MOST_KEPT` names bound last are held so (a service naming an agent per user binds without
        bound): an older one is held weakly again, as every binding is without a journal.
        """
        self.bound.add(obj)
        if self.journal is not None and name:
            kept = self._kept
            kept.pop(name, None)  # the latest binding of a name is the last in the dict
            kept[name] = obj
            if len(kept) > _MOST_KEPT:  # names made per request or per user: the oldest goes back to weak
                del kept[next(iter(kept))]

    async def recover(self, *, agents: Iterable[Any] = (), sessions: Any = None) -> list[Any]:
        """Finish the runs a crashed process left in this runtime's journal; their results, in the order they started.

        Each run goes on from its last committed step with the agent of its name among those bound to this
        runtime (``agent.bind(rt)``) and ``agents``, keeping its run id; committed tool results are reused,
        a tool step started but not committed runs again with the same idempotency keys
        (``docs/durability.md``).  A run whose agent is not found is left for a later call.

        ``sessions``: the session store (``SqliteStore(path)``, ``PostgresStore(dsn)``) of the sessions whose
        turns were cut: a recovered turn is committed to its session as the session would have committed it,
        over the version it started from (a session that moved on meanwhile keeps its history; a warning is
        logged).  Without it, a recovered turn's result is only returned here.

        :raises RuntimeError: the runtime has no journal, or is not running.
        :raises TypeError: ``sessions`` is not a session store; the journal has no ``recover`` (one written against
            the loop's port alone, ``open_run``: it records, and replay and fork read it, but recovering is a
            :class:`~agentactors.journal.store.JournalStore`'s).
        :raises RecoveryError: some runs could not be recovered (a damaged row, a run that raised): raised after
            every other run was finished, with their results (``.results``) and each failure by run id.

        Cancellation: the journal's (its ``recover``, :class:`~agentactors.journal.store.JournalStore`): the runs
        being finished are cancelled, and each is ended ``"cancelled"`` (that end committed shielded) — a run
        cancelled is ended, never recovered again; a run not started yet stays unfinished, for a later call.
        The runtime itself goes on.
        """
        journal = self.journal
        if journal is None:
            raise RuntimeError("recover() needs a journal: Runtime(journal=SqliteJournal(path))")
        recover = getattr(journal, "recover", None)
        if not callable(recover):  # (a journal of one's own written against the loop's port alone: open_run)
            raise TypeError(
                f"recover() needs a journal that recovers (a JournalStore: SqliteJournal, PostgresJournal); "
                f"{type(journal).__name__} has no recover()"
            )
        self._check_running()
        bound = (*self.bound, *agents)
        # Passed only when given: a journal written against the earlier port takes no ``sessions``.
        if sessions is None:
            found: list[Any] = await recover(self, agents=bound)
        else:
            found = await recover(self, agents=bound, sessions=sessions)
        return found

    async def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await ``fn(*args)`` in this runtime's context from a task that is not the runtime's.

        Code inside ``async with Runtime() as rt:`` finds its runtime through a
        contextvar (:meth:`current`), set in the task that entered the block.
        Code that runs in some other task of the same event loop — a Ray actor
        method (Ray's task, not the one that entered the runtime), a server's
        request handler, a callback scheduled by a library — would see no
        runtime, or the wrong one.  ``call`` runs ``fn(*args)`` step by step in
        a copy of the runtime's own context (the contextvars as they were when
        ``async with`` was entered: :meth:`current` is this runtime, no run's
        event sink), while staying in the calling task: no task is started and
        nothing is copied back into the caller's context.  ``agent.run(...)``
        inside ``fn`` runs in this runtime and shares its actors.

        **From another thread's event loop** (asyncio or trio, either way round)
        the call is handed to the runtime's loop: ``fn(*args)`` is made and
        awaited by a task of the runtime (counted by the drain like any task),
        in the runtime's context as above, and its value or exception comes back
        to the caller's loop (:mod:`~agentactors.actors.crossing`: the loops wake
        each other, no thread is held).  Whatever ``fn`` runs runs in the
        runtime's thread — callbacks it was given included.

        :raises RuntimeError: the runtime is not running, or belongs to another event loop of this thread (one
            that has ended, or is not the one running now: nothing can hand the call over to it).

        Cancellation: ``fn`` runs in the calling task, so cancelling the caller
        cancels it at its next checkpoint, as for a plain ``await fn(*args)``.
        From another thread's loop, cancelling the caller cancels ``fn`` in the
        runtime's loop, and the caller waits until it has ended there before its
        cancellation goes on.  The runtime's exit cancels it too (after the
        drain), and the call then raises :class:`RuntimeError`: a call never
        outlives the runtime it runs in.  A call handed over as the runtime
        closes, before the runtime's loop took it up, raises :class:`RuntimeError`
        at the exit (or at once, after it), even when that loop then ends without
        running the hand-over: the caller never waits for a loop that has ended.
        """
        self._check_running()
        if threading.get_ident() != self._thread:
            return await self._call_across(fn, args)
        if self._here() is not self._home:
            raise wrong_loop("Runtime.call()", self._thread, "rt.call(fn)")
        ctx = self._ctx
        assert ctx is not None
        awaitable = fn(*args)
        coro = awaitable if isinstance(awaitable, Coroutine) else _awaiting(awaitable)
        scope = self._scope_cls()
        guests = self._guests
        guests.add(scope)
        try:
            with scope:
                result: T = await in_context(ctx.copy(), self, coro)
                return result
        finally:
            guests.discard(scope)
        # Only the runtime's exit cancels this scope (the caller's cancellation is not the scope's own,
        # so it propagates): fn did not finish, and there is no result to give.
        raise RuntimeError("the runtime closed while Runtime.call() was running")

    async def _call_across(self, fn: Callable[..., Awaitable[T]], args: tuple[Any, ...]) -> T:
        """:meth:`call` from another thread's event loop: hosted by a task of this runtime's loop."""
        wake_host = self._waker
        assert wake_host is not None
        crossing = Crossing(current_waker())
        # Registered before the wake-up, under the lock the exit closes under: the runtime (and then its loop)
        # may end between the caller's check and the wake-up, and a stopped asyncio loop still accepts a
        # callback it will never run.  Either the exit finds this crossing and fails it, or it came too late.
        with self._crossings_lock:
            if self._closed:
                raise RuntimeError("the Runtime is not running: it has closed")
            self._crossings.add(crossing)
        try:
            wake_host(lambda: self._host_call(crossing, fn, args))
        except RuntimeError:  # asyncio's closed loop; trio's RunFinishedError (a RuntimeError)
            with self._crossings_lock:
                self._crossings.discard(crossing)
            raise RuntimeError("the Runtime is not running: its event loop has ended") from None
        result: T = await crossing.outcome(wake_host)
        return result

    def _host_call(self, crossing: Crossing, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        """In this runtime's loop (a callback): start the task that runs a call from another thread.

        Never raises: an exception out of a loop's callback would take trio's whole run down.
        """
        with self._crossings_lock:
            if crossing not in self._crossings:
                return  # the runtime's exit failed it already
            self._crossings.discard(crossing)
        if not self.running:
            crossing.finish(error=RuntimeError("the Runtime is not running: it closed"))
            return
        self._running += 1
        try:
            self._start_internal(self._hosted, crossing, fn, args)
        except Exception as exc:  # pragma: no cover - the task group is active while the runtime runs
            self._task_done()
            crossing.finish(error=RuntimeError(f"the Runtime could not start the call: {type(exc).__name__}"))

    async def _hosted(self, crossing: Crossing, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        outcome: tuple[Any, BaseException | None] = (None, None)
        try:
            with self._scope_cls() as scope:  # cancelled when the caller is (Crossing.cancel)
                crossing.scope = scope
                if crossing.cancel_requested:
                    scope.cancel()
                outcome = (await self.call(fn, *args), None)
        except Exception as exc:
            outcome = (None, exc)
        except BaseException as exc:  # the runtime's cancellation (its exit, an escalation), an interrupt
            outcome = (None, RuntimeError("the runtime closed while Runtime.call() was running"))
            self._task_failed(exc)  # a cancellation goes on; an interrupt escalates, as out of any runtime task
        finally:
            self._task_done()
            crossing.finish(*outcome)

    def spawn_task(
        self, fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None, background: bool = False
    ) -> None:
        """Run ``fn(*args)`` in the runtime's task group, with the caller's contextvars.

        Counted in :meth:`stats` and cancelled when the runtime closes.  An
        exception escaping ``fn`` escalates: it cancels the runtime and leaves
        ``async with Runtime()`` (bare, a ``KeyboardInterrupt`` too, once the exit has run).

        A ``background`` task is one that lives as long as the runtime does (the
        task that owns a connection a :meth:`service` shares, say): the drain and
        :meth:`wait_idle` do not wait for it — it would keep every exit waiting
        ``drain_timeout`` — and it is cancelled with the rest after the drain, so
        it closes what it owns on that cancellation (shielded, bounded).  It runs
        in the runtime's own contextvars, not the caller's: it outlives the caller
        (a run's event sink must not follow it).

        Cancellation: the task belongs to the runtime, not to the caller —
        cancelling the caller does not cancel it; leaving ``async with`` does
        (after the drain).  The call itself never blocks.

        :raises RuntimeError: outside ``async with``, or from another event loop than the runtime's.
        :raises TypeError: ``fn`` is not an async function: its call returned no awaitable (nothing was started).
        """
        self._check_running()
        self._check_loop("Runtime.spawn_task()", "rt.call(fn) with an async fn that starts the task")
        assert self._tg is not None
        # Made here, not in the task: what is not awaitable (a sync function's result) is refused at the call, as
        # anyio's start_soon refuses it, rather than failing in the task, which would escalate (end the runtime).
        awaitable = fn(*args)
        if not inspect.isawaitable(awaitable):
            raise TypeError(
                f"Runtime.spawn_task() needs an async function (one whose call returns an awaitable); "
                f"{getattr(fn, '__qualname__', type(fn).__name__)} returned a {type(awaitable).__name__}"
            )
        if background:
            self._background += 1
            self._start_internal(self._run_background, _given, (awaitable,))
            return
        self._running += 1
        self._tg.start_soon(self._run_task, _given, (awaitable,), name=name)

    async def stop(self, ref: ActorRef, *, drain: bool = True, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Stop an actor.  With ``drain``, queued messages are handled first (at most ``timeout``,
        default the runtime's ``drain_timeout``); then running handlers are cancelled — in workers
        and in askers' tasks alike — anything still queued is rejected (asks: ``ActorStopped``;
        tells: dead letters) and ``on_stop`` runs.  New messages are rejected from the moment this
        is called.  Idempotent; concurrent calls all return once the actor has stopped.

        ``timeout`` bounds the drain only, not ``on_stop``: ``stop`` returns once ``on_stop`` has returned,
        so a hook that never returns (a flush to a server that does not answer, with no timeout of its own)
        holds it.  Give the hook its own bound (``anyio.move_on_after`` in it), or the caller's
        (``with anyio.move_on_after(...): await rt.stop(ref)``: the actor is stopped all the same, see
        Cancellation).  At the runtime's exit every ``on_stop`` is bounded (:meth:`__aexit__`).

        From inside the actor's own handler use ``drain=False`` (the calling handler is then
        cancelled at its next checkpoint): a drain would wait for that very handler until the timeout.

        Cancellation: a cancelled caller leaves at once.  The actor is stopping by then (it accepts
        nothing new) and, once its drain is over or was never asked for, halted; its ``on_stop``
        runs where it would have (the last worker's task, or the next call to ``stop``, or the
        runtime's exit).

        :raises TypeError: ``ref`` is not an :class:`ActorRef`, or ``timeout`` not a number of seconds.
        :raises ValueError: ``ref`` is an actor of another runtime, or ``timeout`` is negative or NaN.
        :raises RuntimeError: called from another event loop than the runtime's (nothing changed).
        """
        if not isinstance(ref, ActorRef):
            raise TypeError(f"Runtime.stop() takes an ActorRef (what spawn() returned), not a {type(ref).__name__}")
        if timeout is not None:
            timeout = _seconds(timeout, "timeout")
        cell = cell_of(ref)
        if cell.spec.runtime is not self:
            raise ValueError(f"{ref!r} belongs to another runtime")
        if not self._closed:  # (closed: its actors are stopped, and stop() only waits for what is done)
            self._check_loop(f"Runtime.stop() of actor {cell.name!r}", "rt.call(rt.stop, ref)")
        if cell.begin_stopping():
            if drain:
                deadline = anyio.current_time() + (self.drain_timeout if timeout is None else timeout)
                try:
                    with anyio.move_on_at(deadline):
                        await cell.wait_quiet()
                except BaseException:
                    self._finish_stop_soon(cell, deadline)  # the caller left mid-drain: the runtime goes on with it
                    raise
            cell.halt("stopped")
        await cell.wait_quiet()
        await cell.finalize()
        await cell.wait_dead()

    def _finish_stop_soon(self, cell: Cell, deadline: float) -> None:
        """Finish a :meth:`stop` whose caller left during the drain, in a runtime task: what its docstring promises.

        The drain goes on until ``deadline`` (the stop's own bound), then the actor is halted and finalized.
        Nothing when the runtime is closing or this is not its loop: its exit halts and finalizes every actor.
        """
        if self._closing or self._tg is None or self._here() is not self._home:
            return
        self._running += 1
        self._start_internal(self._run_task, self._finish_stop, (cell, deadline))

    async def _finish_stop(self, cell: Cell, deadline: float) -> None:
        with anyio.move_on_at(deadline):
            await cell.wait_quiet()
        cell.halt("stopped")
        await cell.wait_quiet()
        await cell.finalize()

    def when_collected(self, owner: object, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Await ``fn(*args)`` in a task of this runtime once ``owner`` has been garbage-collected.

        For what the runtime holds on behalf of an object it does not keep alive: the agent layer stops an
        agent's tool executor with it (``rt.when_collected(agent, rt.stop, executor)``), so an agent made per
        request and dropped takes its executor — and whatever its tools close over — with it.

        The runtime holds ``fn`` and ``args`` until then (they must not refer to ``owner``: it would never be
        collected), ``owner`` only weakly; the watch does not hold the runtime.  Collection may happen in any
        thread and at any point of any code, this runtime's own included: it only enqueues and wakes the
        runtime's loop, which starts the task there (as :meth:`spawn_task` does: counted by the drain; an
        exception out of ``fn`` escalates).  A watch ends with the runtime: an owner collected once the
        runtime has closed (its exit under way, or over) has nothing done, and ``fn`` and ``args`` are let go.

        :raises RuntimeError: outside ``async with``, or from another thread than the runtime's loop's.
        :raises TypeError: ``owner`` cannot be weakly referenced.
        """
        self._check_running()
        if threading.get_ident() != self._thread:
            raise wrong_loop("Runtime.when_collected()", self._thread, "rt.call(fn) with an async fn that calls it")
        watch = weakref.ref(owner, _collected_callback(weakref.WeakMethod(self._owner_collected)))
        self._watched[id(watch)] = (watch, fn, args)

    def _owner_collected(self, key: int) -> None:
        """The owner of watch ``key`` was collected: enqueue it, wake the runtime's loop.  Any thread, any point.

        Only an append (atomic), a flag and the loop's thread-safe wake-up (asyncio's ``call_soon_threadsafe``;
        trio's ``run_sync_soon``, safe even in a signal handler, its lock being reentrant): no lock of ours, which
        the interrupted code might hold.  Never raises: a weakref callback's exception is only printed.
        """
        self._collected.append(key)
        if self._reaping or self._closed:
            return  # a pass is scheduled (it takes this one too), or the exit ends every watch
        waker = self._waker
        if waker is None:
            return
        self._reaping = True
        try:
            waker(self._reap)
        except Exception:  # the loop has ended (asyncio's closed loop; trio's RunFinishedError): nothing to do
            self._reaping = False

    def _reap(self) -> None:
        """In the runtime's loop (a callback): start the work of the watches whose owners were collected.

        Never raises: an exception out of a loop's callback would take trio's whole run down.
        """
        self._reaping = False  # before the pass: a key enqueued from now on is either taken below or rescheduled
        collected, watched = self._collected, self._watched
        while collected:
            entry = watched.pop(collected.popleft(), None)
            if entry is None or self._closed or self._tg is None:
                continue
            _, fn, args = entry
            self._running += 1
            try:
                self._start_internal(self._run_task, fn, args)
            except Exception:  # pragma: no cover - the task group is active while the runtime runs
                self._task_done()
                log.exception("the work for a collected object could not be started")

    def service(
        self,
        key: Hashable,
        build: Callable[[], T],
        *,
        cleanup: Callable[[T], Awaitable[object]] | None = None,
    ) -> T:
        """The runtime's one value for ``key``: built by ``build()`` on first use, the same object after.

        A per-runtime registry for whatever is shared by everything in one
        runtime — e.g. the shared-provider registry of
        :meth:`ProviderActor.shared <agentactors.gateway.provider.ProviderActor.shared>`.
        ``cleanup(value)`` (given with the call that builds it) is awaited when
        the runtime exits, after every actor has stopped, in reverse order of
        building; a cleanup that raises is logged and the others still run.
        Keys compare by equality: use something of your own (a class, a tuple
        starting with your module's name) so as not to clash with other users.

        :raises RuntimeError: outside ``async with``, or from another thread than the runtime's loop's (nothing is
            built: a value built there would be shared with, and cleaned up by, another thread's loop).

        Never blocks (``build`` runs synchronously).  The check is the thread compare of :meth:`spawn` (~35 ns):
        this runs for every run that shares a provider, so no loop probe.
        """
        self._check_running()
        if threading.get_ident() != self._thread:
            raise wrong_loop("Runtime.service()", self._thread, "rt.call(fn) with an async fn that calls service()")
        services = self._services
        if key in services:
            return cast(T, services[key])
        value = build()
        services[key] = value
        if cleanup is not None:
            self._cleanups.append((key, lambda: cleanup(value)))
        return value

    def run_ref(self, run_id: str) -> Any:
        """The handle of the live run ``run_id`` in this runtime: an :class:`~agentactors.AgentRun`, the same
        one ``agent.stream(...)`` returned for a streamed run (``docs/loop.md``, "Live runs").

        Any task of the runtime's loop may call it.  The agent layer registers the lookup (the kernel
        knows no runs: :data:`RUN_RESOLVER`).

        :raises RunNotFoundError: no run with that id is live here (it finished, or never ran here).
        """
        resolve = self._services.get(RUN_RESOLVER)
        if resolve is None:
            raise RunNotFoundError(f"no live run {run_id!r} in this runtime", run_id=run_id)
        return resolve(run_id)

    # -- many runs (implemented by the agent) ------------------------------------------------------

    async def run_many(
        self,
        agent: _RunsInOrder[R],
        inputs: Iterable[Any],
        *,
        concurrency: int = 100,
        progress: Callable[[int, int, int], Any] | None = None,
        deps: Any = None,
        settings: Any = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: Any = None,
    ) -> list[R]:
        """Run ``agent`` on every input in this runtime, at most ``concurrency`` at once; results in input order.

        ``progress(done, failed, total)`` is called as runs finish.  The agent
        does the work (:meth:`agentactors.Agent.run_many` documents errors and
        cancellation, and the run options it takes: ``deps``, ``settings``, ``deadline``, ``priority``,
        ``input_key``, ``cost_limit``); this is the same call with ``runtime=self``.

        Cancellation: as the agent's — every run is cancelled and the cancellation propagates, the list of
        results (each slot filled) riding on it as ``exc.results``.
        """
        given = _options_given(
            deps=deps, settings=settings, deadline=deadline, priority=priority, input_key=input_key,
            cost_limit=cost_limit,
        )
        run_many: Callable[..., Awaitable[list[R]]] = agent.run_many
        return await run_many(inputs, runtime=self, concurrency=concurrency, progress=progress, **given)

    def as_completed(
        self,
        agent: _RunsAsCompleted[R],
        inputs: Iterable[Any],
        *,
        concurrency: int = 100,
        deps: Any = None,
        settings: Any = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        cost_limit: Any = None,
    ) -> Completions[R]:
        """Run ``agent`` on every input in this runtime and yield each result as it finishes (``async for``).

        The same as :meth:`agentactors.Agent.as_completed` with ``runtime=self`` (stopping early,
        cancellation, the run options: see there).
        """
        given = _options_given(
            deps=deps, settings=settings, deadline=deadline, priority=priority, input_key=input_key,
            cost_limit=cost_limit,
        )
        as_completed: Callable[..., Completions[R]] = agent.as_completed
        return as_completed(inputs, runtime=self, concurrency=concurrency, **given)

    # -- sessions (implemented by the agent layer) --------------------------------------------------

    def session(
        self, agent: HasSessions[R], key: str, *, store: Any = None, idle_timeout: float = 60.0, cost_limit: Any = None
    ) -> R:
        """The session ``key`` of ``agent`` in this runtime: a conversation held by an actor, one turn at a time.

        The same as :meth:`agentactors.Agent.session` with ``runtime=self`` (see there and
        ``docs/sessions.md``): ``store`` (default: a :class:`~agentactors.sessions.MemoryStore` of this
        runtime) keeps the history; after ``idle_timeout`` seconds without a turn the session
        deactivates (no task, no history in memory) and the next turn loads it again; ``cost_limit``: the
        most the session's turns may spend together in this runtime (``docs/costs.md``).

        :raises TypeError: ``agent`` has no ``session`` (not an :class:`agentactors.Agent`: an agent of one's own with
            ``run`` and ``resume`` opens one with :func:`agentactors.sessions.open_session`).
        """
        if not callable(getattr(agent, "session", None)):  # (not an AttributeError from deep in the call)
            raise TypeError(
                f"rt.session() takes an agent (an agentactors.Agent), not {type(agent).__name__}; an agent of your "
                "own with run() and resume() opens one with agentactors.sessions.open_session()"
            )
        return agent.session(key, runtime=self, store=store, idle_timeout=idle_timeout, cost_limit=cost_limit)

    # -- accounting ------------------------------------------------------------------------------

    def stats(self) -> RuntimeStats:
        """Live actors, running tasks, busy handlers, mailbox depths, abandoned threads (:class:`RuntimeStats`)."""
        depths: dict[str, int] = {}
        busy = 0
        for cell in self._actors:
            busy += cell.busy
            if cell.mailbox:
                name = cell.name
                depths[name] = depths.get(name, 0) + len(cell.mailbox)
        try:
            abandoned = worker_threads().abandoned
        except RuntimeError:  # called outside any event loop: no loop, no threads of one
            abandoned = 0
        return RuntimeStats(
            actors=len(self._actors),
            tasks=self._running + self._background,
            busy=busy,
            queued=sum(depths.values()),
            mailboxes=depths,
            abandoned_threads=abandoned,
        )

    # -- tasks -----------------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._closed:
            raise RuntimeError(
                "the Runtime is not running: it has closed (its `async with` was left; a Runtime runs once)"
            )
        if not self._entered:
            raise RuntimeError("the Runtime is not running: use `async with Runtime() as rt:`")

    def _check_loop(self, what: str, via: str) -> None:
        """Refuse ``what`` outside the runtime's event loop (:func:`~agentactors.actors.crossing.wrong_loop`).

        The thread first (cheap), then the loop: another loop of the runtime's own thread is caught too.
        """
        if threading.get_ident() != self._thread or self._here() is not self._home:
            raise wrong_loop(what, self._thread, via)

    def _start_internal(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start a runtime task in the runtime's own context (never the caller's).

        :raises RuntimeError: called from another event loop than the runtime's: the task group is that
            loop's (a task started from elsewhere would never run, or run in the wrong thread).  Checked here,
            where every task of the runtime starts: a probe is a fraction of a task's start.
        """
        assert self._tg is not None and self._ctx is not None
        if self._here() is not self._home:
            raise wrong_loop("starting a task of the Runtime", self._thread, "rt.call(fn)")
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

    async def _run_task(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        try:
            await fn(*args)
        except BaseException as exc:
            self._task_failed(exc)
        finally:
            self._task_done()

    async def _run_background(self, fn: Callable[..., Awaitable[Any]], args: tuple[Any, ...]) -> None:
        try:
            await fn(*args)
        except BaseException as exc:
            self._task_failed(exc)
        finally:
            self._background -= 1

    def _task_failed(self, exc: BaseException) -> None:
        """A runtime task raised ``exc``: a cancellation goes on; anything else escalates (see the worker).

        An ``Exception``, and a ``KeyboardInterrupt``, ``SystemExit`` or ``BaseException`` of the user's own alike:
        out of the task group as it is, the latter would leave asyncio's event loop itself (past the exit) or,
        on trio, leave ``async with`` wrapped in a group.  Escalated, the runtime is cancelled, its exit runs, and
        the exception leaves ``async with`` bare.  ``GeneratorExit`` too; nothing awaits after it here.
        """
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            raise exc
        self._escalate(None, exc)

    def _task_done(self) -> None:
        self._running -= 1
        if self._running == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    def _escalate(self, cell: Cell | None, exc: BaseException) -> None:
        if self._escalated is None:
            self._escalated = exc
        if cell is not None:
            cell.halt("its failure escalated")
        if self._tg is not None:
            self._tg.cancel()

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

    def _dead_letter(self, name: str, message: Any) -> None:
        # The message's type only: its payload may be large or hold secrets.
        sink = self._listening(None)
        if sink is not None:
            sink.emit("actor.dead_letter", actor=name, message_type=type(message).__name__)


def _seconds(value: Any, what: str) -> float:
    """``value`` as a number of seconds (``math.inf`` allowed), or a clear error naming ``what``.

    :raises TypeError: not an int or a float (a bool is neither here: ``True`` would be a second).
    :raises ValueError: negative or NaN.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number of seconds, not {type(value).__name__} {value!r}")
    if not value >= 0:  # (NaN too)
        raise ValueError(f"{what} must be a number of seconds >= 0, not {value!r}")
    return float(value)


def _recorders(value: object) -> tuple[Recorder, ...]:
    """``value``, the runtime's recorders, as a tuple; the recorders themselves are checked by :class:`FanOut`.

    :raises TypeError: not a collection (one recorder was "'InMemoryRecorder' object is not iterable", a str
        was taken letter by letter), or a recorder class among them (its ``record`` is an unbound function:
        every event failed, each only logged).
    """
    if type(value) is tuple:  # the default, and a private runtime's (one per run that finds none): no more asked
        recorders: tuple[Recorder, ...] = value
    elif isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"recorders takes a list of recorders, not {type(value).__name__} (for one, pass [it])")
    else:
        recorders = tuple(value)
    for r in recorders:
        if isinstance(r, type):
            raise TypeError(f"recorders takes recorder instances, not the class {r.__name__}: pass {r.__name__}()")
    return recorders


def _check_journal(journal: object) -> None:
    """:raises TypeError: ``journal`` is neither ``None`` nor a journal instance (an object with ``open_run``).

    The kernel knows no journal (:class:`agentactors.loop.tape.Journal` is the loop's port), only its method: a
    path (``journal="runs.db"``), a number or a journal class was accepted, and every run failed with
    ``AttributeError: ... 'open_run'``.
    """
    if isinstance(journal, type):
        name = journal.__name__
        raise TypeError(f"journal must be a journal instance, not the class {name}: pass {name}(...)")
    if not callable(getattr(journal, "open_run", None)):
        hint = ": open one (SqliteJournal(path))" if isinstance(journal, str) or hasattr(journal, "__fspath__") else ""
        raise TypeError(
            f"journal must be a step journal (SqliteJournal, PostgresJournal: an object with open_run) or None, "
            f"not {type(journal).__name__}{hint}"
        )


def _options_given(**options: Any) -> dict[str, Any]:
    """The run options a caller gave (not ``None``): passed on to the agent's own method, which an agent of one's own
    that takes none is still asked without."""
    return {name: value for name, value in options.items() if value is not None}


def _declared_concurrency(actor: object) -> int:
    """The handler concurrency ``actor`` declares: its ``spawn_concurrency`` when that is an int, else 1.

    Only an int declares (a bool does not): an object that answers every attribute name — a mock, a proxy — or
    uses the name for something else declares nothing.

    :raises ValueError: the declared int is below 1, named with the actor's class.
    """
    declared = getattr(actor, "spawn_concurrency", 1)
    if type(declared) is not int:
        return 1
    if declared < 1:
        raise ValueError(f"{type(actor).__name__}.spawn_concurrency must be >= 1, not {declared!r}")
    return declared


def _check_spawn(
    name: Any, mailbox_size: Any, concurrency: Any, max_restarts: Any, restart_window: Any, direct: Any, quiet: Any
) -> None:
    """The types of :meth:`Runtime.spawn`'s settings (its caller checks the ranges).

    :raises TypeError: the first setting of a wrong type, named.  The flags are bools: ``direct="no"`` was a direct
        actor and ``direct=None`` a mailbox one, silently (and ``1`` found the settings of ``True``).
    """
    for what, value in (("mailbox_size", mailbox_size), ("concurrency", concurrency), ("max_restarts", max_restarts)):
        if type(value) is not int and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{what} must be an int, not {type(value).__name__} {value!r}")
    for what, value in (("direct", direct), ("quiet", quiet)):
        if not isinstance(value, bool):
            raise TypeError(f"{what} must be a bool, not {type(value).__name__} {value!r}")
    if isinstance(restart_window, bool) or not isinstance(restart_window, int | float):
        raise TypeError(f"restart_window must be a number of seconds, not {type(restart_window).__name__}")
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str or None, not {type(name).__name__} {name!r}")


def _check_hooks(actor: object) -> None:
    """Refuse an actor whose ``receive`` / ``on_start`` / ``on_stop`` is not an ``async def``.

    The kernel drives a handler as a coroutine: a plain ``def receive`` (a forgotten ``async``) would
    otherwise be taken here and fail every ask with ``'int' object has no attribute 'send'``.

    :raises TypeError: the first hook that is not a coroutine function, named with the actor's class.
    """
    for hook in ("receive", "on_start", "on_stop"):
        fn = getattr(actor, hook, None)
        if fn is not None and not _is_async(fn):
            raise TypeError(
                f"{type(actor).__name__}.{hook} must be defined with `async def` (a coroutine function), "
                f"not {type(fn).__name__} {getattr(fn, '__qualname__', fn)!r}"
            )


def _is_async(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine: an ``async def`` (a method, a ``functools.partial`` of one),
    a callable object with an ``async def __call__``, or a ``functools.wraps`` decorator around one."""
    # The common case first, cheaply (spawn is on every run's way): a method, or a function, written ``async def``.
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is not None and code.co_flags & inspect.CO_COROUTINE:
        return True
    if inspect.iscoroutinefunction(fn):  # (looks through bound methods and partials)
        return True
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None and wrapped is not fn and _is_async(wrapped):
        return True
    if callable(fn) and not inspect.isroutine(fn) and not isinstance(fn, type):
        return inspect.iscoroutinefunction(type(fn).__call__)
    return False


def _amount(value: object) -> bool:
    """Whether ``value`` is a finite, non-negative number (not a bool, not NaN, not infinite: ``None`` is no limit)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 <= value < math.inf


def _collected_callback(enqueue: weakref.WeakMethod[Callable[[int], None]]) -> Callable[[weakref.ref[Any]], None]:
    """The callback of a watch (:meth:`Runtime.when_collected`): it holds its runtime weakly (``enqueue`` is its
    bound method, held by a :class:`weakref.WeakMethod`), as the watch does."""

    def collected(watch: weakref.ref[Any]) -> None:
        owner_collected = enqueue()
        if owner_collected is not None:
            owner_collected(id(watch))

    return collected


def _count_running(delta: int) -> None:
    global _running_in_process
    with _RUNNING_LOCK:
        _running_in_process += delta


def _nowhere() -> object:
    """The loop probe of a runtime never entered: no loop (a runtime's home loop is set on entering)."""
    return None


def _given(awaitable: Awaitable[T]) -> Awaitable[T]:
    """``awaitable`` itself: what a runtime task calls to get the awaitable made at :meth:`Runtime.spawn_task`."""
    return awaitable


async def _awaiting(awaitable: Awaitable[T]) -> T:
    return await awaitable


class _Host:
    """The runtime as its actors' cells see it (:class:`~agentactors.actors._cell.Host`).

    A separate object so that :class:`Runtime`'s own surface stays what users
    call; it works on its runtime's private state (this module's own).
    """

    __slots__ = ("_rt",)

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    @property
    def running(self) -> bool:
        return self._rt.running

    def start_worker(self, cell: Cell, failure: Failure | None) -> bool:
        rt = self._rt
        if rt._closed or rt._tg is None:
            return False  # (closed: the exit's halt rejects what stays queued)
        rt._running += 1
        try:
            # While the exit closes the task group, workers still start as long as it takes them: a handler the
            # exit cancelled may ask another actor from a shielded cleanup, and the exit waits for that handler —
            # an ask left queued for the halt that comes after would hang it.
            rt._start_internal(work, cell, failure)
        except RuntimeError:
            rt._task_done()  # no worker to count
            if rt._closing and rt._here() is rt._home:  # (not a caller on another event loop: refused as ever)
                # The closing task group takes no new task (trio: "Nursery is closed to new arrivals"; every task of
                # it has ended): what stays queued is rejected by the exit's halt, which comes next (ActorStopped).
                return False
            raise
        except BaseException:
            rt._task_done()  # refused (another event loop): no worker to count
            raise
        return True

    def worker_done(self) -> None:
        self._rt._task_done()

    def finalize_soon(self, cell: Cell) -> None:
        rt = self._rt
        if rt._closing or rt._tg is None or rt._here() is not rt._home:
            return  # closing (or not in its loop, which errs elsewhere): the runtime's exit finalizes every actor
        rt._running += 1
        rt._start_internal(rt._run_task, cell.finalize, ())

    def reject(self, cell: Cell, item: Any, reason: str) -> None:
        if type(item) is Ask:
            item.fail(ActorStopped(f"actor {cell.name!r} stopped before handling the message ({reason})"))
        else:
            self._rt._dead_letter(cell.name, item)

    def record(self, ctx: contextvars.Context | None, type: str, /, **data: Any) -> None:
        self._rt._emit(ctx, type, **data)

    def escalate(self, cell: Cell, error: BaseException) -> None:
        self._rt._escalate(cell, error)

    def forget(self, cell: Cell) -> None:
        rt = self._rt
        rt._actors.discard(cell)
        sink = rt._listening(None) if not cell.spec.quiet else None
        if sink is not None:
            sink.emit("actor.stopped", actor=cell.name)

    def own_context(self) -> contextvars.Context:
        ctx = self._rt._ctx
        assert ctx is not None, "a cell asked for the context of a runtime that was never entered"
        return ctx.copy()


class PrivateRuntime(Runtime):
    """A runtime the library opens for one run, batch or stream of an agent that found none running.

    It is a :class:`Runtime` in every way but one: :meth:`Runtime.running_in_process` does not count it.  That
    count is how an agent without a runtime tells whether a user's runtime is running in the process (and
    warns that it is not seen); the library's own private runtimes, two runs' overlapping, are not one.
    """

    __slots__ = ()
    _counted = False
