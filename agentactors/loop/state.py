"""Where one run of the loop stands (:class:`LoopState`), and what every kind of step does to it.

A run's state is one value, made by one function (the :class:`LoopState` constructor) when its
:class:`~agentactors.loop.controller.LoopController` is made: from the input conversation (or a
paused run's, with its counters) and the answering agent's config.  Nothing of it is set up later,
so a controller is whole from the start.  The state is internal to the loop — it is not the public
``RunState`` a live run reports to its users.

It holds three kinds of things:

* the conversation (private until the run ends: a cancelled turn leaves nothing behind);
* what the result reports: ``steps``, ``usage``, ``tool_calls``, ``followups``, ``served_by``, the last
  substantive answer (``answer_so_far``), the handoffs taken, the link to the runs its tools start;
* what follows the answering agent (its *seat*; set again after a handoff, :meth:`LoopState.seat`):
  its config, its system message and how many input messages it replaces, the context budget left,
  the tool choice and its request skeleton, the nudge session and the step a nudge looks back at,
  the count of think-only steps in a row.

**The step API** — :meth:`~LoopState.record_calls`, :meth:`~LoopState.record_answer`,
:meth:`~LoopState.append`, :meth:`~LoopState.feed_back`, :meth:`~LoopState.pause` and the ends
(:meth:`~LoopState.result`, :meth:`~LoopState.failed`, :meth:`~LoopState.past_deadline`) — is what
every kind of step does to the run.  The controller's layers and a typed run's steps
(:class:`~agentactors.loop.output_steps.OutputSteps`) both call it on the state they are handed, so
neither calls the other back.  Running the calls themselves is the controller's (it asks the executor).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import agentactors._event_payloads as payloads

from ..errors import CostLimitExceededError, ProviderError, RunDeadlineExceeded, ToolStatusError
from ..events import EventSink
from ..gateway.ticket import RunTicket
from ..messages import LLMRequest, LLMResponse, Message, StopReason, ToolCall, ToolChoice, Usage, text_message
from ..providers.errors import classify_exception
from ..tools.results import ToolResult, ToolStatus
from ._history_repair import HistoryRepair, repair_history
from .call_ids import ids_in, unique_ids
from .config import LoopConfig
from .context_budget import ContextBudget
from .cost import RunCost
from .lineage import RunLink
from .nudges import FOLLOWUPS_TOOL, NudgeSession, StepView, append_note
from .pause import PausedRun
from .result import RunResult, answered
from .thinking import answer_of, strip_think

__all__ = ["NO_USAGE", "LoopState"]

log = logging.getLogger("agentactors.loop")

#: A run's usage before its first response: the usage every response that reports none shares, so a run
#: of such responses (scripted ones) allocates no sum.
NO_USAGE = LLMResponse().usage


def _context_budget(chars: int, system: Message | None) -> ContextBudget:
    """The seat's context budget of ``chars``: what the system message leaves of it (a run without a budget holds
    ``None``, and pays nothing for it)."""
    return ContextBudget(max(1, chars - len(system.content)) if system is not None else chars)


class LoopState:
    """One run's state (see the module docstring), made whole by its constructor and changed by the steps.

    :param config: the answering agent's config.
    :param messages: the input conversation, checked as ``LLMRequest`` would check it (for a resumed run,
        the paused run's ``messages``); one with a call left without its result, or a result apart from its
        call, is repaired before anything is sent (:mod:`._history_repair`, recorded in ``repair``).
    :param native: whether the answering agent's provider carries tools natively.
    :param sink: the run's event sink, or ``None``; ``run_id``: the run's id.
    :param paused: the paused run a resumed one goes on from: its counters (steps, usage, calls, answer,
        handoffs) are the run's.
    :raises TypeError: an input message that is not a :class:`~agentactors.messages.Message`.

    The fields are the loop's to read and write; a user reads a run through its result.
    """

    __slots__ = (
        "answer_so_far",
        "budget",
        "call_ids",
        "choice",
        "config",
        "conversation",
        "cost",
        "followups",
        "handoffs",
        "inputs",
        "link",
        "previous",
        "repair",
        "resumed_from",
        "run_id",
        "served_by",
        "session",
        "sink",
        "skeleton",
        "skip",
        "steps",
        "stop_reason",
        "system",
        "think_only_streak",
        "tool_calls",
        "usage",
    )

    def __init__(
        self,
        config: LoopConfig,
        messages: Sequence[Message],
        native: bool,
        sink: EventSink | None,
        run_id: str | None,
        paused: PausedRun | None = None,
    ) -> None:
        inputs = messages if type(messages) is tuple else tuple(messages)
        tooled = False  # whether the history holds tool calls or results: only then is it checked for repair
        for m in inputs:  # what LLMRequest would check of them; every later message is the loop's own
            if not isinstance(m, Message):
                raise TypeError(f"LLMRequest.messages must hold Message objects, not {type(m).__name__}")
            if not tooled and (m.tool_calls or m.role == "tool"):
                tooled = True
        self.sink = sink
        self.run_id = run_id
        self.inputs = inputs  # the caller's very tuple (a session finds its turn's run by it)
        #: The run this one goes on from (a resumed run's pause), or ``None``: how a session finds its resumed turn.
        self.resumed_from = paused.run_id if paused is not None else None
        #: What was repaired of the caller's history before the run sends it (:mod:`._history_repair`), or ``None``.
        self.repair: HistoryRepair | None = None
        if tooled:
            # A paused run's last message holds the calls this run answers: only the history before it is checked.
            self.repair = repair_history(inputs if paused is None else inputs[:-1], run_id)
            if self.repair is not None:
                inputs = self.repair.messages if paused is None else (*self.repair.messages, inputs[-1])
        self.conversation = list(inputs)
        # What the result reports.
        self.steps = 0
        self.usage: Usage = NO_USAGE
        self.cost = RunCost()  # its limit is the controller's to set
        self.tool_calls: tuple[ToolCall, ...] = ()  # a tuple: a run without tool calls allocates no list
        self.followups: tuple[str, ...] = ()
        self.served_by: str | None = None
        #: The last model response's stop reason (set by the controller at every answer): ``RunResult.stop_reason``.
        self.stop_reason: StopReason | None = None
        self.answer_so_far = ""
        self.handoffs: list[str] | None = None
        # The run's call ids, gathered at its first tool step; its link for the runs its tools start, made
        # there too (a run whose tools never run pays for neither).
        self.call_ids: set[str] | None = None
        self.link: RunLink | None = None
        # The seat's (set again by seat()).
        self.config = config
        # The system message the seat sends, how many input messages it replaces, the context budget left.
        system, self.skip = config.system_message(native, inputs)
        self.system = system
        budget = config.context_budget_chars
        self.budget = _context_budget(budget, system) if budget is not None else None
        # The tool choice of the seat's first step (a forced one needs native tools to be carried).
        self.choice = config.tool_choice if native and config.tool_specs else ToolChoice.auto()
        self.skeleton: LLMRequest | None = None  # an unforced choice's, kept for the run
        self.session: NudgeSession | None = None  # started at the first tool step
        self.previous: StepView | None = None  # the tool step a nudge looks back at
        self.think_only_streak = 0
        if paused is not None:  # a resumed run goes on with the paused run's counters
            self.steps = paused.step
            self.usage = paused.usage
            self.tool_calls = tuple(paused.tool_calls)
            self.answer_so_far = paused.answer
            self.handoffs = list(paused.handoffs) if paused.handoffs else None

    def seat(self, config: LoopConfig, native: bool, conversation: tuple[Message, ...]) -> None:
        """Answer from now on with ``config`` (a handoff, or a resumed run answered by another agent),
        on ``conversation`` (what that agent sees)."""
        self.conversation = list(conversation)
        self.config = config
        system, self.skip = config.system_message(native, conversation)
        self.system = system
        budget = config.context_budget_chars
        self.budget = _context_budget(budget, system) if budget is not None else None
        self.choice = config.tool_choice if native and config.tool_specs else ToolChoice.auto()
        self.skeleton = None
        self.session = None
        self.previous = None
        self.think_only_streak = 0

    def step_choice(self) -> ToolChoice:
        """This step's tool choice: the one place that choice is decided.

        The configured choice is the first step's.  A forced one applies to that step only (forcing
        every step would never end the turn): the next step's is ``auto``.  An unforced choice holds
        for the run.
        """
        choice = self.choice
        if choice.forced:
            self.choice = ToolChoice.auto()
        return choice

    # -- the step API ------------------------------------------------------------------------------

    def record_calls(self, response: LLMResponse, text: str, calls: Sequence[ToolCall]) -> Sequence[ToolCall]:
        """The model's turn with ``calls``, into the conversation; returns the calls as they run.

        The text (think blocks stripped) goes into the assistant message and, when it is substantive,
        becomes the answer so far.  Every call gets an id of its own in the run first (:mod:`.call_ids`).
        """
        self.think_only_streak = 0
        answer = strip_think(text)
        if answer and answer_of(answer) is not None:
            self.answer_so_far = answer
        taken = self.call_ids
        if taken is None:  # the run's first tool step: the ids its input conversation already holds
            taken = self.call_ids = ids_in(self.conversation)
        calls = unique_ids(calls, taken, sink=self.sink, run_id=self.run_id)
        # Message.assistant(answer, calls, reasoning=, provider_data=), set field by field (text_message).
        self.conversation.append(
            text_message(
                "assistant", answer, tuple(calls), None, None, response.reasoning, response.provider_data, False
            )
        )
        self.tool_calls = (*self.tool_calls, *calls)
        self.served_by = response.provider
        return calls

    def record_answer(self, response: LLMResponse, answer: str) -> None:
        """The model's ``answer`` (substantive, think blocks stripped), into the conversation."""
        self.think_only_streak = 0
        self.answer_so_far = answer
        self.conversation.append(
            text_message("assistant", answer, (), None, None, response.reasoning, response.provider_data, False)
        )
        self.served_by = response.provider

    def append(self, message: Message) -> None:
        """``message`` at the end of the run's conversation (what the model reads next)."""
        self.conversation.append(message)

    def continued_past(self, answer: str) -> bool:
        """Whether a nudge continues the turn past ``answer``, given right after a tool step.

        The answer is dropped; the nudge's note rides on the last result so the conversation keeps
        its shape and the model answers for real.
        """
        session, previous, conversation = self.session, self.previous, self.conversation
        if session is None or not session.continues or previous is None or conversation[-1].role != "tool":
            return False
        note = session.should_continue(answer, previous)
        if note is None:
            return False
        last = conversation[-1]
        conversation[-1] = last.with_text(append_note(last.content, note))  # media a tool returned stay
        self.previous = None
        return True

    def feed_back(self, view: StepView, *, finish: bool = True) -> bool:
        """Append a tool step's results (with the nudges' notes), take the follow-ups, route each status.

        The step is then the one a nudge looks back at (the previous step).

        :returns: whether a status was routed to ``"end_turn"`` — every result is fed back first.
            ``finish=False`` leaves ``step.finished`` to the caller (a step that has more to feed back).
        :raises ToolStatusError: at the first status routed to ``"raise"``, after ``step.finished`` says so.
        """
        config = self.config
        sink = self.sink
        calls, results = view.calls, view.results
        if self.session is None and config.run_nudges is not None:
            self.session = config.run_nudges.start(config.read_only.__contains__)
        notes = self.session.notes_for(view) if self.session is not None else None
        end_turn = False
        for index, result in enumerate(results):
            message = result.to_message()
            if notes is not None and notes[index]:
                message = message.with_text(append_note(message.content, notes[index]))
            self.conversation.append(message)
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
        self.previous = view
        return end_turn

    def pause(
        self, calls: Sequence[ToolCall], results: Sequence[ToolResult], *, output_step: bool = False
    ) -> RunResult[Any]:
        """End the run paused: some of the step's calls wait for a person's decision (:mod:`.pause`).

        ``results`` are the step's results so far (pending placeholders among them); what ran is kept
        in the :class:`~agentactors.loop.pause.PausedRun` the result carries, nothing is fed back yet.
        ``output_step``: the step also held output calls (checked once every result is in).
        """
        paused = PausedRun.of(
            self.run_id,
            tuple(self.conversation),
            calls,
            results,
            step=self.steps,
            usage=self.total_usage(),
            tool_calls=self.tool_calls,
            answer=self.answer_so_far,
            agent=self.config.agent_name,
            handoffs=self.handoffs or (),
            output_step=output_step,
        )
        sink = self.sink
        if sink is not None:
            sink.emit("run.paused", **payloads.run_paused(paused.pending, paused.reasons))
            sink.emit("step.finished", tool_calls=len(calls), paused=True)
        log.debug("run %s: paused at step %d for %d call(s)", self.run_id, self.steps, len(paused.pending))
        return self.result(self.answer_so_far, resume_state=paused)

    # -- how a run ends ------------------------------------------------------------------------------

    def result(self, content: str, messages: tuple[Message, ...] | None = None, **flags: Any) -> RunResult[Any]:
        """The run's result: ``content``, and the conversation (or ``messages``) with what the run counted.

        ``flags`` are the result's own (``bounded``, ``error``, ``output``, ``resume_state``...).  Part of the
        step API: a layer that ends the run returns this.
        """
        if messages is None:
            messages = tuple(self.conversation)
        link = self.link
        if not flags and self.config.output is None and not self.handoffs and (link is None or not link.children):
            # The usual answer (no flag, plain text, no handoff, no delegated run): set field by field (answered).
            cost = self.cost
            return answered(
                content, messages, self.tool_calls, self.steps, self.followups, self.usage, self.served_by,
                self.run_id, self.config.agent_name, None if cost.unpriced else cost.spent, self.stop_reason,
            )
        if self.config.output is not None and "output" not in flags:
            flags["output"] = None  # a typed run that did not end on a valid answer
        if self.handoffs:
            flags["handoffs"] = tuple(self.handoffs)
        cost = self.cost
        if link is not None and link.children:
            flags["children"] = tuple(link.children)
            flags["cost"] = cost.total(link.children)
            usage = self.usage + link.usage
        else:  # no delegated runs (the usual run): nothing to add up
            flags["cost"] = None if cost.unpriced else cost.spent
            usage = self.usage
        return RunResult(
            content,
            messages,
            self.tool_calls,
            self.steps,
            followups=self.followups,
            usage=usage,
            served_by=self.served_by,
            run_id=self.run_id,
            agent=self.config.agent_name,
            stop_reason=self.stop_reason,
            **flags,
        )

    def cancelled(self) -> RunResult[Any]:
        """The run's result when it was cancelled through its handle: nothing of its turn kept.

        A resumed run's inputs end with the paused step's calls, not all answered yet (answering them was
        this run's work): that step is left out whole, as a deadline leaves it — a call without its result
        is a conversation every vendor refuses.
        """
        inputs = self.inputs if self.resumed_from is None else _whole(self.inputs)
        return self.result("", inputs, cancelled=True)

    def unfinished(self, error: BaseException | None) -> RunResult[Any]:
        """The result of a run that raised instead of returning one: :meth:`cancelled` when ``error`` is ``None``,
        else failed with ``error`` (its input messages).

        Either way it counts what the run had done — steps, calls, usage and cost, its children's included (a
        call the cancellation cut short too: the loop charged it on the way out): its model calls were billed.
        Asked by a batch for the slot of a run that raised (:mod:`agentactors.agent.batch`), off the run's path.
        """
        if error is None:
            return self.cancelled()
        return self.result("", self.inputs, error=error)

    def total_usage(self) -> Usage:
        """The run's usage with its children's (delegated runs) added."""
        link = self.link
        if link is None or not link.children:
            return self.usage
        return self.usage + link.usage

    def failed(self, exc: Exception, provider: str = "provider") -> RunResult[Any]:
        """The run's result when the provider stack gave up at this step (a vendor's error body never in it).

        ``provider``: the name an exception other than a ProviderError is classified under (the provider's).

        A :class:`~agentactors.errors.CostLimitExceededError` is no failure of the provider stack: the run's
        ProviderActor refused to send the call, a budget of the run spent while it waited for a slot
        (``gateway.ticket.current_check``) — the run ends as before a call (:meth:`cost_stopped`).
        """
        if type(exc) is CostLimitExceededError:
            log.debug("run %s: cost limit passed while step %d waited for its call", self.run_id, self.steps)
            if self.sink is not None:  # the step began (step.started): it ends, its call never sent
                self.sink.emit("step.finished", tool_calls=0, cost_stopped=True)
            return self.cost_stopped(exc)
        error = exc if isinstance(exc, ProviderError) else classify_exception(exc, provider=provider)
        if self.sink is not None:
            self.sink.emit("step.finished", failed=True, error=error)
        log.debug("run %s: generation failed at step %d: %s", self.run_id, self.steps, type(error).__name__)
        # (A halted executor ends the run here in the middle of a tool step: its calls have no results yet.)
        messages = _whole(self.conversation)
        if self.answer_so_far:
            # Something useful was produced: keep it, and say why the run stopped early.
            return self.result(self.answer_so_far, messages, bounded=True, error=error)
        return self.result("", messages, generation_failed=True, error=error)

    def past_cost_limit(self) -> RunResult[Any] | None:
        """The run's result when what it spent (its children's included) passed its ``cost_limit``, else
        ``None``: what it had, and :class:`~agentactors.errors.CostLimitExceededError`."""
        link = self.link
        error = self.cost.passed(link.children if link is not None else ())
        if error is None:
            return None
        log.debug("run %s: cost limit passed at step %d", self.run_id, self.steps)
        if self.sink is not None:  # after the step's call (step.started): the step ends here, its answer not taken
            self.sink.emit("step.finished", tool_calls=0, cost_stopped=True)
        return self.cost_stopped(error)

    def cost_stopped(self, error: CostLimitExceededError) -> RunResult[Any]:
        """The run's result when a budget ends it with ``error`` — after a call, before one (``cost.stop_before``),
        or while its call waited for a slot: what it had, and the error (``run.cost_limit_exceeded`` recorded)."""
        if self.sink is not None:
            self.sink.emit("run.cost_limit_exceeded", **payloads.cost_limit_exceeded(error))
        if self.answer_so_far:
            return self.result(self.answer_so_far, bounded=True, error=error)
        return self.result("", error=error)

    def past_deadline(self, ticket: RunTicket) -> RunResult[Any]:
        """The run's result when its deadline cancelled it: what it had, and :class:`RunDeadlineExceeded`."""
        budget = ticket.budget
        error = RunDeadlineExceeded(
            f"the run passed its deadline of {budget:g}s at step {self.steps}" if budget is not None
            else f"the run passed its deadline at step {self.steps}",
            deadline=budget,
            step=self.steps,
        )
        conversation = _whole(self.conversation)
        if self.sink is not None:
            self.sink.emit("run.deadline_exceeded", **payloads.deadline_exceeded(budget))
        log.debug("run %s: deadline passed at step %d", self.run_id, self.steps)
        if self.answer_so_far:
            return self.result(self.answer_so_far, conversation, bounded=True, error=error)
        return self.result("", conversation, error=error)


def _whole(conversation: Sequence[Message]) -> tuple[Message, ...]:
    """``conversation`` up to its last complete step: without a last tool step whose calls do not all have results.

    A run that ends in the middle of a tool step (its deadline, a halted actor) leaves its calls' assistant
    message, and the results of the calls that finished — a typed step's other calls, while an output
    validator still checks its answer.  A call without its result is a conversation every vendor refuses, so
    a later turn could not go on from it: that step is left out, whole.
    """
    end = len(conversation)
    start = end
    while start and conversation[start - 1].role == "tool":
        start -= 1
    if start and conversation[start - 1].tool_calls:
        answered = {m.tool_call_id for m in conversation[start:end]}
        if any(c.id not in answered for c in conversation[start - 1].tool_calls):
            return tuple(conversation[: start - 1])
    return tuple(conversation)


def _suggestions(call: ToolCall) -> tuple[str, ...]:
    value = call.arguments.get("suggestions", ())
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple):
        return tuple(str(v) for v in value if str(v).strip())
    return ()
