"""``LoopController``: one run of the tool loop (``docs/loop.md``).

One run = generate → execute the tool calls → feed the results back → repeat,
until the model answers without tool calls, bounded by ``max_steps``.  The
controller asks a :class:`~agentactors.actors.provider.ProviderActor`
(``Complete`` / ``Stream``) and a
:class:`~agentactors.actors.tools.ToolExecutorActor` (``ExecuteTools``) and
returns a :class:`~agentactors.loop.result.RunResult`.

The run is cut into layers, each a method with one job — the way httpx's client
sends through ``_send_handling_auth`` → ``_send_handling_redirects`` →
``_send_single_request``::

    _loop                  the run: its state (_start), then steps until one ends it; max_steps
    ├── _resume_step       a resumed run: the paused step finished with a person's decisions
    └── _step              one step: its request (_request), one generation, then one of
        ├── _generate      one model call: Complete, or the stream path (_generate_streamed)
        ├── _answer_step   no tool calls: think-only, continued past by a nudge, or the answer
        ├── _output_step   a typed run's step: the answer checked, or its output calls (_output_calls)
        └── _tool_step     tool calls: the assistant message, _execute, then _after_tools → _feed_back
                           (results with the nudges' notes, follow-ups, status routing); or
            ├── _pause         a call waits for approval: the run ends paused (agentactors.loop.pause)
            └── _handoff_step  a handoff call: the other calls run, then _switch seats the target agent
                               (agentactors.loop.handoff)

A step's outcome is a value: ``None`` to go on, or the run's
:class:`~agentactors.loop.result.RunResult` when the step ends the run.  Only
``_loop``, ``_step`` and ``_tool_step`` are coroutines: the parts that do not
await are plain methods, and ``_generate`` hands the provider's coroutine to the
step instead of wrapping it — each ``async def`` awaited per step is a coroutine
frame per step, held by every run in flight (~0.3 KB; 10,000 runs in flight are
a target).

The seams:

* a step's tool choice is decided in ``_choose``, and nowhere else;
* a step's calls are executed in ``_execute``, and nowhere else (the tool, handoff, output and resume steps call it);
* a run ends where a layer returns its result: ``_loop`` (``max_steps``),
  ``_step`` (the provider stack giving up, through ``_failed``), ``_answer_step``
  (an answer, ``max_empty_steps``), ``_tool_step`` (``end_turn``) and ``_pause``
  (a call awaiting approval); ``_feed_back`` raises for ``"raise"``;
* the agent answering is changed in ``_take_seat`` only (a handoff, or resuming a run
  paused after one); a run's children report to it through ``_execute``'s link
  (:mod:`agentactors.loop.lineage`).

What ends a run:

* an answer: a step with no tool calls whose text is not think-only;
* ``max_empty_steps`` think-only steps in a row (``bounded=True``);
* ``max_steps`` steps (``bounded=True``; the content is the last substantive answer);
* a tool status routed to ``"end_turn"`` by ``on_tool_status``;
* the provider stack giving up (``generation_failed=True`` when nothing useful
  was produced; the error is attached, the content never holds a vendor's error body);
* the run's ``deadline`` passing (:class:`~agentactors.errors.RunDeadlineExceeded` in
  ``error``; whatever the run was waiting on is cancelled).

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
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol

import anyio
import attrs

from .. import run_ticket
from ..actors.provider import Complete, Stream
from ..actors.tools import ExecuteTools, ExecutionContext, ToolPolicy
from ..errors import ProviderError, RunDeadlineExceeded, ToolStatusError
from ..events import EventSink
from ..messages import (
    LLMRequest,
    LLMResponse,
    Message,
    ReasoningDelta,
    StreamEnd,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolCallStart,
    ToolChoice,
    ToolSpec,
    Usage,
)
from ..output.config import OutputConfig
from ..output.run import OutputRun
from ..providers._classify import classify_exception
from ..providers.base import default_model_of
from ..settings import ModelSettings
from ..tools.approval import pending_reason
from ..tools.results import ToolResult, ToolStatus
from . import lineage
from .context_budget import fit_to_budget
from .handoff import Seat, SeatResolver, filtered, handoff_calls, not_used_text, transferred_text
from .json_transport import StreamFilter, contract_text, parse_reply, to_wire_messages
from .nudges import FOLLOWUPS_TOOL, Nudges, NudgeSession, StepView, append_note
from .pause import PausedRun
from .result import RunResult
from .thinking import ThinkFilter, answer_of, strip_think

__all__ = ["LoopConfig", "LoopController", "StatusRoute"]

log = logging.getLogger("agentactors.loop")

StatusRoute = Literal["continue", "end_turn", "raise"]
#: A paused run to go on with and a person's decisions for its pending calls (:meth:`LoopController.resume`).
_Resume = tuple[PausedRun, Mapping[str, "bool | str"]]
_ROUTES = frozenset(("continue", "end_turn", "raise"))
# A run's usage before its first response: the usage every response that reports none shares, so a run
# of such responses (scripted ones) allocates no sum.
_NO_USAGE = LLMResponse().usage



class _Asks(Protocol):
    """What the controller needs of an actor reference."""

    async def ask(self, message: Any) -> Any: ...


def _routes(value: Mapping[Any, str] | None) -> Mapping[ToolStatus, StatusRoute]:
    if not value:
        return {}
    out: dict[ToolStatus, StatusRoute] = {}
    for status, route in value.items():
        if route not in _ROUTES:
            raise ValueError(f"on_tool_status routes to 'continue', 'end_turn' or 'raise', not {route!r}")
        if route != "continue":
            out[ToolStatus(status)] = route  # type: ignore[assignment]
    return out


@attrs.frozen(slots=True)
class LoopConfig:
    """Everything a run takes from its agent; built once per agent, shared by all of its runs.

    ``tool_specs`` are the specs offered to the model (built-ins included);
    ``read_only`` names the tools marked ``read_only`` (for the batching nudge);
    ``settings`` the agent's :class:`~agentactors.settings.ModelSettings`, in every request's skeleton.
    """

    tool_specs: tuple[ToolSpec, ...] = ()
    system: str | None = None
    model: str | None = None
    tool_choice: ToolChoice = attrs.field(factory=ToolChoice.auto)
    max_steps: int = 8
    max_empty_steps: int = 2
    max_tool_result_chars: int | None = None
    context_budget_chars: int | None = None
    on_tool_status: Mapping[ToolStatus, StatusRoute] = attrs.field(factory=dict, converter=_routes)
    tool_policy: ToolPolicy | None = None
    nudges: Nudges | None = None
    followups: bool = False
    read_only: frozenset[str] = frozenset()
    agent_name: str | None = None
    # What run.started tells about the agent beyond its name (its default model, its provider members), for
    # recorders that describe runs to others (OpenTelemetry): built once per agent, never per run.
    run_info: Mapping[str, Any] = attrs.field(factory=dict)
    settings: ModelSettings | None = None
    #: The typed result (``docs/output.md``); ``None`` for a plain ``str`` answer, whose runs pay nothing for it.
    output: OutputConfig | None = None
    #: Handoff tools by name -> the name of the agent each hands the conversation to (:mod:`.handoff`).
    handoffs: Mapping[str, str] = attrs.field(factory=dict)
    #: Whether a call may wait for approval (a tool requires it, or a policy may ask): the loop then looks
    #: for pending results after each tool step; other agents pay nothing for pauses.
    may_pause: bool = False
    #: The nudges a run of this agent starts with: ``nudges`` less the ones its tools give nothing to act on
    #: (:meth:`Nudges.fitted <agentactors.loop.nudges.Nudges.fitted>`); worked out here, once per agent.
    run_nudges: Nudges | None = attrs.field(init=False, eq=False, repr=False)
    # (native, tool choice) -> a validated request whose messages every step replaces (see _request_like).
    _skeletons: dict[tuple[bool, ToolChoice], LLMRequest] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )
    # The same for the output strategies: (strategy, native, tool choice) -> skeleton.
    _output_skeletons: dict[tuple[str, bool, ToolChoice], LLMRequest] = attrs.field(
        factory=dict, init=False, eq=False, repr=False
    )

    def skeleton(self, native: bool, choice: ToolChoice, settings: ModelSettings | None = None) -> LLMRequest:
        """The request every step of a run sends but for its messages (built and validated once).

        ``settings`` are a run's own (already merged over the agent's): its skeleton is built for that run
        alone, once per tool choice, and not kept.  Without them, the agent's skeleton is cached.
        """
        if settings is not None:
            return self._build(native, choice, settings)
        key = (native, choice)
        skeleton = self._skeletons.get(key)
        if skeleton is None:
            skeleton = self._skeletons[key] = self._build(native, choice, self.settings)
        return skeleton

    def _build(self, native: bool, choice: ToolChoice, settings: ModelSettings | None) -> LLMRequest:
        return LLMRequest(
            (Message.user(""),),
            model=self.model,
            tools=self.tool_specs if native else (),
            tool_choice=choice,
            **(settings.request_fields() if settings else {}),
        )

    def output_skeleton(
        self, strategy: str, native: bool, choice: ToolChoice, settings: ModelSettings | None = None
    ) -> LLMRequest:
        """The skeleton of a step asking for the typed result with ``strategy`` (built and validated once).

        ``tool``: the agent's tools and the output tools, with the forced ``choice``; ``native``: the
        agent's tools and the JSON-schema response format; ``prompted``: the agent's tools alone (the
        instruction is in the system message).  ``settings`` as for :meth:`skeleton`: a run's own are
        built for it alone and not kept.
        """
        if settings is not None:
            return self._build_output(strategy, native, choice, settings)
        key = (strategy, native, choice)
        skeleton = self._output_skeletons.get(key)
        if skeleton is None:
            skeleton = self._output_skeletons[key] = self._build_output(strategy, native, choice, self.settings)
        return skeleton

    def _build_output(
        self, strategy: str, native: bool, choice: ToolChoice, settings: ModelSettings | None
    ) -> LLMRequest:
        output = self.output
        assert output is not None
        tools = self.tool_specs if native else ()
        if strategy == "tool":
            tools = (*tools, *output.tool_specs)
        return LLMRequest(
            (Message.user(""),),
            model=self.model,
            tools=tools,
            tool_choice=choice if tools else ToolChoice.auto(),
            response_format=output.response_format if strategy == "native" else None,
            **(settings.request_fields() if settings else {}),
        )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "run_nudges", self.nudges.fitted(self.read_only) if self.nudges is not None else None)
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, not {self.max_steps}")
        if self.max_empty_steps < 1:
            raise ValueError(f"max_empty_steps must be at least 1, not {self.max_empty_steps}")
        if self.context_budget_chars is not None and self.context_budget_chars < 1:
            raise ValueError(f"context_budget_chars must be positive, not {self.context_budget_chars}")


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
    at), the last substantive answer and the count of think-only steps in a row.  ``steps``,
    ``usage``, ``tool_calls``, ``followups`` and ``served_by`` are what the result reports.
    """

    __slots__ = (
        "_answer_so_far",
        "_budget",
        "_call_ids",
        "_choice",
        "_config",
        "_conversation",
        "_deadline",
        "_deps",
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
        self._output: OutputRun | None = None
        self._settings_given = settings
        # Delegation: where this run comes from (a parent's tool step), the runtime its children run in,
        # and its own link for them (made at its first tool step).
        self._origin = origin
        self._home = runtime
        self._link: lineage.RunLink | None = None
        # Handoffs: how to find another agent's seat, and the agents handed to so far.
        self._seats = seats
        self._handoffs: list[str] | None = None

    # -- the run --------------------------------------------------------------------------------

    def run(self, messages: Sequence[Message]) -> Coroutine[Any, Any, RunResult[Any]]:
        """Run the loop on ``messages`` (the input conversation) to a :class:`RunResult` (await it).

        Nothing is raised before the returned coroutine is awaited.

        The run carries its ticket (:mod:`agentactors.run_ticket`: its age, priority class and
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
        return self._result("", tuple(messages), cancelled=True)

    def _result(self, content: str, messages: tuple[Message, ...], **flags: Any) -> RunResult[Any]:
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

    def _system(self, inputs: Sequence[Message], extra: str | None = None) -> tuple[Message | None, int]:
        """The system message to send, and how many leading input messages it replaces.

        The agent's system text, a leading system message of the caller's, the
        JSON-fallback contract and ``extra`` (the prompted output's instruction) become one system
        message: several vendors accept only one.
        """
        if extra is not None:
            base, skip = self._system(inputs)
            if base is None and inputs and inputs[0].role == "system":
                base, skip = inputs[0], 1
            text = f"{base.content}\n\n{extra}" if base is not None and base.content else extra
            return Message.system(text), skip
        if self._native and not self._config.system and (not inputs or inputs[0].role != "system"):
            return None, 0  # the common case: nothing to add or merge
        parts: list[str] = []
        if self._config.system:
            parts.append(self._config.system)
        skip = 0
        if inputs and inputs[0].role == "system":
            if not parts and self._native:
                return None, 0  # nothing to merge: the caller's system message goes as it is
            parts.append(inputs[0].content)
            skip = 1
        if not self._native and self._config.tool_specs:
            parts.append(contract_text(self._config.tool_specs))
        if not parts:
            return None, 0
        return Message.system("\n\n".join(p for p in parts if p)), skip

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
        try:
            # The same loop twice, on purpose: only a run with a deadline pays for a cancel scope, and
            # a shared no-op context manager in its place would cost every other run two calls per run.
            if ticket.deadline is None:
                if resume is not None:
                    ended = await self._resume_step(*resume)
                    if ended is not None:
                        return ended
                while self.steps < max_steps:
                    ended = await self._step()
                    if ended is not None:
                        return ended
                return self._result(self._answer_so_far, tuple(self._conversation), bounded=True)
            with anyio.move_on_at(ticket.deadline):
                if resume is not None:
                    ended = await self._resume_step(*resume)
                    if ended is not None:
                        return ended
                while self.steps < max_steps:
                    ended = await self._step()
                    if ended is not None:
                        return ended
                return self._result(self._answer_so_far, tuple(self._conversation), bounded=True)
            # Reached only when the deadline's own scope cancelled the run (an outer cancellation propagates).
            return self._past_deadline(ticket)
        finally:
            run_ticket.leave(token)

    def _start(self, messages: Sequence[Message]) -> None:
        """Set the run's state up from its input conversation, checked as ``LLMRequest`` would check it."""
        inputs = messages if type(messages) is tuple else tuple(messages)
        self._conversation = list(inputs)
        for m in inputs:  # what LLMRequest would check of them; every later message is the loop's own
            if not isinstance(m, Message):
                raise TypeError(f"LLMRequest.messages must hold Message objects, not {type(m).__name__}")
        self._answer_so_far = ""
        self._call_ids: set[str] | None = None  # the run's call ids, gathered at its first tool step
        self._seat_state(inputs)

    def _seat_state(self, conversation: tuple[Message, ...]) -> None:
        """The state that follows the answering agent's config: at the start, and again after a handoff."""
        config = self._config
        system, self._skip = self._system(conversation)
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
        self._output = self._output_run(config.output) if config.output is not None else None

    def _restore(self, state: PausedRun) -> None:
        """A resumed run takes the paused run's counters: its steps, usage, calls, answer and handoffs."""
        self.steps = state.step
        self.usage = state.usage
        self.tool_calls = list(state.tool_calls)
        self._answer_so_far = state.answer
        self._handoffs = list(state.handoffs) if state.handoffs else None

    def _output_run(self, output: OutputConfig) -> OutputRun:
        """This run's typed-result state; auto asks the provider its ProviderActor hosts (read through ``actor``)."""
        hosted = getattr(getattr(self._provider, "actor", None), "provider", None)
        provider = hosted if hosted is not None else self._provider
        config = self._config
        return OutputRun(
            output,
            provider=provider,
            model=config.model or default_model_of(provider),
            native=self._native,
            has_tools=bool(config.tool_specs),
            sink=self._sink,
            run_id=self.run_id,
            agent=config.agent_name,
            deps=self._deps,
            settings=self._run_settings if self._run_settings is not None else config.settings,
        )

    async def _step(self) -> RunResult[Any] | None:
        """One step: its request, one generation, then the answer step or the tool step.

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
        try:
            response = await self._generate(request)
        except Exception as exc:
            if self._output is None or not self._output.degrade(exc):
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
        if self._output is not None:
            return await self._output_step(response, text, calls)
        if not calls:
            return self._answer_step(response, text)
        return await self._tool_step(response, text, calls)

    def _request(self) -> LLMRequest:
        """This step's request: the system message, then the conversation as this step sends it.

        Old tool results are trimmed to the context budget (in the request only); on the JSON
        transport, tool turns are put in its words.
        """
        conversation = self._conversation
        if self._output is None:
            skip, system = self._skip, self._system_message
            skeleton = self._skeleton
            if skeleton is None:  # the first step, or the one after a forced choice
                skeleton = self._choose()
        else:
            skeleton, system, skip = self._output_request(self._output)
        body: Sequence[Message] = conversation[skip:] if skip else conversation
        if self._budget is not None:
            body = fit_to_budget(body, self._budget)
        if not self._native:
            body = to_wire_messages(body)
        request = _request_like(skeleton, (system, *body) if system is not None else tuple(body))
        if self._sink is not None:
            self._sink.emit("llm.request", request=request)
        return request

    def _choose(self) -> LLMRequest:
        """The skeleton of this step's request, with its tool choice: the one place that choice is decided.

        The configured choice is the first step's.  A forced one applies to that step only (forcing
        every step would never end the turn): the next step is built with ``auto``.  An unforced
        choice holds for the run, so its skeleton is kept and this runs once.
        """
        choice = self._choice
        skeleton = self._config.skeleton(self._native, choice, self._run_settings)
        if choice.forced:
            self._choice = ToolChoice.auto()
        else:
            self._skeleton = skeleton
        return skeleton

    def _output_request(self, output: OutputRun) -> tuple[LLMRequest, Message | None, int]:
        """A typed run's step: the skeleton, system message and skip of this call's output strategy.

        The tool strategy forces its choice on every step until an output tool is called (the call
        ends the run or is refused and asked again); the others keep the agent's choice as ``_choose``
        does.  The prompted instruction joins the system message.
        """
        strategy = output.begin_step()
        config = self._config
        if strategy is None:  # a plain str answer checked by a validator: the request is the usual one
            skeleton = self._skeleton if self._skeleton is not None else self._choose()
            return skeleton, self._system_message, self._skip
        if strategy == "tool":
            choice = output.forced_choice(bool(config.tool_specs))
        else:
            choice = self._choice
            if choice.forced:
                self._choice = ToolChoice.auto()
        skeleton = config.output_skeleton(strategy, self._native, choice, self._run_settings)
        if strategy != "prompted":
            return skeleton, self._system_message, self._skip
        if output.prompted_system is None:
            output.prompted_system = self._system(self._conversation[:1], output.config.prompt)
        system, skip = output.prompted_system
        return skeleton, system, skip

    def _generate(self, request: LLMRequest) -> Coroutine[Any, Any, LLMResponse]:
        """One model call for ``request``: the provider asked ``Complete(request)``, or the stream path.

        A plain method returning the call's coroutine for the step to await: no frame of ours
        between the step and the provider's, per step and per run in flight.  What the call raises
        is the provider stack giving up; the step turns it into the run's failed result.

        Cancellation: the provider request is cancelled with the step awaiting it (an in-flight HTTP
        request stops).
        """
        if self._stream:
            return self._generate_streamed(request)
        return self._provider.ask(Complete(request))

    async def _generate_streamed(self, request: LLMRequest) -> LLMResponse:
        """The stream path of :meth:`_generate`: answer text delivered as it arrives, then the response.

        Think blocks never reach ``on_text`` or ``llm.text_delta``; on the JSON transport neither do
        the tool-call blocks (held back from a possible block start until resolved).

        :raises ProviderError: the stream ended without its final response.

        Cancellation: the stream is closed (``async with``) and its request cancelled; text already
        delivered stays delivered — the run's result keeps no half answer.
        """
        sink = self._sink
        thinking = ThinkFilter()
        blocks = StreamFilter() if not self._native else None
        # A typed run someone listens to follows the answer's JSON as it streams (output.partial events).
        partial = self._output.partials(self._emit_partial) if self._output is not None and sink is not None else None
        response: LLMResponse | None = None
        channel = await self._provider.ask(Stream(request))
        async with channel:
            async for event in channel:
                if isinstance(event, TextDelta):
                    text = thinking.feed(event.text)
                    if blocks is not None and text:
                        text = blocks.feed(text)
                    if text:
                        self._deliver(text)
                        if partial is not None:
                            partial.feed_text(text)
                elif isinstance(event, StreamEnd):
                    response = event.response
                elif isinstance(event, ReasoningDelta) and sink is not None:
                    sink.emit("llm.reasoning_delta", text=event.text)
                elif partial is not None:
                    if isinstance(event, ToolCallDelta):
                        partial.call_delta(event.index, event.arguments_fragment)
                    elif isinstance(event, ToolCallStart):
                        partial.call_started(event.index, event.name)
        tail = thinking.finish()
        if blocks is not None:
            tail = blocks.feed(tail) + blocks.finish() if tail else blocks.finish()
        if tail:
            self._deliver(tail)
            if partial is not None:
                partial.feed_text(tail)
        if response is None:
            raise ProviderError(
                "the stream ended without its final response", provider="stream", model=request.model, kind="transient"
            )
        return response

    def _emit_partial(self, value: Any) -> None:
        if self._sink is not None:
            self._sink.emit("output.partial", value=value)

    async def _output_step(self, response: LLMResponse, text: str, calls: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A typed run's step: the answer checked (and refused with every issue listed), or a tool step.

        * calls, none of an output tool: the agent's tools run (:meth:`_tool_step`), the run goes on;
        * output calls: :meth:`_output_calls`;
        * think-only text: as :meth:`_answer_step` has it;
        * a text answer: checked (the JSON of native and prompted; a plain validator's ``str``); taken,
          it ends the run with its value; refused, the answer stays in the conversation and the model
          reads why in a user message — or, past ``output_retries``, the run ends with the error.
        """
        output = self._output
        assert output is not None
        if calls:
            if any(output.is_output_call(c) for c in calls):
                return await self._output_calls(output, response, text, calls)
            return await self._tool_step(response, text, calls)
        answer = answer_of(text)
        if answer is None:
            return self._answer_step(response, text)
        sink = self._sink
        self._think_only_streak = 0
        self._answer_so_far = answer
        self._conversation.append(
            Message.assistant(answer, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.served_by = response.provider
        verdict = await output.check_text(answer, self.steps)
        if verdict.ok:
            if sink is not None:
                sink.emit("step.finished", tool_calls=0)
            return self._result(answer, tuple(self._conversation), output=verdict.value)
        self._conversation.append(Message.user(verdict.feedback))
        if sink is not None:
            sink.emit("step.finished", tool_calls=0, output_invalid=True)
        if verdict.exhausted:
            return self._result(answer, tuple(self._conversation), error=output.error)
        return None

    async def _output_calls(
        self, output: OutputRun, response: LLMResponse, text: str, calls: Sequence[ToolCall]
    ) -> RunResult[Any] | None:
        """A step with output calls: the other calls run first and their results stay, then the output.

        The first output call with a valid answer ends the run (its result says so, to keep the
        conversation well formed for a later turn); invalid ones get every issue listed, and the
        forced choice stays for the next step.
        """
        self._think_only_streak = 0
        answer = strip_think(text)
        if answer and answer_of(answer) is not None:
            self._answer_so_far = answer
        calls = self._unique_ids(calls)
        self._conversation.append(
            Message.assistant(answer, calls, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.tool_calls.extend(calls)
        self.served_by = response.provider
        others = [c for c in calls if not output.is_output_call(c)]
        results: tuple[ToolResult, ...] = ()
        if others:
            results = await self._execute(others, self.steps)
            if self._config.may_pause and _any_pending(results):
                return self._pause(calls, results, output_step=True)
        return await self._output_checked(output, calls, others, results)

    async def _output_checked(
        self,
        output: OutputRun,
        calls: Sequence[ToolCall],
        others: Sequence[ToolCall],
        results: tuple[ToolResult, ...],
    ) -> RunResult[Any] | None:
        """The rest of a step with output calls: the other calls' results fed back, then the output checked."""
        end_turn = False
        if others:
            view = StepView(self.steps, others, results)
            end_turn = self._feed_back(view, finish=False)
            self._previous = view
        verdict = await output.check_calls([c for c in calls if output.is_output_call(c)], self.steps)
        for call, content, ok in verdict.results:
            self._conversation.append(Message.tool(call.id, content, call.name, is_error=not ok))
        sink = self._sink
        if verdict.ok:
            if sink is not None:
                sink.emit("step.finished", tool_calls=len(calls), output=True)
            return self._result(self._answer_so_far, tuple(self._conversation), output=verdict.value)
        if sink is not None:
            sink.emit("step.finished", tool_calls=len(calls), output_invalid=True)
        if verdict.exhausted:
            return self._result(self._answer_so_far, tuple(self._conversation), error=output.error)
        if end_turn:
            return self._result(self._answer_so_far, tuple(self._conversation))
        return None

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
                return self._result(self._answer_so_far, tuple(self._conversation), bounded=True)
            return None
        self._think_only_streak = 0
        self._answer_so_far = answer
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
        return self._result(answer, tuple(self._conversation))

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
        substantive, becomes the run's answer so far.  The calls run through :meth:`_execute`, the
        one place a step's calls are executed; :meth:`_feed_back` takes their results.

        :returns: the run's result when a status routed to ``"end_turn"`` ends it, else ``None``.
        :raises ToolStatusError: a status routed to ``"raise"``.

        Cancellation: propagates out of the running tools, which are cancelled with the step (an
        async tool sees it; a sync tool's thread is abandoned); no result of theirs is fed back.
        """
        self._think_only_streak = 0
        answer = strip_think(text)
        if answer and answer_of(answer) is not None:
            self._answer_so_far = answer
        calls = self._unique_ids(calls)
        self._conversation.append(
            Message.assistant(answer, calls, reasoning=response.reasoning, provider_data=response.provider_data)
        )
        self.tool_calls.extend(calls)
        self.served_by = response.provider
        config = self._config
        if config.handoffs:
            taken = handoff_calls(calls, config.handoffs)
            if taken:
                return await self._handoff_step(calls, taken)
        results = await self._execute(calls, self.steps)
        if config.may_pause and _any_pending(results):
            return self._pause(calls, results)
        return self._after_tools(calls, results)

    def _after_tools(self, calls: Sequence[ToolCall], results: tuple[ToolResult, ...]) -> RunResult[Any] | None:
        """A tool step's results fed back (:meth:`_feed_back`); the run's result when a status ends the turn."""
        view = StepView(self.steps, calls, results)
        if self._feed_back(view):
            return self._result(self._answer_so_far, tuple(self._conversation))
        self._previous = view
        return None

    # -- handoffs (agentactors.loop.handoff) ---------------------------------------------------------

    async def _handoff_step(self, calls: Sequence[ToolCall], taken: Sequence[ToolCall]) -> RunResult[Any] | None:
        """A tool step with handoff calls: the other calls run, the first handoff is taken, the seat changes.

        The other calls' results and the handoff's ("transferred") go back in call order, so the target
        agent reads a well-formed conversation; a second handoff call in the step is answered "not
        used".  When another call of the step waits for approval, the run pauses first and the handoff
        is answered "not used" (the model may call it again once the decisions are in).
        """
        config = self._config
        first = taken[0]
        target = config.handoffs[first.name]
        others = [c for c in calls if c.name not in config.handoffs]
        by_id: dict[str, ToolResult] = {}
        if others:
            by_id = {r.call_id: r for r in await self._execute(others, self.steps)}
        pausing = config.may_pause and _any_pending(by_id.values())
        for call in taken:
            if call is first and not pausing:
                text = transferred_text(target)
            elif pausing:
                text = "Not used: other calls of this step wait for approval; call it again afterwards."
            else:
                text = not_used_text(target)
            by_id[call.id] = ToolResult.of(call.id, call.name, ToolStatus.ok, text)
        results = tuple(by_id[c.id] for c in calls)
        if pausing:
            return self._pause(calls, results)
        if self._feed_back(StepView(self.steps, calls, results)):
            return self._result(self._answer_so_far, tuple(self._conversation))
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

    # -- approvals (agentactors.loop.pause) ----------------------------------------------------------

    def _pause(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult], *, output_step: bool = False
    ) -> RunResult[Any]:
        """End the run paused: some of the step's calls wait for a person's decision.

        ``results`` are the step's results so far (pending placeholders among them); what ran is kept
        in the :class:`~agentactors.loop.pause.PausedRun` the result carries, nothing is fed back yet.
        """
        waiting = {r.call_id: pending_reason(r) for r in results if r.awaiting_approval}
        pending = tuple(c for c in calls if c.id in waiting)
        state = PausedRun(
            self.run_id,
            tuple(self._conversation),
            tuple(calls),
            tuple(r for r in results if not r.awaiting_approval),
            pending,
            waiting,
            self.steps,
            self._total_usage(),
            tuple(self.tool_calls),
            self._answer_so_far,
            self._config.agent_name,
            tuple(self._handoffs or ()),
            output_step,
        )
        sink = self._sink
        if sink is not None:
            sink.emit(
                "run.paused",
                pending=[{"call_id": c.id, "name": c.name, "reason": waiting[c.id]} for c in pending],
            )
            sink.emit("step.finished", tool_calls=len(calls), paused=True)
        log.debug("run %s: paused at step %d for %d call(s)", self.run_id, self.steps, len(pending))
        return self._result(self._answer_so_far, tuple(self._conversation), resume_state=state)

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
        new = await self._execute(state.pending, state.step, decisions)
        by_id = {r.call_id: r for r in state.results}
        by_id.update((r.call_id, r) for r in new)
        calls = state.calls
        ran = [c for c in calls if c.id in by_id]
        results = tuple(by_id[c.id] for c in ran)
        if state.output_step and self._output is not None:
            self._output.resume_tool_step()
            return await self._output_checked(self._output, calls, ran, results)
        return self._after_tools(ran, results)

    def _unique_ids(self, calls: Sequence[ToolCall]) -> Sequence[ToolCall]:
        """``calls`` with every id unique in the run: a call reusing an id gets a fresh one (docs/loop.md).

        Two calls with one id would both run (two side effects for one id) and the next request
        would carry two results for it, which vendors reject.  Renaming before anything runs keeps
        the one place ids are decided here: the assistant message, the executor, the results and
        ``RunResult.tool_calls`` all carry the new id.  "In the run" means every call id in its
        conversation so far — the caller's history included — and the earlier calls of the step.
        """
        taken = self._call_ids
        if taken is None:  # the run's first tool step: the ids its input conversation already holds
            taken = self._call_ids = {c.id for m in self._conversation for c in m.tool_calls}
        if len(calls) == 1 and calls[0].id not in taken:  # the common case: nothing to rename
            taken.add(calls[0].id)
            return calls
        out: list[ToolCall] = []
        for call in calls:
            if call.id in taken:
                fresh = _fresh_id(call.id, taken)
                if self._sink is not None:
                    self._sink.emit("tools.duplicate_call_id", call_id=call.id, renamed_to=fresh, name=call.name)
                log.info("run %s: call id %r was used already; %s runs as %r", self.run_id, call.id, call.name, fresh)
                call = attrs.evolve(call, id=fresh)
            taken.add(call.id)
            out.append(call)
        return tuple(out)

    def _feed_back(self, view: StepView, *, finish: bool = True) -> bool:
        """Append a tool step's results (with the nudges' notes), take the follow-ups, route each status.

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
        return end_turn

    # -- helpers of the layers --------------------------------------------------------------------

    def _deliver(self, text: str) -> None:
        if self._sink is not None:
            self._sink.emit("llm.text_delta", text=text)
        if self._on_text is not None:
            try:
                self._on_text(text)
            except Exception:  # a user callback must not break the run
                log.exception("on_token callback raised; the run goes on")

    async def _execute(
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
            results: tuple[ToolResult, ...] = await self._tools.ask(ExecuteTools(tuple(calls), context))
        finally:
            lineage.leave(token)
        return results

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
        if self._answer_so_far:
            return self._result(self._answer_so_far, tuple(conversation), bounded=True, error=error)
        return self._result("", tuple(conversation), error=error)

    def _failed(self, exc: Exception) -> RunResult[Any]:
        """The run's result when the provider stack gave up at this step (a vendor's error body never in it)."""
        error = exc if isinstance(exc, ProviderError) else classify_exception(exc, provider="provider")
        if self._sink is not None:
            self._sink.emit("step.finished", failed=True, error=error)
        log.debug("run %s: generation failed at step %d: %s", self.run_id, self.steps, type(error).__name__)
        if self._answer_so_far:
            # Something useful was produced: keep it, and say why the run stopped early.
            return self._result(self._answer_so_far, tuple(self._conversation), bounded=True, error=error)
        return self._result("", tuple(self._conversation), generation_failed=True, error=error)


def _any_pending(results: Iterable[ToolResult]) -> bool:
    """Whether a call among ``results`` waits for a person's decision."""
    return any(r.awaiting_approval for r in results)


def _request_like(skeleton: LLMRequest, messages: tuple[Message, ...]) -> LLMRequest:
    """The request ``LLMRequest(messages, ...)`` with the skeleton's other fields — without re-checking them.

    Building an LLMRequest checks every field (tool names unique, the choice among the tools, each
    message a Message...) and copies the containers, on every step of every run.  The skeleton
    passed those checks once; the only ones about ``messages`` (a non-empty tuple of Message)
    hold for the loop's conversation by construction (the run checks its input messages).

    The fields are spelled out (a loop over their names costs a third more, every step), so a field
    LLMRequest gains must be added here; the requests test compares every field and says so.
    """
    if not messages:
        raise ValueError("an LLMRequest needs at least one message")
    request: LLMRequest = object.__new__(LLMRequest)
    put = object.__setattr__  # how attrs itself sets the fields of a frozen instance
    put(request, "messages", messages)
    put(request, "model", skeleton.model)
    put(request, "tools", skeleton.tools)
    put(request, "tool_choice", skeleton.tool_choice)
    put(request, "max_tokens", skeleton.max_tokens)
    put(request, "temperature", skeleton.temperature)
    put(request, "stop", skeleton.stop)
    put(request, "vendor_options", dict(skeleton.vendor_options))
    put(request, "top_p", skeleton.top_p)
    put(request, "seed", skeleton.seed)
    put(request, "parallel_tool_calls", skeleton.parallel_tool_calls)
    put(request, "reasoning_effort", skeleton.reasoning_effort)
    put(request, "thinking_budget", skeleton.thinking_budget)
    put(request, "cache", skeleton.cache)
    put(request, "timeout", skeleton.timeout)
    put(request, "response_format", skeleton.response_format)
    return request


#: Vendors cap call ids (OpenAI at 40 characters); a fresh id keeps within it.
_MAX_CALL_ID = 40


def _fresh_id(original: str, taken: set[str]) -> str:
    """``<original>_2`` (``_3``, ...): recognisably the same call's, unused in the run, at most 40 chars."""
    n = 2
    while True:
        suffix = f"_{n}"
        fresh = (original or "call")[: _MAX_CALL_ID - len(suffix)] + suffix
        if fresh not in taken:
            return fresh
        n += 1


def _suggestions(call: ToolCall) -> tuple[str, ...]:
    value = call.arguments.get("suggestions", ())
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if str(v).strip())
    return ()
