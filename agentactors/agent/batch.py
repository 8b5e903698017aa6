"""Many runs of one agent: one result per input, in input order, whatever a run does.

:meth:`Agent.run_many <agentactors.Agent.run_many>` and :meth:`Agent.as_completed
<agentactors.Agent.as_completed>` (and ``rt.run_many`` / ``rt.as_completed``, which hand themselves
to them) run here.  The promise is the batch's, not its runs': every input gets exactly one
:class:`~agentactors.loop.result.RunResult`, and a result is never another input's.  What one run
raises decides what becomes of it and of the batch (:mod:`agentactors._containment` draws the line):

* the run's own failure — any ``Exception``, ``SystemExit``, an unknown ``BaseException``, a
  cancellation no cancel scope asked for — is a failed result in the run's slot (``error`` set,
  ``messages`` the input); the other runs go on;
* a real cancellation of the batch (its caller's scope) cancels every run and propagates; before
  it does, every slot is filled — finished runs keep their result, the others get
  ``RunResult(cancelled=True)`` — and the list rides on the exception as ``exc.results``;
* a ``KeyboardInterrupt`` (raised in a run, or delivered to the batch's task) stops the batch: the
  other runs are cancelled, every slot is filled as for a cancellation, and the same
  ``KeyboardInterrupt`` is raised again, with the list as ``exc.results`` and a note saying so.
  On asyncio, Ctrl-C reaches the batch as a cancellation of the main task (``anyio.run`` raises
  the ``KeyboardInterrupt`` afterwards, from it): :func:`results_of` finds the list either way.

What a batch cost is ``pricing.total_cost(results)`` (``None`` when a run had no price); to count it as it
goes and cap it, enter a :class:`~agentactors.gateway.cost_budget.CostBudget` around the call
(``with budget: await agent.run_many(...)``): the runs start in tasks of this batch's (or, for
``as_completed``, the runtime's tasks started with the caller's context), so every one charges it.
The two agree when runs fail or the batch is cancelled too: a failed or cancelled slot is not built
from its input alone but carries what its run had counted — its steps, calls, usage and cost (a
model call the cancellation cut short at its estimate, as the budget charged it) — for the calls it
made were billed.  A slot whose run never started cost nothing (``Cost()``).  An agent's runs say what
they counted through the :class:`Spent` that ``run`` hands back beside the run (the run's own state,
held in the slot while the run runs: nothing is added to the run's steps); a ``run`` that hands back
a bare awaitable leaves its failed or cancelled slots' ``cost`` ``None`` — not known.

The batch machinery knows no agent: it is given how to turn an input into messages (``prepare``)
and how to run them (``run``), so that an agent's private methods stay its own.
"""

from __future__ import annotations

import inspect
import logging
import math
import sys
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

if sys.version_info >= (3, 13):  # pragma: no cover - the CI interpreter is 3.11
    from typing import TypeVar as DefaultTypeVar
else:  # TypeVar defaults (PEP 696) before 3.13: typing_extensions, as agentactors.output.spec
    from typing_extensions import TypeVar as DefaultTypeVar

import anyio
import attrs

from .._containment import escapes, interrupt_in
from .._task_group import NO_SCOPE, TaskGroup, open_task_group
from ..actors.runtime import Runtime
from ..loop.result import RunResult
from ..messages import Message
from ..pricing import Cost

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = [
    "AsCompleted",
    "IndexedRunMessages",
    "Prepare",
    "RunMessages",
    "Spent",
    "SpentLater",
    "check_concurrency",
    "check_items",
    "check_progress",
    "results_of",
    "run_batch",
]

log = logging.getLogger("agentactors.agent")

P = TypeVar("P")
#: What :class:`AsCompleted` yields results of: the agent's output type (``Any`` where it is not said).
R = DefaultTypeVar("R", default=Any)


class Spent(Protocol):
    """What a run the batch started has counted so far (an agent's run: its loop state), for its slot should it
    raise instead of returning a result."""

    def unfinished(self, error: BaseException | None) -> RunResult[Any] | None:
        """The run's result as it stands: cancelled (``error`` ``None``) or failed with ``error``, with the usage
        and cost it had counted; ``None`` when it has counted nothing yet (nothing was spent)."""
        ...


class SpentLater:
    """The :class:`Spent` of a run that has its state only once it has started (an agent with toolsets lists them
    first): :attr:`state` is set then; until it is, the run has spent nothing."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state: Spent | None = None

    def unfinished(self, error: BaseException | None) -> RunResult[Any] | None:
        state = self.state
        return state.unfinished(error) if state is not None else None


#: Turns one input into the run's messages; raises ``TypeError`` / ``ValueError`` for a bad input.
Prepare = Callable[[P], tuple[Message, ...]]
#: Runs the messages of one input to its result (an agent's run, in the batch's runtime): the awaitable, or — so
#: that a slot of a run that raised says what the run spent — the awaitable and the run's :class:`Spent`.
RunMessages = Callable[
    [tuple[Message, ...]], Awaitable[RunResult[Any]] | tuple[Awaitable[RunResult[Any]], Spent]
]
#: A :data:`RunMessages` that is also told the input's index among the inputs (``indexed=True``): what a batch's
#: ``input_key`` names each run by.
IndexedRunMessages = Callable[
    [tuple[Message, ...], int], Awaitable[RunResult[Any]] | tuple[Awaitable[RunResult[Any]], Spent]
]

_NO_MESSAGES: tuple[Message, ...] = ()
#: What a slot whose run never started (or never spent) cost.
_NOTHING = Cost()


def check_items(inputs: object, what: str) -> None:
    """:raises TypeError: ``inputs`` is one input (a str, a message), which iterating would take for many.

    ``run_many("hello")`` would otherwise be five runs of one letter each.  ``what`` names the caller.
    """
    if isinstance(inputs, str | bytes | Message):
        raise TypeError(
            f"{what} takes an iterable of prompts, not one {type(inputs).__name__}: pass [prompt] for a single one"
        )


def check_progress(progress: object) -> None:
    """:raises TypeError: ``progress`` cannot be called as a batch calls it: synchronously, after each run.

    Not callable, it would fail after every run, each failure only logged; an ``async def`` one returns a
    coroutine nobody awaits, and reports nothing.
    """
    if progress is None:
        return
    if not callable(progress):
        raise TypeError(f"progress must be a plain function (done, failed, total), not {type(progress).__name__}")
    # An object whose __call__ is `async def` is one too.
    if inspect.iscoroutinefunction(progress) or inspect.iscoroutinefunction(type(progress).__call__):
        raise TypeError(
            "progress must be a plain function (done, failed, total) -> None, called after each run; not an async "
            f"one ({getattr(progress, '__qualname__', type(progress).__name__)}), which would never be awaited"
        )


def check_concurrency(concurrency: int) -> None:
    """:raises ValueError: ``concurrency`` is not a positive int."""
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ValueError(f"concurrency must be a positive int, not {concurrency!r}")


def _failed(messages: tuple[Message, ...], exc: BaseException, typed: bool, cost: Cost | None = None) -> RunResult[Any]:
    if typed:  # a typed run that did not end on a valid answer has no output (docs/output.md)
        return RunResult("", messages, error=exc, output=None, cost=cost)
    return RunResult("", messages, error=exc, cost=cost)


def _cancelled(messages: tuple[Message, ...], typed: bool, cost: Cost | None = None) -> RunResult[Any]:
    if typed:
        return RunResult("", messages, cancelled=True, output=None, cost=cost)
    return RunResult("", messages, cancelled=True, cost=cost)


def _unfinished(
    spent: Spent | None, messages: tuple[Message, ...], error: BaseException | None, typed: bool
) -> RunResult[Any]:
    """The slot of a run that raised ``error`` (``None``: cancelled with the batch), with what ``spent`` says the
    run had counted — its calls were billed, and the batch's cost (``total_cost``) must not leave them out.

    Without ``spent`` (a ``run`` that handed back a bare awaitable) what the run spent is not known: ``cost`` is
    ``None``.  Asked only when a run raised: nothing of it is on a run's way.
    """
    result: RunResult[Any] | None = None
    cost: Cost | None = None
    if spent is not None:
        cost = _NOTHING  # unless it says otherwise, a run that counted nothing spent nothing
        try:
            result = spent.unfinished(error)
        except Exception:  # the slot must be filled whatever happens: with what is known, then
            log.exception("run_many could not tell what a run that ended early had spent; its cost is unknown")
            cost = None
    if result is None:
        return _cancelled(messages, typed, cost) if error is None else _failed(messages, error, typed, cost)
    if typed and result.output is not None:  # (a run handed off to an untyped agent reads its text as output)
        result = attrs.evolve(result, output=None)
    return result


def _is_failed(result: RunResult[Any]) -> bool:
    return result.generation_failed or result.error is not None


def _prepared(prepare: Prepare[P], item: P, typed: bool) -> tuple[tuple[Message, ...], RunResult[Any] | None]:
    """The input's messages, or the failed result of an input that has none."""
    try:
        return prepare(item), None
    except Exception as exc:  # an input that is not a prompt fails alone (never run: it cost nothing)
        return _NO_MESSAGES, _failed(_NO_MESSAGES, exc, typed, _NOTHING)


def _attach(exc: BaseException, results: list[RunResult[Any]], *, note: bool) -> None:
    """Hang the batch's results on the exception that stops it (``exc.results``); a note for the reader."""
    try:
        setattr(exc, "results", results)  # noqa: B010 - documented: the batch's results ride on the exception
    except (AttributeError, TypeError):  # an exception class without a __dict__: nothing to hang them on
        return
    if note:
        done = sum(1 for r in results if not r.cancelled)
        exc.add_note(f"run_many: {done} of {len(results)} runs had finished; every result is in exc.results")


def results_of(exc: BaseException) -> list[RunResult[Any]] | None:
    """The results a stopped ``run_many`` hung on ``exc``, on an exception ``exc`` was raised from, or on a member
    of an exception group ``exc`` is (or was raised from).

    ``except KeyboardInterrupt as exc: results = results_of(exc)`` works on both backends: on trio
    (and for an interrupt raised in a run) the interrupt itself carries them; on asyncio,
    ``anyio.run`` turns Ctrl-C into a cancellation of the main task and raises its
    ``KeyboardInterrupt`` once that cancellation has gone through the batch — from it, as its
    ``__context__``.  A program with a task group (a nursery) of its own between ``anyio.run`` / ``trio.run``
    and the batch gets the interrupt inside a ``BaseExceptionGroup`` (trio's groups are strict): ``except*
    KeyboardInterrupt as group: results_of(group)`` finds them in its members.  ``None`` when no batch was
    stopped by this exception.
    """
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        results = getattr(current, "results", None)
        if isinstance(results, list) and all(isinstance(r, RunResult) for r in results):
            return results
        following = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
        if following is not None:
            pending.append(following)
        if isinstance(current, BaseExceptionGroup):
            pending.extend(reversed(current.exceptions))  # the first member first
    return None


async def run_batch(
    items: Sequence[P],
    prepare: Prepare[P],
    run: RunMessages | IndexedRunMessages,
    *,
    concurrency: int,
    progress: Callable[[int, int, int], Any] | None = None,
    typed: bool = False,
    indexed: bool = False,
) -> list[RunResult[Any]]:
    """Run every item, at most ``concurrency`` at once, and return one result per item, in order.

    ``indexed``: ``run`` is an :data:`IndexedRunMessages`, called with the item's index too.

    ``progress(done, failed, total)`` is called after each run (``failed``: ``generation_failed``
    or an ``error``); a progress callback that raises — ``SystemExit`` included — is logged once and
    ignored, but a ``KeyboardInterrupt`` from it stops the batch as one from a run does.  ``typed``: the
    runs are of an agent with an output type, whose failed and cancelled results have ``output=None``.

    :raises KeyboardInterrupt: the batch was interrupted; ``exc.results`` holds every slot.

    ``run`` may hand back, beside the run's awaitable, its :class:`Spent`: the slot of a run that then raises — its
    own failure, or cancelled with the batch — carries what the run had counted (usage, cost), not only its input.

    Cancellation: every run is cancelled and the cancellation propagates, with every slot
    filled in ``exc.results`` (unfinished runs: ``RunResult(cancelled=True)``, with what they had spent; a run
    never started: ``cost`` ``Cost()``).
    """
    batch = _Batch(items, prepare, run, progress, typed, indexed)
    try:
        # Not anyio's task group: the backend's own tasks, without anyio's per-task handle (1.3-2.4 KB less
        # a run, :mod:`.._task_group`).
        async with open_task_group() as group:
            for _ in range(min(concurrency, len(items))):
                group.start_scoped(batch.worker, group)
    except BaseException as exc:
        filled = _fill(batch.results, items, prepare, typed)
        stop = interrupt_in(exc)
        if stop is None:
            _attach(exc, filled, note=False)
            raise
        _attach(stop, filled, note=True)
        raise stop from None  # the interrupt itself, not a group: `except KeyboardInterrupt` must catch it
    if batch.interrupted:
        stop = batch.interrupted[0]
        _attach(stop, _fill(batch.results, items, prepare, typed), note=True)
        raise stop
    results = batch.results
    holes = sum(1 for r in results if not isinstance(r, RunResult))
    if holes:  # each worker fills every slot it takes: a hole is a bug of ours, never a short list
        raise AssertionError(f"run_many lost {holes} of {len(items)} results")
    return cast(list[RunResult[Any]], results)


class _Batch(Generic[P]):
    """One batch's shared state, and its workers' body (:meth:`worker`).

    The workers are this object's method, not a closure: a worker's coroutine frame holds one name for the
    batch where a closure's held a slot for each of its eleven free variables — ~80 B every run in flight
    holds (W3's waiting runs are each a worker).
    """

    __slots__ = ("counts", "indexed", "indexes", "interrupted", "items", "prepare", "progress", "results", "run",
                 "typed", "warned")

    def __init__(
        self,
        items: Sequence[P],
        prepare: Prepare[P],
        run: RunMessages | IndexedRunMessages,
        progress: Callable[[int, int, int], Any] | None,
        typed: bool,
        indexed: bool = False,
    ) -> None:
        self.items = items
        self.prepare = prepare
        self.run: Callable[..., Any] = run
        self.indexed = indexed
        self.progress = progress
        self.typed = typed
        # A slot holds, while its run runs, the run's Spent (when ``run`` hands one back): a place every input has
        # anyway, so a run in flight holds nothing more for it.
        self.results: list[RunResult[Any] | Spent | None] = [None] * len(items)
        self.indexes = iter(range(len(items)))
        self.counts = [0, 0]  # done, failed
        self.warned = False
        self.interrupted: list[KeyboardInterrupt] = []

    async def worker(self, scope: Any, group: TaskGroup) -> None:
        """Run inputs until none is left (started by ``start_scoped``: the task enters the group's scope itself)."""
        with scope if scope is not None else NO_SCOPE:
            for i in self.indexes:  # (no locals beyond these: every run in flight holds this frame)
                messages, result = _prepared(self.prepare, self.items[i], self.typed)
                if result is None:
                    try:
                        result = await self._start(i, messages)
                    except BaseException as exc:
                        # Asked here, inside the batch's scopes: outside them a real cancellation and a
                        # stray one look alike.
                        if escapes(exc):
                            self.results[i] = self._ended(i, messages, None)
                            interrupt = interrupt_in(exc)
                            if interrupt is None:
                                raise
                            self.interrupted.append(interrupt)
                            group.cancel()  # the other runs end as cancelled; the interrupt is raised below
                            return
                        result = self._ended(i, messages, exc)
                self.results[i] = result
                if not self._counted(result, group):
                    return

    def _start(self, i: int, messages: tuple[Message, ...]) -> Awaitable[RunResult[Any]]:
        """Start input ``i``'s run: its awaitable; its :class:`Spent`, when ``run`` hands one back, into its slot."""
        started = self.run(messages, i) if self.indexed else self.run(messages)
        if type(started) is tuple:
            started, self.results[i] = started
        return cast(Awaitable[RunResult[Any]], started)

    def _ended(self, i: int, messages: tuple[Message, ...], error: BaseException | None) -> RunResult[Any]:
        """The slot of input ``i``'s run, which raised ``error`` (``None``: cancelled with the batch)."""
        spent = self.results[i]
        return _unfinished(None if isinstance(spent, RunResult) else spent, messages, error, self.typed)

    def _counted(self, result: RunResult[Any], group: TaskGroup) -> bool:
        """Count a finished run and report progress; ``False`` when the progress callback interrupted the batch."""
        counts = self.counts
        counts[0] += 1
        if _is_failed(result):
            counts[1] += 1
        if self.progress is None:
            return True
        try:
            self.progress(counts[0], counts[1], len(self.results))
        except BaseException as exc:  # (a plain function: no cancellation can come out of it)
            # Contained as a run's own failure is (SystemExit, a BaseException of its own: docs); an
            # interrupt stops the batch as one from a run does, not from inside a task of it.
            if escapes(exc):
                interrupt = interrupt_in(exc)
                if interrupt is None:
                    raise
                self.interrupted.append(interrupt)
                group.cancel()
                return False
            if not self.warned:
                self.warned = True
                log.exception("the run_many progress callback raised; it is ignored from now on")
        return True


def _fill(
    results: list[RunResult[Any] | Spent | None], items: Sequence[P], prepare: Prepare[P], typed: bool
) -> list[RunResult[Any]]:
    """Every slot still without a result gets ``RunResult(cancelled=True)`` with its input's messages: one whose run
    never started at no cost, one that still holds its run's :class:`Spent` (never left so by a worker, which
    fills its slot however its run ends) with what that says."""
    for i, result in enumerate(results):
        if not isinstance(result, RunResult):
            messages, failed = _prepared(prepare, items[i], typed)
            if failed is not None:
                results[i] = failed
            elif result is None:
                results[i] = _cancelled(messages, typed, _NOTHING)
            else:
                results[i] = _unfinished(result, messages, None, typed)
    return cast(list[RunResult[Any]], results)


class _Feed(Generic[P]):
    """What an :class:`AsCompleted` and the runtime task running its runs share: the scope, the end, an interrupt.

    Not the iterator itself: the task holds this, never the iterator, so an iterator nobody holds can be
    collected while its runs go on — and its finaliser cancels them (:meth:`AsCompleted.__del__`).
    """

    __slots__ = ("concurrency", "done", "indexed", "interrupt", "items", "prepare", "run", "scope", "started",
                 "thread", "typed")

    def __init__(
        self,
        items: Sequence[P],
        prepare: Prepare[P],
        run: RunMessages | IndexedRunMessages,
        concurrency: int,
        typed: bool,
        indexed: bool = False,
    ) -> None:
        self.items = items
        self.prepare = prepare
        self.run: Callable[..., Any] = run
        self.indexed = indexed
        self.concurrency = concurrency
        self.typed = typed
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.started = False
        self.interrupt: KeyboardInterrupt | None = None
        self.thread = threading.get_ident()  # the runtime's loop: a finaliser may cancel only from there

    async def _one(self, i: int, item: P) -> RunResult[Any] | None:
        """Input ``i``'s result; ``None`` when a KeyboardInterrupt stopped the feed (kept for the reader)."""
        messages, failed = _prepared(self.prepare, item, self.typed)
        if failed is not None:
            return failed
        spent: Spent | None = None
        try:
            started = self.run(messages, i) if self.indexed else self.run(messages)
            if type(started) is tuple:
                started, spent = started
            return await cast(Awaitable[RunResult[Any]], started)
        except BaseException as exc:
            if not escapes(exc):
                return _unfinished(spent, messages, exc, self.typed)
            interrupt = interrupt_in(exc)
            if interrupt is None:
                raise
            # Not raised here: this is the runtime's task, and on asyncio an interrupt leaving a task
            # leaves the event loop at once.  The reader gets it, after the results before it.
            self.interrupt = interrupt
            self.scope.cancel()
            return None

    async def feed(self, send: MemoryObjectSendStream[RunResult[Any]]) -> None:
        """Run every input (in the runtime's task), each result sent as it comes; ``done`` once every run ended."""
        self.started = True
        try:
            items = self.items
            indexes = iter(range(len(items)))

            async def worker() -> None:
                for i in indexes:
                    result = await self._one(i, items[i])
                    if result is None:
                        return
                    try:
                        send.send_nowait(result)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        self.scope.cancel()  # nobody reads any more: stop the rest
                        return

            with send, self.scope:
                if self.scope.cancel_called:  # closed (or dropped) before this task began: start no run
                    return
                async with anyio.create_task_group() as tg:
                    for _ in range(min(self.concurrency, len(items))):
                        tg.start_soon(worker)
        finally:
            self.done.set()

    async def close(self) -> None:
        """Cancel the runs not finished and wait until every one has ended (shielded: they are cancelled)."""
        self.scope.cancel()
        if self.started and not self.done.is_set():
            with anyio.CancelScope(shield=True):
                await self.done.wait()

    def abandon(self) -> None:
        """From a finaliser: cancel the runs — synchronous, but only safe in the runtime loop's own thread."""
        if not self.done.is_set() and threading.get_ident() == self.thread:
            try:
                self.scope.cancel()
            except Exception:  # pragma: no cover - a finaliser must never raise
                log.debug("could not cancel the runs of an abandoned as_completed", exc_info=True)


class AsCompleted(Generic[P, R]):
    """The async iterator of :meth:`Agent.as_completed <agentactors.Agent.as_completed>`.

    The runs live in the runtime's task group (``rt.spawn_task``).  Also an async context manager
    whose exit (like :meth:`aclose`) cancels the runs not yet finished and returns once they have
    ended.  An iterator dropped without being closed (a ``break`` outside ``async with``, a response
    generator a web framework dropped) cancels its runs when it is collected, as a dropped
    :class:`~agentactors.agent.run.AgentRun` does.  A run's own failure is yielded as a failed result,
    like any other.  A ``KeyboardInterrupt`` in a run cancels the others; the results that finished
    before it are yielded, then ``__anext__`` raises it.
    """

    def __init__(
        self,
        rt: Runtime,
        items: Sequence[P],
        prepare: Prepare[P],
        run: RunMessages | IndexedRunMessages,
        concurrency: int,
        *,
        typed: bool = False,
        indexed: bool = False,
    ) -> None:
        check_concurrency(concurrency)
        self._rt = rt
        self._feed = _Feed(items, prepare, run, concurrency, typed, indexed)
        self._receive: MemoryObjectReceiveStream[RunResult[Any]] | None = None
        self._closed = False

    def _start(self) -> MemoryObjectReceiveStream[RunResult[Any]]:
        send, receive = anyio.create_memory_object_stream[RunResult[Any]](math.inf)
        self._receive = receive
        if self._closed:  # closed before the first result was asked for: nothing starts
            send.close()
            return receive
        self._rt.spawn_task(self._feed.feed, send, name="as_completed")
        return receive

    def __aiter__(self) -> AsCompleted[P, R]:
        return self

    async def __anext__(self) -> RunResult[R]:
        """The next run to finish's result (``StopAsyncIteration`` once every input has one).

        Cancellation: the reader leaves; the runs go on, and the result it waited for is read next time
        (``aclose`` or leaving ``async with`` stops them).
        """
        receive = self._receive if self._receive is not None else self._start()
        try:
            return await receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            receive.close()  # closed when done, not left to the garbage collector (a ResourceWarning)
            interrupt = self._feed.interrupt
            if interrupt is not None:
                raise interrupt from None
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        """Stop: runs not finished are cancelled, results not yet read are dropped; returns once the runs ended.

        Cancellation: the wait for the cancelled runs is shielded (they end at their next checkpoint), so a
        cancelled consumer still leaves nothing of this iterator running.
        """
        self._closed = True
        if self._receive is not None:
            self._receive.close()
        await self._feed.close()

    async def __aenter__(self) -> AsCompleted[P, R]:
        """The iterator itself; its runs start at the first ``__anext__``.

        Cancellation: nothing to cancel: it returns at once.
        """
        return self

    async def __aexit__(self, *exc: object) -> None:
        """:meth:`aclose`.

        Cancellation: as :meth:`aclose`'s: the wait for the cancelled runs is shielded, then the cancellation
        propagates.
        """
        await self.aclose()

    def __del__(self) -> None:
        # An iterator dropped before its runs ended (a consumer that broke out, or went away, without closing
        # it): the runs must not go on spending for nobody, nor its unread results' stream be left unclosed.
        feed = getattr(self, "_feed", None)  # (not there when __init__ refused its arguments)
        if feed is None or threading.get_ident() != feed.thread:
            return
        feed.abandon()
        receive = getattr(self, "_receive", None)
        if receive is not None:
            receive.close()  # synchronous; like the cancel, only safe in the loop's own thread
