"""``agui_app``: an agent's runs as AG-UI event streams, for web frontends that speak AG-UI (CopilotKit, ...).

``POST /`` a ``RunAgentInput`` (``threadId``, ``runId``, ``messages``, ...) and the answer is an SSE
stream of AG-UI events (``data: {"type": ...}``): ``RUN_STARTED`` echoing the two ids; for each model
answer ``TEXT_MESSAGE_START`` / ``_CONTENT`` (as the text streams) / ``_END``, then per tool call
``TOOL_CALL_START`` / ``_ARGS`` / ``_END`` and, once the tool ran here in the server, ``TOOL_CALL_RESULT``;
then ``RUN_FINISHED`` (its ``result`` the typed output of an agent with an ``output_type``: a str output as the
str, anything else as JSON) or ``RUN_ERROR``: for a run that failed — ``generation_failed``, cancelled, or any
``error`` (a provider that failed after an earlier step, a typed answer that never validated) — for a typed run that
stopped at its step limit with no answer (``no_answer``), and for an output JSON cannot carry (``output_unsendable``).
A client that disconnects cancels the run — but a resumed one (below).  A stream silent for the app's ``keepalive``
gets SSE comments (``: keep-alive``), which every SSE client skips, so a proxy's idle timeout does not cut it.

A run that pauses for a person's approval of a tool call did not complete, and did not fail: it ends with
``RUN_FINISHED`` (the protocol's end of every run that did not fail) whose ``outcome`` is AG-UI 1.0's
``{"type": "interrupt", "interrupts": [...]}`` — one interrupt (``reason`` ``"tool_call"``) per call awaiting a
decision — where a completed run has none (``outcome`` absent is success).  So a client tells the two apart, as
the OpenAI endpoint's ``409 approval_required`` does.  Before it, a ``STATE_SNAPSHOT`` lists those calls, and the
step's calls that did run show their ``TOOL_CALL_RESULT``.

With ``sessions=True`` the server keeps the pause (the thread's session), and the client decides it: the next
input's AG-UI ``resume`` answers — ``{"approved": true}`` (with ``editedArgs``: the call runs with the person's
arguments, checked against its tool's schema first), ``{"approved": false, "reason": ...}``, or ``cancelled`` — are
the session's decisions, and that request's stream is the resumed run's: the decided calls' ``TOOL_CALL_RESULT``
(against the ids the interrupted run showed), then the run's events as they happen (``agent.resume_stream``), to its
end; while it runs it is the thread's live run, which a post to the thread steers.  An answer naming no open interrupt
is skipped (AG-UI's SHOULD); answers that then do not decide the pause exactly (none open, one left unanswered, a
payload of another shape, an edit that does not fit) end with ``RUN_ERROR`` and decide nothing — nor start a run.
The resumed run carries a decision the pause gave up as it started, so it outlives its client: one that leaves does
not cancel it, and the same answers posted again get its events — all so far, then the rest as they come — or, once
it ended, its outcome (AG-UI: a resume is safe to replay).  Without
sessions the server keeps nothing to resume: ``resume`` answers end with ``RUN_ERROR`` (``ResumeNotSupported``),
rather than being taken for a new turn that drops them.

The events are written as plain JSON: the wire format is small and stable, and the app then needs no
dependency; the tests validate every event against the ``ag-ui-protocol`` package's models.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ..agent.core import Agent
from ..agent.run import AgentRun
from ..errors import RunFinishedError, SessionPausedError
from ..events import Event, LLMRequested, LLMResponded, LLMTextDelta
from ..loop.live import RunState
from ..loop.result import RunResult
from ..messages import Message, ToolCall, Usage
from ..sessions.session import AgentSession, open_session
from ..sessions.store import SessionStore, check_key
from ..tools.registry import Tool
from ..tools.results import render_result
from ._agui_input import (
    InvalidInput,
    ResumeAnswer,
    ResumeRefused,
    RunInput,
    approval_schema,
    decisions_of,
    read_run_input,
)
from ._http import (
    DEFAULT_KEEPALIVE,
    DEFAULT_MAX_BODY,
    AppRuntime,
    BodyError,
    Disconnected,
    EventStream,
    Outbound,
    Receive,
    Scope,
    Send,
    cancelled_on_disconnect,
    client_text,
    json_bytes,
    keepalive_interval,
    read_json,
    route_path,
    send_json,
)
from ._spans import RequestSpan, Tracing
from ._turns import streamed_resume, streamed_turn, with_instructions

__all__ = ["AGUIApp", "agui_app"]

log = logging.getLogger("agentactors.serve")


def agui_app(
    agent: Agent[Any],
    *,
    runtime: Any = None,
    sessions: bool = False,
    store: SessionStore | None = None,
    max_body_size: int = DEFAULT_MAX_BODY,
    tracer_provider: Any = None,
    keepalive: float | None = DEFAULT_KEEPALIVE,
) -> AGUIApp:
    """An ASGI app streaming ``agent``'s runs as AG-UI events at its root path.

    ``runtime`` as for :func:`~agentactors.serve.openai_app`: given, else the agent's bound runtime, else
    one the app opens in its ASGI lifespan.

    ``sessions``: keep each thread's history in the server, as the session ``threadId`` of the runtime
    (``store``: where; default the runtime's :class:`~agentactors.sessions.MemoryStore`).  A request then
    adds to the stored history only the messages after the thread's last ``assistant`` or ``tool``
    message, so a client may post the whole thread or only its new messages (docs/serve.md, "AG-UI").
    Off by default: the posted messages are then the whole conversation, as AG-UI clients send it.

    Whatever ``sessions`` says, a request for a thread whose run is still live is a steer: its new user
    messages reach that run at its next step boundary, and the request's own stream ends as soon as the run
    has them (``RUN_FINISHED`` with ``result`` ``{"steered": <the live run's runId>}``); one with no new user
    message for it ends with ``RUN_ERROR`` (``ThreadBusy``).  A run that ends before it started (its turn
    failed first) takes no steer: the request that sent one starts the thread's next run with it instead.

    A run that pauses for approval ends with an interrupt outcome (one interrupt per call, its id the call's).
    With ``sessions``, the thread's next input answers it with AG-UI ``resume`` entries (``payload``
    ``{"approved": bool, "reason"?: str, "editedArgs"?: object}``, or status ``cancelled`` to deny; entries naming no
    open interrupt are skipped), and its stream is the resumed run's — a run a client's leaving does not cancel, whose
    outcome the same answers posted again get; without, a ``resume`` ends with ``RUN_ERROR``
    (``ResumeNotSupported``): the server kept nothing to resume.

    The input's ``context`` (what the frontend shares for the run: ``[{"description", "value"}]``) reaches the run's
    model in its system message, after the agent's prompt — never as a message, never kept in a thread: each run
    sees its own request's (a resumed run, the resuming request's; bounded, a 422 past the bounds).

    ``tracer_provider``: where each request's OpenTelemetry span goes (default: the global provider;
    nothing without ``opentelemetry-api``).

    ``keepalive``: seconds a stream may stay silent — a slow model, a long tool call, a steer waiting for the live
    run's step boundary — before the app writes an SSE comment (``: keep-alive``), which every SSE client skips (AG-UI's
    among them) and a proxy in front counts as traffic, so its idle timeout (30 s in some, 60 s in nginx and AWS ALB)
    does not cut the stream; one every ``keepalive`` seconds while the silence lasts.  ``None``: no comments.

    :raises TypeError: ``agent`` is not an :class:`~agentactors.Agent`; ``keepalive`` is not a number or ``None``.
    :raises ValueError: a ``store`` without ``sessions``; a ``keepalive`` that is not positive and finite.
    """
    return AGUIApp(
        agent, runtime=runtime, sessions=sessions, store=store, max_body_size=max_body_size,
        tracer_provider=tracer_provider, keepalive=keepalive,
    )


class AGUIApp:
    """The ASGI app :func:`agui_app` returns."""

    def __init__(
        self,
        agent: Agent[Any],
        *,
        runtime: Any = None,
        sessions: bool = False,
        store: SessionStore | None = None,
        max_body_size: int = DEFAULT_MAX_BODY,
        tracer_provider: Any = None,
        keepalive: float | None = DEFAULT_KEEPALIVE,
    ) -> None:
        if not isinstance(agent, Agent):
            raise TypeError(f"agui_app serves an Agent, not {type(agent).__name__}")
        if store is not None and not sessions:
            raise ValueError("a store keeps sessions: pass sessions=True with it")
        self.agent = agent
        self.sessions = bool(sessions)
        self._store = store
        self._runtime = AppRuntime(runtime, (agent,))
        self._max_body = max_body_size
        self._tracing = Tracing(tracer_provider)
        self.keepalive = keepalive_interval(keepalive)
        self._threads: dict[str, _Live] = {}  # the live run of each thread that has one
        # Each thread's last resumed run (the most recent threads'), until the thread's next run: what the same answers
        # posted again get (AG-UI: a resume is safe to replay) — also by a client that left while it ran.
        self._resumes: OrderedDict[str, _Resumed] = OrderedDict()
        # The tools whose calls a person may approve with other arguments (``editedArgs``): the agent's own, whose
        # schemas check the edits before anything is decided.  A toolset's are listed only as a run starts.
        self._editable: dict[str, Tool[Any, Any]] = {t.name: t for t in agent.tools}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: the lifespan, and each ``POST`` of a ``RunAgentInput`` (see the module docstring).

        Cancellation: a request cancelled by the server has its run cancelled (its model request and tools with
        it), nothing more is sent, and the thread is released; a session's turn commits nothing (unless its
        shielded commit had started).  Unlike a client's disconnect, it cancels a resumed run too: its pause is
        consumed, and the same answers posted again are told the server stopped it.  A lifespan cancelled closes
        the runtime it opened, as a cancelled ``async with`` does.
        """
        if scope["type"] == "lifespan":
            await self._runtime.serve_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        method = str(scope.get("method", "GET"))
        with self._tracing.request(method, "/", **agent_attributes(self.agent)) as span:
            await self._serve(scope, receive, Outbound(span.watch(send)), span)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, span: RequestSpan) -> None:
        if route_path(scope) != "/":
            await send_json(send, 404, {"detail": "not found: POST a RunAgentInput to the app's root"})
            return
        if scope.get("method") != "POST":
            await send_json(send, 405, {"detail": "POST a RunAgentInput"}, {"allow": "POST"})
            return
        try:
            run_input = read_run_input(await read_json(receive, scope, self._max_body, finite=True))
        except Disconnected:
            return
        except BodyError as exc:
            await send_json(send, exc.status, {"detail": str(exc)})
            return
        except InvalidInput as exc:
            await send_json(send, 422, {"detail": str(exc)})
            return
        if self.sessions:
            try:
                check_key(run_input.thread_id)  # the thread is its session's key: one no store keeps is refused here,
            except ValueError as exc:  # not by the session once the stream began (an exception cutting it off)
                await send_json(send, 422, {"detail": f"threadId: {exc}"})
                return
        if run_input.resume and not self.sessions:
            await _refuse_resume(send, run_input, span)
            return
        if self.sessions and not run_input.resume and not run_input.new:
            await send_json(send, 422, {"detail": "nothing new on the thread: the last message is the agent's"})
            return
        thread = run_input.thread_id
        live = self._threads.get(thread)
        mine = None if live is not None else self._claim(run_input)  # before any await: one run per thread
        stream = EventStream(send)
        translation = _Translation(run_input, stream, span, answerable=self.sessions, editable=self._editable)
        # The claim is released however the request ends — also when the client leaves (or the server's
        # send fails) before the run started: a claim left behind would be a live run that never ends,
        # and every later post to the thread would wait on it for ever (or be refused as ThreadBusy).  A
        # resumed run is the exception: it goes on in ``keep``, outside what the client's leaving cancels, and
        # releases the thread itself when it ends (:meth:`_resume`).
        try:
            async with (
                anyio.create_task_group() as keep,
                cancelled_on_disconnect(receive, send),
                stream.kept_alive(self.keepalive),  # the events and the stream's end are written through the stream
            ):
                await stream.start()
                if live is not None and run_input.resume:  # no steer: the answers are to a run that has ended
                    await self._answer_live(translation, live)
                    await stream.end()
                    return
                while live is not None:
                    outcome = await live.steer(run_input)
                    if outcome != "ended":
                        await (
                            translation.steered(live.run_id) if outcome == "steered" else translation.stale(live.run_id)
                        )
                        await stream.end()
                        return
                    # The live run ended meanwhile: this request starts the next, unless another one started it
                    # first.
                    newer = self._threads.get(thread)
                    live = newer if newer is not live else None
                if mine is None:
                    mine = self._claim(run_input)
                try:
                    await self._run(translation, mine, keep)
                finally:
                    if not mine.resuming:  # a resumed run still going releases the thread as it ends
                        self._release(mine)  # before the stream ends: a client that posts at once finds it ended
                await stream.end()
        finally:
            if mine is not None:
                self._release(mine)

    def _claim(self, run_input: RunInput) -> _Live:
        live = self._threads[run_input.thread_id] = _Live(run_input)
        if not run_input.resume:  # the thread moves on: its last resume's answers are no longer a retry
            self._resumes.pop(run_input.thread_id, None)
        return live

    def _release(self, live: _Live) -> None:
        """``live``'s run has ended (or never will start): later posts to its thread start runs of their own."""
        live.end()
        if self._threads.get(live.thread_id) is live:
            del self._threads[live.thread_id]

    async def _run(self, translation: _Translation, live: _Live, keep: TaskGroup) -> None:
        runtime = self._runtime.for_agent(self.agent)
        if not self.sessions:
            await translation.run(self.agent, runtime, live)
            return
        await translation.started()
        if runtime is None:
            await translation.failed("sessions=True needs a runtime: bind the agent or pass runtime=", "NoRuntime")
            return
        turn = streamed_turn(self.agent, partial(translation.follow, live=live), translation.input.context)
        session = open_session(turn, translation.input.thread_id, runtime=runtime, store=self._store, idle_timeout=60.0)
        if translation.input.resume:
            await self._resume(translation, session, live, keep)
            return
        try:
            result = await session.send(translation.input.new)
        except SessionPausedError as exc:  # AG-UI: a thread with open interrupts takes a resume, not a new message
            await translation.failed(
                f"this thread's last run awaits a decision on {len(exc.pending)} call(s) (its interrupts): post "
                "'resume' answers to them before a new message",
                "SessionPausedError",
                fault=False,
            )
            return
        except Exception as exc:
            await translation.raised(exc)
            return
        await translation.finish(self.agent, result)

    async def _resume(
        self, translation: _Translation, session: AgentSession[Any], live: _Live, keep: TaskGroup
    ) -> None:
        """The input's ``resume`` answers decide the thread's paused turn, whose resumed run this stream shows.

        The pause is read from the store (``refresh``): the session may have gone idle while a person decided.
        Answers naming no open interrupt are skipped (AG-UI's SHOULD); what is left must decide the whole pause, or
        nothing is decided (``RUN_ERROR``, the pause left as it was), and nothing starts in its place: a resume
        never becomes a run of the input's messages.  The session's own checks stand behind these (a pause decided
        meanwhile elsewhere: ``SessionConflictError``).  The same answers as the thread's last resume, posted
        again once its pause is gone (a client back after it left, a retry), get that run's outcome (AG-UI: a
        resume is safe to replay) rather than a refusal or a second run.

        The resumed run goes on in ``keep``, not under this request's disconnect: the decision it carries was made,
        and its pause is claimed as it starts (``session.resolve``), so a client that leaves must not cut it off —
        its outcome would be lost with the decision.  It runs to its end, commits to the thread, releases the
        thread, and is kept for a later post of the same answers.  It is streamed (``agent.resume_stream``, through
        the session: :func:`~agentactors.serve._turns.streamed_resume`) into ``resumed``'s record, which that task
        keeps filling to the run's end whether anyone reads it or not; this request reads it as it grows, so its
        events come as they happen.  The run's handle is the thread's live run's (``live``): a post to the thread
        meanwhile steers it.
        """
        thread, answers = translation.input.thread_id, translation.input.resume
        try:
            await session.refresh()
            pending = session.pending_approvals
            earlier = self._resumes.get(thread)
            if earlier is not None and earlier.retried_by(answers, pending):
                await earlier.ended.wait()  # at once: the thread was not live, so that run has ended
                await translation.resumed(self.agent, earlier)
                return
            decided = decisions_of(answers, pending, self._editable)
        except ResumeRefused as exc:
            await translation.failed(str(exc), exc.code, fault=False)
            return
        except Exception as exc:
            await translation.raised(exc)
            return
        resumed = _Resumed(answers, tuple(decided.decisions), live)
        # The same session, its resume streamed into ``resumed``'s record, with the person's arguments in the pause.
        turn = streamed_resume(self.agent, resumed.record, decided.edits, translation.input.context)
        session = open_session(turn, thread, runtime=session.runtime, store=self._store, idle_timeout=60.0)
        self._resumes[thread] = resumed
        self._resumes.move_to_end(thread)
        while len(self._resumes) > _RESUMES_KEPT:
            self._resumes.popitem(last=False)
        live.resuming = True
        keep.start_soon(self._resolve, session, decided.decisions, resumed, live)
        await translation.resumed(self.agent, resumed)

    async def _resolve(
        self, session: AgentSession[Any], decisions: Mapping[str, bool | str], resumed: _Resumed, live: _Live
    ) -> None:
        """Resume the pause with ``decisions`` and keep the outcome in ``resumed``; the thread is free once it ended —
        also when the server cancelled it (no outcome: a later post of the answers is told so)."""
        try:
            resumed.outcome = await session.resolve(decisions)
        except Exception as exc:
            resumed.outcome = exc
        finally:
            live.resuming = False
            self._release(live)
            resumed.end()

    async def _answer_live(self, translation: _Translation, live: _Live) -> None:
        """Resume answers posted while the thread's run is live: a retry of the answers that run is resuming (its
        client left, and came back) gets all its events so far, then the rest as they come; other answers are
        refused (``ThreadBusy``): answers are to a run that has ended."""
        resumed = self._resumes.get(live.thread_id)
        if resumed is None or resumed.live is not live or not resumed.retried_by(translation.input.resume, ()):
            await translation.stale(live.run_id, "resume answers are taken once it has ended")
            return
        await translation.started()
        await translation.resumed(self.agent, resumed)


#: How many threads' last resumed runs an app keeps for a retry of their answers (the oldest forgotten first).
_RESUMES_KEPT = 1000


def _answer_key(answer: ResumeAnswer) -> tuple[str, str, str]:
    """AG-UI's idempotency key of a resume entry: its interrupt, status and payload (as canonical JSON)."""
    return answer.interrupt_id, answer.status, json.dumps(answer.payload, sort_keys=True, default=str)


class _Resumed:
    """A thread's resumed run, from the answers that started it until the thread's next run: the answers it took
    (by :func:`_answer_key`), the calls they decided, the ``_Live`` it ran as; while it runs, what its AG-UI stream is
    told from (``told``: its own events and states, in order), which every request showing it reads as it grows; and —
    once it ended — its outcome (its result, or the exception it raised; ``None``: cancelled by the server).

    ``told`` is filled by the task that resumes the run (:meth:`record`), not by a request: the run goes on, and is
    drained, with no one reading it.  It is dropped once the run ended — a thread's last resume is kept for up to
    :data:`_RESUMES_KEPT` threads, and a long answer is thousands of deltas — so a request that comes after the end is
    told the run from its outcome (:meth:`_Translation.replay`)."""

    __slots__ = ("decided", "ended", "grew", "keys", "live", "outcome", "run_id", "told")

    def __init__(self, answers: Sequence[ResumeAnswer], decided: tuple[str, ...], live: _Live) -> None:
        self.keys = frozenset(_answer_key(a) for a in answers if a.interrupt_id in decided)
        self.decided = decided
        self.live = live
        self.ended = anyio.Event()
        self.outcome: RunResult[Any] | Exception | None = None
        self.run_id: str | None = None
        self.told: list[Event | RunState] | None = []
        self.grew = anyio.Event()  # set (and replaced) as ``told`` grows, and once the run ended

    async def record(self, run: AgentRun[Any]) -> None:
        """The resumed run's ``follow``, in the task that resumes it (the session's resolve, which ``_resolve`` awaits
        in the app's ``keep``, past any request): its handle becomes the thread's live run's (a steer reaches it),
        and what its stream is told from goes into ``told`` — to its end, whoever reads it."""
        self.run_id = run.run_id
        await self.live.attach(run)
        await _tell(run, self._add)

    async def _add(self, item: Event | RunState) -> None:
        told = self.told
        if told is None or (isinstance(item, Event) and type(item) not in _TOLD):  # the rest is not shown: not kept
            return
        self.run_id = self.run_id or item.run_id
        told.append(item)
        self.grew.set()
        self.grew = anyio.Event()

    def end(self) -> None:
        """The run has ended and its outcome is kept: its record goes, and whoever reads it is woken to finish."""
        self.told = None
        self.ended.set()
        self.grew.set()

    def retried_by(self, answers: Sequence[ResumeAnswer], pending: Sequence[ToolCall]) -> bool:
        """Whether ``answers`` are this resume's again — each answer it took, unchanged (others are skipped, as
        ever) — and answer none of the calls ``pending`` now (then they are answers to the open pause)."""
        waiting = {call.id for call in pending}
        if any(a.interrupt_id in waiting for a in answers):
            return False
        return self.keys <= {_answer_key(a) for a in answers}


class _Live:
    """A thread's run while it runs: its AG-UI ``runId``, the ids of the user messages it has seen, its
    handle once it started, and the steers that came before that (each request's, waiting for the run to
    start — or to end without starting: then they were not taken, and that request runs them itself)."""

    __slots__ = ("early", "finished", "handle", "resuming", "run_id", "seen", "settled", "taken", "thread_id")

    def __init__(self, run_input: RunInput) -> None:
        self.thread_id = run_input.thread_id
        self.run_id = run_input.run_id
        self.seen = {given for given, _ in run_input.users if given is not None}
        self.handle: AgentRun[Any] | None = None
        self.early: list[list[Message]] = []  # a batch for each steer before the handle: its request's messages
        self.taken = 0  # how many of ``early`` the run took, in order
        self.settled = anyio.Event()  # set once the run has taken the early steers, or ended without them
        self.finished = False
        self.resuming = False  # a resumed run is going on without its request: it releases the thread itself

    def fresh(self, run_input: RunInput) -> list[Message]:
        """The user messages of ``run_input`` the run has not seen: by their ids, or — when some message has
        none — those after the thread's last assistant or tool message.  An empty one (no text, no part: a send
        pressed on an empty box) is none: it says nothing, and a run refuses it as a steer."""
        if all(given is not None for given, _ in run_input.users):
            fresh = [m for given, m in run_input.users if given not in self.seen]
        else:
            fresh = [m for m in run_input.new if m.role == "user"]
        return [m for m in fresh if m.content or m.parts]

    async def steer(self, run_input: RunInput) -> str:
        """Give the run the user messages of ``run_input`` it has not seen: ``"steered"``; ``"ended"`` when
        the run has ended, ``"nothing"`` when there is nothing new (then nothing was given)."""
        if self.finished:
            return "ended"
        users = self.fresh(run_input)
        if not users:
            return "nothing"
        self.seen.update(given for given, _ in run_input.users if given is not None)
        if self.handle is None:
            return await self._steer_early(users)
        try:
            for message in users:
                await self.handle.steer(message)
        except RunFinishedError:
            return "ended"
        return "steered"

    async def _steer_early(self, users: list[Message]) -> str:
        """Steers before the run has its handle wait for it: ``"steered"`` once :meth:`attach` gave them to the
        run (before its first step boundary), ``"ended"`` when it ended first — a turn that failed before it
        started — so the request runs them itself instead of their being lost."""
        batch = len(self.early)
        self.early.append(users)
        await self.settled.wait()
        return "steered" if batch < self.taken else "ended"

    async def attach(self, handle: AgentRun[Any]) -> None:
        """The run has started: ``handle`` takes the steers that came before, in order."""
        self.handle = handle
        try:
            for batch in self.early:
                for message in batch:
                    await handle.steer(message)
                self.taken += 1
        except RunFinishedError:
            pass  # it ended as it started: the batches not taken are their requests' to run
        finally:
            self.early = []
            self.settled.set()

    def end(self) -> None:
        """The run has ended: a steer now is ``"ended"``, and those still waiting for it to start are too."""
        self.finished = True
        self.settled.set()


def _now() -> int:
    return int(time.time() * 1000)


def _new_id() -> str:
    return uuid.uuid4().hex


class _Translation:
    """One run's events as AG-UI events: which text message is open, which tool calls await a result."""

    def __init__(
        self,
        run_input: RunInput,
        stream: EventStream,
        span: RequestSpan,
        *,
        answerable: bool = False,
        editable: Mapping[str, Tool[Any, Any]] | None = None,
    ) -> None:
        self.input = run_input
        self.stream = stream
        self.span = span
        self.answerable = answerable  # whether the client answers interrupts (``resume``: sessions=True)
        self.editable = editable or {}  # the tools whose calls an answer may edit (``editedArgs``)
        self.message_id: str | None = None  # the text message being streamed
        self.streamed = False  # whether this model answer's text came as deltas
        self.pending: dict[str, None] = {}  # tool calls shown, their results not yet
        self.last_snapshot: Any = None
        self.last_kind: str | None = None  # the type of the last event sent

    @property
    def ids(self) -> dict[str, str]:
        return {"threadId": self.input.thread_id, "runId": self.input.run_id}

    async def emit(self, kind: str, **fields: Any) -> None:
        self.last_kind = kind
        await self.stream.data({"type": kind, "timestamp": _now(), **fields})

    async def started(self) -> None:
        await self.emit("RUN_STARTED", **self.ids)

    async def steered(self, live_run_id: str) -> None:
        """This request's new messages went to the thread's live run: its own run ends at once, saying so."""
        await self.started()
        await self.emit("RUN_FINISHED", **self.ids, result={"steered": live_run_id})

    async def stale(self, live_run_id: str, why: str = "this input has no new user message") -> None:
        """A post to a live thread with nothing new for its run: refused, so no second run races the first."""
        await self.started()
        await self.emit(
            "RUN_ERROR", code="ThreadBusy", message=f"run {live_run_id} of this thread is still running and {why}"
        )

    async def failed(self, message: str, code: str, *, fault: bool = True) -> None:
        self.span.failed(code, fault=fault)
        await self.emit("RUN_ERROR", message=message, code=code)

    async def raised(self, exc: Exception) -> None:
        await self.failed(_raised_text(exc), type(exc).__name__)

    async def run(self, agent: Agent[Any], runtime: Any, live: _Live) -> None:
        await self.started()
        messages = self.input.messages
        if self.input.context:  # the application's context: the run's instructions (docs/serve.md, "AG-UI")
            messages = with_instructions(messages, self.input.context).messages
        try:
            async with agent.stream(messages, runtime=runtime) as run:
                await self.follow(run, live=live)
                result = await run.wait()
        except Exception as exc:
            await self.raised(exc)
            return
        await self.finish(agent, result)

    async def follow(self, run: AgentRun[Any], *, live: _Live) -> None:
        """The run's events, translated as they come; its state after each step (``STATE_SNAPSHOT``)."""
        self.span.run(run.run_id)
        await live.attach(run)
        await _tell(run, self.told)

    async def told(self, item: Event | RunState) -> None:
        """One thing a run's stream is told from (:func:`_tell`): an event of its own, or its state."""
        if isinstance(item, RunState):
            await self.state(item.run_id, item.step, item.agent, item.pending, item.usage)
        else:
            await self.on_event(item)

    async def finish(self, agent: Agent[Any], result: RunResult[Any]) -> None:
        """The run's end, from its result: ``RUN_FINISHED`` (a typed output its ``result``, a pause's interrupts its
        ``outcome``), after the run's final state — or ``RUN_ERROR`` for a run that failed (:func:`_failure`) or ended
        on an output JSON cannot carry.  Whatever the run ended with, the stream ends with one of the two: nothing of
        the result raises out of here, to cut the stream off without an end (a 500 once it began)."""
        await self.close_text()
        await self.results(result.messages)
        pause = result.resume_state if result.paused else None
        if pause is not None:  # the paused step's calls that ran: their results are the pause's, not yet messages
            await self.results(r.to_message() for r in pause.results)
        failure = _failure(agent, result)
        if failure is not None:
            await self.failed(*failure)
            return
        finished: dict[str, Any] = dict(self.ids)
        try:
            editable = self.editable if result.agent in (None, agent.name) else {}  # a handoff's tools are its own
            interrupts = _interrupts(result, answerable=self.answerable, editable=editable) if result.paused else []
            if interrupts:  # paused: not a completed run (AG-UI: an interrupt outcome holds at least one)
                finished["outcome"] = {"type": "interrupt", "interrupts": interrupts}
            elif agent.output_type is not str and result.ok:
                finished["result"] = _result_value(result.output)
            json_bytes(finished)  # the event as it will be sent: refused here, not half-way through sending it
        except (TypeError, ValueError, RecursionError) as exc:
            log.warning("a served run's end cannot be sent as JSON: %s: %s", type(exc).__name__, str(exc)[:500])
            what = "interrupts" if result.paused else f"output (a {type(result.output).__name__})"
            await self.failed(
                f"the run ended on {what} that cannot be sent as JSON: it holds a NaN or an infinity, binary data, "
                "or a value JSON has no form for",
                "output_unsendable",
            )
            return
        await self.final_state(result)
        await self.emit("RUN_FINISHED", **finished)

    async def final_state(self, result: RunResult[Any]) -> None:
        """The state the run ended in, right before its ``RUN_FINISHED``: the state a UI keeps showing once the run
        is over, so it comes even when it did not change since the last snapshot — unless that snapshot is the event
        right before (the same state twice in a row is noise).  A paused run's ``pending`` lists the calls awaiting a
        decision (AG-UI asks for the state before an interrupt) — not the run's live state, which lists only the
        calls waiting in place."""
        pending = result.pending_approvals if result.paused else ()
        await self.state(result.run_id, result.steps, result.agent, pending, result.usage, final=True)

    async def state(
        self,
        run_id: str | None,
        step: int,
        agent: str | None,
        pending: Iterable[ToolCall],
        usage: Usage,
        *,
        final: bool = False,
    ) -> None:
        """``STATE_SNAPSHOT`` of the client's ``state`` with the run's under ``"agentactors"``, when it changed —
        or, ``final``, when the last event sent is not already this snapshot (:meth:`final_state`)."""
        snapshot = dict(self.input.state) if isinstance(self.input.state, dict) else {}
        snapshot["agentactors"] = {
            "runId": run_id,
            "step": step,
            "agent": agent,
            "pending": [{"toolCallId": c.id, "toolCallName": c.name} for c in pending],
            "usage": {"inputTokens": usage.input_tokens, "outputTokens": usage.output_tokens},
        }
        if snapshot != self.last_snapshot or (final and self.last_kind != "STATE_SNAPSHOT"):
            self.last_snapshot = snapshot
            await self.emit("STATE_SNAPSHOT", snapshot=snapshot)

    async def on_event(self, event: Event) -> None:
        kind = type(event)
        if kind is LLMTextDelta:
            text: str = event.data["text"]
            if text:
                await self.open_text()
                self.streamed = True
                await self.emit("TEXT_MESSAGE_CONTENT", messageId=self.message_id, delta=text)
        elif kind is LLMResponded:
            response = event.data["response"]
            if not self.streamed and response.content:  # a provider that answered without streaming
                await self.open_text()
                await self.emit("TEXT_MESSAGE_CONTENT", messageId=self.message_id, delta=response.content)
            parent = self.message_id
            await self.close_text()
            for call in response.tool_calls:
                await self.tool_call(call, parent)
        elif kind is LLMRequested:
            await self.results(event.data["request"].messages)

    async def open_text(self) -> None:
        if self.message_id is None:
            self.message_id = _new_id()
            await self.emit("TEXT_MESSAGE_START", messageId=self.message_id, role="assistant")

    async def close_text(self) -> None:
        if self.message_id is not None:
            await self.emit("TEXT_MESSAGE_END", messageId=self.message_id)
        self.message_id = None
        self.streamed = False

    async def tool_call(self, call: ToolCall, parent: str | None) -> None:
        start: dict[str, Any] = {"toolCallId": call.id, "toolCallName": call.name}
        if parent is not None:
            start["parentMessageId"] = parent
        await self.emit("TOOL_CALL_START", **start)
        arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
        await self.emit("TOOL_CALL_ARGS", toolCallId=call.id, delta=arguments)
        await self.emit("TOOL_CALL_END", toolCallId=call.id)
        self.pending[call.id] = None

    async def resumed(self, agent: Agent[Any], resumed: _Resumed) -> None:
        """A resumed run's events: as they happen while it runs — all it had so far, then the rest as they come —
        and, once it ended, its outcome (its result, or why it has none).  One that has ended already is told from
        its result (:meth:`replay`).

        The decided calls were shown by the interrupted run's stream, so only their ``TOOL_CALL_RESULT`` come
        (AG-UI: not their START/ARGS/END again, the result against the original id), as the resumed run's first
        model request carries them — before its answer.
        """
        self.pending.update(dict.fromkeys(resumed.decided))
        told = resumed.told
        if told is not None:
            self.span.run(resumed.run_id)
            read = 0
            while True:
                grew = resumed.grew
                while read < len(told):
                    read += 1
                    await self.told(told[read - 1])
                if resumed.ended.is_set():
                    break
                await grew.wait()
        outcome = resumed.outcome
        if isinstance(outcome, RunResult):
            self.span.run(outcome.run_id)
            if told is None:
                await self.replay(outcome, decided=resumed.decided)
            await self.finish(agent, outcome)
        elif isinstance(outcome, Exception):
            await self.raised(outcome)
        else:
            await self.failed("the resumed run was cancelled: the server stopped it", "cancelled")

    async def replay(self, result: RunResult[Any], *, decided: Iterable[str]) -> None:
        """A resumed run's events, told from its result once it ended (its events are not kept past its end): what
        the run did after the step it paused in.

        The decided calls were shown by the interrupted run's stream, so only their ``TOOL_CALL_RESULT`` come
        (AG-UI: not their START/ARGS/END again, the result against the original id); the paused step's calls that
        ran before the pause showed theirs then.  Then each later answer's text (whole, not its deltas) and calls,
        and the calls' results, as a live run's stream shows them; the run's final state then comes with its end
        (:meth:`finish`).
        """
        calls = set(decided)
        self.pending.update(dict.fromkeys(calls))
        messages = result.messages
        start = next(
            (i + 1 for i, m in enumerate(messages) if m.role == "assistant" and calls & {c.id for c in m.tool_calls}),
            len(messages),
        )
        for message in messages[start:]:
            if message.role == "tool":
                await self.results((message,))
            elif message.role == "assistant":
                if message.content:
                    await self.open_text()
                    await self.emit("TEXT_MESSAGE_CONTENT", messageId=self.message_id, delta=message.content)
                parent = self.message_id
                await self.close_text()
                for call in message.tool_calls:
                    await self.tool_call(call, parent)

    async def results(self, messages: Iterable[Message]) -> None:
        """``TOOL_CALL_RESULT`` for each shown call whose result is among ``messages``: a tool's result is
        what the next model request carries (or, after the last step, the run's conversation)."""
        if not self.pending:
            return
        for message in messages:
            call_id = message.tool_call_id
            if message.role == "tool" and call_id is not None and call_id in self.pending:
                del self.pending[call_id]
                await self.emit(
                    "TOOL_CALL_RESULT", messageId=_new_id(), toolCallId=call_id, content=message.content, role="tool"
                )


#: The run's events after which its state is sent at once: a call waits for a decision, a steer.  (After a step ended,
#: it is sent once the step's tool results are shown: :func:`_tell`.)
_SNAPSHOT_AFTER = frozenset({"run.awaiting_approval", "run.steered"})

#: The events a stream shows (:meth:`_Translation.on_event`): the only ones a resumed run's record keeps.
_TOLD = frozenset({LLMTextDelta, LLMResponded, LLMRequested})


async def _tell(run: AgentRun[Any], take: Callable[[Event | RunState], Awaitable[None]]) -> None:
    """What ``run``'s AG-UI stream is told from, to ``take`` as it comes, until the run ends: its state as it starts
    and after each step (``STATE_SNAPSHOT``), and its own events — a delegated run's stay inside its tool call.

    A step's tool results are shown with the next model request, which carries them (``TOOL_CALL_RESULT``, from
    :data:`~agentactors.events.LLMRequested`), so the state after a step is told after that request: the snapshot
    that says the run moved on follows the results of the step it moved on from.  After the run's last step there
    is no next request: its end state is the stream's own (:meth:`_Translation.final_state`)."""
    own = run.run_id
    await _state_of(run, take)
    due = False  # a step ended: its state is told once the next model request (its results) was
    async for event in run:
        own = own or event.run_id
        if event.run_id != own:
            continue
        await take(event)
        if event.type in _SNAPSHOT_AFTER or (due and type(event) is LLMRequested):
            due = False
            await _state_of(run, take)
        elif event.type == "step.finished":
            due = True


async def _state_of(run: AgentRun[Any], take: Callable[[Event | RunState], Awaitable[None]]) -> None:
    try:
        state = run.state()
    except RuntimeError:  # a run without an actor (no runtime): no state to show
        return
    await take(state)


def agent_attributes(agent: Agent[Any]) -> dict[str, str | None]:
    """The span attributes naming ``agent`` and its model (no credential: names only)."""
    model = agent.model or getattr(agent.provider, "model", None)
    return {"gen_ai.agent.name": agent.name, "gen_ai.request.model": model if isinstance(model, str) else None}


def _failure(agent: Agent[Any], result: RunResult[Any]) -> tuple[str, str] | None:
    """Why a run that did not pause failed — ``(message, code)`` for its ``RUN_ERROR`` — or ``None``: it ends with
    ``RUN_FINISHED``.

    Failed: ``generation_failed``, ``cancelled``, or any ``error`` — a provider that failed after an earlier step
    answered (a bounded run), a typed answer that never validated (``OutputValidationError``), a deadline or cost
    limit passed: the turns a session does not commit (docs/sessions.md, "The commit rule"), so with sessions the
    client is told what the thread did.  A typed agent's run that stopped at its step limit before any answer
    (bounded, no error) has no result to send either: ``no_answer``, as the OpenAI endpoint's — though a session
    commits that turn, as it does every bounded turn without an error.  A text agent's bounded run finishes: its last
    answer is what it said."""
    if result.generation_failed or result.cancelled or (result.error is not None and not result.paused):
        return _failure_text(result), _failure_code(result)
    if agent.output_type is not str and result.bounded and not result.paused:
        return "the run ended before a valid answer: the agent reached its step limit", "no_answer"
    return None


def _result_value(output: Any) -> Any:
    """A typed output as ``RUN_FINISHED``'s ``result``: a str (a ``Literal`` pick, ``ToolOutput(str)``) as the str
    itself — not JSON text to read: ``"42"`` is not the number 42 — and anything else as the JSON value it converts
    to (:func:`~agentactors.tools.results.render_result`: attrs classes, dataclasses, pydantic models, ...).

    :raises TypeError: the output cannot be sent as JSON (a NaN, binary data, ...).
    :raises ValueError: it holds an integer too long to read back.
    """
    if isinstance(output, str):
        return render_result(output)  # a str subclass (a StrEnum member) as the plain str
    return json.loads(render_result(output))


def _failure_text(result: RunResult[Any]) -> str:
    """What the client is told of a failed run: never the provider's own text (:func:`~._http.client_text`)."""
    if result.cancelled:
        return "the run was cancelled"
    error = result.error
    return client_text(error) if error is not None else "the model could not answer"


def _failure_code(result: RunResult[Any]) -> str:
    if result.cancelled:
        return "cancelled"
    return type(result.error).__name__ if result.error is not None else "generation_failed"


def _raised_text(exc: Exception) -> str:
    return client_text(exc)


def _interrupts(
    result: RunResult[Any], *, answerable: bool, editable: Mapping[str, Tool[Any, Any]]
) -> list[dict[str, Any]]:
    """AG-UI interrupts for a run paused for approval: one per call awaiting a decision, bound to the call the
    stream showed (``toolCallId``; the interrupt's ``id`` is the call's too, which is what a resume answer and a
    decision in the server name), with the run's id for the server's code under ``metadata.agentactors``.
    ``answerable`` (the client answers them: sessions): each says the answer it takes (``responseSchema``), with
    ``editedArgs`` for a call of a tool among ``editable``."""
    interrupts = []
    for call in result.pending_approvals:
        interrupt: dict[str, Any] = {
            "id": call.id,
            "reason": "tool_call",
            "message": f"the call to {call.name} awaits a person's approval",
            "toolCallId": call.id,
            "metadata": {"agentactors": {"runId": result.run_id, "toolCallName": call.name}},
        }
        if answerable:
            interrupt["responseSchema"] = approval_schema(editable.get(call.name))
        interrupts.append(interrupt)
    return interrupts


async def _refuse_resume(send: Send, run_input: RunInput, span: RequestSpan) -> None:
    """An input answering interrupts: ``RUN_STARTED`` then ``RUN_ERROR`` (``ResumeNotSupported``), as AG-UI asks of an
    agent that cannot take a resume — not a new run that drops the answers (and could propose the calls again)."""
    stream = EventStream(send)
    translation = _Translation(run_input, stream, span)
    await stream.start()
    await translation.started()
    answered = ", ".join(a.interrupt_id for a in run_input.resume)[:200]
    await translation.failed(
        f"this server keeps no paused run to resume (interrupts {answered}): its app takes AG-UI resume answers "
        "with sessions=True; without, post the thread's next message",
        "ResumeNotSupported",
        fault=False,
    )
    await stream.end()
