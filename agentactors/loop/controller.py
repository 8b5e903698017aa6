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
    └── _step              one step: its request (_request), one generation, then one of
        ├── _generate      one model call: Complete, or the stream path (_generate_streamed)
        ├── _answer_step   no tool calls: think-only, continued past by a nudge, or the answer
        └── _tool_step     tool calls: the assistant message, _execute, then _feed_back
                           (results with the nudges' notes, follow-ups, status routing)

A step's outcome is a value: ``None`` to go on, or the run's
:class:`~agentactors.loop.result.RunResult` when the step ends the run.  Only
``_loop``, ``_step`` and ``_tool_step`` are coroutines: the parts that do not
await are plain methods, and ``_generate`` hands the provider's coroutine to the
step instead of wrapping it — each ``async def`` awaited per step is a coroutine
frame per step, held by every run in flight (~0.3 KB; 10,000 runs in flight are
a target).

The seams:

* a step's tool choice is decided in ``_choose``, and nowhere else;
* a step's calls are executed in ``_execute``, called by ``_tool_step`` only;
* a run ends where a layer returns its result: ``_loop`` (``max_steps``),
  ``_step`` (the provider stack giving up, through ``_failed``), ``_answer_step``
  (an answer, ``max_empty_steps``) and ``_tool_step`` (``end_turn``);
  ``_feed_back`` raises for ``"raise"``.

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
from collections.abc import Callable, Coroutine, Mapping, Sequence
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
from ..tools.results import ToolResult, ToolStatus
from .context_budget import fit_to_budget
from .json_transport import StreamFilter, contract_text, parse_reply, to_wire_messages
from .nudges import FOLLOWUPS_TOOL, Nudges, NudgeSession, StepView, append_note
from .result import RunResult
from .thinking import ThinkFilter, answer_of, strip_think

__all__ = ["LoopConfig", "LoopController", "StatusRoute"]

log = logging.getLogger("agentactors.loop")

StatusRoute = Literal["continue", "end_turn", "raise"]
_ROUTES = frozenset(("continue", "end_turn", "raise"))
_NO_USAGE = Usage()



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
        "_input_key",
        "_native",
        "_on_text",
        "_output",
        "_previous",
        "_priority",
        "_provider",
        "_run_settings",
        "_session",
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
        if self._sink is None:
            # Nothing to record: the loop's own coroutine, without a frame of ours around it
            # (a frame is ~0.3 KB, and 10k runs in flight are a target).
            return self._loop(messages)
        return self._recorded(self._sink, messages)

    async def _recorded(self, sink: EventSink, messages: Sequence[Message]) -> RunResult[Any]:
        """``run`` with a sink: ``run.started`` / ``run.finished`` around the loop.

        Cancellation: ``run.finished`` says ``cancelled=True``, then the cancellation propagates.
        """
        inputs = tuple(messages)
        config = self._config
        sink.emit(
            "run.started", agent=config.agent_name, messages=len(inputs), native_tools=self._native, **config.run_info
        )
        try:
            result = await self._loop(inputs)
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
        )
        return result

    def cancelled_result(self, messages: Sequence[Message]) -> RunResult[Any]:
        """The result of a run cancelled through its handle: nothing of the turn kept."""
        return self._result("", tuple(messages), cancelled=True)

    def _result(self, content: str, messages: tuple[Message, ...], **flags: Any) -> RunResult[Any]:
        if self._output is not None and "output" not in flags:
            flags["output"] = None  # a typed run that did not end on a valid answer
        return RunResult(
            content,
            messages,
            tuple(self.tool_calls),
            self.steps,
            followups=self.followups,
            usage=self.usage,
            served_by=self.served_by,
            run_id=self.run_id,
            **flags,
        )

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

    async def _loop(self, messages: Sequence[Message]) -> RunResult[Any]:
        """The run: its state set up from ``messages``, then one step after another until one ends it.

        A step ends the run by returning its result; when ``max_steps`` steps did not, the run ends
        here, ``bounded``, with the last substantive answer — or, when the run's deadline passes
        first, with :class:`~agentactors.errors.RunDeadlineExceeded` (:meth:`_past_deadline`).

        Cancellation: propagates from the step it interrupts (the deadline's own is absorbed here).
        """
        self._start(messages)
        ticket = run_ticket.start_ticket(self._deadline, self._priority)
        token = run_ticket.enter(ticket)
        max_steps = self._config.max_steps
        try:
            # The same loop twice, on purpose: only a run with a deadline pays for a cancel scope, and
            # a shared no-op context manager in its place would cost every other run two calls per run.
            if ticket.deadline is None:
                while self.steps < max_steps:
                    ended = await self._step()
                    if ended is not None:
                        return ended
                return self._result(self._answer_so_far, tuple(self._conversation), bounded=True)
            with anyio.move_on_at(ticket.deadline):
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
        config = self._config
        self._conversation = list(inputs)
        system, self._skip = self._system(inputs)
        self._system_message = system
        for m in inputs:  # what LLMRequest would check of them; every later message is the loop's own
            if not isinstance(m, Message):
                raise TypeError(f"LLMRequest.messages must hold Message objects, not {type(m).__name__}")
        self._choice = config.tool_choice if self._native and config.tool_specs else ToolChoice.auto()
        self._skeleton: LLMRequest | None = None
        budget = config.context_budget_chars
        if budget is not None and system is not None:
            budget = max(1, budget - len(system.content))
        self._budget = budget
        # Started at the first tool step: a text-only run pays nothing for nudges.
        self._session: NudgeSession | None = None
        self._previous: StepView | None = None
        self._answer_so_far = ""
        self._think_only_streak = 0
        self._call_ids: set[str] | None = None  # the run's call ids, gathered at its first tool step
        if config.output is not None:
            self._output = self._output_run(config.output)

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
        request = self._request()
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
        end_turn = False
        if others:
            results = await self._execute(others, self.steps)
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
        results = await self._execute(calls, self.steps)
        view = StepView(self.steps, calls, results)
        if self._feed_back(view):
            return self._result(self._answer_so_far, tuple(self._conversation))
        self._previous = view
        return None

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
        if self._session is None and config.nudges is not None:
            self._session = config.nudges.start(config.read_only.__contains__)
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

    async def _execute(self, calls: Sequence[ToolCall], step: int) -> tuple[ToolResult, ...]:
        config = self._config
        if self._tools is None:
            # No executor (the agent has no tools): every call is for an unknown tool.
            from ..tools.results import unknown_tool_text

            return tuple(
                ToolResult.of(c.id, c.name, ToolStatus.invalid, unknown_tool_text(c.name, ())) for c in calls
            )
        # Positional, in field order (run_id, agent, step, cap, policy, deps, input_key): keywords cost a
        # good part of building it, once per step.
        context = ExecutionContext(
            self.run_id,
            config.agent_name,
            step,
            config.max_tool_result_chars,
            config.tool_policy,
            self._deps,
            self._input_key,
        )
        results: tuple[ToolResult, ...] = await self._tools.ask(ExecuteTools(tuple(calls), context))
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
