"""A typed run's steps (``docs/output.md``): its requests by output strategy, its answers checked.

A run of an agent with an ``output_type`` other than ``str`` holds an :class:`OutputSteps` for the seat
answering (the controller makes one with the run's state, and again after a handoff; a plain run holds
none and pays nothing).  The controller's layers call it where a typed run differs from a plain one:

* the request (:meth:`OutputSteps.request`): each model call asks for the result with a strategy — the
  output tools and a forced choice (``tool``), a JSON-schema response format (``native``) or an
  instruction in the system message (``prompted``) — chosen per call by the :class:`OutputRun`;
* a text answer (:meth:`OutputSteps.answer_step`): checked, and taken (the run ends with its value) or
  refused with every issue listed (the model reads why in a user message, up to ``output_retries``);
* calls of an output tool (:meth:`OutputSteps.calls_step`): the step's other calls run first and their
  results stay, then the output calls are checked the same way — also when a paused step goes on
  (:meth:`OutputSteps.resume`).

The dependency goes one way: the controller calls these steps and hands them what is the run's own —
its :class:`~agentactors.loop.state.LoopState` (the conversation, the calls and results, the result,
through the state's step API) and, where calls run, the controller's ``execute``.  Nothing here knows
the controller.  The typed result's own state (the strategy, attempts, the value) is the
:class:`~agentactors.output.run.OutputRun`'s.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..errors import ErrorKind, ProviderError
from ..events import EventSink
from ..messages import LLMRequest, LLMResponse, Message, StopReason, ToolCall, ToolChoice
from ..output.partial import PartialOutput
from ..output.run import OutputRun
from ..providers.port import default_model_of
from ..settings import ModelSettings
from ..tools.results import ToolResult, ToolStatus
from .config import LoopConfig
from .nudges import StepView
from .pause import any_pending
from .result import RunResult
from .state import LoopState

__all__ = ["Execute", "OutputSteps"]

#: ``execute(calls, step)``: how a step's calls run — the controller's, which asks the tool executor.
Execute = Callable[[Sequence[ToolCall], int], Awaitable[tuple[ToolResult, ...]]]


class OutputSteps:
    """One seat's typed steps in one run (see the module docstring).

    :param config: the answering agent's config (its ``output`` is set).
    :param provider: the reference to its ProviderActor (auto asks the provider it hosts what it carries).
    :param native: whether that provider calls tools natively.
    :param system: the seat's system message and how many input messages it replaces (the ``tool`` and
        ``native`` strategies send it as it is; ``prompted`` adds its instruction).
    :param settings: the run's settings merged over the agent's, or ``None`` for the agent's.
    """

    __slots__ = ("_config", "_may_pause", "_native", "_settings", "_sink", "_skip", "_system", "output")

    def __init__(
        self,
        config: LoopConfig,
        provider: Any,
        *,
        native: bool,
        system: tuple[Message | None, int],
        settings: ModelSettings | None,
        sink: EventSink | None,
        run_id: str | None,
        deps: Any,
    ) -> None:
        assert config.output is not None
        self._config = config
        self._native = native
        self._system, self._skip = system
        self._settings = settings
        self._sink = sink
        self._may_pause = config.may_pause
        # Auto asks the provider its ProviderActor hosts (read through the reference's ``actor``).
        hosted = getattr(getattr(provider, "actor", None), "provider", None)
        if hosted is None:
            hosted = provider
        #: The typed result's own state: strategy, attempts, value, error.
        self.output = OutputRun(
            config.output,
            provider=hosted,
            model=config.model or default_model_of(hosted),
            native=native,
            has_tools=bool(config.tool_specs),
            sink=sink,
            run_id=run_id,
            agent=config.agent_name,
            deps=deps,
            settings=settings if settings is not None else config.settings,
        )

    # -- the request --------------------------------------------------------------------------------

    def begin_step(self) -> str | None:
        """This step's strategy, or ``None`` for a plain ``str`` answer (a validator's): the usual request.

        :raises UnsupportedToolChoiceError: an explicit ``ToolOutput`` the transport cannot force.
        """
        return self.output.begin_step()

    def request(
        self, strategy: str, choice: ToolChoice | None, conversation: Sequence[Message]
    ) -> tuple[LLMRequest, Message | None, int]:
        """The skeleton, system message and skip of a step asking with ``strategy``.

        ``choice``: the run's tool choice for this step, which ``native`` and ``prompted`` keep; ``None``
        for ``tool``, which forces its own on every step until an output tool is called (the call ends
        the run, or is refused and asked again).  The prompted instruction joins the system message made
        from the conversation's first message (worked out once).
        """
        config = self._config
        if choice is None:
            choice = self.output.forced_choice(bool(config.tool_specs))
        skeleton = config.output_skeleton(strategy, self._native, choice, self._settings)
        if strategy != "prompted":
            return skeleton, self._system, self._skip
        output = self.output
        if output.prompted_system is None:
            output.prompted_system = config.system_message(self._native, conversation[:1], output.config.prompt)
        system, skip = output.prompted_system
        return skeleton, system, skip

    def degrade(self, exc: Exception) -> bool:
        """Whether the call failed for a forced choice auto may drop: the step is then asked again."""
        return self.output.degrade(exc)

    def partials(self) -> PartialOutput | None:
        """For the stream path: a follower of the answer's JSON, when someone listens (``output.partial``)."""
        if self._sink is None:
            return None
        return self.output.partials(self._emit_partial)

    def _emit_partial(self, value: Any) -> None:
        if self._sink is not None:
            self._sink.emit("output.partial", value=value)

    # -- the steps ----------------------------------------------------------------------------------

    def has_output_call(self, calls: Sequence[ToolCall]) -> bool:
        """Whether a call among ``calls`` is of an output tool offered at this step."""
        return any(self.output.is_output_call(c) for c in calls)

    async def answer_step(self, run: LoopState, response: LLMResponse, answer: str) -> RunResult[Any] | None:
        """A text answer (not think-only), checked: taken, it ends the run with its value; refused, the
        answer stays in the conversation and the model reads why — or, past ``output_retries``, the run
        ends with the error.  (The JSON of native and prompted; a plain validator's ``str``.)

        Cancellation: propagates from the check (:meth:`OutputRun.check_text
        <agentactors.output.run.OutputRun.check_text>`); the answer is in the run's conversation by then, which
        a cancelled run does not return (its result holds its inputs only).
        """
        sink = self._sink
        run.record_answer(response, answer)
        cut_off = response.stop_reason == StopReason.max_tokens
        verdict = await self.output.check_text(answer, run.steps, cut_off=cut_off)
        if verdict.ok:
            if sink is not None:
                sink.emit("step.finished", tool_calls=0)
            return run.result(answer, output=verdict.value)
        if response.stop_reason is StopReason.content_filter:
            # A refusal the vendor's filter stopped: asked again, it is refused again — and the re-asks' error
            # would say the answer lacked a field, not that it was filtered.
            reason = response.raw_stop_reason or response.stop_reason.value
            return run.failed(
                ProviderError(
                    f"the model's answer was stopped by a content filter ({reason})",
                    provider=response.provider or "provider", model=response.model, kind=ErrorKind.content_policy,
                )
            )
        run.append(Message.user(verdict.feedback))
        if sink is not None:
            sink.emit("step.finished", tool_calls=0, output_invalid=True)
        if verdict.exhausted:
            return run.result(answer, error=self.output.error)
        return None

    async def calls_step(
        self, run: LoopState, execute: Execute, response: LLMResponse, text: str, calls: Sequence[ToolCall]
    ) -> RunResult[Any] | None:
        """A step with output calls: the other calls run first and their results stay, then the output.

        The first output call with a valid answer ends the run (its result says so, to keep the
        conversation well formed for a later turn); invalid ones get every issue listed, and the forced
        choice stays for the next step.  When another call waits for approval, the run pauses first.  A handoff
        called beside them is not taken: it is answered "not used" (:data:`BESIDE_OUTPUT_TEXT`).

        Cancellation: propagates from the other calls (``execute``: each running call ``cancelled``) or from
        the output check; the step's messages are then the run's private conversation, which a cancelled run
        does not return.
        """
        calls = run.record_calls(response, text, calls)
        output = self.output
        others = [c for c in calls if not output.is_output_call(c)]
        results: tuple[ToolResult, ...] = ()
        if others:
            handoffs = self._config.handoffs
            beside = [c for c in others if c.name in handoffs] if handoffs else None
            if beside:  # answered here: the executor knows no handoff tool ("no tool named ..." the model read)
                ran = [c for c in others if c.name not in handoffs]
                results = _with_handoffs(others, await execute(ran, run.steps) if ran else (), beside)
            else:
                results = await execute(others, run.steps)
            if self._may_pause and any_pending(results):
                return run.pause(calls, results, output_step=True)
        return await self._checked(run, calls, others, results)

    async def resume(
        self, run: LoopState, calls: Sequence[ToolCall], ran: Sequence[ToolCall], results: tuple[ToolResult, ...]
    ) -> RunResult[Any] | None:
        """A paused step that held output calls goes on: every other call has its result now (``ran``).

        Cancellation: propagates from the output check, as :meth:`calls_step`'s does.
        """
        self.output.resume_tool_step()
        return await self._checked(run, calls, ran, results)

    async def _checked(
        self,
        run: LoopState,
        calls: Sequence[ToolCall],
        others: Sequence[ToolCall],
        results: tuple[ToolResult, ...],
    ) -> RunResult[Any] | None:
        """The rest of a step with output calls: the other calls' results fed back, then the output checked."""
        output, sink = self.output, self._sink
        end_turn = False
        start = len(run.conversation)
        if others:
            end_turn = run.feed_back(StepView(run.steps, others, results), finish=False)
        verdict = await output.check_calls([c for c in calls if output.is_output_call(c)], run.steps)
        for call, content, ok in verdict.results:
            run.append(Message.tool(call.id, content, call.name, is_error=not ok))
        _in_call_order(run.conversation, start, calls)
        if verdict.ok:
            if sink is not None:
                sink.emit("step.finished", tool_calls=len(calls), output=True)
            return run.result(run.answer_so_far, output=verdict.value)
        if sink is not None:
            sink.emit("step.finished", tool_calls=len(calls), output_invalid=True)
        if verdict.exhausted:
            return run.result(run.answer_so_far, error=output.error)
        if end_turn:
            return run.result(run.answer_so_far)
        return None


def _in_call_order(conversation: list[Message], start: int, calls: Sequence[ToolCall]) -> None:
    """The step's tool messages (``conversation[start:]``) put in the order of ``calls``, as every result is.

    The other calls' results were fed back before the output calls' (they ran first), so an output call made
    before another call would be answered after it: wires that pair results with calls by position (Gemini's
    function responses) would mismatch them.  A message answering no call of the step stays where it is.
    """
    tail = conversation[start:]
    if len(tail) < 2:
        return
    order = {c.id: i for i, c in enumerate(calls)}
    if any(m.role != "tool" or m.tool_call_id not in order for m in tail):
        return
    ranked = sorted(tail, key=lambda m: order[m.tool_call_id or ""])
    if any(a is not b for a, b in zip(ranked, tail, strict=True)):
        conversation[start:] = ranked


#: The result of a handoff call made beside a call of an output tool: the step gives the result, no handoff.
BESIDE_OUTPUT_TEXT = (
    "Not used: a final result was given in the same step. To hand the conversation over, call it on its own."
)


def _with_handoffs(
    calls: Sequence[ToolCall], results: Sequence[ToolResult], handoffs: Sequence[ToolCall]
) -> tuple[ToolResult, ...]:
    """``results`` of the calls that ran and the ``handoffs`` answered "not used", in the order of ``calls``.

    A handoff beside an output call is not taken — the step gives the run's result, or is refused and asked
    again — and it is no tool the executor knows: it was answered as a call of a tool that does not exist.
    """
    by_id = {r.call_id: r for r in results}
    for call in handoffs:
        by_id[call.id] = ToolResult.of(call.id, call.name, ToolStatus.ok, BESIDE_OUTPUT_TEXT)
    return tuple(by_id[c.id] for c in calls)
