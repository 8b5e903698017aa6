"""``RunResult``: what one agent run comes back as."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any, Generic, Self

import attrs

from .._slots import draft
from ..errors import RunError
from ..messages import Message, StopReason, ToolCall, Usage
from ..output.spec import OutputT
from ..pricing import Cost
from .pause import PausedRun

__all__ = ["RunResult", "answered"]


# The converters are ``tuple`` itself at run time (no Python frame per field per result); the type
# checker reads the typed signatures (attrs' mypy plugin cannot read the builtin's overloads).
if typing.TYPE_CHECKING:

    def _strings(value: Iterable[str]) -> tuple[str, ...]: ...

    def _messages(value: Iterable[Message]) -> tuple[Message, ...]: ...

    def _calls(value: Iterable[ToolCall]) -> tuple[ToolCall, ...]: ...

else:
    _strings = _messages = _calls = tuple


class _Text:
    """The output of a text run: its content (a sentinel, so a text result stores no second copy)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<the content>"

    def __reduce__(self) -> str:
        return "TEXT"


#: ``RunResult(output=TEXT)`` (the default): the output is the content.
TEXT: Any = _Text()


@attrs.frozen(slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of one run of the tool loop; generic in the agent's output type (``str`` by default).

    :ivar content: the answer text (think blocks removed); on ``bounded`` runs the
        last substantive answer; on failed runs a plain explanation, never a
        vendor's raw error body.
    :ivar messages: the whole conversation after the run: the input messages
        plus everything the run added.  A cancelled run adds nothing; a run that
        ended in the middle of a tool step (its deadline, a failure) leaves that
        step out, so no call is without its result.
    :ivar tool_calls: every call the model asked for, in order.
    :ivar steps: model calls made (think-only and failed ones included).
    :ivar bounded: the run stopped at ``max_steps`` or ``max_empty_steps`` rather
        than on an answer — or the provider failed after an earlier step had
        produced substantive text (then ``error`` is set and ``content`` is that text).
    :ivar cancelled: the run was cancelled through its own handle.
    :ivar generation_failed: the provider stack gave up and nothing useful was produced.
    :ivar error: the provider error (or the tool-status routing error) that ended the run.
    :ivar followups: the suggestions of the last ``suggest_followups`` call.
    :ivar usage: tokens summed over every step.
    :ivar served_by: the provider member that served the final answer.
    :ivar run_id: the id every event of this run carries.
    :ivar output: the typed result (:attr:`output`).
    :ivar children: the results of the runs this run started from its tools (delegation:
        :meth:`Agent.as_tool <agentactors.Agent.as_tool>`, or any tool that runs an agent), in the order
        they finished; their usage is included in :attr:`usage`.
    :ivar agent: the name of the agent that produced the answer (after handoffs, the last one).
    :ivar handoffs: the agents the conversation was handed to, in order (``()`` without a handoff).
    :ivar paused: the run stopped at tool calls awaiting a person's decision (:attr:`pending_approvals`);
        ``agent.resume(result, decisions)`` (or ``session.resolve``) goes on from there.
    :ivar pending_approvals: the calls awaiting a decision, in call order (``()`` unless paused).
    :ivar resume_state: what a paused run needs to go on (:class:`~agentactors.loop.pause.PausedRun`);
        ``None`` unless paused.
    :ivar cost: what the run's model calls cost (:class:`~agentactors.pricing.Cost`), its children's
        included; ``None`` when a call went to a model without a price (:mod:`agentactors.pricing`).
    :ivar forked_from: the run this one was forked from (:func:`agentactors.journal.fork`), else ``None``.
    :ivar stop_reason: why the run's last model response stopped (:class:`~agentactors.messages.StopReason`):
        ``max_tokens`` or ``content_filter`` on an :attr:`ok` run say its answer was cut off or filtered — the
        run still ended on that answer, so :attr:`ok` does not change; ``None`` when no model answered.
    """

    content: str
    messages: tuple[Message, ...] = attrs.field(converter=_messages)
    tool_calls: tuple[ToolCall, ...] = attrs.field(default=(), converter=_calls)
    steps: int = 0
    bounded: bool = False
    cancelled: bool = False
    generation_failed: bool = False
    error: BaseException | None = attrs.field(default=None, eq=False)
    followups: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    usage: Usage = attrs.field(factory=Usage)
    served_by: str | None = None
    run_id: str | None = None
    _output: Any = attrs.field(default=TEXT, kw_only=True, alias="output", repr=False)
    children: tuple[RunResult[Any], ...] = attrs.field(default=(), kw_only=True, repr=False)
    agent: str | None = attrs.field(default=None, kw_only=True)
    handoffs: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    resume_state: PausedRun | None = attrs.field(default=None, kw_only=True, repr=False, eq=False)
    cost: Cost | None = attrs.field(default=None, kw_only=True)
    forked_from: str | None = attrs.field(default=None, kw_only=True)
    stop_reason: StopReason | None = attrs.field(default=None, kw_only=True)

    @property
    def paused(self) -> bool:
        """The run stopped at tool calls awaiting approval (see :attr:`pending_approvals`)."""
        return self.resume_state is not None

    @property
    def pending_approvals(self) -> tuple[ToolCall, ...]:
        """The tool calls awaiting a decision, in call order; ``()`` unless :attr:`paused`."""
        state = self.resume_state
        return state.pending if state is not None else ()

    @property
    def output(self) -> OutputT:
        """The answer as the agent's ``output_type``: validated, converted, ready to use.

        ``output_type=str`` (the default): the same as :attr:`content`.  A typed run that did not end on
        a valid answer — ``OutputValidationError`` in :attr:`error` after ``output_retries`` re-asks, a
        failed, bounded or cancelled run — has ``None`` here (check :attr:`ok`).  One such run is :attr:`ok`: a
        run a tool status routed to ``"end_turn"`` (``on_tool_status``) ended before an output was taken — it
        ended as it was told to, without the value; an agent that routes statuses so checks ``output is None``
        too (``docs/output.md``).
        """
        value: Any = self.content if self._output is TEXT else self._output
        return typing.cast(OutputT, value)

    @property
    def ok(self) -> bool:
        """The run ended on an answer: not bounded, cancelled or failed."""
        return not (
            self.bounded
            or self.cancelled
            or self.generation_failed
            or self.error is not None
            or self.resume_state is not None
        )

    def raise_for_error(self) -> Self:
        """Raise the run's error, if it failed; else return this result, so a call chains:
        ``result = (await agent.run(prompt)).raise_for_error()``.

        A run returns its failures in :attr:`error` rather than raising them (a batch keeps one result per
        input whatever happens); this is the one line that turns them back into an exception where a caller
        wants one.  It raises when :attr:`error` is set — that very exception object (a
        :class:`~agentactors.ProviderError`, :class:`~agentactors.OutputValidationError`,
        :class:`~agentactors.RunDeadlineExceededError`, :class:`~agentactors.CostLimitExceededError`,
        :class:`~agentactors.errors.RunInterruptedError`, ...) — or when :attr:`generation_failed` is set without one
        (a :class:`~agentactors.RunError`).  An error that is no ``Exception`` (a batch keeps a run's own
        ``SystemExit`` or stray cancellation there) is raised as a :class:`~agentactors.RunError` from it: raised
        itself, far from its run, it would end the caller's program or pass for the caller's own cancellation.

        Everything else is returned as it is, :attr:`ok` or not: a :attr:`paused` run (it waits for a decision,
        ``agent.resume``), a :attr:`cancelled` one (cancelled on purpose, through its handle or its batch) and
        a :attr:`bounded` one with no error (it reached ``max_steps`` / ``max_empty_steps``; :attr:`content` is
        its last substantive answer, a typed :attr:`output` is ``None``).  A bounded run *with* an error (the
        provider failed, or the cost limit was passed, after an earlier step had answered) raises it.  To
        insist on a finished answer, test :attr:`ok` instead.

        :raises Exception: the run's :attr:`error`.
        :raises RunError: ``generation_failed`` with no error; an error that is no ``Exception``.
        """
        error = self.error
        if error is None:
            if not self.generation_failed:
                return self
            raise RunError("the run failed (generation_failed) and holds no error saying why")
        if isinstance(error, Exception):
            raise error
        cause = error if isinstance(error, BaseException) else None
        raise RunError(f"the run failed with {type(error).__name__}: {error!s}") from cause


# What answered() fills, field by field, then makes a RunResult (agentactors._slots).
_new = object.__new__
_ResultDraft = draft(
    RunResult,
    "content messages tool_calls steps bounded cancelled generation_failed error followups usage served_by run_id "
    "output children agent handoffs resume_state cost forked_from stop_reason",
)


def answered(
    content: str,
    messages: tuple[Message, ...],
    tool_calls: tuple[ToolCall, ...],
    steps: int,
    followups: tuple[str, ...],
    usage: Usage,
    served_by: str | None,
    run_id: str | None,
    agent: str | None,
    cost: Cost | None,
    stop_reason: StopReason | None = None,
) -> RunResult[Any]:
    """The result of a run that ended on its answer — ``RunResult(content, messages, tool_calls, steps,
    followups=, usage=, served_by=, run_id=, agent=, cost=, stop_reason=)``, the rest at their defaults — its fields set
    one by one: the same result in about half the time (one per run).  Every argument is positional; the
    three sequences must be tuples (others go to the constructor, whose converters make them tuples).
    """
    if type(messages) is not tuple or type(tool_calls) is not tuple or type(followups) is not tuple:
        return RunResult(
            content, messages, tool_calls, steps, followups=followups, usage=usage, served_by=served_by,
            run_id=run_id, agent=agent, cost=cost, stop_reason=stop_reason,
        )
    result: Any = _new(_ResultDraft)
    result.content = content
    result.messages = messages
    result.tool_calls = tool_calls
    result.steps = steps
    result.bounded = False
    result.cancelled = False
    result.generation_failed = False
    result.error = None
    result.followups = followups
    result.usage = usage
    result.served_by = served_by
    result.run_id = run_id
    result.output = TEXT
    result.children = ()
    result.agent = agent
    result.handoffs = ()
    result.resume_state = None
    result.cost = cost
    result.forked_from = None
    result.stop_reason = stop_reason
    result.__class__ = RunResult
    made: RunResult[Any] = result
    return made
