"""One run's typed result: the strategy of each model call, the verdict on each answer, the re-asks.

The loop (:mod:`agentactors.loop.controller`) holds an :class:`OutputRun` when its agent has an output
type, and asks it, step by step:

* :meth:`OutputRun.begin_step` — the strategy of this model call: the explicit one, or auto's choice
  for the model about to be called (:mod:`agentactors.output.choice`), recorded as ``output.strategy``
  (``strategy``, ``reason``) whenever it changes;
* :meth:`OutputRun.degrade` — after a call refused for its forced choice by a chain that skipped its
  incapable members (``UnsupportedToolChoiceError``, or ``AllProvidersFailedError`` naming skipped
  members), whether the step is sent again with the next strategy (once; ``output.strategy_degraded``).
  Only auto degrades: an explicit :class:`~agentactors.output.spec.ToolOutput` keeps the error;
* :meth:`OutputRun.check_calls` / :meth:`OutputRun.check_text` — the verdict on the answer: the value,
  or what the model reads to try again (every issue listed), each refusal an ``output.invalid`` event
  (``attempt``, ``strategy``, ``issues``, ``retries_left``) and, past ``output_retries``, the
  :class:`~agentactors.OutputValidationError` the run ends with.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from .._json import JsonBoundError, loads_bounded, value_problem
from ..errors import AllProvidersFailedError, ModelRetry, OutputValidationError, UnsupportedToolChoiceError
from ..events import EventSink
from ..messages import ToolCall, ToolChoice
from ..providers.port import name_of
from ..settings import ModelSettings
from ..tools.results import MAX_LISTED_ISSUES, ValidationIssue
from ..tools.validation import json_type_of
from ._heavy import heavy_text, heavy_value, off_loop
from .choice import CallShape, auto_strategy, next_strategy
from .config import OutputConfig
from .context import OutputContext, call_validator
from .feedback import (
    ACCEPTED_TEXT,
    NOT_USED_TEXT,
    capped_lines,
    cut_off_text,
    no_output_call_text,
    not_json_text,
    output_call_text,
    retry_text,
    text_answer_text,
)
from .partial import PartialOutput, jiter_available
from .prompt import Extracted, extract_json
from .spec import Strategy
from .target import Checked, Member, OutputTarget, issue_lines, type_label

__all__ = ["CallVerdict", "OutputRun", "TextVerdict"]


@attrs.frozen(slots=True)
class TextVerdict:
    """The verdict on a text answer: ``ok`` with the ``value``, or the ``feedback`` to send back."""

    ok: bool
    value: Any = None
    feedback: str = ""
    exhausted: bool = False


@attrs.frozen(slots=True)
class CallVerdict:
    """The verdict on a turn's output calls: one result text per call, and the value when one was taken."""

    ok: bool
    results: tuple[tuple[ToolCall, str, bool], ...]
    value: Any = None
    exhausted: bool = False


class OutputRun:
    """The typed-result state of one run (see the module docstring).

    :param config: the agent's :class:`~agentactors.output.config.OutputConfig`.
    :param provider: the provider the run's ProviderActor hosts (its capabilities decide auto's choice).
    :param model: the model the run calls (the agent's, else the provider's default).
    :param native: the provider carries tools natively (``False``: the JSON-fallback transport).
    :param has_tools: the agent offers tools of its own.
    :param settings: the run's settings (the agent's merged with the run's): auto asks the provider whether
        they rule out a forced tool choice.

    An explicit :class:`~agentactors.output.spec.ToolOutput` on the JSON-fallback transport, which cannot
    force a call, is refused at the first step (:meth:`begin_step` raises
    :class:`~agentactors.UnsupportedToolChoiceError`, before anything is sent), so the run ends with it
    in ``RunResult.error`` like any request refused before sending.
    """

    __slots__ = (
        "_agent",
        "_config",
        "_degraded",
        "_deps",
        "_last_issues",
        "_partials",
        "_refused",
        "_reported",
        "_run_id",
        "_shape",
        "_sink",
        "attempts",
        "error",
        "prompted_system",
        "strategy",
        "value",
    )

    def __init__(
        self,
        config: OutputConfig,
        *,
        provider: object,
        model: str | None,
        native: bool,
        has_tools: bool,
        sink: EventSink | None,
        run_id: str | None,
        agent: str | None,
        deps: Any,
        settings: ModelSettings | None = None,
    ) -> None:
        self._config = config
        self._shape = CallShape(
            provider, model, native_tools=native, has_tools=has_tools, settings=settings, fmt=config.response_format
        )
        self._sink = sink
        self._run_id = run_id
        self._agent = agent
        self._deps = deps
        self._degraded: Strategy | None = None
        self._reported: Strategy | None = None
        self.attempts = 0
        self._last_issues: tuple[str, ...] = ()  # the last refused answer's issue lines (bounded_error)
        self.strategy: Strategy | None = None
        self.value: Any = None
        self.error: OutputValidationError | None = None
        #: The system message and skip of the prompted strategy, worked out by the loop on first use.
        self.prompted_system: Any = None
        self._refused: UnsupportedToolChoiceError | None = None
        self._partials: PartialOutput | None = None  # the last model call's partial values (partials)
        if config.strategy == "tool" and not native:
            self._refused = UnsupportedToolChoiceError(
                "ToolOutput needs a provider that calls tools natively; this one uses the JSON-fallback "
                "transport, which cannot force a call: use NativeOutput, PromptedOutput or a bare type (auto)",
                provider=name_of(provider),
                model=model,
            )

    @property
    def config(self) -> OutputConfig:
        return self._config

    @property
    def target(self) -> OutputTarget | None:
        return self._config.target

    # -- the request -------------------------------------------------------------------------------

    def begin_step(self) -> Strategy | None:
        """The strategy of this step's model call (``None`` for a plain ``str`` answer).

        :raises UnsupportedToolChoiceError: an explicit ``ToolOutput`` the transport cannot force (see the
            class), before the request exists.
        """
        config = self._config
        if config.plain:
            return None
        if self._refused is not None:
            raise self._refused
        if self._degraded is not None:
            degraded, self._degraded = self._degraded, None
            self.strategy = degraded
            self._reported = degraded
            return degraded
        strategy: Strategy
        if config.strategy is not None:
            strategy = config.strategy
            reason = "explicit"
        else:
            strategy, reason = auto_strategy(self._shape)
        self.strategy = strategy
        if strategy != self._reported:
            self._reported = strategy
            if self._sink is not None:
                self._sink.emit("output.strategy", strategy=strategy, reason=reason)
        return strategy

    def forced_choice(self, has_tools: bool) -> ToolChoice:
        """The tool choice of the tool strategy: the one output tool, or ``required`` beside others."""
        target = self._config.target
        assert target is not None
        if not has_tools and not target.is_union:
            return ToolChoice.tool(target.members[0].name)
        return ToolChoice.required()

    def degrade(self, exc: BaseException) -> bool:
        """Whether this step, refused for its forced choice, is sent again with the next strategy (once)."""
        if self._config.strategy is not None or self.strategy != "tool":
            return False
        skipped = isinstance(exc, AllProvidersFailedError) and bool(exc.skipped)
        if not (isinstance(exc, UnsupportedToolChoiceError) or skipped):
            return False
        members = exc.skipped if isinstance(exc, AllProvidersFailedError) else None
        strategy, why = next_strategy(self._shape, members)
        self._degraded = strategy
        if self._sink is not None:
            cause = (
                f"members skipped for the forced tool choice: {', '.join(members)}"
                if members
                else "the forced tool choice was refused before sending"
            )
            reason = f"{cause}; {strategy}: {why}"
            self._sink.emit(
                "output.strategy_degraded", from_strategy="tool", strategy=strategy, reason=reason, error=exc
            )
        return True

    def partials(self, emit: Callable[[Any], None]) -> PartialOutput | None:
        """A partial-value follower for this step's call, or ``None`` (plain text, or jiter not installed).

        It follows the one before (a refused answer's): a re-asked answer's first value is not offered again
        when it equals the last one offered.
        """
        target = self._config.target
        if target is None or self.strategy is None or not jiter_available():
            return None
        self._partials = PartialOutput(target, text=self.strategy != "tool", emit=emit, after=self._partials)
        return self._partials

    # -- the answer --------------------------------------------------------------------------------

    def resume_tool_step(self) -> None:
        """A paused step that held output calls goes on (a resumed run): it was asked with the tool strategy."""
        self.strategy = "tool"
        self._reported = "tool"

    def is_output_call(self, call: ToolCall) -> bool:
        """Whether ``call`` is of an output tool offered at this step."""
        target = self._config.target
        return self.strategy == "tool" and target is not None and target.member(call.name) is not None

    async def check_text(self, answer: str, step: int, *, cut_off: bool = False) -> TextVerdict:
        """The verdict on a text answer (not think-only) of this step.

        ``cut_off``: the model stopped at its output token limit (``max_tokens``): an answer whose JSON
        does not end is refused as cut off, which the model is told (it can answer shorter).  So is one
        whose value was found among prose (not the whole answer, nor a fence's whole body): what was cut
        may be the JSON that was the answer, the value found a piece of prose before it.

        Cancellation: propagates from the output validator (an async one sees it at its next await) or from
        the worker thread reading a big answer (abandoned: pure work); no verdict is given, nothing counted
        as an attempt.
        """
        config = self._config
        target = config.target
        if target is None:  # a plain str answer: the validator alone
            return await self._validated_text(answer, answer, step, None)
        # A big answer is read and checked in a worker thread (output._heavy): the loop keeps serving.
        extracted, verdict = await off_loop(_read, target, answer) if heavy_text(answer) else _read(target, answer)
        if cut_off and not extracted.whole:
            verdict = None  # the value found may be prose before the JSON that was cut (no partial answer taken)
        if self.strategy == "tool":
            # The model answered in text where a call was asked for: a JSON answer that validates is taken
            # all the same (the guarantee is the validation, not the channel); anything else is asked again.
            if verdict is None or not verdict.ok:
                return self._refused_text(no_output_call_text(target), ("answer: expected a call of the output tool",))
            return await self._validated_text(verdict.value, answer, step, None)
        if verdict is None:
            if cut_off:
                issue = "answer: cut off at max_tokens before its JSON ended"
                return self._refused_text(cut_off_text(target), (issue,))
            return self._refused_text(not_json_text(target, extracted.error), (f"answer: {extracted.error}",))
        if not verdict.ok:
            shown = issue_lines(verdict.issues[:MAX_LISTED_ISSUES])
            return self._refused_text(text_answer_text(target, verdict.issues), shown, len(verdict.issues))
        return await self._validated_text(verdict.value, answer, step, None)

    async def check_calls(self, calls: Sequence[ToolCall], step: int) -> CallVerdict:
        """The verdict on this step's output calls: the first valid one is taken, the others answered.

        Cancellation: as :meth:`check_text`'s: propagates, no verdict, no attempt counted.
        """
        target = self._config.target
        assert target is not None
        results: list[tuple[ToolCall, str, bool]] = []
        taken: Any = None
        found = False
        issues: list[str] = []
        total = 0  # issues in all, of which `issues` holds the first (no more than the model reads)
        for call in calls:
            member = target.member(call.name)
            assert member is not None
            if found:
                results.append((call, NOT_USED_TEXT, True))
                continue
            heavy = heavy_text(call.raw_arguments) or heavy_value(call.arguments)
            verdict = await off_loop(self._check_call, call, member) if heavy else self._check_call(call, member)
            if not verdict.ok:
                text = output_call_text(member, verdict.issues)
                results.append((call, text, False))
                issues.extend(issue_lines(verdict.issues[: max(0, MAX_LISTED_ISSUES - len(issues))]))
                total += len(verdict.issues)
                continue
            refusal = await self._refusal(verdict.value, step)
            if isinstance(refusal, ModelRetry):
                results.append((call, retry_text(refusal.message, member), False))
                issues.append(f"- {refusal.message}")
                total += 1
                continue
            found, taken = True, refusal
            results.append((call, ACCEPTED_TEXT, True))
        if found:
            self.value = taken
            return CallVerdict(True, tuple(results), taken)
        exhausted = self._invalid(tuple(issues), total)
        return CallVerdict(False, tuple(results), exhausted=exhausted)

    # -- helpers -------------------------------------------------------------------------------------

    @staticmethod
    def _check_call(call: ToolCall, member: Member) -> Checked:
        if call.arguments_error is not None:
            issue = ValidationIssue("arguments", "one complete JSON object", _unread(call))
            return Checked(False, issues=(issue,))
        if (bound := value_problem(call.arguments)) is not None:  # a call built past the wire's bounds
            return Checked(False, issues=(ValidationIssue("arguments", "a JSON object within the limits", bound),))
        return member.check(dict(call.arguments))

    async def _refusal(self, value: Any, step: int) -> Any:
        """``value`` as the validator keeps it, or the :class:`ModelRetry` it raised."""
        config = self._config
        if config.validator is None:
            return value
        ctx = OutputContext(self._run_id, self._agent, step, self.attempts, self.strategy, self._deps)
        try:
            kept = await call_validator(config.validator, config.arity, value, ctx)
        except ModelRetry as retry:
            return retry
        if kept is None and not self._admits_none():
            # A validator written to check and raise, that forgot ``return value``: taken, the run ended ``ok``
            # with ``output=None`` and no error — the model's valid answer silently dropped.  The validator's bug,
            # so the run's exception, as any other the validator raises.
            raise TypeError(
                f"output_validator returned None, which is not a {self._type_label()}: return the value to keep "
                "(the one it was given, or a corrected one), or raise ModelRetry to refuse it"
            )
        return kept

    def _admits_none(self) -> bool:
        """Whether ``None`` is a value of the output type (``int | None``): asked only when a validator returned it."""
        target = self._config.target
        if target is None:  # a plain str answer
            return False
        try:
            return target.check(None).ok
        except Exception:  # the type's own conversion refusing None its own way
            return False

    def _type_label(self) -> str:
        target = self._config.target
        return "str" if target is None else type_label(target.tp)

    async def _validated_text(self, value: Any, answer: str, step: int, member: Member | None) -> TextVerdict:
        kept = await self._refusal(value, step)
        if isinstance(kept, ModelRetry):
            # A plain str answer is text: the model is not told to answer "with the corrected JSON".
            feedback = retry_text(kept.message, member, json=self._config.target is not None)
            return self._refused_text(feedback, (f"- {kept.message}",))
        self.value = kept
        return TextVerdict(True, kept)

    def _refused_text(self, feedback: str, issues: tuple[str, ...], total: int | None = None) -> TextVerdict:
        exhausted = self._invalid(issues, total)
        return TextVerdict(False, feedback=feedback, exhausted=exhausted)

    def _invalid(self, issues: tuple[str, ...], total: int | None = None) -> bool:
        """Count a refused answer; ``True`` when it was the last one ``output_retries`` allows.

        ``issues``: the first lines (``total`` in all, when more): the event and the error keep what the
        model reads — ten lines at most, each cut short — however many the answer broke.
        """
        self.attempts += 1
        retries_left = max(0, self._config.retries - (self.attempts - 1))
        lines = capped_lines([i if i.startswith("- ") else f"- {i}" for i in issues], total)
        self._last_issues = lines
        if self._sink is not None:
            self._sink.emit(
                "output.invalid",
                attempt=self.attempts,
                strategy=self.strategy,
                issues=lines,
                retries_left=retries_left if self.attempts <= self._config.retries else 0,
            )
        if self.attempts <= self._config.retries:
            return False
        self.error = OutputValidationError(
            f"the answer did not validate after {self.attempts} attempt{'s' if self.attempts != 1 else ''} "
            f"(output_retries={self._config.retries}); last issues: " + "; ".join(i[2:] for i in lines[:5]),
            issues=lines,
            attempts=self.attempts,
        )
        return True

    def bounded_error(self, max_steps: int) -> OutputValidationError | None:
        """Why a run that ended bounded (``max_steps``) has no typed answer, when answers were refused: the
        :class:`OutputValidationError` with the issues the last one had and how many were refused; else
        ``None`` (no answer was refused: the model was still at its tools, which ``bounded`` says).

        Without it such a run ended ``output=None``, ``error=None``: the refusals left no trace in the result.
        Asked by the loop only where a typed run ends bounded (never per step).
        """
        if self.attempts == 0 or self.error is not None:  # none refused; or output_retries ended the run first
            return self.error
        lines = self._last_issues
        plural = "s" if self.attempts != 1 else ""
        return OutputValidationError(
            f"the run reached max_steps={max_steps} before a valid answer: {self.attempts} answer{plural} refused "
            f"(output_retries={self._config.retries} not yet used up); last issues: "
            + "; ".join(i[2:] for i in lines[:5]),
            issues=lines,
            attempts=self.attempts,
        )


def _unread(call: ToolCall) -> str:
    """What an output call whose arguments gave no object sent instead, in the words of an issue.

    The provider marks such a call ``unparseable`` or ``empty``, the same for JSON cut off, a JSON array, or
    a value past the depth policy; the model fixes each differently, so each is named (never the value).
    """
    if call.arguments_error_detail:
        return f"text that does not parse ({call.arguments_error_detail})"
    raw = call.raw_arguments
    if raw is None or not raw.strip():
        return "no arguments at all"
    try:
        value = loads_bounded(raw, what="the arguments")
    except JsonBoundError as exc:
        return str(exc)
    except json.JSONDecodeError as exc:
        return f"text that does not parse ({exc.msg} at char {exc.pos})"
    if isinstance(value, dict):  # the provider's parse and this one disagree: nothing more to say
        return f"text that does not parse ({call.arguments_error})"
    return f"{json_type_of(value)} where an object was expected"


def _read(target: OutputTarget, answer: str) -> tuple[Extracted, Checked | None]:
    """A text answer's JSON and the verdict on it (``None`` when it holds no JSON value): pure work."""
    extracted = extract_json(answer)
    return extracted, target.check(extracted.value) if extracted.ok else None
