"""``LoopController``: one run of the tool loop (``docs/loop.md``).

One run = generate → execute the tool calls → feed the results back → repeat,
until the model answers without tool calls, bounded by ``max_steps``.  The
controller asks a :class:`~agentactors.gateway.provider.ProviderActor`
(``Complete`` / ``Stream``) and a
:class:`~agentactors.tools.executor.ToolExecutorActor` (``ExecuteTools``) and
returns a :class:`~agentactors.loop.result.RunResult`.  It asks them inside the
run's frame (:mod:`agentactors.actors.frame`): one cancel scope, entered once by
``_loop`` and carrying the run's deadline, through which a halt of either actor
cancels a handler running in the run's task — not a scope per ask.

The run is cut into layers, each a method with one job — the way httpx's client
sends through ``_send_handling_auth`` → ``_send_handling_redirects`` →
``_send_single_request``::

    _loop                  the run: its state (_start), then steps until one ends it; max_steps
    ├── _resume_step       a resumed run: the paused step finished with a person's decisions
    └── _step              one step: its request (_request), one generation, then one of
        ├── _generate      one model call: Complete, or the stream path (streamed.generate_streamed)
        ├── _answer_step   no tool calls: think-only, continued past by a nudge, or the answer
        ├── _tool_step     tool calls: record_calls, execute, then _after_tools → feed_back
        │   │              (results with the nudges' notes, follow-ups, status routing); or
        │   ├── pause          a call waits for approval: the run ends paused (agentactors.loop.pause)
        │   └── _handoff_step  a handoff call: the other calls run, then _switch seats the target agent
        │                      (agentactors.loop.seats)
        └── OutputSteps    a typed run (agentactors.loop.output_steps): its request by output strategy,
                           its answer checked (answer_step), its output calls (calls_step)

What is not the core's lives beside it, each in its own module, and the layers call it:

* :mod:`.config` — :class:`LoopConfig`, what a run takes from its agent, and the requests built from
  it: the skeletons, the system message, :func:`~.config.request_like`;
* :mod:`.output_steps` — :class:`~.output_steps.OutputSteps`, a typed run's requests and steps (the run
  holds one per answering agent with an ``output_type``; a plain run holds none);
* :mod:`.streamed` — the stream path of a model call;
* :mod:`.call_ids` — the call-id rule (every call of a run has an id of its own);
* :mod:`.pause` and :mod:`.handoff` — what a paused run keeps and how a step's results come out of
  approvals and handoffs; :mod:`.lineage` — the runs a run's tools start.

A step's outcome is a value: ``None`` to go on, or the run's
:class:`~agentactors.loop.result.RunResult` when the step ends the run.  Of the
layers a plain run goes through, only ``_loop``, ``_step`` and ``_tool_step`` (and
``execute``, which asks the executor) are coroutines: the parts that do not
await are plain methods, and ``_generate`` hands the provider's coroutine to the
step instead of wrapping it — each ``async def`` awaited per step is a coroutine
frame per step, held by every run in flight (~0.3 KB; 10,000 runs in flight are
a target).

The seams:

* a step's tool choice is decided in ``_step_choice``, and nowhere else;
* a step's calls are executed in :meth:`LoopController.execute`, and nowhere else (the tool, handoff,
  output and resume steps call it);
* a run ends where a layer returns its result: ``_loop`` (``max_steps``),
  ``_step`` (the provider stack giving up, through ``_failed``), ``_answer_step``
  (an answer, ``max_empty_steps``), ``_tool_step`` (``end_turn``), ``pause``
  (a call awaiting approval) and the typed steps; ``feed_back`` raises for ``"raise"``;
* the agent answering is changed in ``_take_seat`` only (a handoff, or resuming a run
  paused after one); a run's children report to it through ``execute``'s link
  (:mod:`agentactors.loop.lineage`).

What ends a run:

* an answer: a step with no tool calls whose text is not think-only;
* ``max_empty_steps`` think-only steps in a row (``bounded=True``);
* ``max_steps`` steps (``bounded=True``; the content is the last substantive answer);
* a tool status routed to ``"end_turn"`` by ``on_tool_status``;
* the provider stack giving up (``generation_failed=True`` when nothing useful
  was produced; the error is attached, the content never holds a vendor's error body);
* the run's ``deadline`` passing (:class:`~agentactors.errors.RunDeadlineExceeded` in
  ``error``; whatever the run was waiting on is cancelled);
* its provider or executor actor halted while handling the run's message (``rt.stop``, the
  runtime's exit): a model call ends the run as a provider failure; a tool step raises
  :class:`~agentactors.errors.ActorStopped` (as a plain ask would).

Errors and cancellation: a status routed to ``"raise"`` raises
:class:`~agentactors.errors.ToolStatusError`.  Cancellation (an enclosing
scope, or the run's own handle) propagates as anyio's cancellation exception
through every await — the provider request and the running tools are
cancelled with it — and the controller keeps nothing of the cancelled turn:
its conversation is a private list the caller never sees unless the run ends.

Events (only built when a recorder listens): ``run.started``, ``step.started``,
``llm.request`` (the full :class:`~agentactors.messages.LLMRequest`),
``llm.text_delta``, ``llm.response``, ``step.finished``, ``run.finished``; the
tool executor adds ``tools.*`` and the provider stack its own, all carrying
this run's id because the run's sink is the current one while it runs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Protocol

import anyio

from ..actors.frame import Frame, ask_in, open_frame
from ..errors import ActorStopped, ProviderError, RunDeadlineExceeded, ToolStatusError
from ..events import EventSink
from ..gateway import ticket as run_ticket
from ..gateway.provider import Complete
from ..messages import LLMRequest, LLMResponse, Message, ToolCall, ToolChoice, Usage
from ..providers.errors import classify_exception
from ..settings import ModelSettings
from ..tools.executor import ExecuteTools, ExecutionContext
from ..tools.results import ToolResult, ToolStatus
from . import lineage
from .call_ids import ids_in, unique_ids
from .config import LoopConfig, StatusRoute, request_like
from .context_budget import fit_to_budget
from .json_transport import parse_reply, to_wire_messages
from .nudges import FOLLOWUPS_TOOL, NudgeSession, StepView, append_note
from .output_steps import OutputSteps
from .pause import PausedRun, any_pending
from .result import RunResult
from .seats import Seat, SeatResolver, filtered, handoff_calls, handoff_results
from .streamed import generate_streamed
from .thinking import answer_of, strip_think

# LoopConfig and StatusRoute live in .config; they are named here too, where they always were.
__all__ = ["LoopConfig", "LoopController", "StatusRoute"]

log = logging.getLogger("agentactors.loop")

#: A paused run to go on with and a person's decisions for its pending calls (:meth:`LoopController.resume`).
_Resume = tuple[PausedRun, Mapping[str, "bool | str"]]
# A run's usage before its first response: the usage every response that reports none shares, so a run
# of such responses (scripted ones) allocates no sum.
_NO_USAGE = LLMResponse().usage


class _Asks(Protocol):
    """What the controller needs of an actor reference."""

    async def ask(self, message: Any) -> Any: ...


class LoopController:
    """Drives one run; create one per run (it holds that run's state).

    :param config: the agent's :class:`LoopConfig`.
    :param provider: a reference to the ProviderActor (``ask(Complete(...))`` / ``ask(Stream(...))``).
    :param tools: a reference to the ToolExecutorActor (asked ``ExecuteTools``), or ``None`` when
        the agent has no tools.
    :param native: the provider carries tools natively; ``False`` selects the JSON-fallback transport.
    :param sink: this run's event sink, or ``None`` when nobody listens.
    :param run_id: the run's id (also the sink's).
    :param deps: handed to tools through their ``ToolContext``; never recorded.
    :param input_key: the caller's stable key for the input, handed to tools (``ToolContext.input_key``).
    :param on_text: called with each piece of answer text as it streams (selects the stream path).
    :param stream: use the provider's stream path even without ``on_text`` (for ``agent.stream``).
    :param settings: the run's own :class:`~agentactors.settings.ModelSettings`, merged over the agent's
        (field by field) into the run's requests once, at its first step.
    :param deadline: seconds the whole run may take (see :meth:`run`), or ``None``.
    :param priority: the run's class at the ProviderActor (higher is served first), or ``None``
        (``0``, or the class of the run this one is a child of).

    The run's state lives here too, set by ``_start`` and changed by the steps: the conversation
    (private until the run ends), the system message sent and how many input messages it
    replaces, the budget left for the rest, the tool choice and its request skeleton, the nudge
    session (started at the first tool step), the previous tool step (what a nudge looks back
    at), the last substantive answer (:attr:`answer_so_far`) and the count of think-only steps in a
    row.  ``steps``, ``usage``, ``tool_calls``, ``followups`` and ``served_by`` are what the result
    reports.

    **The step API** — :meth:`record_calls`, :meth:`record_answer`, :meth:`append`, :meth:`execute`,
    :meth:`feed_back`, :meth:`pause` and :meth:`result` — is what every kind of step does to the run,
    shared by the core's layers and the typed steps (:class:`~.output_steps.OutputSteps`, which reaches
    the run through it only).  A run is driven by :meth:`run` or :meth:`resume`, not by calling these.
    """

    __slots__ = (
        "_budget",
        "_call_ids",
        "_choice",
        "_config",
        "_conversation",
        "_deadline",
        "_deps",
        "_frame",
        "_handoffs",
        "_home",
        "_input_key",
        "_link",
        "_native",
        "_on_text",
        "_origin",
        "_output",
        "_previous",
        "_priority",
        "_provider",
        "_run_settings",
        "_seats",
        "_session",
        "_settings_given",
        "_sink",
        "_skeleton",
        "_skip",
        "_stream",
        "_system_message",
        "_think_only_streak",
        "_tools",
        "answer_so_far",
        "followups",
        "run_id",
        "served_by",
        "steps",
        "tool_calls",
        "usage",
    )

    def __init__(
        self,
        config: LoopConfig,
        provider: _Asks,
        tools: _Asks | None,
        *,
        native: bool = True,
        sink: EventSink | None = None,
        run_id: str | None = None,
        deps: Any = None,
        on_text: Callable[[str], None] | None = None,
        stream: bool = False,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
        input_key: str | None = None,
        origin: lineage.Origin | None = None,
        runtime: Any = None,
        seats: SeatResolver | None = None,
    ) -> None:
        run_ticket.check_deadline(deadline)
        run_ticket.check_priority(priority)
        self._config = config
        # A run's settings over the agent's, merged once here; None keeps the agent's cached skeletons.
        self._run_settings = (
            (config.settings.merge(settings) if config.settings is not None else settings) if settings else None
        )
        self._provider = provider
        self._tools = tools
        self._native = native
        self._sink = sink if sink else None
        self._deps = deps
        self._input_key = input_key
        self._on_text = on_text
        self._stream = stream or on_text is not None
        self._deadline = deadline
        self._priority = priority
        self.run_id = run_id
        self.steps = 0
        self.usage = _NO_USAGE
        self.tool_calls: list[ToolCall] = []
        self.followups: tuple[str, ...] = ()
        self.served_by: str | None = None
        self._output: OutputSteps | None = None
        self._settings_given = settings
        # Delegation: where this run comes from (a parent's tool step), the runtime its children run in,
        # and its own link for them (made at its first tool step).
        self._origin = origin
        self._home = runtime
        self._link: lineage.RunLink | None = None
        # Handoffs: how to find another agent's seat, and the agents handed to so far.
        self._seats = seats
        self._handoffs: list[str] | None = None
        self._frame: Frame | None = None  # while the run's loop runs

    # -- the run --------------------------------------------------------------------------------

    def run(self, messages: Sequence[Message]) -> Coroutine[Any, Any, RunResult[Any]]:
        """Run the loop on ``messages`` (the input conversation) to a :class:`RunResult` (await it).

        Nothing is raised before the returned coroutine is awaited.

        The run carries its ticket (:mod:`agentactors.gateway.ticket`: its age, priority class and
        deadline) to every place it waits.  With a ``deadline``, the whole run — budget waits at the
        ProviderActor, retries' backoff, model calls, tool steps — is bounded by it: a run past it
        is cancelled where it stands (an in-flight HTTP request included) and ends with
        :class:`~agentactors.errors.RunDeadlineExceeded` in ``RunResult.error`` (``bounded`` when an
        earlier step had produced substantive text, which is then the content); its messages are
        the conversation up to the last complete step.  A run started inside another run's work
        (a tool that runs an agent) keeps that run's age and earlier deadline.

        :raises ToolStatusError: a tool status routed to ``"raise"``.

        Cancellation: propagates as anyio's cancellation exception from whichever await the run is
        in (the provider request or the running tools are cancelled with it); nothing of the
        cancelled turn is kept.
        """
        if self._origin is not None:
            return self._adopted(self._origin, messages, None)
        if self._sink is None:
            # Nothing to record: the loop's own coroutine, without a frame of ours around it
            # (a frame is ~0.3 KB, and 10k runs in flight are a target).
            return self._loop(messages)
        return self._recorded(self._sink, messages)

    def resume(self, state: PausedRun, decisions: Mapping[str, bool | str]) -> Coroutine[Any, Any, RunResult[Any]]:
        """Go on with a paused run (:mod:`agentactors.loop.pause`) given a person's ``decisions`` (await it).

        ``decisions`` (checked by the caller: one per pending call, ``True`` or a reason) reach the
        executor with the pending calls: approved ones run, denied ones are answered ``denied`` with the
        reason.  Every result of the paused step then goes back in call order and the loop goes on from
        the next step, with the paused run's counters (``steps``, ``usage``, ``tool_calls``).  This
        controller must be the seat of ``state.agent`` (the agent layer sees to it).  The resumed run
        has its own run id; its ``run.resumed`` event names the paused one.

        Raises and cancellation as for :meth:`run`.
        """
        resume = (state, decisions)
        if self._origin is not None:
            return self._adopted(self._origin, state.messages, resume)
        if self._sink is None:
            return self._loop(state.messages, resume)
        return self._recorded(self._sink, state.messages, resume)

    async def _adopted(
        self, origin: lineage.Origin, messages: Sequence[Message], resume: _Resume | None
    ) -> RunResult[Any]:
        """A child run: run, then hand the result to the parent (its ``children`` and ``usage``)."""
        if self._sink is None:
            result = await self._loop(messages, resume)
        else:
            result = await self._recorded(self._sink, messages, resume)
        origin.link.adopt(result)
        return result

    async def _recorded(
        self, sink: EventSink, messages: Sequence[Message], resume: _Resume | None = None
    ) -> RunResult[Any]:
        """``run`` with a sink: ``run.started`` / ``run.finished`` around the loop.

        Cancellation: ``run.finished`` says ``cancelled=True``, then the cancellation propagates.
        """
        inputs = tuple(messages)
        config = self._config
        origin = self._origin
        lineage_info: dict[str, Any] = {}
        if origin is not None:
            lineage_info = {"parent_step": origin.link.step, "parent_call_id": origin.call_id, "depth": origin.depth}
        if resume is not None:
            lineage_info["resumed_from"] = resume[0].run_id
        sink.emit(
            "run.started",
            agent=config.agent_name,
            messages=len(inputs),
            native_tools=self._native,
            **config.run_info,
            **lineage_info,
        )
        if resume is not None:
            state, decisions = resume
            sink.emit(
                "run.resumed",
                from_run_id=state.run_id,
                step=state.step,
                approved=[k for k, v in decisions.items() if v is True],
                denied=[k for k, v in decisions.items() if v is not True],
            )
        try:
            result = await self._loop(inputs, resume)
        except BaseException as exc:
            sink.step = None
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                sink.emit("run.finished", cancelled=True, steps=self.steps, usage=self.usage)
            else:
                sink.emit("run.finished", error=exc, steps=self.steps, usage=self.usage)
            raise
        sink.step = None
        sink.emit(
            "run.finished",
            content=result.content,
            steps=result.steps,
            bounded=result.bounded,
            generation_failed=result.generation_failed,
            error=result.error,
            served_by=result.served_by,
            usage=result.usage,
            tool_calls=len(result.tool_calls),
            **({"paused": True, "pending": [c.id for c in result.pending_approvals]} if result.paused else {}),
            **({"handoffs": result.handoffs, "final_agent": result.agent} if result.handoffs else {}),
        )
        return result

    def cancelled_result(self, messages: Sequence[Message]) -> RunResult[Any]:
        """The result of a run cancelled through its handle: nothing of the turn kept."""
        return self.result("", tuple(messages), cancelled=True)

    # -- how a run ends --------------------------------------------------------------------------

    def result(self, content: str, messages: tuple[Message, ...] | None = None, **flags: Any) -> RunResult[Any]:
        """The run's result: ``content``, and the conversation (or ``messages``) with what the run counted.

        ``flags`` are the result's own (``bounded``, ``error``, ``output``, ``resume_state``...).  Part of the
        step API: a layer that ends the run returns this.
        """
        if messages is None:
            messages = tuple(self._conversation)
        if self._output is not None and "output" not in flags:
            flags["output"] = None  # a typed run that did not end on a valid answer
        if self._handoffs:
            flags["handoffs"] = tuple(self._handoffs)
        link = self._link
        if link is not None and link.children:
            flags["children"] = tuple(link.children)
        return RunResult(
            content,
            messages,
            tuple(self.tool_calls),
            self.steps,
            followups=self.followups,
            usage=self._total_usage(),
            served_by=self.served_by,
            run_id=self.run_id,
            agent=self._config.agent_name,
            **flags,
        )

    def _total_usage(self) -> Usage:
        """The run's usage with its children's (delegated runs) added."""
        link = self._link
        if link is None or not link.children:
            return self.usage
        return self.usage + link.usage

    def _past_deadline(self, ticket: run_ticket.RunTicket) -> RunResult[Any]:
        """The run's result when its deadline cancelled it: what it had, and :class:`RunDeadlineExceeded`."""
        budget = ticket.budget
        error = RunDeadlineExceeded(
            f"the run passed its deadline of {budget:g}s at step {self.steps}" if budget is not None
            else f"the run passed its deadline at step {self.steps}",
            deadline=budget,
            step=self.steps,
        )
        conversation = self._conversation
        if conversation and conversation[-1].role == "assistant" and conversation[-1].tool_calls:
            conversation = conversation[:-1]  # calls whose results never came: not a conversation to go on from
        if self._sink is not None:
            self._sink.emit("run.deadline_exceeded", deadline=budget)
        log.debug("run %s: deadline passed at step %d", self.run_id, self.steps)
        if self.answer_so_far:
            return self.result(self.answer_so_far, tuple(conversation), bounded=True, error=error)
        return self.result("", tuple(conversation), error=error)

    def _failed(self, exc: Exception) -> RunResult[Any]:
        """The run's result when the provider stack gave up at this step (a vendor's error body never in it)."""
        error = exc if isinstance(exc, ProviderError) else classify_exception(exc, provider="provider")
        if self._sink is not None:
            self._sink.emit("step.finished", failed=True, error=error)
        log.debug("run %s: generation failed at step %d: %s", self.run_id, self.steps, type(error).__name__)
        if self.answer_so_far:
            # Something useful was produced: keep it, and say why the run stopped early.
            return self.result(self.answer_so_far, bounded=True, error=error)
        return self.result("", generation_failed=True, error=error)

    # -- the layers: run → step → generate → answer step | tool step ------------------------------

    async def _loop(self, messages: Sequence[Message], resume: _Resume | None = None) -> RunResult[Any]:
        """The run: its state set up from ``messages``, then one step after another until one ends it.

        A step ends the run by returning its result; when ``max_steps`` steps did not, the run ends
        here, ``bounded``, with the last substantive answer — or, when the run's deadline passes
        first, with :class:`~agentactors.errors.RunDeadlineExceeded` (:meth:`_past_deadline`).

        A resumed run (``resume``: a paused run and the decisions for it) first finishes the paused
        step (:meth:`_resume_step`), then goes on the same way.

        Cancellation: propagates from the step it interrupts (the deadline's own is absorbed here).
        """
        self._start(messages)
        if resume is not None:
            self._restore(resume[0])
        ticket = run_ticket.start_ticket(self._deadline, self._priority)
        token = run_ticket.enter(ticket)
        max_steps = self._config.max_steps
        # The run's frame: one cancel scope, entered once, for the run's deadline and for every ask it makes
        # to its provider and executor — a halt of either cancels their handler through it (:mod:`frame`).
        frame = self._frame = open_frame(self._provider, ticket.deadline)
        # An ask in a frame is no cancellation point (a scope per ask gave it one): each step has its own.
        checkpoint = frame.checkpoint
        try:
            with frame.scope:
                if resume is not None:
                    await checkpoint()
                    ended = await self._resume_step(*resume)
                    if ended is not None:
                        return ended
                while self.steps < max_steps:
                    await checkpoint()
                    ended = await self._step()
                    if ended is not None:
                        return ended
                return self.result(self.answer_so_far, bounded=True)
            # Reached only when the frame's own cancellation ended the run (an outer one propagates): its
            # deadline, or a halt of an actor it asked that reached here as a cancellation, not ActorStopped.
            if ticket.deadline is not None and not frame.halted:
                return self._past_deadline(ticket)
            return self._failed(ActorStopped("an actor this run asked was stopped while handling its message"))
        finally:
            self._frame = None
            run_ticket.leave(token)

    def _start(self, messages: Sequence[Message]) -> None:
        """Set the run's state up from its input conversation, checked as ``LLMRequest`` would check it."""
        inputs = messages if type(messages) is tuple else tuple(messages)
        self._conversation = list(inputs)
        for m in inputs:  # what LLMRequest would check of them; every later message is the loop's own
            if not isinstance(m, Message):
                raise TypeError(f"LLMRequest.messages must hold Message objects, not {type(m).__name__}")
        self.answer_so_far = ""
        self._call_ids: set[str] | None = None  # the run's call ids, gathered at its first tool step
        self._seat_state(inputs)

    def _seat_state(self, conversation: tuple[Message, ...]) -> None:
        """The state that follows the answering agent's config: at the start, and again after a handoff."""
        config = self._config
        system, self._skip = config.system_message(self._native, conversation)
        self._system_message = system
        self._choice = config.tool_choice if self._native and config.tool_specs else ToolChoice.auto()
        self._skeleton: LLMRequest | None = None
        budget = config.context_budget_chars
        if budget is not None and system is not None:
            budget = max(1, budget - len(system.content))
        self._budget = budget
        # Started at the first tool step: a text-only run pays nothing for nudges.
        self._session: NudgeSession | None = None
        self._previous: StepView | None = None
        self._think_only_streak = 0
        self._output = (
            OutputSteps(
                self,
                config,
                self._provider,
                native=self._native,
                system=(system, self._skip),
                settings=self._run_settings,
                sink=self._sink,
                run_id=self.run_id,
                deps=self._deps,
            )
            if config.output is not None
            else None
        )

    def _restore(self, state: PausedRun) -> None:
        """A resumed run takes the paused run's counters: its steps, usage, calls, answer and handoffs."""
        self.steps = state.step
        self.usage = state.usage
        self.tool_calls = list(state.tool_calls)
        self.answer_so_far = state.answer
        self._handoffs = list(state.handoffs) if state.handoffs else None

    async def _step(self) -> RunResult[Any] | None:
        """One step: its request, one generation, then the answer step or the tool step (or a typed one).

        :returns: the run's result when this step ends the run — a provider failure ends it too, as
            the failed result (:meth:`_failed`) — or ``None`` to go on.
        :raises ToolStatusError: a tool status routed to ``"raise"`` (from the tool step).

        Cancellation: propagates out of the generation or the running tools; the step is abandoned
        where it stood, and the run's result (the only way out for its conversation) is never built.
        """
        self.steps += 1
        sink = self._sink
        if sink is not None:
            sink.step = self.steps
            sink.emit("step.started")
        try:
            request = self._request()
        except ProviderError as exc:  # refused before anything is sent (an explicit ToolOutput it cannot force)
            return self._failed(exc)
        output = self._output
        try:
            response = await self._generate(request)
        except Exception as exc:
            if output is None or not output.degrade(exc):
                return self._failed(exc)
            # Auto's forced choice could not be carried: the same step once more, with the next strategy.
            try:
                response = await self._generate(self._request())
            except Exception as again:
                return self._failed(again)
        # The first step's usage is taken as is: a one-step run allocates no sum.
        self.usage = response.usage if self.usage is _NO_USAGE else self.usage + response.usage
        if sink is not None:
            sink.emit("llm.response", response=response, provider=response.provider, usage=response.usage)
        if self._native:
            text, calls = response.content, response.tool_calls
        else:
            parsed = parse_reply(response.content, id_prefix=f"s{self.steps}_")
            text, calls = parsed.text, parsed.calls
        if calls:
            if output is not None and output.has_output_call(calls):
                return await output.calls_step(response, text, calls)
            return await self._tool_step(response, text, calls)
        if output is not None:
            answer = answer_of(text)
            if answer is not None:  # (think-only text is the answer step's, typed or not)
                return await output.answer_step(response, answer)
        return self._answer_step(response, text)

    def _request(self) -> LLMRequest:
        """This step's request: the system message, then the conversation as this step sends it.

        A typed run's step asks with its output strategy (:meth:`OutputSteps.request`).  Old tool results
        are trimmed to the context budget (in the request only); on the JSON transport, tool turns are
        put in its words.
        """
        conversation = self._conversation
        output = self._output
        strategy = output.begin_step() if output is not None else None
        if strategy is None:
            skip, system = self._skip, self._system_message
            skeleton = self._skeleton
            if skeleton is None:  # the first step, or the one after a forced choice
                skeleton = self._choose()
        else:
            assert output is not None
            # The tool strategy forces its own choice; the others take the run's, as the usual request does.
            choice = None if strategy == "tool" else self._step_choice()
            skeleton, system, skip = output.request(strategy, choice, conversation)
        body: Sequence[Message] = conversation[skip:] if skip else conversation
        if self._budget is not None:
            body = fit_to_budget(body, self._budget)
        if not self._native:
            body = to_wire_messages(body)
        request = request_like(skeleton, (system, *body) if system is not None else tuple(body))
        if self._sink is not None:
            self._sink.emit("llm.request", request=request)
        return request

    def _step_choice(self) -> ToolChoice:
        """This step's tool choice: the one place that choice is decided.

        The configured choice is the first step's.  A forced one applies to that step only (forcing
        every step would never end the turn): the next step's is ``auto``.  An unforced choice holds
        for the run.
        """
        choice = self._choice
        if choice.forced:
            self._choice = ToolChoice.auto()
        return choice

    def _choose(self) -> LLMRequest:
        """The skeleton of this step's request, with its tool choice (:meth:`_step_choice`).

        An unforced choice holds for the run, so its skeleton is kept and this runs once.
        """
        choice = self._step_choice()
        skeleton = self._config.skeleton(self._native, choice, self._run_settings)
        if not choice.forced:
            self._skeleton = skeleton
        return skeleton

    def _generate(self, request: LLMRequest) -> Coroutine[Any, Any, LLMResponse]:
        """One model call for ``request``: the provider asked ``Complete(request)``, or the stream path.

        A plain method returning the call's coroutine for the step to await: no frame of ours
        between the step and the provider's, per step and per run in flight.  What the call raises
        is the provider stack giving up; the step turns it into the run's failed result.

        Cancellation: the provider request is cancelled with the step awaiting it (an in-flight HTTP
        request stops).
        """
        if self._stream:
            output = self._output
            return generate_streamed(
                self._provider,
                request,
                native=self._native,
                sink=self._sink,
                on_text=self._on_text,
                partial=output.partials() if output is not None else None,
            )
        return ask_in(self._frame, self._provider, Complete(request))

    def _answer_step(self, response: LLMResponse, text: str) -> RunResult[Any] | None:
        """A step without tool calls: think-only, an acknowledgment a nudge continues past, or the answer.

        * think-only: nothing is added; the ``max_empty_steps``-th in a row ends the run ``bounded``
          with the last substantive answer;
        * an acknowledgment :meth:`_continued_past`: dropped, and the run goes on;
        * an answer: appended to the conversation; the run ends on it.
        """
        sink = self._sink
        answer = answer_of(text)
        if answer is None:  # think-only
            self._think_only_streak += 1
            if sink is not None:
                sink.emit("step.finished", think_only=True, tool_calls=0)
            if self._think_only_streak >= self._config.max_empty_steps:
                self.served_by = response.provider
                return self.result(self.answer_so_far, bounded=True)
            return None
        self._think_only_streak = 0
        self.answer_so_far = answer
        if self._continued_past(answer):
            if sink is not None:
                sink.emit("step.finished", tool_calls=0, nudged=True)
            return None
        self._conversation.append(
            Message.assistant(answer, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.served_by = response.provider
        if sink is not None:
            sink.emit("step.finished", tool_calls=0)
        return self.result(answer)

    def _continued_past(self, answer: str) -> bool:
        """Whether a nudge continues the turn past ``answer``, given right after a tool step.

        The answer is dropped; the nudge's note rides on the last result so the conversation keeps
        its shape and the model answers for real.
        """
        session, previous, conversation = self._session, self._previous, self._conversation
        if session is None or previous is None or conversation[-1].role != "tool":
            return False
        note = session.should_continue(answer, previous)
        if note is None:
            return False
        last = conversation[-1]
        conversation[-1] = last.with_text(append_note(last.content, note))  # media a tool returned stay
        self._previous = None
        return True

    async def _tool_step(self, response: LLMResponse, text: str, calls: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A step with tool calls: the assistant message, the calls executed, their results fed back.

        The step's text (think blocks stripped) goes into the assistant message and, when it is
        substantive, becomes the run's answer so far (:meth:`record_calls`).  The calls run through
        :meth:`execute`, the one place a step's calls are executed; :meth:`feed_back` takes their
        results.  A handoff call makes it a handoff step (:meth:`_handoff_step`); a call waiting for
        approval ends the run paused (:meth:`pause`).

        :returns: the run's result when a status routed to ``"end_turn"`` ends it, else ``None``.
        :raises ToolStatusError: a status routed to ``"raise"``.

        Cancellation: propagates out of the running tools, which are cancelled with the step (an
        async tool sees it; a sync tool's thread is abandoned); no result of theirs is fed back.
        """
        calls = self.record_calls(response, text, calls)
        config = self._config
        if config.handoffs:
            taken = handoff_calls(calls, config.handoffs)
            if taken:
                return await self._handoff_step(calls, taken)
        results = await self.execute(calls, self.steps)
        if config.may_pause and any_pending(results):
            return self.pause(calls, results)
        return self._after_tools(calls, results)

    def _after_tools(self, calls: Sequence[ToolCall], results: tuple[ToolResult, ...]) -> RunResult[Any] | None:
        """A tool step's results fed back (:meth:`feed_back`); the run's result when a status ends the turn."""
        if self.feed_back(StepView(self.steps, calls, results)):
            return self.result(self.answer_so_far)
        return None

    # -- the step API: what every kind of step does to the run --------------------------------------

    def record_calls(self, response: LLMResponse, text: str, calls: Sequence[ToolCall]) -> Sequence[ToolCall]:
        """The model's turn with ``calls``, into the conversation; returns the calls as they run.

        The text (think blocks stripped) goes into the assistant message and, when it is substantive,
        becomes the answer so far.  Every call gets an id of its own in the run first (:mod:`.call_ids`).
        """
        self._think_only_streak = 0
        answer = strip_think(text)
        if answer and answer_of(answer) is not None:
            self.answer_so_far = answer
        taken = self._call_ids
        if taken is None:  # the run's first tool step: the ids its input conversation already holds
            taken = self._call_ids = ids_in(self._conversation)
        calls = unique_ids(calls, taken, sink=self._sink, run_id=self.run_id)
        self._conversation.append(
            Message.assistant(answer, calls, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.tool_calls.extend(calls)
        self.served_by = response.provider
        return calls

    def record_answer(self, response: LLMResponse, answer: str) -> None:
        """The model's ``answer`` (substantive, think blocks stripped), into the conversation."""
        self._think_only_streak = 0
        self.answer_so_far = answer
        self._conversation.append(
            Message.assistant(answer, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.served_by = response.provider

    def append(self, message: Message) -> None:
        """``message`` at the end of the run's conversation (what the model reads next)."""
        self._conversation.append(message)

    async def execute(
        self, calls: Sequence[ToolCall], step: int, approvals: Mapping[str, bool | str] | None = None
    ) -> tuple[ToolResult, ...]:
        """Run a step's calls through the executor: one result per call, in call order.

        While they run, this run is the parent of any run a tool starts (:mod:`.lineage`).
        ``approvals``: a person's decisions for calls that waited for them (a resumed run).
        """
        config = self._config
        if self._tools is None:
            # No executor (the agent has no tools): every call is for an unknown tool.
            from ..tools.results import unknown_tool_text

            return tuple(
                ToolResult.of(c.id, c.name, ToolStatus.invalid, unknown_tool_text(c.name, ())) for c in calls
            )
        # Positional, in field order (run_id, agent, step, cap, policy, deps, input_key, approvals): keywords
        # cost a good part of building it, once per step.
        context = ExecutionContext(
            self.run_id,
            config.agent_name,
            step,
            config.max_tool_result_chars,
            config.tool_policy,
            self._deps,
            self._input_key,
            approvals,
        )
        link = self._link
        if link is None:
            origin = self._origin
            link = self._link = lineage.RunLink(
                self.run_id, origin.depth if origin is not None else 0, self._sink, self._home
            )
        link.step = step
        token = lineage.enter(link)
        try:
            message = ExecuteTools(tuple(calls), context)
            results: tuple[ToolResult, ...] = await ask_in(self._frame, self._tools, message)
        finally:
            lineage.leave(token)
        return results

    def feed_back(self, view: StepView, *, finish: bool = True) -> bool:
        """Append a tool step's results (with the nudges' notes), take the follow-ups, route each status.

        The step is then the one a nudge looks back at (the previous step).

        :returns: whether a status was routed to ``"end_turn"`` — every result is fed back first.
            ``finish=False`` leaves ``step.finished`` to the caller (a step that has more to feed back).
        :raises ToolStatusError: at the first status routed to ``"raise"``, after ``step.finished`` says so.
        """
        config = self._config
        sink = self._sink
        calls, results = view.calls, view.results
        if self._session is None and config.run_nudges is not None:
            self._session = config.run_nudges.start(config.read_only.__contains__)
        notes = self._session.notes_for(view) if self._session is not None else None
        end_turn = False
        for index, result in enumerate(results):
            message = result.to_message()
            if notes is not None and notes[index]:
                message = message.with_text(append_note(message.content, notes[index]))
            self._conversation.append(message)
            if config.followups and result.name == FOLLOWUPS_TOOL and result.status is ToolStatus.ok:
                self.followups = _suggestions(calls[index])
            route = config.on_tool_status.get(result.status) if config.on_tool_status else None
            if route == "raise":
                if sink is not None:
                    sink.emit("step.finished", tool_calls=len(calls), routed="raise")
                raise ToolStatusError(
                    f"tool {result.name!r} (call {result.call_id}) ended with status {result.status.value}; "
                    "on_tool_status routes it to 'raise'",
                    status=result.status,
                    result=result,
                )
            if route == "end_turn":
                end_turn = True
        if sink is not None and finish:
            sink.emit("step.finished", tool_calls=len(calls), routed="end_turn" if end_turn else None)
        self._previous = view
        return end_turn

    def pause(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult], *, output_step: bool = False
    ) -> RunResult[Any]:
        """End the run paused: some of the step's calls wait for a person's decision (:mod:`.pause`).

        ``results`` are the step's results so far (pending placeholders among them); what ran is kept
        in the :class:`~agentactors.loop.pause.PausedRun` the result carries, nothing is fed back yet.
        ``output_step``: the step also held output calls (checked once every result is in).
        """
        state = PausedRun.of(
            self.run_id,
            tuple(self._conversation),
            calls,
            results,
            step=self.steps,
            usage=self._total_usage(),
            tool_calls=self.tool_calls,
            answer=self.answer_so_far,
            agent=self._config.agent_name,
            handoffs=self._handoffs or (),
            output_step=output_step,
        )
        sink = self._sink
        if sink is not None:
            sink.emit(
                "run.paused",
                pending=[{"call_id": c.id, "name": c.name, "reason": state.reasons[c.id]} for c in state.pending],
            )
            sink.emit("step.finished", tool_calls=len(calls), paused=True)
        log.debug("run %s: paused at step %d for %d call(s)", self.run_id, self.steps, len(state.pending))
        return self.result(self.answer_so_far, resume_state=state)

    # -- handoffs and resumed runs: the answering agent changes --------------------------------------

    async def _handoff_step(self, calls: Sequence[ToolCall], taken: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A tool step with handoff calls: the other calls run, the first handoff is taken, the seat changes.

        The results go back in call order (:func:`~.handoff.handoff_results`), so the target agent reads
        a well-formed conversation.  When another call of the step waits for approval, the run pauses
        first and the handoff is answered "not used" (the model may call it again once the decisions are in).
        """
        config = self._config
        first = taken[0]
        target = config.handoffs[first.name]
        others = [c for c in calls if c.name not in config.handoffs]
        ran = await self.execute(others, self.steps) if others else ()
        pausing = config.may_pause and any_pending(ran)
        results = handoff_results(calls, taken, target, ran, pausing=pausing)
        if pausing:
            return self.pause(calls, results)
        if self.feed_back(StepView(self.steps, calls, results)):
            return self.result(self.answer_so_far)
        await self._switch(target, first.name, first.id)
        return None

    async def _switch(self, target: str, via: str, call_id: str) -> None:
        """The run goes on with agent ``target``: its seat from the agent layer, its view of the conversation.

        :raises RuntimeError: the agent layer gave no way to find agents (a LoopController made by hand).
        """
        if self._seats is None:
            raise RuntimeError(f"cannot hand off to {target!r}: this controller was made without seats")
        seat = await self._seats(target, via)
        source = self._config.agent_name
        if self._sink is not None:
            self._sink.emit("agent.handoff", from_agent=source, to_agent=target, call_id=call_id)
        log.debug("run %s: handed off from %s to %s", self.run_id, source, target)
        self._take_seat(seat, filtered(seat, tuple(self._conversation)))
        if self._handoffs is None:
            self._handoffs = []
        self._handoffs.append(target)

    def _take_seat(self, seat: Seat, conversation: tuple[Message, ...]) -> None:
        """Answer from now on as ``seat``'s agent: its config, actors and settings, on ``conversation``."""
        config = seat.config
        self._config = config
        self._provider = seat.provider
        self._tools = seat.tools
        self._native = seat.native
        given = self._settings_given
        self._run_settings = (config.settings.merge(given) if config.settings is not None else given) if given else None
        self._conversation = list(conversation)
        self._seat_state(conversation)

    async def _resume_step(self, state: PausedRun, decisions: Mapping[str, bool | str]) -> RunResult[Any] | None:
        """Finish a paused step: the pending calls with their decisions, then every result in call order.

        A run paused after a handoff goes on with the agent that was answering (its seat, found by name).
        """
        if state.agent != self._config.agent_name and state.agent is not None:
            if self._seats is None:
                raise RuntimeError(f"the paused run was answered by {state.agent!r}, which this agent cannot reach")
            self._take_seat(await self._seats(state.agent, None), tuple(self._conversation))
        sink = self._sink
        if sink is not None:
            sink.step = state.step
        ran, results = state.completed(await self.execute(state.pending, state.step, decisions))
        if state.output_step and self._output is not None:
            return await self._output.resume(state.calls, ran, results)
        return self._after_tools(ran, results)


def _suggestions(call: ToolCall) -> tuple[str, ...]:
    value = call.arguments.get("suggestions", ())
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if str(v).strip())
    return ()
