"""Nudges: small notes the loop adds to tool results to steer a model out of wasteful habits.

Each nudge is one small, replaceable policy.  A :class:`Nudges` value names the
policies an agent uses (all three by default; ``Agent(nudges=False)`` uses none)
and starts one :class:`NudgeSession` per run, which holds each policy's per-run
state.  A note is appended to the tool result it concerns after a blank line.

* :class:`BatchReadOnly` — after the second successful call of the same
  ``read_only`` tool in a turn, made in a later step than the first (calls
  already batched in one step need no advice), suggest batching independent
  calls in one step.  Once per turn.
* :class:`RepeatedCall` — when the same (tool, arguments, result) occurs a
  second time, say so (once, at the second occurrence).
* :class:`BareAcknowledgment` — when the model ends the turn with only a bare
  acknowledgment ("Sure, I can help with that!") right after a step that
  called ``suggest_followups``, continue once so the real answer arrives.

Policies are synchronous and cheap; they never raise into the loop (a policy
bug must not end a run — see :meth:`NudgeSession.notes_for`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any, Protocol

import attrs

from .._slots import draft
from ..messages import ToolCall
from ..tools.results import ToolResult, ToolStatus

__all__ = [
    "ACKNOWLEDGMENT_PHRASES",
    "DEFAULT_NUDGES",
    "FOLLOWUPS_TOOL",
    "NO_NUDGES",
    "BareAcknowledgment",
    "BatchReadOnly",
    "Nudge",
    "NudgeSession",
    "Nudges",
    "RepeatedCall",
    "StepView",
    "append_note",
    "is_bare_acknowledgment",
    "step_view",
]

log = logging.getLogger("agentactors.nudges")

#: The built-in follow-ups tool's name (``Agent(followups=True)``).
FOLLOWUPS_TOOL = "suggest_followups"

BATCH_NOTE = (
    "Note: you have now called '{name}' in separate steps. It only reads data, so when you need several "
    "independent results, request all of those calls in one step: they run in parallel."
)
REPEAT_NOTE = (
    "Note: this is the same result as an earlier call of '{name}' with the same arguments. "
    "Calling it again will not change it; use the result you have."
)
CONTINUE_NOTE = (
    "Note: the suggestions are recorded. Now write your complete answer to the user's request; "
    "do not reply with only an acknowledgment."
)

#: Phrases a bare acknowledgment consists of (compared lower-cased, without punctuation).
ACKNOWLEDGMENT_PHRASES: tuple[str, ...] = (
    "sure",
    "sure thing",
    "of course",
    "certainly",
    "absolutely",
    "ok",
    "okay",
    "got it",
    "done",
    "will do",
    "happy to help",
    "glad to help",
    "i can help with that",
    "i can help with this",
    "i'd be happy to help",
    "i would be happy to help",
    "i'd be glad to help",
    "i'll help with that",
    "let me help with that",
    "here you go",
    "great",
    "noted",
    "understood",
    "no problem",
    "sounds good",
    "thanks",
    "thank you",
)
_ACK_MAX_CHARS = 80
_WORDS = re.compile(r"[a-z0-9']+")
_PHRASE_WORDS = frozenset(" ".join(_WORDS.findall(p)) for p in ACKNOWLEDGMENT_PHRASES)
_FILLER = frozenset(("yes", "yeah", "well", "alright", "all", "right", "oh", "so"))


def is_bare_acknowledgment(text: str, phrases: frozenset[str] = _PHRASE_WORDS) -> bool:
    """True when ``text`` is short (< 80 chars) and is only acknowledgment phrases.

    The text is split into sentences; every sentence must be one of the phrases
    (words compared lower-cased, punctuation ignored), optionally led by a
    filler word ("Yes, sure!").
    """
    stripped = text.strip()
    if not stripped or len(stripped) >= _ACK_MAX_CHARS:
        return False
    sentences = [s for s in re.split(r"[.!?,;:\n—–-]+", stripped.lower()) if s.strip()]
    if not sentences:
        return False
    for sentence in sentences:
        words = _WORDS.findall(sentence)
        while words and words[0] in _FILLER and " ".join(words) not in phrases:
            words = words[1:]
        if words and " ".join(words) not in phrases:
            return False
    return True


@attrs.frozen(slots=True)
class StepView:
    """What a policy sees of one step's tool calls: calls and results, in call order, and the step number."""

    step: int
    calls: Sequence[ToolCall]
    results: Sequence[ToolResult]


# What step_view fills, field by field, then makes a StepView (agentactors._slots).
_new = object.__new__
_ViewDraft = draft(StepView, "step calls results")


def step_view(step: int, calls: Sequence[ToolCall], results: Sequence[ToolResult]) -> StepView:
    """``StepView(step, calls, results)``, its fields set one by one (it checks nothing): once per tool step."""
    view: Any = _new(_ViewDraft)
    view.step = step
    view.calls = calls
    view.results = results
    view.__class__ = StepView
    made: StepView = view
    return made


class Nudge(Protocol):
    """One policy.  A fresh instance serves one run; it may keep per-run state."""

    def after_tools(self, view: StepView) -> Sequence[tuple[int, str]]:
        """Notes to add, as ``(index of the result, note)`` pairs."""
        ...

    def should_continue(self, answer: str, previous: StepView | None) -> str | None:
        """A note that makes the loop continue instead of ending the turn with ``answer``, or ``None``."""
        ...


class _Base:
    __slots__ = ()

    def after_tools(self, view: StepView) -> Sequence[tuple[int, str]]:
        return ()

    def should_continue(self, answer: str, previous: StepView | None) -> str | None:
        return None


class BatchReadOnly(_Base):
    """Suggest batching after the second successful call of one read-only tool, in a later step."""

    __slots__ = ("_done", "_first_step", "_is_read_only")

    def __init__(self, is_read_only: Callable[[str], bool]) -> None:
        self._is_read_only = is_read_only
        self._first_step: dict[str, int] | None = None  # made at the first read-only result
        self._done = False

    def after_tools(self, view: StepView) -> Sequence[tuple[int, str]]:
        if self._done:
            return ()
        for index, result in enumerate(view.results):
            if result.status is not ToolStatus.ok or not self._is_read_only(result.name):
                continue
            if self._first_step is None:
                self._first_step = {}
            first = self._first_step.setdefault(result.name, view.step)
            if first != view.step:
                self._done = True
                return ((index, BATCH_NOTE.format(name=result.name)),)
        return ()


class RepeatedCall(_Base):
    """Note the second occurrence of the same (tool, arguments, result)."""

    __slots__ = ("_seen",)

    def __init__(self, is_read_only: Callable[[str], bool] | None = None) -> None:
        # (``is_read_only`` is not read: the class is its own factory, see DEFAULT_NUDGES.)
        # (tool, result) -> [arguments, times seen]: arguments are compared (deep equality) only
        # when a tool returns a result it returned before, so the common case encodes nothing.
        self._seen: dict[tuple[str, str], list[list[Any]]] = {}

    def after_tools(self, view: StepView) -> Sequence[tuple[int, str]]:
        notes: list[tuple[int, str]] | None = None
        seen = self._seen
        calls, results = view.calls, view.results
        if len(calls) != len(results):
            raise ValueError(f"a step view pairs {len(calls)} calls with {len(results)} results")
        # By index, not enumerate(zip(...)): two iterator objects per step for what is mostly one call.
        for index in range(len(results)):
            result = results[index]
            if result.status is ToolStatus.cancelled:
                continue
            call = calls[index]
            key = (call.name, result.content)
            entries = seen.get(key)
            if entries is None:  # a result never seen: nothing to compare
                seen[key] = [[call.arguments, 1]]
                continue
            for entry in entries:
                if entry[0] == call.arguments:
                    entry[1] += 1
                    if entry[1] == 2:
                        if notes is None:
                            notes = []
                        notes.append((index, REPEAT_NOTE.format(name=call.name)))
                    break
            else:
                entries.append([call.arguments, 1])
        return notes or ()


class BareAcknowledgment(_Base):
    """Continue once when a turn ends with a bare acknowledgment right after ``suggest_followups``."""

    __slots__ = ("_used",)

    def __init__(self, is_read_only: Callable[[str], bool] | None = None) -> None:
        self._used = False  # (``is_read_only`` is not read: the class is its own factory, see DEFAULT_NUDGES)

    def should_continue(self, answer: str, previous: StepView | None) -> str | None:
        if self._used or previous is None:
            return None
        for call in previous.calls:  # a loop, not any(<generator>): asked at the end of every run
            if call.name == FOLLOWUPS_TOOL:
                break
        else:
            return None
        if not is_bare_acknowledgment(answer):
            return None
        self._used = True
        return CONTINUE_NOTE


#: A factory of one policy for one run, given the read-only predicate of the agent's tools.
NudgeFactory = Callable[[Callable[[str], bool]], Nudge]


# The default policies' classes are their own factories (each takes the read-only predicate): a run
# builds its policies with one call each, not two.
_batch: NudgeFactory = BatchReadOnly
_repeat: NudgeFactory = RepeatedCall
_ack: NudgeFactory = BareAcknowledgment


def _to_factories(value: Iterable[NudgeFactory]) -> tuple[NudgeFactory, ...]:
    """The factories, checked when the value is made: a policy given where its factory goes (``RepeatedCall()``
    for ``RepeatedCall``) failed only when each run started it — logged, every run, and the policy never asked.

    :raises TypeError: not an iterable of callables.
    """
    given: object = value  # (typed as given, not as declared: the point is they may differ)
    if isinstance(given, str | bytes) or not isinstance(given, Iterable):
        raise TypeError(f"Nudges takes an iterable of policy factories, not {type(given).__name__}")
    factories = tuple(value)
    for factory in factories:
        if not callable(factory):
            raise TypeError(
                f"a nudge factory is a policy class or a function (read-only predicate) -> policy, not a "
                f"{type(factory).__name__} instance (give the class, not a policy made from it)"
            )
    return factories


def _acts(factory: NudgeFactory, method: str) -> bool:
    """Whether the policies ``factory`` makes may act through ``method`` (``False``: they inherit the no-op).

    Known only for a class deriving from the built-in base; any other factory's policies are always asked.
    """
    if isinstance(factory, type) and issubclass(factory, _Base):
        return bool(getattr(factory, method) is not getattr(_Base, method))
    return True


@attrs.frozen(slots=True)
class Nudges:
    """The policies an agent uses; immutable, shared by all of its runs.

    Replace or extend the defaults with ``Nudges((factory, ...))`` where each
    factory takes the agent's read-only predicate and returns a fresh policy.
    """

    factories: tuple[NudgeFactory, ...] = attrs.field(converter=_to_factories)
    # Per factory: whether its policies are asked after tool steps, and whether at the end of a turn.  A
    # built-in policy that inherits a method's no-op is not asked there: one call less per step or per run.
    _plan: tuple[tuple[NudgeFactory, bool, bool], ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        plan = tuple((f, _acts(f, "after_tools"), _acts(f, "should_continue")) for f in self.factories)
        object.__setattr__(self, "_plan", plan)

    def fitted(self, read_only: Collection[str], tools: Collection[str] | None = None) -> Nudges | None:
        """These policies for an agent whose read-only tools are ``read_only``: the ones that can act there.

        The batching policy notes read-only tools only, so an agent without any leaves it out (its runs
        build it for nothing otherwise, and ask it after every tool step); given the names of all its
        ``tools``, an agent without the follow-ups tool leaves out the acknowledgment policy, which acts
        only after a call of that tool.  ``None`` when no policy is left.  Worked out once per agent
        (:class:`~agentactors.loop.controller.LoopConfig`).
        """
        factories = self.factories
        if not read_only:
            factories = tuple(f for f in factories if f is not _batch)
        if tools is not None and FOLLOWUPS_TOOL not in tools:
            factories = tuple(f for f in factories if f is not _ack)
        if not factories:
            return None
        return self if len(factories) == len(self.factories) else Nudges(factories)

    def start(self, is_read_only: Callable[[str], bool]) -> NudgeSession | None:
        """A session for one run, or ``None`` when there are no policies (one check per step)."""
        if not self.factories:
            return None
        # Loops, not list comprehensions: on Python 3.11 each is a function call of its own, every run.
        policies: list[Nudge] = []
        continuers: list[Nudge] = []
        for factory, asked, continues in self._plan:
            try:
                policy = factory(is_read_only)
            except Exception:  # a policy that cannot start is a policy bug: the run goes on without it
                log.exception("nudge policy %r could not start; the run goes on without it", factory)
                continue
            if asked:
                policies.append(policy)
            if continues:
                continuers.append(policy)
        return NudgeSession(policies, continuers)


DEFAULT_NUDGES = Nudges((_batch, _repeat, _ack))
NO_NUDGES = Nudges(())


class NudgeSession:
    """The policies of one run with their state.

    :param policies: the policies asked after each tool step (:meth:`notes_for`).
    :param continuers: the ones asked at the end of a turn (:meth:`should_continue`); default: ``policies``.
    """

    __slots__ = ("_continuers", "_policies", "continues")

    def __init__(self, policies: Sequence[Nudge], continuers: Sequence[Nudge] | None = None) -> None:
        self._policies = tuple(policies)
        self._continuers = self._policies if continuers is None else tuple(continuers)
        #: Whether any policy may continue a turn (``False``: :meth:`should_continue` is always ``None``).
        self.continues = bool(self._continuers)

    def notes_for(self, view: StepView) -> list[str] | None:
        """One joined note per result (``""`` for none), or ``None`` when no policy has anything to say."""
        notes: list[str] | None = None
        size = len(view.results)
        for policy in self._policies:
            # What a policy answers is read inside the guard too: a note for a result the step does not have,
            # or one that is no text, is a policy bug like any other, and must never end a run.
            try:
                for index, note in policy.after_tools(view):
                    if type(index) is not int or not 0 <= index < size or not isinstance(note, str):
                        raise ValueError(f"a note must be (index of one of the {size} results, text): {index!r}")
                    if notes is None:
                        notes = [""] * size
                    notes[index] = f"{notes[index]}\n\n{note}" if notes[index] else note
            except Exception:
                log.exception("nudge policy %s failed; its note is skipped", type(policy).__name__)
        return notes

    def should_continue(self, answer: str, previous: StepView | None) -> str | None:
        """The note that continues the turn instead of ending it, or ``None``."""
        for policy in self._continuers:
            try:
                note: object = policy.should_continue(answer, previous)  # a policy's bug may answer anything
            except Exception:
                log.exception("nudge policy %s failed; it is skipped", type(policy).__name__)
                continue
            if isinstance(note, str):
                if note:
                    return note
            elif note is not None:  # not text: a policy bug, and no note
                log.error(
                    "nudge policy %s continued with a %s, not a note; it is skipped",
                    type(policy).__name__,
                    type(note).__name__,
                )
        return None


def append_note(content: str, note: str) -> str:
    """``content`` with ``note`` after a blank line."""
    return f"{content}\n\n{note}" if content else note
