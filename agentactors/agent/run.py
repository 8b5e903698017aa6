"""``AgentRun``: the handle of a streamed run — its events as they happen, its text, its typed output.

``async with agent.stream(prompt) as run:`` (:meth:`Agent.stream <agentactors.Agent.stream>`) makes one.
The run works in a task of its runtime, not in the consumer's: a consumer may be an async generator a web
framework abandons, and leaving the handle from another task — as a generator's finaliser does — still
cancels the run and waits for it.  A private runtime (none was running) lives in a task of its own too
(:mod:`._host`): its task group is no cancel scope of the consumer's task.  The handle reaches the run only through the
:class:`RunLauncher` the agent gives it, so it knows nothing of agents.

Filtered views — :meth:`AgentRun.text_stream` (optionally debounced) and :meth:`AgentRun.partial_output`
— take the run's own events only: a stream also carries the events of the runs its tools delegated to
(with their ``parent_run_id``), which a UI may show but must not mix into the answer.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Any, Generic, Protocol

import anyio
import anyio.lowlevel

from .._channel import Channel, open_channel
from .._extras import missing_extra
from ..actors.runtime import Runtime
from ..errors import ActorStopped, RunNotFoundError
from ..events import Event, LLMTextDelta, Recorder
from ..loop.live import Approve, Deny, Interrupt, RunActor, RunState, Steer, live_run
from ..loop.result import RunResult
from ..messages import Message
from ..output.partial import jiter_available
from ..output.spec import OutputT
from ._host import HostedRuntime, host_private

__all__ = ["AgentRun", "PreparedRun", "RunLauncher", "resolve_run"]

log = logging.getLogger("agentactors.agent")


class _ChannelRecorder:
    """Forwards a run's events to its stream handle; never blocks (the buffer is unbounded)."""

    __slots__ = ("_channel",)

    def __init__(self, channel: Channel) -> None:
        self._channel = channel

    def record(self, event: Event) -> None:
        try:
            self._channel.send_nowait(event)
        except anyio.BrokenResourceError:
            pass  # the consumer left: the run goes on without it


class RunLauncher(Protocol):
    """How a stream handle starts its run: the agent that made the handle provides it.

    The handle knows nothing of agents: it asks the launcher for the runtime (or a private one) and for
    the run itself, prepared with the handle's recorder among the run's recorders.
    """

    @property
    def typed(self) -> bool:
        """Whether the agent answering first (a resumed run's: the one it paused in) has a typed output."""
        ...

    def typed_agents(self) -> Mapping[str, bool]:
        """By name, whether each agent the run may be handed to answers with a typed output (``{}``: none).

        ``partial_output`` follows the agent answering: after an ``agent.handoff`` its values are those of
        the agent named ``to_agent`` — partial typed values, or the text so far.

        :raises ValueError: the agent's handoffs are not a valid graph (as the run itself would raise).
        """
        ...

    def runtime(self) -> Runtime | None:
        """The runtime to run in, or ``None`` for a private one (:meth:`private_runtime`).

        :raises RuntimeError: a runtime given or bound that is not usable here.
        """
        ...

    def private_runtime(self) -> AbstractAsyncContextManager[Runtime]:
        """A runtime made for this run alone, closed when the handle is left."""
        ...

    async def prepare(self, rt: Runtime, recorder: Recorder, *, private: bool) -> PreparedRun:
        """The run in ``rt``, its events also going to ``recorder``: ``(run, cancelled, live)``.

        ``run()`` returns the run's coroutine; ``cancelled()`` the result of a run cancelled through
        its handle (nothing of the turn kept); ``live`` the run's actor (:mod:`agentactors.loop.live`),
        which its control messages go to.

        Cancellation: propagates from listing the agent's toolsets (or seating the agent a resumed pause was
        made in); no run is made, and a pause it had claimed is released, to be resumed again.
        """
        ...


#: ``(run, cancelled, live)``: what :meth:`RunLauncher.prepare` returns.
PreparedRun = tuple[Callable[[], Awaitable[RunResult[Any]]], Callable[[], RunResult[Any]], "RunActor | None"]


async def _close_views(views: list[AsyncGenerator[Any, None]]) -> None:
    """Close the views of a run (``text_stream``, ``partial_output``) as it exits.

    ``async for text in run.text_stream()`` inside ``async with agent.stream(...) as run:``, left early — a
    response whose client went away, a ``break`` — leaves the view suspended; collected later, trio reports it
    as an async generator never exhausted.  Closed here, shielded (its cleanup must not meet the consumer's
    cancellation half-way).  A view running this very exit (one that entered the run itself) closes on its own.
    """
    with anyio.CancelScope(shield=True):
        for view in views:
            try:
                await view.aclose()
            except RuntimeError:  # "already running": the view whose own `async with` is exiting
                pass


class AgentRun(Generic[OutputT]):
    """A run in progress, from :meth:`Agent.stream`; generic in the agent's output type.

    ``async with agent.stream(prompt) as run:`` starts the run; ``async for event
    in run`` yields the same typed events recorders receive (``run.started``,
    ``llm.request``, ``llm.text_delta``, ``tools.started``, ``tools.finished``,
    ``step.finished``, ``run.finished``, ...; see :mod:`agentactors.events` for
    their classes, e.g. ``isinstance(event, ToolEvent)``) and ends after the run
    finished.  ``run.text_stream()`` yields only the answer text.

    ``run.cancel()`` cancels the run (its provider request and running tools
    included); it then ends with ``RunResult(cancelled=True)`` whose messages
    are the input messages.  Leaving the block before the run finished cancels
    it the same way — so does a consumer that goes away: a cancelled request
    handler, a closed ``text_stream()`` generator, a handle dropped unfinished.
    ``run.result`` is the :class:`RunResult` once finished; ``await run.wait()``
    waits for it.  An exception the run raised (e.g.
    :class:`~agentactors.errors.ToolStatusError`) is raised by ``wait()``,
    ``result`` and when the block is left.  Cancellation from an enclosing
    scope propagates as anyio's cancellation exception.

    The run works in a task of its runtime (the one :meth:`Agent.run` would
    use; a private one is opened by the handle and closed when it is left), not
    in the consumer's task: the consumer may be an async generator that a web
    framework abandons, and leaving the handle from another task — as a
    generator's finaliser does — still cancels the run and waits for it.  A
    private runtime is entered and left by a task of its own (:mod:`._host`),
    so none of its cancel scopes is the consumer's to leave.

    ``run.partial_output()`` yields the typed result as it streams in — successively more complete
    values, then the final validated one — a filter over the same events, like :meth:`text_stream`.

    The events are buffered without a bound, on purpose: the run never waits for its reader (a slow UI
    must not hold the run, its provider slot or its children), and a late reader loses nothing.  The
    buffer holds at most the run's own events (its children's included) and is dropped when the block is
    left; a consumer that stops reading for good leaves the block or cancels, which ends the run.

    From another thread's event loop (asyncio or trio), ``steer``, ``interrupt``, ``approve``, ``deny`` and
    ``wait`` cross to the runtime's loop (``rt.call``) and are handled there; ``cancel()`` raises
    ``RuntimeError`` there (a cancel scope is its own loop's); the event stream is read in the runtime's loop
    (reading it from another raises ``RuntimeError`` at once: its reader would never be woken there).
    """

    def __init__(self, launcher: RunLauncher | None) -> None:
        self._launcher = launcher
        self._entered = False
        self._hosted: HostedRuntime | None = None  # the private runtime's host (:mod:`._host`), if the run has one
        self._receive: Channel | None = None  # the run's events, read here (:mod:`agentactors._channel`)
        self._state = _RunState()
        self._live: RunActor | None = None
        self._rt: Runtime | None = None  # the runtime the run works in (its loop's thread: _foreign)
        self._reader = 0  # the thread whose loop may read the stream: the runtime's (set when entered)
        self._views: list[AsyncGenerator[Any, None]] | None = None  # text_stream / partial_output handed out

    @classmethod
    def _attached(cls, live: RunActor, rt: Runtime) -> AgentRun[Any]:
        """A handle for a live run started without one (``agent.run``), found by ``rt.run_ref``.

        It takes the run's control messages and waits for its result; it has no event stream (the
        run's events went where its recorders are) and cancelling it stops the run's actor.
        """
        handle: AgentRun[Any] = cls(None)
        handle._entered = True
        handle._live = live
        handle._rt = rt
        return handle

    async def __aenter__(self) -> AgentRun[OutputT]:
        """Start the run.

        :raises RuntimeError: entered twice; or ``runtime=`` (or the bound runtime) is not running or
            belongs to another thread's loop.

        Cancellation: a caller cancelled while the run is being started (its private runtime entered, its
        toolsets listed) starts no run: the private runtime is closed (shielded), a pause it had claimed is
        released, and the cancellation propagates (``wait()`` then raises it again: the run never started).
        """
        if self._entered:
            raise RuntimeError("an AgentRun can be entered only once")
        self._entered = True
        launcher = self._launcher
        assert launcher is not None
        try:
            rt = launcher.runtime()
        except BaseException as exc:
            self._state.never_started(exc)  # wait() and result say why, rather than wait for a run that is not
            raise
        private = rt is None
        hosted: HostedRuntime | None = None
        if rt is None:
            try:
                hosted = await host_private(launcher.private_runtime())
            except BaseException as exc:
                self._state.never_started(exc)
                raise
            rt = hosted.rt
        channel = open_channel(math.inf)
        try:
            assert rt is not None
            self._rt = rt
            self._reader = threading.get_ident()  # the runtime's loop: entering checked (or made) it
            run, cancelled, live = await launcher.prepare(rt, _ChannelRecorder(channel), private=private)
            if live is not None:
                self._live = live
                live.handle = weakref.ref(self)  # rt.run_ref finds this handle; a weak one: it may still be dropped
                live.announce(rt)  # by its id from now on, as run.run_id is known now (ended below if it never starts)
            # The task holds the run's state, never this handle: a handle nobody holds can be collected,
            # and its finaliser cancels the run.
            rt.spawn_task(self._state.work, run, cancelled, channel, live, name="agent.stream")
        except BaseException as exc:
            self._state.never_started(exc)
            if self._live is not None and not self._live.finished:
                self._live.end(None)  # announced, never started: no longer found by its id
            channel.close_writing()
            channel.close_reading()
            if hosted is not None:
                try:
                    await hosted.close()
                except Exception:  # what entering raised is the answer; this one is only logged
                    log.debug("closing the private runtime of a run that never started raised", exc_info=True)
            raise
        self._receive = channel
        self._hosted = hosted
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Cancel the run unless it finished, wait for it to end, close a private runtime.

        Cancellation: the wait for the cancelled run to end is shielded (it ends at its next
        checkpoint; its HTTP request is closed on the way), so a cancelled consumer still leaves
        nothing running; the consumer's cancellation then propagates.
        """
        views, self._views = self._views, None
        if views:
            await _close_views(views)
        await self._state.close()
        if self._receive is not None:
            self._receive.close_reading()
        if self._hosted is not None:
            hosted, self._hosted = self._hosted, None
            await hosted.close()  # (raises what leaving the runtime raised: a failure of its tasks, escalated)
        error = self._state.error
        if exc_type is None and error is not None:
            raise error
        return None

    def __del__(self) -> None:
        # A handle dropped while its run goes on (a consumer that vanished without leaving the block): the
        # run must not go on spending tokens for nobody.
        state = getattr(self, "_state", None)
        if state is not None and self._entered:
            state.abandon()
            receive = getattr(self, "_receive", None)
            if receive is not None and threading.get_ident() == state.thread:
                receive.close_reading()  # synchronous; like the cancel, only safe in the loop's own thread
                hosted = getattr(self, "_hosted", None)
                if hosted is not None:
                    hosted.close_soon()  # its host task leaves the private runtime once the cancelled run ended

    def __aiter__(self) -> AgentRun[OutputT]:
        return self

    async def __anext__(self) -> Event:
        """The run's next event, in order (``StopAsyncIteration`` once it has ended and every event was read).

        Cancellation: the reader leaves; the run is not affected, and the event it waited for is read next time.
        """
        if self._receive is None:
            if self._launcher is None:
                raise RuntimeError("a run found by rt.run_ref has no event stream here: its events go to its recorders")
            raise RuntimeError("iterate an AgentRun inside `async with agent.stream(...) as run:`")
        if threading.get_ident() != self._reader:
            raise self._foreign_reader()
        try:
            event: Event = await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None
        return event

    async def _values(self, pick: Callable[[Event], Any]) -> AsyncGenerator[Any, None]:
        """The run's events mapped by ``pick`` (``None``: skipped), entering and leaving the run if not entered.

        The seam for filtered views of a run (:meth:`text_stream`, :meth:`partial_output`).  Only the run's
        own events count: those of runs it delegated to (which its stream also carries, with their
        ``parent_run_id``) are skipped — the first event is always the run's own ``run.started``.
        """
        own = _OwnEvents(pick)  # no nested async generator: trio warns about one left half-run
        if self._entered:
            async for event in self:
                value = own(event)
                if value is not None:
                    yield value
            return
        async with self:
            async for event in self:
                value = own(event)
                if value is not None:
                    yield value

    def text_stream(self, *, min_interval: float | None = None) -> AsyncGenerator[str, None]:
        """The answer text as it streams: ``async for text in run.text_stream(): ...``.

        Only ``llm.text_delta`` pieces (never think blocks, tool-call JSON or other events).  With
        ``min_interval`` (seconds), pieces arriving closer together are joined: a piece is yielded at
        most every ``min_interval`` seconds (the first at once), and whatever arrived meanwhile is
        joined into the next — the same text, in fewer, larger pieces (for a UI that repaints per
        piece, or an SSE stream that should not send a frame per token).

        Usable inside ``async with agent.stream(p) as run:`` (consume it or ``async for event in run``,
        not both), or on its own — ``agent.stream(p).text_stream()`` — when it enters the run itself
        and leaves it when the iteration ends or the generator is closed (``aclose()``, or dropped
        by its consumer): the run is cancelled with it.

        :raises ValueError: ``min_interval`` is negative, infinite or NaN.
        :raises TypeError: ``min_interval`` is not a number.

        Cancellation: a cancelled consumer leaves the generator; a run it entered is cancelled (and
        waited for) on the way out.  One left half-read inside ``async with agent.stream(...) as run:`` is
        closed by the run's exit.
        """
        if min_interval is not None:
            if isinstance(min_interval, bool) or not isinstance(min_interval, int | float):
                raise TypeError(f"min_interval must be a number of seconds or None, not {type(min_interval).__name__}")
            if not 0 <= min_interval < math.inf:  # inf waits for ever after the first piece; nan is no interval
                raise ValueError(f"min_interval must be a finite number of seconds >= 0, not {min_interval!r}")
        if not min_interval:
            return self._view(self._values(_text_of))
        return self._view(self._debounced(min_interval))

    async def _debounced(self, interval: float) -> AsyncGenerator[str, None]:
        # One generator, its joining done by a plain object (_Joined): a nested generator is finalised on its
        # own when the consumer drops this one — trio warns that it was never exhausted (a ResourceWarning),
        # and asyncio closes both at once, the outer one's aclose() finding the inner one "already running".
        if not self._entered:
            async with self:
                joined = self._joined(interval)
                while (text := await joined.next()) is not None:
                    yield text
            return
        joined = self._joined(interval)
        while (text := await joined.next()) is not None:
            yield text

    def _joined(self, interval: float) -> _Joined:
        """What joins the text pieces of an entered run (:class:`_Joined`): read in the runtime's loop only."""
        receive = self._receive
        if receive is None:
            raise RuntimeError("iterate an AgentRun inside `async with agent.stream(...) as run:`")
        if threading.get_ident() != self._reader:
            raise self._foreign_reader()
        return _Joined(receive, interval)

    def partial_output(self) -> AsyncGenerator[OutputT, None]:
        """The typed result as it streams: ``async for partial in run.partial_output(): ...``.

        Successively more complete values while the output tool's arguments or the answer's JSON stream
        in — each one a value of the output type (a JSON prefix that does not validate yet, such as an
        object whose required field has not begun, is skipped; a partial value equal to the last is not
        repeated) — then the final validated value, the run's ``result.output`` (always, even when equal to the
        last partial one: it is the value that says the answer is done).  An answer that is
        refused and asked again streams its partial values too: only the last value is the validated
        one.  A run that ends without a valid answer yields no final value (its ``result`` says why).
        For ``output_type=str``: the answer text so far, growing piece by piece, then the whole answer.

        The values follow the agent answering: after a handoff (each ``agent.handoff`` event) they are of
        the output type of the agent handed the run — its partial typed values, or its answer text so far,
        started afresh (what the agent before it said on its way out is not its answer) — so a run that
        may be handed to agents of other output types yields values of each in turn, and its final value
        is that of the agent that answered (``result.agent``).

        Usable like :meth:`text_stream`: inside ``async with agent.stream(p) as run:`` or on its own
        (``agent.stream(p).partial_output()``), entering and leaving the run itself.

        :raises ImportError: a typed output needs ``jiter`` for partial JSON (``pip install
            'agentactors[jiter]'``): said here when the agent, or any agent it may hand the run to, is typed.
        :raises ValueError: the agent's handoffs are not a valid graph (as entering the run would raise).

        Cancellation: as :meth:`text_stream`.
        """
        launcher = self._launcher
        if launcher is None:  # a handle found by rt.run_ref: iterating it says it has no stream
            return self._view(self._partials(_Answer(False, {})))
        typed, kinds = launcher.typed, launcher.typed_agents()
        if (typed or any(kinds.values())) and not jiter_available():
            raise missing_extra("partial_output() of a typed result (its partial JSON)", "jiter")
        return self._view(self._partials(_Answer(typed, kinds)))

    def _view(self, view: AsyncGenerator[Any, None]) -> AsyncGenerator[Any, None]:
        """``view``, closed by the run's exit if its consumer has not closed it (:func:`_close_views`)."""
        if self._views is None:
            self._views = []
        self._views.append(view)
        return view

    async def _partials(self, pick: Callable[[Event], Any]) -> AsyncGenerator[Any, None]:
        # Not a loop over _values: one generator alone (see _debounced).
        own = _OwnEvents(pick)
        if self._entered:
            async for event in self:
                value = own(event)
                if value is not None:
                    yield value
        else:
            async with self:
                async for event in self:
                    value = own(event)
                    if value is not None:
                        yield value
        state = self._state
        if state.result is not None and state.error is None and state.result.ok:
            yield state.result.output

    def cancel(self) -> None:
        """Cancel the run; it ends with ``RunResult(cancelled=True)``.  Idempotent; no effect once finished.

        :raises RuntimeError: called from a thread other than the runtime's (a cancel scope belongs to its
            loop): there, ``await run.interrupt()``, or cancel through ``await rt.call(...)``.
        """
        if self._foreign():
            raise RuntimeError(
                "run.cancel() from another thread than its runtime's: use `await run.interrupt()` from there, "
                "or cancel it through `await rt.call(...)`"
            )
        if self._launcher is None and self._live is not None:
            self._live.cancel()
            return
        self._state.scope.cancel()

    # -- a live run: control messages to its actor (agentactors.loop.live) -----------------------------

    @property
    def run_id(self) -> str | None:
        """The run's id (``None`` before the handle is entered)."""
        return self._live.run_id if self._live is not None else None

    async def steer(self, text_or_message: str | Message) -> None:
        """Add a user message to the run, taken at its next step boundary (``docs/loop.md``, "Live runs").

        After the step in progress — the model call, or the tool step and its results — the message joins
        the conversation and the next model call reads it, once; several steers keep their order.  A steer
        that arrives while the model writes what would have been its final answer is not lost: the run
        takes one more step, with that answer and the steer.  Recorded as ``run.steer_received`` and
        ``run.steered``.

        :raises RunFinishedError: the run has finished.
        :raises TypeError: neither a str nor a :class:`~agentactors.messages.Message`.
        :raises ValueError: a tool message: a tool result answers a call the model made, and one nobody asked
            for is a conversation every vendor refuses — the run would fail a step later, far from the cause.
            Nothing is sent.  So is an assistant message that makes tool calls (calls with no results).  (A
            system message, or an assistant one without calls, is taken as it is.)  An empty one (no text, no
            part) is refused too: it says nothing, yet could cost the run a model call.

        Cancellation: the message is handed to the run's actor, which takes it at once (no wait): a caller
        cancelled before that leaves the run as it was; once taken it stands, even when the caller is
        cancelled before this returns (``run.state()`` and the events say what the run has).  The run itself
        is never cancelled by it.  From another thread's event loop, as ``rt.call``.
        """
        if isinstance(text_or_message, str):
            message = Message.user(text_or_message)
        elif isinstance(text_or_message, Message):
            message = text_or_message  # (Steer refuses a tool message, and one making calls: loop.live._steerable)
        else:
            raise TypeError(f"steer() takes a str or a Message, not {type(text_or_message).__name__}")
        await self._control(Steer(message))

    async def interrupt(self, reason: str | None = None) -> None:
        """End the run after its current step: running tools finish and their results are kept, no
        further model call is made; the result has ``ok`` false and a
        :class:`~agentactors.errors.RunInterruptedError` (not ``paused``).  Cancellation (:meth:`cancel`)
        stays the immediate way.  A second interrupt changes nothing.

        :raises RunFinishedError: the run has finished.

        Cancellation: the message is handed to the run's actor, which takes it at once (no wait): a caller
        cancelled before that leaves the run as it was; once taken it stands, even when the caller is
        cancelled before this returns (``run.state()`` and the events say what the run has).  The interrupt
        is no cancellation of the run: its step ends as it would.  From another thread's event loop, as ``rt.call``.
        """
        await self._control(Interrupt(reason))

    async def approve(self, call_id: str) -> None:
        """Approve a call the run waits on in place (``@tool(requires_approval=True, approval="wait")``).

        :raises CallNotPendingError: no call ``call_id`` waits for a decision (nothing changes).
        :raises RunFinishedError: the run has finished.

        Cancellation: the message is handed to the run's actor, which takes it at once (no wait): a caller
        cancelled before that leaves the run as it was; once taken it stands, even when the caller is
        cancelled before this returns (``run.state()`` and the events say what the run has).  The run itself
        is never cancelled by it.  From another thread's event loop, as ``rt.call``.
        """
        await self._control(Approve(call_id))

    async def deny(self, call_id: str, reason: str = "denied by a person") -> None:
        """Deny a call the run waits on in place: the model reads status ``denied`` with ``reason``.

        :raises CallNotPendingError: no call ``call_id`` waits for a decision (nothing changes).
        :raises RunFinishedError: the run has finished.

        Cancellation: the message is handed to the run's actor, which takes it at once (no wait): a caller
        cancelled before that leaves the run as it was; once taken it stands, even when the caller is
        cancelled before this returns (``run.state()`` and the events say what the run has).  The run itself
        is never cancelled by it.  From another thread's event loop, as ``rt.call``.
        """
        await self._control(Deny(call_id, reason))

    def state(self) -> RunState:
        """Where the run stands now (:class:`~agentactors.RunState`): its step, the calls waiting for a
        decision, its usage so far, the agent answering.  Read from the run's actor without waiting.

        :raises RuntimeError: the handle was not entered.
        """
        if self._live is None:
            raise RuntimeError("state() of a run: inside `async with agent.stream(...) as run:`")
        return self._live.snapshot()

    @staticmethod
    def _foreign_reader() -> RuntimeError:
        """Why the stream is not read from this thread: its events are written, and their reader woken, in the
        runtime's loop — read from another loop, the reader would wait for ever, or fail with that loop's error."""
        return RuntimeError(
            "the events of a streamed run are read in its runtime's event loop, not another thread's: consume them "
            "there, e.g. `await rt.call(consume, run)` with an async function that iterates the run"
        )

    def _foreign(self) -> bool:
        """Whether the caller runs in another thread than the run's runtime (another event loop)."""
        rt = self._rt
        return rt is not None and rt.thread is not None and rt.thread != threading.get_ident()

    async def _control(self, message: Any) -> None:
        """Hand ``message`` to the run's actor — from another thread's event loop, through the runtime's loop.

        The run's inbox and the events it wakes belong to the runtime's loop: a steer or a decision written
        from another thread would wake nothing there (an approval in place then waits for ever), and an ask
        from another loop fails half-way with whatever that loop's library says.  So from another thread the
        control message crosses to the runtime's loop (:meth:`Runtime.call <agentactors.Runtime.call>`) and is
        handled there, with the same answers (``RunFinishedError``, ``CallNotPendingError``).

        Cancellation: as an ask (from another thread: as ``rt.call``, which waits for the handling to end).
        """
        live = self._live
        if live is None:
            raise RuntimeError("control a run inside `async with agent.stream(...) as run:` (or via rt.run_ref)")
        rt = self._rt
        if rt is not None and self._foreign():
            if not live.finished:
                try:
                    await rt.call(self._control, message)
                    return
                except RuntimeError:
                    if not live.finished:  # the runtime closed, and its runs with it: RunFinishedError below
                        raise
            live.control(message)  # finished: RunFinishedError, touching nothing
            return
        ref = live.activate()  # the run's actor, spawned on first use
        if ref is None or ref.stopped:
            live.control(message)  # not started yet, or finished (RunFinishedError)
            return
        try:
            await ref.ask(message)
        except ActorStopped:
            live.control(message)  # it finished meanwhile: RunFinishedError

    @property
    def done(self) -> bool:
        if self._launcher is None and self._live is not None:
            return self._live.finished
        return self._state.done.is_set()

    @property
    def result(self) -> RunResult[OutputT]:
        """The run's result.

        :raises RuntimeError: the run has not finished yet, or the handle was never entered.
        """
        if self._launcher is None and self._live is not None:
            return self._attached_result()
        state = self._state
        if state.error is not None:
            raise state.error
        if state.result is None:
            if not self._entered:
                raise _never_entered()
            raise RuntimeError("the run has not finished: iterate it, or `await run.wait()`")
        return state.result

    async def wait(self) -> RunResult[OutputT]:
        """Wait until the run finishes and return its result (raising what the run raised).

        From another thread's event loop the wait is the runtime loop's (``rt.call``): its events wake only it.

        :raises RuntimeError: the handle was never entered (no run to wait for: said at once, not waited on for
            ever).  Entering that failed is raised again here (the run never started).

        Cancellation: the waiter leaves; the run is not affected.
        """
        if not self._entered:
            raise _never_entered()
        rt = self._rt
        if rt is not None and self._foreign():
            if self.done:  # no await at all: a checkpoint here would be the runtime's loop library's
                return self._attached_result() if self._launcher is None and self._live is not None else self.result
            result: RunResult[OutputT] = await rt.call(self._wait_here)
            return result
        return await self._wait_here()

    async def _wait_here(self) -> RunResult[OutputT]:
        if self._launcher is None and self._live is not None:
            await self._live.wait_finished()
            return self._attached_result()
        await self._state.done.wait()
        return self.result

    def _attached_result(self) -> RunResult[OutputT]:
        assert self._live is not None
        result = self._live.result
        if result is None:
            raise RuntimeError("the run has not finished: `await run.wait()`")
        if not isinstance(result, RunResult):
            raise RuntimeError("the run ended without a result (it raised, or was cancelled by its caller)")
        return result


def resolve_run(rt: Runtime, run_id: str) -> AgentRun[Any]:
    """``rt.run_ref(run_id)``: the live run's handle — its stream's own, or one made for it.

    :raises RunNotFoundError: no live run ``run_id`` in ``rt``.
    """
    live = live_run(rt, run_id) if isinstance(run_id, str) else None
    if live is None or live.finished:
        raise RunNotFoundError(f"no live run {run_id!r} in this runtime (finished, or never here)", run_id=run_id)
    known = live.handle() if live.handle is not None else None
    if isinstance(known, AgentRun):
        return known
    handle = AgentRun._attached(live, rt)
    live.handle = weakref.ref(handle)
    return handle


class _RunState:
    """What a streamed run's task and its handle share: the scope, the outcome, the end."""

    __slots__ = ("done", "error", "result", "scope", "thread")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.result: RunResult[Any] | None = None
        self.error: BaseException | None = None
        self.thread = threading.get_ident()

    async def work(
        self,
        run: Callable[[], Awaitable[RunResult[Any]]],
        cancelled: Callable[[], RunResult[Any]],
        channel: Channel,
        live: RunActor | None,
    ) -> None:
        """Run the run; whatever happens, close its events and tell the handle (and ``live``) it ended.

        ``live``, the run's actor, is ended by the run's loop — unless the run ended before its loop began
        (a journal's first commit failed, say): then it is ended here, so that steers it accepted before are
        reported unread (``run.steers_unread``), never lost silently, and later control messages are
        :class:`~agentactors.errors.RunFinishedError`, not accepted for a run that is gone.
        """
        try:
            with self.scope:
                try:
                    self.result = await run()
                except Exception as exc:
                    self.error = exc
        finally:
            channel.close_writing()
            # Also when the runtime itself cancelled the task (its exit): the handle must learn the run ended.
            if self.result is None and self.error is None:
                self.result = cancelled()
            if live is not None and not live.finished:
                live.end(None)  # never started: no frame, so no actor was spawned (nothing to retire)
            self.done.set()

    def never_started(self, exc: BaseException) -> None:
        """Entering the handle failed with ``exc``: the run never started, and nothing will end it — so it is
        ended here, ``exc`` its outcome (a cancellation of the entering task is not one to raise again later)."""
        cancelled = RuntimeError("the run never started: entering it was cancelled")
        self.error = exc if isinstance(exc, Exception) else cancelled
        self.done.set()

    async def close(self) -> None:
        if not self.done.is_set():
            self.scope.cancel()
            with anyio.CancelScope(shield=True):
                await self.done.wait()

    def abandon(self) -> None:
        # From a finaliser: cancelling a scope is synchronous, but only safe in the loop's own thread.
        if not self.done.is_set() and threading.get_ident() == self.thread:
            try:
                self.scope.cancel()
            except Exception:  # pragma: no cover - a finaliser must never raise
                log.debug("could not cancel an abandoned stream's run", exc_info=True)


def _never_entered() -> RuntimeError:
    return RuntimeError(
        "this AgentRun was never entered: its run has not started; run it with `async with agent.stream(...) as run:`"
    )


class _Joined:
    """Text pieces of a run, those arriving within ``interval`` of the last one handed out joined into one.

    :meth:`next` waits by sleeping while pieces gather in the (unbounded) buffer, then takes what is there
    without blocking: a receive is never cancelled half-way, so no piece can be lost.  The interval counts
    from when the consumer asks for the next piece (as a generator's would, resumed after its ``yield``).
    """

    __slots__ = ("due", "ended", "given", "interval", "own", "receive")

    def __init__(self, receive: Channel, interval: float) -> None:
        self.receive = receive
        self.interval = interval
        self.due = -math.inf
        self.ended = False
        self.given = False  # a piece was handed out: the next one waits for the interval from now
        self.own = _OwnEvents(_text_of)

    async def next(self) -> str | None:
        """The next joined piece, or ``None`` once the run's events ended."""
        if self.given:
            self.due = anyio.current_time() + self.interval
        receive, own = self.receive, self.own
        pending: list[str] = []
        while not self.ended:
            try:
                event = await receive.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                break
            text = own(event)
            if text is None:
                continue
            pending.append(text)
            wait = self.due - anyio.current_time()
            if wait > 0:
                await anyio.sleep(wait)
            while True:
                try:
                    event = receive.receive_nowait()
                except anyio.WouldBlock:
                    break
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    self.ended = True
                    break
                text = own(event)
                if text is not None:
                    pending.append(text)
            self.given = True
            return "".join(pending)
        self.ended = True
        return None


class _OwnEvents:
    """``pick`` applied to a run's own events only (the first event names the run: its ``run.started``)."""

    __slots__ = ("pick", "run_id")

    def __init__(self, pick: Callable[[Event], Any]) -> None:
        self.pick = pick
        self.run_id: str | None = None

    def __call__(self, event: Event) -> Any:
        if self.run_id is None:
            self.run_id = event.run_id
        elif event.run_id != self.run_id:
            return None  # a delegated run's event
        return self.pick(event)


class _Answer:
    """The partial output of the agent answering: its typed values (``output.partial``), or its text so far.

    It switches on each ``agent.handoff`` (by ``kinds``, whether each agent is typed): the agent handed the run
    answers from then on, in its own output type, and a text answer starts from nothing.  Picked by the first
    agent's type alone, a typed agent's JSON text came out as text answers, and a text agent's answer not at all.
    """

    __slots__ = ("kinds", "text", "typed")

    def __init__(self, typed: bool, kinds: Mapping[str, bool]) -> None:
        self.typed = typed
        self.kinds = kinds
        self.text = ""

    def __call__(self, event: Event) -> Any:
        if self.typed:
            if event.type == "output.partial":
                return event.data["value"]
        else:
            piece = _text_of(event)
            if piece:
                self.text += piece
                return self.text
        if event.type == "agent.handoff":
            target = event.data.get("to_agent")
            self.typed = isinstance(target, str) and self.kinds.get(target, False)
            self.text = ""
        return None


def _text_of(event: Event) -> str | None:
    if type(event) is LLMTextDelta:
        text: str = event.data["text"]
        return text
    return None
