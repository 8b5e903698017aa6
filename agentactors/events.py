"""Typed events, recorders, and the fan-out that delivers a run's events to them.

Every actor, decorator and the loop emits frozen :class:`Event` objects with a
dotted ``type`` (``run.started``, ``llm.request``, ``tools.result_refused``,
``retry.scheduled``, ``breaker.state_changed``, ...), the ``run_id`` they belong
to (``None`` outside a run), a per-run ``seq``, a ``time`` from
``anyio.current_time()`` and, where it applies, the loop ``step``.

Who receives an event travels with the *call*, not with the emitter: a decorator
is built once and shared by many runs, so the current run's :class:`EventSink`
lives in a :mod:`contextvars` variable that an actor ``ask`` carries into the
handler.  :func:`emit` reads it; with no sink (no recorder attached) emitting is
one context-variable lookup and one ``None`` check.

A recorder is any object with a synchronous, non-blocking ``record(event)``.
:class:`FanOut` isolates recorders from each other and from the run: a recorder
that raises is logged once and the run goes on.

**Typed events.**  Every event is an :class:`Event`; what is emitted is an instance
of the class its type names, so ``isinstance`` filters work::

    Event
    ├── RunEvent        run.*       RunStarted, RunFinished
    ├── StepEvent       step.*      StepStarted, StepFinished
    ├── LLMEvent        llm.*       LLMRequested, LLMResponded, LLMTextDelta, LLMReasoningDelta
    ├── ToolEvent       tools.*     ToolStarted, ToolFinished, ToolResultRefused, ToolResultTruncated
    ├── RetryEvent      retry.*     RetryScheduled, RetryRecovered, RetryExhausted
    ├── FallbackEvent   fallback.*  FallbackMoved, FallbackSkipped, FallbackExhausted
    ├── BreakerEvent    breaker.*   BreakerStateChanged, BreakerRejected, BreakerIgnored
    ├── HedgeEvent      hedge.*     HedgeSent, HedgeWon, HedgeSkipped
    ├── ProviderEvent   provider.*  ProviderThrottled
    ├── OutputEvent     output.*    OutputStrategyChosen, OutputStrategyDegraded, OutputInvalid, OutputPartial
    ├── SessionEvent    session.*   SessionActivated, SessionDeactivated, SessionCommitted
    └── ActorEvent      actor.*     (the kernel's: started, stopped, failed, restarted, dead_letter)

A type without a class of its own (a tool's own ``ctx.emit("tools.progress")``, a
type a later version adds) gets its family's class, and one of no known family a
plain :class:`Event` — as do several the library emits: a pool's ``pool.moved``,
``pool.skipped`` and ``pool.exhausted`` (the fields of their ``fallback.*`` twins),
``agent.handoff``, ``delegation.refused``, ``context.fitted``, ``batch.*`` and ``mcp.*``; filter those on
``event.type``.  The classes add no fields: ``.type``, ``.data``, attribute
access to the payload, :meth:`Event.to_dict` and the JSONL record are the same for
all.  ``Event(...)`` still builds a plain :class:`Event`; :func:`event_class` (and
:func:`make_event`) choose the class by type, as emitting does.
"""

from __future__ import annotations

import contextvars
import enum
import inspect
import io
import itertools
import json
import logging
import math
import os
import stat
import threading
import time as _time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

import anyio
import attrs

from ._json import MAX_DOCUMENT_DEPTH, MAX_INT_DIGITS, MAX_TEXT_CHARS, JsonBoundError, loads_bounded
from .errors import AgentActorsError, redact
from .messages import LLMRequest
from .parts import is_part, shown_url

__all__ = [
    "ActorEvent",
    "BreakerEvent",
    "BreakerIgnored",
    "BreakerRejected",
    "BreakerStateChanged",
    "Event",
    "EventRecordError",
    "FallbackEvent",
    "FallbackExhausted",
    "FallbackMoved",
    "FallbackSkipped",
    "HedgeEvent",
    "HedgeSent",
    "HedgeSkipped",
    "HedgeWon",
    "LLMEvent",
    "LLMReasoningDelta",
    "LLMRequested",
    "LLMResponded",
    "LLMTextDelta",
    "OutputEvent",
    "OutputInvalid",
    "OutputPartial",
    "OutputStrategyChosen",
    "OutputStrategyDegraded",
    "ProviderEvent",
    "ProviderThrottled",
    "RetryEvent",
    "RetryExhausted",
    "RetryRecovered",
    "RetryScheduled",
    "RunEvent",
    "RunFinished",
    "RunStarted",
    "SessionActivated",
    "SessionCommitted",
    "SessionDeactivated",
    "SessionEvent",
    "StepEvent",
    "StepFinished",
    "StepStarted",
    "ToolEvent",
    "ToolFinished",
    "ToolResultRefused",
    "ToolResultTruncated",
    "ToolStarted",
    "EventSink",
    "FanOut",
    "InMemoryRecorder",
    "JsonlRecorder",
    "Recorder",
    "current_sink",
    "emit",
    "event_class",
    "event_from_dict",
    "event_to_dict",
    "make_event",
    "read_jsonl",
    "use_sink",
]

log = logging.getLogger("agentactors.events")


def _now() -> float:
    try:
        return anyio.current_time()
    except Exception:  # no running event loop (a sync caller): fall back to the monotonic clock
        return _time.monotonic()


@attrs.frozen(slots=True, eq=False)
class Event:
    """One thing that happened.  The payload is in ``data`` and readable as attributes.

    ``event.type`` is the dotted name; ``event.data`` the payload
    (``event.attempt`` is ``event.data["attempt"]``).  Events compare by identity.
    """

    type: str
    run_id: str | None = None
    seq: int = 0
    time: float = 0.0
    step: int | None = None
    data: Mapping[str, Any] = attrs.field(factory=dict)
    #: The id of the run that started this one (a delegated run's events), or ``None`` for a top-level run.
    parent_run_id: str | None = None

    def __getattr__(self, name: str) -> Any:
        # Only reached for names that are not slots: the payload's keys.
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return object.__getattribute__(self, "data")[name]
        except KeyError:
            raise AttributeError(f"{self.type} event has no field {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        return event_to_dict(self)


# --- typed events: one family per prefix, one class per type of the tree above ---------------------
# Plain subclasses with empty slots: attrs' __init__, repr (it names the instance's class), pickling and
# attrs.fields all come from Event, and an instance costs exactly what an Event costs.


class RunEvent(Event):
    """``run.*``: a run began or ended."""

    __slots__ = ()


class RunStarted(RunEvent):
    """``run.started``: ``agent``, ``messages`` (how many input messages), ``native_tools``, and, when the
    agent knows them, ``model`` (the model it calls by default) and ``providers`` (``(name, wire,
    server)`` per member of its provider stack)."""

    __slots__ = ()


class RunFinished(RunEvent):
    """``run.finished``: ``steps``, ``usage`` and either the outcome (``content``, ``bounded``,
    ``generation_failed``, ``error``, ``served_by``, ``tool_calls``), ``cancelled=True``, or the ``error``
    the run raised."""

    __slots__ = ()


class StepEvent(Event):
    """``step.*``: one step of the loop (one model call and what followed it)."""

    __slots__ = ()


class StepStarted(StepEvent):
    """``step.started``: no payload; ``.step`` is the step's number."""

    __slots__ = ()


class StepFinished(StepEvent):
    """``step.finished``: ``tool_calls`` and how the step ended (``think_only``, ``nudged``, ``routed``,
    ``paused_turn`` — a turn the vendor paused, sent back to continue —, ``cost_stopped`` — a budget ended the run
    after the step's call answered or while it waited for a slot — or ``failed`` with the ``error``)."""

    __slots__ = ()


class LLMEvent(Event):
    """``llm.*``: what the loop sent to the provider stack and what came back."""

    __slots__ = ()


class LLMRequested(LLMEvent):
    """``llm.request``: ``request``, the exact :class:`~agentactors.messages.LLMRequest` of the step."""

    __slots__ = ()


class LLMResponded(LLMEvent):
    """``llm.response``: ``response`` (the :class:`~agentactors.messages.LLMResponse`), ``provider`` (the
    member that served) and ``usage``."""

    __slots__ = ()


class LLMTextDelta(LLMEvent):
    """``llm.text_delta``: ``text``, a piece of answer text as it streamed (think blocks never)."""

    __slots__ = ()

    if TYPE_CHECKING:  # the payload's fields, for type checkers (read through __getattr__ at run time)
        text: str


class LLMReasoningDelta(LLMEvent):
    """``llm.reasoning_delta``: ``text``, a piece of the model's reasoning as it streamed."""

    __slots__ = ()

    if TYPE_CHECKING:  # the payload's fields, for type checkers (read through __getattr__ at run time)
        text: str


class ToolEvent(Event):
    """``tools.*``: a tool call and its result (tools may emit their own ``tools.*`` types too)."""

    __slots__ = ()


class ToolStarted(ToolEvent):
    """``tools.started``: ``call_id``, ``name``."""

    __slots__ = ()

    if TYPE_CHECKING:  # the payload's fields, for type checkers (read through __getattr__ at run time)
        call_id: str
        name: str


class ToolFinished(ToolEvent):
    """``tools.finished``: ``call_id``, ``name``, ``status``, ``duration``, ``size`` (of the content the model
    gets); ``error_type`` (the type name of what the tool raised, ``"KeyError"``; ``"TypeError"`` for a value
    that cannot be sent as JSON) on a status ``error`` the executor made; ``replayed=True`` on a call a replay
    answered from its recording (:mod:`agentactors.journal`)."""

    __slots__ = ()

    if TYPE_CHECKING:  # the payload's fields, for type checkers (read through __getattr__ at run time)
        call_id: str
        name: str
        status: str
        duration: float
        size: int


class ToolResultRefused(ToolEvent):
    """``tools.result_refused``: ``call_id``, ``name``, ``size`` (the refused payload's true size),
    ``max_chars``, ``narrow_by``.  The payload itself never enters an event."""

    __slots__ = ()


class ToolResultTruncated(ToolEvent):
    """``tools.result_truncated``: ``call_id``, ``name``, ``size``, ``cap``, ``shown``."""

    __slots__ = ()


class RetryEvent(Event):
    """``retry.*``: a retry decorator's decisions."""

    __slots__ = ()


class RetryScheduled(RetryEvent):
    """``retry.scheduled``: ``provider``, ``model``, ``attempt`` (the one that failed), ``delay``, ``error``."""

    __slots__ = ()


class RetryRecovered(RetryEvent):
    """``retry.recovered``: ``provider``, ``model``, ``attempts``, ``elapsed``."""

    __slots__ = ()


class RetryExhausted(RetryEvent):
    """``retry.exhausted``: ``provider``, ``model``, ``attempts``, ``error``, ``reason``."""

    __slots__ = ()


class FallbackEvent(Event):
    """``fallback.*``: a fallback chain moving between its members."""

    __slots__ = ()


class FallbackMoved(FallbackEvent):
    """``fallback.moved``: ``from_member``, ``to_member``, ``to_model`` (the model the request asked of that member),
    ``reason`` (an error kind), ``error``."""

    __slots__ = ()


class FallbackSkipped(FallbackEvent):
    """``fallback.skipped``: ``member``, ``model``, ``reason``."""

    __slots__ = ()


class FallbackExhausted(FallbackEvent):
    """``fallback.exhausted``: ``errors``, every member's, in order (and ``reason="circuit_open"``, ``detail`` when a
    breaker above stopped the chain before its next member)."""

    __slots__ = ()


class BreakerEvent(Event):
    """``breaker.*``: a circuit breaker's transitions and refusals."""

    __slots__ = ()


class BreakerStateChanged(BreakerEvent):
    """``breaker.state_changed``: ``key``, ``from_state``, ``to_state``, ``reason``.

    The breaker's contract calls them ``from`` and ``to``; ``from`` is a Python keyword (no ``emit(from=...)``,
    no ``event.from``), so the payload spells them ``from_state`` and ``to_state``.  ``event.get("from")`` and
    ``getattr(event, "to")`` read them too, so code written to the contract works; the payload keeps one spelling.
    """

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return super().__getattr__(_BREAKER_ALIASES.get(name, name))

    def get(self, name: str, default: Any = None) -> Any:
        return self.data.get(_BREAKER_ALIASES.get(name, name), default)


#: The contract's names of ``breaker.state_changed``'s fields -> the payload's (see BreakerStateChanged).
_BREAKER_ALIASES = {"from": "from_state", "to": "to_state"}


class BreakerRejected(BreakerEvent):
    """``breaker.rejected`` (sampled): ``key``, ``count``, ``retry_after``, ``state``."""

    __slots__ = ()


class BreakerIgnored(BreakerEvent):
    """``breaker.ignored``: ``key``, ``kind`` (an outcome the breaker does not count)."""

    __slots__ = ()


class HedgeEvent(Event):
    """``hedge.*``: a slow call asked a second time (:func:`~agentactors.resilience.with_hedge`)."""

    __slots__ = ()


class HedgeSent(HedgeEvent):
    """``hedge.sent``: ``member`` (where the second copy went), ``model``, ``after`` (the seconds waited)."""

    __slots__ = ()


class HedgeWon(HedgeEvent):
    """``hedge.won``: ``winner`` (``"primary"`` or ``"hedge"``), ``member`` and ``model`` of the copy that answered."""

    __slots__ = ()


class HedgeSkipped(HedgeEvent):
    """``hedge.skipped``: a copy that was due and not sent — ``member``, ``model`` it would have gone to, ``reason``
    (``"admission"``: the ProviderActor around had no slot or budget for it at once)."""

    __slots__ = ()


class ProviderEvent(Event):
    """``provider.*``: a ProviderActor's budgets at work."""

    __slots__ = ()


class ProviderThrottled(ProviderEvent):
    """``provider.throttled``: ``provider``, ``budget``, ``wait``, ``estimated_tokens``."""

    __slots__ = ()


class OutputEvent(Event):
    """``output.*``: a typed result's strategy, its refused answers and its partial values."""

    __slots__ = ()


class OutputStrategyChosen(OutputEvent):
    """``output.strategy``: ``strategy`` (``"tool"``, ``"native"`` or ``"prompted"``) and ``reason``, when a
    step's strategy differs from the step before's (the first step's always)."""

    __slots__ = ()


class OutputStrategyDegraded(OutputEvent):
    """``output.strategy_degraded``: the step is sent again with ``strategy`` instead of ``from_strategy``
    (the forced choice could not be carried), with the ``reason`` and the ``error``."""

    __slots__ = ()


class OutputInvalid(OutputEvent):
    """``output.invalid``: an answer refused — ``attempt``, ``strategy``, ``issues`` (the lines the model
    reads) and ``retries_left``."""

    __slots__ = ()


class OutputPartial(OutputEvent):
    """``output.partial``: ``value``, the typed result so far while it streams."""

    __slots__ = ()


class SessionEvent(Event):
    """``session.*``: a session's life as a virtual actor (``docs/sessions.md``); each carries ``key``."""

    __slots__ = ()


class SessionActivated(SessionEvent):
    """``session.activated``: ``key``, ``version`` (``None`` for a session not yet stored), ``messages`` (how
    many the history holds) and ``paused``: the session was loaded from its store for a turn."""

    __slots__ = ()


class SessionDeactivated(SessionEvent):
    """``session.deactivated``: ``key``, ``version`` and ``reason`` (``"idle"`` or ``"runtime_exit"``): its
    actor stopped, its history left memory.  Always follows a ``session.activated`` for the same session: one
    that never loaded emits neither."""

    __slots__ = ()


class SessionCommitted(SessionEvent):
    """``session.committed``: ``key``, ``version`` (the new one), ``turn_run_id`` (the turn's run: the event's
    own ``run_id`` is that of the run it was emitted in, if any), ``messages`` (how many the history now
    holds) and ``paused`` (the turn paused for approval; ``resolving=True``: ``resolve`` claimed a pause;
    ``recovered=True``: ``rt.recover(sessions=...)`` committed a turn a crash had cut)."""

    __slots__ = ()


class ActorEvent(Event):
    """``actor.*``: the kernel's lifecycle events (``actor.started``, ``stopped``, ``failed``, ``restarted``,
    ``dead_letter``), each with ``actor``."""

    __slots__ = ()


_FAMILIES: dict[str, type[Event]] = {
    "run": RunEvent,
    "step": StepEvent,
    "llm": LLMEvent,
    "tools": ToolEvent,
    "retry": RetryEvent,
    "fallback": FallbackEvent,
    "breaker": BreakerEvent,
    "hedge": HedgeEvent,
    "provider": ProviderEvent,
    "output": OutputEvent,
    "session": SessionEvent,
    "actor": ActorEvent,
}

# type -> class: the emitted types, then (filled as they are first seen) every other type's family.
_CLASSES: dict[str, type[Event]] = {
    "run.started": RunStarted,
    "run.finished": RunFinished,
    "step.started": StepStarted,
    "step.finished": StepFinished,
    "llm.request": LLMRequested,
    "llm.response": LLMResponded,
    "llm.text_delta": LLMTextDelta,
    "llm.reasoning_delta": LLMReasoningDelta,
    "tools.started": ToolStarted,
    "tools.finished": ToolFinished,
    "tools.result_refused": ToolResultRefused,
    "tools.result_truncated": ToolResultTruncated,
    "retry.scheduled": RetryScheduled,
    "retry.recovered": RetryRecovered,
    "retry.exhausted": RetryExhausted,
    "fallback.moved": FallbackMoved,
    "fallback.skipped": FallbackSkipped,
    "fallback.exhausted": FallbackExhausted,
    "breaker.state_changed": BreakerStateChanged,
    "breaker.rejected": BreakerRejected,
    "breaker.ignored": BreakerIgnored,
    "hedge.sent": HedgeSent,
    "hedge.won": HedgeWon,
    "hedge.skipped": HedgeSkipped,
    "provider.throttled": ProviderThrottled,
    "output.strategy": OutputStrategyChosen,
    "output.strategy_degraded": OutputStrategyDegraded,
    "output.invalid": OutputInvalid,
    "output.partial": OutputPartial,
    "session.activated": SessionActivated,
    "session.deactivated": SessionDeactivated,
    "session.committed": SessionCommitted,
}
# Types are few in practice, but a tool may make them up: the cache of families learned stays bounded.
_LEARNED_MAX = 1024
_learned = 0


def event_class(type: str) -> type[Event]:
    """The class an event of ``type`` is emitted as: its own, else its family's, else :class:`Event`."""
    cls = _CLASSES.get(type)
    if cls is not None:
        return cls
    cls = _FAMILIES.get(type.partition(".")[0], Event)
    global _learned
    if _learned < _LEARNED_MAX:
        _learned += 1
        _CLASSES[type] = cls
    return cls


def make_event(
    type: str,
    run_id: str | None = None,
    seq: int = 0,
    time: float = 0.0,
    step: int | None = None,
    data: Mapping[str, Any] | None = None,
    parent_run_id: str | None = None,
) -> Event:
    """An event of the class its ``type`` names (:func:`event_class`); the arguments are :class:`Event`'s."""
    return event_class(type)(type, run_id, seq, time, step, {} if data is None else data, parent_run_id)


@runtime_checkable
class Recorder(Protocol):
    """Anything with a synchronous ``record(event)`` that does not block."""

    def record(self, event: Event) -> None: ...


class FanOut:
    """Delivers each event to several recorders; one that raises is logged once and skipped that time."""

    __slots__ = ("_failed", "recorders")

    def __init__(self, recorders: Sequence[Recorder] = ()) -> None:
        self.recorders: tuple[Recorder, ...] = tuple(recorders)
        for r in self.recorders:
            _check_recorder(r)
        self._failed: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self.recorders)

    def record(self, event: Event) -> None:
        for r in self.recorders:
            try:
                returned: object = r.record(event)  # type: ignore[func-returns-value]
                if returned is not None:  # the rare branch: a well-behaved recorder costs one ``is not None``
                    self._returned(r, returned, event)
            except Exception as exc:
                self._failure(r, f"raised {_error_text(exc)}", event)

    def _failure(self, r: Recorder, what: str, event: Event) -> None:
        if id(r) not in self._failed:
            self._failed.add(id(r))
            log.warning(
                "recorder %s %s while recording %s; the run goes on "
                "(further failures of this recorder are not logged)",
                type(r).__name__,
                what,
                event.type,
            )

    def _returned(self, r: Recorder, returned: object, event: Event) -> None:
        """What ``r.record(event)`` returned, when not ``None``.  An awaitable — a coroutine a sync callable
        handed back — would never be awaited (recording is synchronous): it is closed, so it neither warns at
        garbage collection nor runs half-way, and the recorder is reported once, like one that raised."""
        if inspect.isawaitable(returned):
            close = getattr(returned, "close", None)
            if callable(close):
                close()
            self._failure(r, "returned an awaitable (recording is synchronous: nothing awaits it)", event)

    def with_recorders(self, more: Sequence[Recorder]) -> FanOut:
        if not more:
            return self
        return FanOut(self.recorders + tuple(r for r in more if r not in self.recorders))


def _check_recorder(r: object) -> None:
    """Refuse, when it is attached, what cannot record: a ``TypeError`` naming it, before any event is lost.

    An ``async def record`` would hand back a coroutine nobody awaits: the recorder would see no event at all
    and say so only in a ``RuntimeWarning`` at garbage collection.  A recorder that must do I/O asynchronously
    queues the event in ``record`` and sends it from a task of its own.
    """
    record = getattr(r, "record", None)
    if not callable(record):
        raise TypeError(f"a recorder needs a record(event) method; {type(r).__name__} has none")
    if inspect.iscoroutinefunction(record):
        raise TypeError(
            f"recorder {type(r).__name__}: record() is async, but recording is synchronous and never awaits it "
            "(queue the event in a sync record() and send it from a task of your own)"
        )


def _error_text(exc: BaseException) -> str:
    """``Type: message``, redacted; the type alone when the message cannot be read (a log line must not raise)."""
    try:
        return redact(f"{type(exc).__name__}: {exc}")
    except Exception:
        return f"{type(exc).__name__} (its message could not be read)"


class EventSink:
    """Where the events of one run (or of the runtime, outside runs) go.

    Holds the run id, the per-run sequence counter, the current step and the
    recorders.  Mutable on purpose: it belongs to exactly one run.
    """

    __slots__ = ("_seq", "fanout", "parent_run_id", "run_id", "step")

    def __init__(
        self,
        recorders: Sequence[Recorder] | FanOut = (),
        *,
        run_id: str | None = None,
        parent_run_id: str | None = None,
    ) -> None:
        self.fanout = recorders if isinstance(recorders, FanOut) else FanOut(recorders)
        self.run_id = run_id
        self.parent_run_id = parent_run_id
        self.step: int | None = None
        self._seq = itertools.count(1)

    def __bool__(self) -> bool:
        return bool(self.fanout)

    def emit(self, type: str, /, **data: Any) -> Event | None:
        """Build and deliver one event; returns it (``None`` when nobody listens)."""
        if not self.fanout.recorders:
            return None
        # The class by type: one dict lookup (a type first seen is classified once, then cached).
        cls = _CLASSES.get(type) or event_class(type)
        event = cls(type, self.run_id, next(self._seq), _now(), self.step, data, self.parent_run_id)
        self.fanout.record(event)
        return event


_SINK: contextvars.ContextVar[EventSink | None] = contextvars.ContextVar("agentactors_event_sink", default=None)


def current_sink() -> EventSink | None:
    """The sink of the run this code is working for, if any recorder listens."""
    return _SINK.get()


def current_run_id() -> str | None:
    sink = _SINK.get()
    return sink.run_id if sink is not None else None


def emit(type: str, /, **data: Any) -> None:
    """Emit an event to the current run's recorders.  With none attached: one lookup, one check."""
    sink = _SINK.get()
    if sink is not None and sink.fanout.recorders:
        sink.emit(type, **data)


@contextmanager
def use_sink(sink: EventSink | None) -> Iterator[EventSink | None]:
    """Make ``sink`` the current one for the code in the block (and the tasks it starts)."""
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


# --- recorders ----------------------------------------------------------------------------------


class InMemoryRecorder:
    """Keeps every event in ``.events`` (in arrival order)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def record(self, event: Event) -> None:
        self.events.append(event)

    def of_type(self, prefix: str) -> list[Event]:
        """Events whose type is ``prefix`` or starts with ``prefix + "."``."""
        return [e for e in self.events if e.type == prefix or e.type.startswith(prefix + ".")]

    def for_run(self, run_id: str) -> list[Event]:
        return [e for e in self.events if e.run_id == run_id]

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def clear(self) -> None:
        self.events.clear()


class JsonlRecorder:
    """Appends one JSON object per event to ``path``.

    Writes are buffered (recording must not block the loop on a disk write per event): the recorder holds
    up to :data:`_BUFFER_BYTES` of whole lines and writes them out at once; :meth:`flush` writes what it
    holds, and :meth:`close` (or leaving ``with``) writes it and closes the file.  A runtime flushes its
    recorders and those of the agents that ran in it when it exits.

    Every event becomes one line that :func:`read_jsonl` and
    :meth:`~agentactors.explain.Explanation.from_jsonl` read back, whatever its payload holds: a value
    JSON has no form for is its redacted ``repr``; a structure that contains itself, or nests deeper than a
    record line may (:data:`~agentactors._json.MAX_DOCUMENT_DEPTH`), is cut there with a ``"<...>"``
    marker; an integer too long to read back and a NaN or an infinity are written as strings; text holding
    a lone surrogate is written ``\\u``-escaped (a UTF-8 file cannot hold it as it is).  An event whose line
    would be longer than a record line may be (:data:`~agentactors._json.MAX_TEXT_CHARS`) keeps its header
    (``type``, ``run_id``, ``seq``, ...) and says so in an ``omitted`` field instead of its payload.  So a
    payload never fails the run, never loses its event, and never writes a line no reader can take back.

    **Rotation.**  A file deleted or renamed while the recorder has it open (``logrotate``) is followed, as
    :class:`logging.handlers.WatchedFileHandler` follows it: each time the recorder writes its buffer out
    it checks that ``path`` still names the file it has open (device and inode), and if not opens ``path``
    again — creating it, or appending to the file another writer put there.  What it still held then goes
    to the new file: records are never written into a deleted file's inode, and each is whole in one file.
    Records written out before a rename stay in the renamed file.  One ``stat`` per write-out, not per
    record: a ``stat`` costs about 2–3 µs, a fifth of a small record's whole cost (~12 µs) were it made per
    record; once per 8 KiB written it is a few tens of nanoseconds a record.
    If ``path`` cannot be opened again (its folder went away), the recorder says so once on the
    ``agentactors.events`` logger and goes on writing into the file it has open, and tries again at the
    next write-out.  A file opened again stands alone: the first request held for it of each run is
    written whole, and a run none of whose requests were held writes its next one whole.

    **Requests.**  Each ``llm.request`` holds the whole conversation so far: written whole every step, a
    run of N steps wrote N²/2 messages (a 2,000-step run about 1 GB) and encoded them all inside the run.
    A request that goes on from the run's last one written is written as what it changed —
    ``"request": {"messages_from": {"seq": S}, "messages_delta": [...], <its other fields>}``, each item of
    ``messages_delta`` a span ``[start, end]`` of the messages of the run's request of seq ``S`` (messages the
    two share: the same objects) or a message of its own.  Written whole: the run's requests 1, 2, 4, 8...
    (a lost base loses the requests up to the next one, and the copies cost as much as the deltas), one
    with less than half its messages in the last (a handoff's filtered conversation), the first of each run
    in a file opened again, and the next after one left out (``omitted``).  :func:`read_jsonl` rebuilds each
    request whole; one whose base it did not read (a lost line, a cut file) it yields with an ``omitted``
    note instead of the request, never a wrong one.  The delta is not under ``messages``: a reader that does
    not know it sees a request without its conversation, never one cut short.  ``full_requests=True``
    writes every request whole (the form before), for a tool that parses the lines itself.  A recorder
    holds the last request's messages (references, not copies) of each run until its ``run.finished``
    (at most :data:`_RUNS_MAX` runs).
    """

    def __init__(self, path: str | Path, *, full_requests: bool = False) -> None:
        if not isinstance(full_requests, bool):
            raise TypeError(f"full_requests must be True or False, not {type(full_requests).__name__}")
        self.path = Path(path)
        #: Whether each ``llm.request`` is written whole (the form before deltas) rather than as what it adds.
        self.full_requests = full_requests
        file, identity = self._open()
        self._file: IO[bytes] | None = file
        self._identity = identity
        # Whole lines, UTF-8, not yet written: the recorder's own buffer (not the file object's), so that what
        # it holds when the file is rotated away goes to the new file, never to the old one's inode.
        self._pending = bytearray()
        self._reopen_failed = False
        # Run id -> the last llm.request record of the run put in the file (whole or as a delta): its seq, its
        # request's messages, and how many of the run's requests were recorded.  Changed under the lock.
        self._sent: dict[str, _Sent] = {}
        # The llm.request records in _pending (their span, run, whether a delta, the event): what a file rotated
        # away before they are written out needs whole.  Under the lock.
        self._held: list[_Held] = []
        # Runs on several threads (a runtime per thread) may share one recorder; a line is appended and the
        # buffer written out (and the file opened again) under the lock.  The line is built and encoded outside.
        self._lock = threading.Lock()

    def _open(self) -> tuple[IO[bytes], tuple[int, int]]:
        """``path`` opened to append (unbuffered: the recorder buffers), and the file's device and inode.

        A file whose last line a crash cut off mid-write (it does not end with a newline) gets one, then
        :data:`_RESUMED_LINE`: appended to as it was, the first record was glued onto the cut line and lost
        with it, and the cut line — no longer the last — made :func:`read_jsonl` refuse the whole file.
        """
        file = self.path.open("ab", buffering=0)
        try:
            status = os.fstat(file.fileno())
            if status.st_size and stat.S_ISREG(status.st_mode) and _ends_cut(self.path, status):
                _write_all(file, bytearray(b"\n" + _RESUMED_LINE), self.path)
        except BaseException:
            file.close()
            raise
        return file, (status.st_dev, status.st_ino)

    def record(self, event: Event) -> None:
        if event.type in _REQUEST_KINDS and not self.full_requests:  # one set lookup; the rest on their own path
            self._record_request(event)
            return
        record = _record_of(event)
        line = _line_of(record, ascii=False)
        try:
            data = line.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate (a str made from undecodable bytes, say): UTF-8 cannot hold it, JSON's escape can.
            data = _line_of(record, ascii=True).encode("ascii")
        with self._lock:
            self._append(data, None)

    def _record_request(self, event: Event) -> None:
        """Record an ``llm.request`` (as what it adds to the run's previous one, when it goes on from it) or a
        ``run.finished`` (the run's last request forgotten)."""
        run_id = event.run_id
        request = event.data.get("request")
        if event.type != "llm.request" or run_id is None or type(request) is not LLMRequest:
            # A run's end, or a request of no run (sinks outside runs number their events each from 1): whole.
            data = _encoded(_record_of(event))
            with self._lock:
                if run_id is not None:
                    self._sent.pop(run_id, None)
                self._append(data, None)
            return
        messages = request.messages
        sent = self._sent.get(run_id)
        line = self._request_line(event, request, sent)
        with self._lock:
            if self._sent.get(run_id) is not sent:  # a rotation forgot the base meanwhile (another thread's write-out)
                sent = None
                line = self._request_line(event, request, None)
            count = sent.count + 1 if sent is not None else 1
            held: _Held | None = None
            if line.whole:
                held = _Held(0, 0, run_id, line.delta, event)
                if run_id not in self._sent and len(self._sent) >= _RUNS_MAX:
                    del self._sent[next(iter(self._sent))]  # the longest-known run: its next request is whole
                self._sent[run_id] = _Sent(event.seq, messages, count)
            else:
                self._sent.pop(run_id, None)  # not in the file: the run's next request is written whole
            self._append(line.line, held)

    def _request_line(self, event: Event, request: LLMRequest, sent: _Sent | None) -> _RequestLine:
        """The line of an ``llm.request``: a delta when it goes on from ``sent`` (the run's last request written)."""
        pieces = None
        count = sent.count + 1 if sent is not None else 1
        # Whole at the run's request 1, 2, 4, 8...: the copies cost as much as the deltas between them, and a lost
        # base loses the requests up to the next one.
        if sent is not None and count & (count - 1):
            pieces = _pieces(sent.messages, request.messages)
        if sent is not None and pieces is not None:
            try:
                data = _encoded(_delta_record(event, request, sent.seq, pieces))
            except Exception:  # a payload that fails to convert: the whole record's path says what it can
                pass
            else:
                if not data.endswith(_TOO_LONG_TAIL):
                    return _RequestLine(data, True, True)
        record = _record_of(event)
        data = _encoded(record)
        return _RequestLine(data, "request" in record and not data.endswith(_TOO_LONG_TAIL), False)

    def _append(self, data: bytes, held: _Held | None) -> None:
        """Append a line to the buffer, written out when full (a request's line, tracked as ``held``).  Under the
        lock."""
        if self._file is None:
            raise RuntimeError(f"JsonlRecorder({self.path}) is closed")
        if held is not None:
            start = len(self._pending)
            self._held.append(attrs.evolve(held, start=start, end=start + len(data)))
        self._pending += data
        if len(self._pending) >= _BUFFER_BYTES:
            try:
                self._write_out()
            except BaseException:
                # The file takes nothing (a full disk): what is held waits for the next write-out, but not
                # without bound — past _PENDING_MAX this record is dropped (the caller hears of the error).
                if len(self._pending) > _PENDING_MAX:
                    del self._pending[-len(data) :]
                    if held is not None:
                        self._held.pop()
                        self._sent.pop(held.run_id, None)  # its base is not in the file: the next is whole
                raise

    def _write_out(self) -> None:
        """Write the buffer to ``path``'s file — opened again first if it is no longer the one open.  Under the lock.

        On an error (a full disk) what was not written stays in the buffer for the next write-out.
        """
        if not self._pending:
            return
        if self._follow():
            self._stand_alone()
        file = self._file
        assert file is not None
        before = len(self._pending)
        try:
            _write_all(file, self._pending, self.path)
        finally:
            if self._held:
                written = before - len(self._pending)
                self._held = [
                    attrs.evolve(h, start=h.start - written, end=h.end - written)
                    for h in self._held
                    if h.start >= written
                ]

    def _stand_alone(self) -> None:
        """After the file was opened again: what goes into the new one must read without the old one.  Under the lock.

        The first held request of each run that is a delta (its base went into the old file) is written whole; a
        run none of whose requests are held writes its next one whole.
        """
        held: list[_Held] = []
        runs: set[str] = set()
        lost: set[str] = set()
        shift = 0
        for h in self._held:
            start, end = h.start + shift, h.end + shift
            if h.delta and h.run_id not in runs:
                record = _record_of(h.event)
                data = _encoded(record)
                if "request" not in record or data.endswith(_TOO_LONG_TAIL):
                    lost.add(h.run_id)  # no base for the run's deltas held after it (they read as omitted)
                self._pending[start:end] = data
                shift += len(data) - (end - start)
                end = start + len(data)
                h = attrs.evolve(h, delta=False)
            runs.add(h.run_id)
            held.append(attrs.evolve(h, start=start, end=end))
        self._held = held
        for run_id in [r for r in self._sent if r not in runs or r in lost]:
            del self._sent[run_id]

    def _follow(self) -> bool:
        """Open ``path`` again if the file there is not the one open (deleted, renamed or replaced): whether it did.
        Under the lock."""
        try:
            status = os.stat(self.path)
            if (status.st_dev, status.st_ino) == self._identity:
                return False
        except FileNotFoundError:
            pass
        except OSError:  # the path cannot be looked at (a permission): nothing says the file changed
            return False
        try:
            file, identity = self._open()
        except OSError as exc:
            if not self._reopen_failed:
                self._reopen_failed = True
                log.warning(
                    "JsonlRecorder(%s): the file was moved or deleted and the path could not open again (%s); "
                    "records go on into the file it has open (further failures are not logged)",
                    self.path,
                    _error_text(exc),
                )
            return False
        old, self._file, self._identity = self._file, file, identity
        if old is not None:
            old.close()
        return True

    def flush(self) -> None:
        """Write out what the recorder holds (to ``path``'s file, opened again if it was rotated away)."""
        with self._lock:
            if self._file is not None:
                self._write_out()

    def close(self) -> None:
        """Write out what the recorder holds and close the file.  Closing a closed recorder does nothing."""
        with self._lock:
            if self._file is None:
                return
            try:
                self._write_out()
            finally:
                file, self._file = self._file, None
                self._pending.clear()
                self._held.clear()
                self._sent.clear()
                file.close()

    def __del__(self) -> None:
        # Dropped unclosed: what it holds is written out, as a file object's buffer was (the file itself is left
        # to its own finalizer, which says it was not closed).  Never raises, even at interpreter exit.
        try:
            if self._file is not None and self._pending:
                self._write_out()
        except Exception:
            pass

    def __enter__(self) -> JsonlRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: The event types a :class:`JsonlRecorder` records on a path of their own: a request (a delta of the run's last
#: one, when it goes on from it) and a run's end (its last request forgotten).
_REQUEST_KINDS = frozenset(("llm.request", "run.finished"))
#: The most runs a :class:`JsonlRecorder` remembers the last request of (a run that never finished, say); a run
#: forgotten writes its next request whole.
_RUNS_MAX = 4096


@attrs.frozen(slots=True)
class _Sent:
    """A run's last ``llm.request`` record put in a :class:`JsonlRecorder`'s file."""

    seq: int
    messages: tuple[Any, ...]
    count: int  # the run's requests recorded so far (whole at 1, 2, 4, 8...)


@attrs.frozen(slots=True)
class _Held:
    """An ``llm.request`` line in a :class:`JsonlRecorder`'s buffer: ``_pending[start:end]``."""

    start: int
    end: int
    run_id: str
    delta: bool
    event: Event


@attrs.frozen(slots=True)
class _RequestLine:
    line: bytes
    whole: bool  # the request is in the line (whole or as a delta), not omitted
    delta: bool


def _pieces(before: tuple[Any, ...], after: tuple[Any, ...]) -> list[Any] | None:
    """``after`` as spans ``[start, end]`` of ``before`` (messages it holds too: the same objects) and the
    messages it does not; ``None`` when less than half of it is in ``before`` (a handoff's filtered conversation).

    The usual request goes on from the last: ``before`` then what the step added.  A context budget trims and
    drops older messages (each step, once the conversation outgrew it): spans around what changed.
    """
    n = len(before)
    try:
        if len(after) >= n and after[:n] == before:  # a tuple compares identity first, in C: the usual case
            return [[0, n], *after[n:]] if n * 2 >= len(after) else None
    except Exception:  # a message whose comparison raises: told by identity alone, below
        pass
    where = {id(m): i for i, m in enumerate(before)}
    pieces: list[Any] = []
    copied = 0
    span: list[int] | None = None
    for m in after:
        i = where.get(id(m))
        if i is None:
            pieces.append(m)
            span = None
        elif span is not None and span[1] == i:
            span[1] += 1
            copied += 1
        else:
            span = [i, i + 1]
            pieces.append(span)
            copied += 1
    return pieces if copied * 2 >= len(after) else None


def _delta_record(event: Event, request: LLMRequest, base: int, pieces: list[Any]) -> dict[str, Any]:
    """``event``'s record (:func:`event_to_dict`) with its request's messages told from the run's request ``base``
    (its seq): ``messages_from`` names it, ``messages_delta`` holds spans of its messages and the new ones."""
    rest = {k: v for k, v in event.data.items() if k != "request"}
    out = event_to_dict(attrs.evolve(event, data=rest))  # the header and the rest of the payload, as any record's
    out["request"] = _request_delta(request, base, pieces)
    return out


def _request_delta(request: LLMRequest, base: int, pieces: list[Any]) -> dict[str, Any]:
    """What :func:`to_jsonable` makes of ``request``, its messages as ``pieces`` under ``messages_delta``.

    Not ``messages``: a reader that does not know the form sees a request without its conversation, never a
    conversation cut short.
    """
    active = {id(request), id(request.messages)}
    out: dict[str, Any] = {"messages_from": {"seq": base}}
    for f in attrs.fields(LLMRequest):
        name = f.name
        if name == "messages":
            delta: list[Any] = []
            for m in pieces:  # a message at the depth to_jsonable converts it: a field's items
                delta.append(m if type(m) is list else _jsonable(m, _VALUE_DEPTH - 2, active))
            out["messages_delta"] = delta
            continue
        field = getattr(request, name)
        if name in _CONFIG_FIELDS and field:
            out[name] = _redacted(_jsonable(field, _VALUE_DEPTH - 1, active))
        else:
            out[name] = _jsonable(field, _VALUE_DEPTH - 1, active)
    return out


def _encoded(record: dict[str, Any]) -> bytes:
    """A record's line as bytes (``\\u``-escaped when its text holds a lone surrogate)."""
    try:
        return _line_of(record, ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return _line_of(record, ascii=True).encode("ascii")


#: The line a :class:`JsonlRecorder` writes first into a file whose last line was cut off mid-write (after a
#: newline ending the cut line): :func:`read_jsonl` skips a cut line this follows, as it does a cut last line.
#: It has no ``type``, so every reader of records, an older one too, skips the line itself.
_RESUMED_LINE = b'{"resumed": "the line before this one was cut off mid-write; a writer opened the file again"}\n'
_RESUMED = _RESUMED_LINE.strip()


def _ends_cut(path: Path, status: os.stat_result) -> bool:
    """Whether the file ``status`` describes (open at ``path``) ends in the middle of a line.

    Looked at through a second, read-only handle: the recorder's own is append-only.  A file that cannot be
    read (write-only permissions), or that is no longer the one at ``path``, is taken to end whole.
    """
    try:
        with path.open("rb", buffering=0) as reader:
            mine = os.fstat(reader.fileno())
            if (mine.st_dev, mine.st_ino) != (status.st_dev, status.st_ino):
                return False
            reader.seek(status.st_size - 1)
            return reader.read(1) != b"\n"
    except OSError:
        return False


def _write_all(file: IO[bytes], data: bytearray, path: Path) -> None:
    """Write ``data`` to an unbuffered ``file``, deleting from it what was written: on an error (a full disk)
    ``data`` holds what was not."""
    written = 0
    view = memoryview(data)
    try:
        while written < len(view):
            n = file.write(view[written:])
            if not n:  # a regular file takes bytes or raises; anything else must not spin here
                raise OSError(f"JsonlRecorder({path}): the file took no bytes")
            written += n
    finally:
        view.release()
        del data[:written]


#: The most a :class:`JsonlRecorder` holds before it writes out (whole lines; a longer line is written at once).
_BUFFER_BYTES = io.DEFAULT_BUFFER_SIZE
#: The most a :class:`JsonlRecorder` whose file takes nothing (a full disk) holds on to before it drops records.
_PENDING_MAX = 128 * _BUFFER_BYTES


# --- serialisation ------------------------------------------------------------------------------


#: Integers from this magnitude on have more digits than a record line may hold (a compare, not a conversion).
_INT_LIMIT = 10**MAX_INT_DIGITS
#: Container levels a payload value may have: a record line is one more (the event's own object).
_VALUE_DEPTH = MAX_DOCUMENT_DEPTH - 1


def to_jsonable(value: Any) -> Any:
    """A JSON-friendly view of event payloads: attrs classes, enums, exceptions, containers.

    Total: any value has a view, so a hostile payload never fails a recorder.  A value JSON has no form for
    is its redacted ``repr`` (a placeholder if even that raises); a container already being converted
    further up (a structure that holds itself) is ``"<recursive>"``; containers past the depth a record
    line may hold are ``"<nested too deep>"``; an integer of more digits than a record may hold is a
    placeholder string.  Floats are kept as they are (a NaN too: :class:`JsonlRecorder` spells those).
    """
    return _jsonable(value, _VALUE_DEPTH, set())


#: Fields of the value types (``LLMRequest.vendor_options``, ``ModelSettings.extra``) whose text a record redacts.
_CONFIG_FIELDS = frozenset(("vendor_options", "extra"))


def _redacted(value: Any) -> Any:
    """``value`` (as :func:`_jsonable` made it) with every string in it redacted, keys included (iterative)."""
    if isinstance(value, str):
        return redact(value)
    if not isinstance(value, dict | list):
        return value
    root: list[Any] = [value]
    todo: list[tuple[Any, Any]] = [(root, 0)]
    while todo:
        holder, at = todo.pop()
        item = holder[at]
        if isinstance(item, str):
            holder[at] = redact(item)
        elif isinstance(item, list):
            todo.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            fresh = {redact(k): v for k, v in item.items()}
            holder[at] = fresh
            todo.extend((fresh, k) for k in fresh)
    return root[0]


def _jsonable(value: Any, room: int, active: set[int]) -> Any:
    # One frame per level (loops, not comprehensions), so the deepest value kept costs ~190 frames.
    if value is None or isinstance(value, bool | str | float):
        return value
    if isinstance(value, int):
        return value if -_INT_LIMIT < value < _INT_LIMIT else f"<an integer of more than {MAX_INT_DIGITS} digits>"
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, room, active)
    if isinstance(value, bytes | bytearray | memoryview):
        # A part's payload (an image, a document) never enters the record: its size says enough.
        return {"omitted_bytes": len(value)}
    if isinstance(value, BaseException):
        return _error_view(value, room, active)
    is_container = attrs.has(type(value)) or isinstance(value, Mapping | list | tuple | set | frozenset)
    if not is_container:
        return _repr_of(value)
    if room <= 0:
        return "<nested too deep>"
    if id(value) in active:
        return "<recursive>"
    active.add(id(value))
    try:
        if attrs.has(type(value)):
            out: dict[str, Any] = {}
            part = is_part(value)
            for f in attrs.fields(type(value)):
                field = getattr(value, f.name)
                if part and f.name == "url" and isinstance(field, str):
                    # A part's URL may carry credentials (user:password@, a presigned signature and session
                    # token): a record shows it as a repr does, never whole.
                    out[f.name] = shown_url(field)
                elif f.name in _CONFIG_FIELDS and field:
                    # Vendor options (a request's, a settings' extra) are configuration, where a header value
                    # or a token may sit: their text is redacted.  A conversation's text is the user's, as is.
                    out[f.name] = _redacted(_jsonable(field, room - 1, active))
                else:
                    out[f.name] = _jsonable(field, room - 1, active)
            return out
        if isinstance(value, Mapping):
            out = {}
            for k, v in value.items():
                out[k if isinstance(k, str) else _key_of(k)] = _jsonable(v, room - 1, active)
            return out
        items: list[Any] = []
        for v in value:
            items.append(_jsonable(v, room - 1, active))
        return items
    except Exception:  # a container whose iteration or attributes raise: what it is, not what it held
        return f"<{type(value).__name__} (its contents could not be read)>"
    finally:
        active.discard(id(value))


def _key_of(key: Any) -> str:
    try:
        return redact(str(key))
    except Exception:
        return f"<{type(key).__name__}>"


def _repr_of(value: Any) -> str:
    try:
        return redact(repr(value))
    except Exception:  # a __repr__ that raises: the type is all a record may say
        return f"<{type(value).__name__} (its repr could not be read)>"


def _error_view(error: BaseException, room: int, active: set[int]) -> dict[str, Any]:
    try:
        message = redact(str(error))
    except Exception:
        message = "(its message could not be read)"
    out: dict[str, Any] = {"error": type(error).__name__, "message": message}
    for key in ("kind", "status", "provider", "model", "retry_after"):
        try:
            v = getattr(error, key, None)
        except Exception:  # a property that raises: the error is still recorded, without it
            continue
        if v is not None:
            out[key] = _jsonable(v, room - 1, active)
    return out


def event_to_dict(event: Event) -> dict[str, Any]:
    """The event as one flat JSON object: its header (``type``, ``run_id``, ``seq``, ``time``, ``step``,
    ``parent_run_id``), then its payload.

    A payload key that is also a header's name (``run.resumed``'s ``step``: the paused run's) is written as
    ``"data.<key>"``: written as itself it was lost beside the event's own step, or read back as the event's
    step when the event had none.  :func:`event_from_dict` reads it back under its own name.
    """
    out: dict[str, Any] = {"type": event.type, "run_id": event.run_id, "seq": event.seq, "time": event.time}
    if event.step is not None:
        out["step"] = event.step
    if event.parent_run_id is not None:
        out["parent_run_id"] = event.parent_run_id
    for k, v in event.data.items():
        out[_PAYLOAD_PREFIX + k if k in _HEADER else k] = to_jsonable(v)
    return out


def _record_of(event: Event) -> dict[str, Any]:
    """The event's record; its header alone, saying why, should even the total conversion fail."""
    try:
        return event_to_dict(event)
    except Exception as exc:  # RecursionError with a caller already near the limit, say: keep the event
        out: dict[str, Any] = {"type": event.type, "run_id": event.run_id, "seq": event.seq, "time": event.time}
        out["omitted"] = f"the payload could not be recorded ({type(exc).__name__})"
        return out


def _line_of(record: dict[str, Any], *, ascii: bool) -> str:
    """One record line: strict JSON (no NaN), at most :data:`MAX_TEXT_CHARS` UTF-8 bytes, with its newline."""
    try:
        line = json.dumps(record, ensure_ascii=ascii, allow_nan=False)
    except ValueError:  # a NaN or an infinity: strict JSON has none, and other readers refuse Python's spelling
        record = _finite(record)
        line = json.dumps(record, ensure_ascii=ascii, allow_nan=False)
    # A character is at most 4 UTF-8 bytes: only a long line is measured in bytes (readers bound the bytes).
    if len(line) > MAX_TEXT_CHARS // 4 and len(line.encode("utf-8", "surrogatepass")) > MAX_TEXT_CHARS:
        header: dict[str, Any] = {k: record[k] for k in _HEADER_ORDER if k in record}
        header["omitted"] = _TOO_LONG
        line = json.dumps(header, ensure_ascii=True, allow_nan=False)
    return line + "\n"


_TOO_LONG = f"the event's payload made a line longer than a record line may be ({MAX_TEXT_CHARS:,} bytes)"
#: How a line whose payload was left out for its length ends (:func:`_line_of`).
_TOO_LONG_TAIL = (json.dumps(_TOO_LONG) + "}\n").encode("ascii")


def _finite(value: Any) -> Any:
    """``value`` (a record, already JSON values) with each NaN and infinity as its name."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf'
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


_HEADER_ORDER = ("type", "run_id", "seq", "time", "step", "parent_run_id")
_HEADER = frozenset(_HEADER_ORDER)
_PAYLOAD_PREFIX = "data."  # a payload key named as a header field, in a record (event_to_dict)


class EventRecordError(AgentActorsError, ValueError):
    """A line of a JSONL event record that is not an event: not JSON, past the JSON policy, or no event.

    :ivar path: the record's file.
    :ivar line: the line's number (1 for the first).
    """

    def __init__(self, message: str, *, path: str, line: int) -> None:
        super().__init__(message)
        self.path = path
        self.line = line

    def __reduce__(self) -> Any:
        # Exception's own pickling would call __init__ without its keywords (Ray and multiprocessing ship errors);
        # the notes come back with the __dict__.
        return (partial(type(self), path=self.path, line=self.line), self.args, dict(self.__dict__))


def event_from_dict(record: Mapping[str, Any]) -> Event:
    """The event a JSONL line (:func:`event_to_dict`) describes, of the class its type names.

    The payload stays as the record has it — JSON values, not the objects that were emitted (a request
    is a dict here); :mod:`agentactors.explain` rebuilds what it needs from them.

    A ``step`` that is no integer, or a ``parent_run_id`` that is no string, is a payload key of that name in a
    record written before such keys were prefixed (``ctx.emit("tools.progress", step="downloading")``): it is read
    back into the payload, the event of no step (of no parent), as it was written.

    :raises ValueError: the record has no string ``type``, or a header field of the wrong kind (a ``seq`` that is
        not an integer, a ``time`` that is not a number, a ``run_id`` that is not a string).
    """
    type = record.get("type")
    if not isinstance(type, str):
        raise ValueError(f"an event record needs a string 'type', not {_shown(type)}")
    data = {k: v for k, v in record.items() if k not in _HEADER}
    for name in _HEADER:  # a payload key named as a header field (event_to_dict)
        if _PAYLOAD_PREFIX + name in data:
            data[name] = data.pop(_PAYLOAD_PREFIX + name)
    run_id = record.get("run_id")
    if run_id is not None and not isinstance(run_id, str):
        raise ValueError(f"an event record's 'run_id' is a string or null, not {_shown(run_id)}")
    seq = record.get("seq")
    if seq is not None and (not isinstance(seq, int) or isinstance(seq, bool)):
        raise ValueError(f"an event record's 'seq' is an integer, not {_shown(seq)}")
    time = record.get("time")
    # How JsonlRecorder spells a NaN or an infinity (strict JSON has none); a list or a dict cannot be looked up.
    if isinstance(time, str) and time in _NON_FINITE:
        time = float(time)
    if time is not None and (not isinstance(time, int | float) or isinstance(time, bool)):
        raise ValueError(f"an event record's 'time' is a number, not {_shown(time)}")
    step = record.get("step")
    if step is not None and (not isinstance(step, int) or isinstance(step, bool)):
        # A record written before payload keys named as header fields were prefixed: the payload's own "step"
        # (a tool's ctx.emit("tools.progress", step="downloading")) — kept as the payload's, the event of no step.
        data.setdefault("step", step)
        step = None
    parent = record.get("parent_run_id")
    if parent is not None and not isinstance(parent, str):
        data.setdefault("parent_run_id", parent)  # (the same: a payload's own key in an older record)
        parent = None
    return make_event(type, run_id, seq or 0, float(time or 0.0), step, data, parent)


_NON_FINITE = frozenset(("nan", "inf", "-inf"))
_SQLITE_HEADER = b"SQLite format 3\x00"  # the first 16 bytes of every SQLite database file


def _shown(value: Any) -> str:
    """A record's value in an error message: short, and never a credential."""
    text = _repr_of(value)
    return text if len(text) <= 60 else text[:59] + "…"


def read_jsonl(
    path: str | Path, *, run_id: str | None = None, skipped: list[str] | None = None
) -> Iterator[Event]:
    """The events a :class:`JsonlRecorder` wrote to ``path`` (only ``run_id``'s, if given), in file order.

    Lines that are not event records (blank lines, a line that is no JSON object, a summary line without a
    ``type`` or with a null one) are skipped; a line whose ``type`` is not a string is a damaged record (below).  A last
    line cut off mid-write (the process that wrote the record was killed: the usual crash) is skipped too,
    with a warning on the ``agentactors.events`` logger — or, given a ``skipped`` list, a note appended to it
    instead (what :meth:`~agentactors.explain.Explanation.from_jsonl` shows); so is a cut line followed by the
    line a :class:`JsonlRecorder` writes when it opens a file that ends in one (a restart after the crash:
    the records after it are read as well).  Every other line must be JSON.
    A request a :class:`JsonlRecorder` wrote as what it changed (``messages_from``) is yielded whole, rebuilt
    from the run's request before it (the last read of the run is kept, nothing more); one whose base was not
    read (a lost line, a file rotated or cut before it) is yielded with an ``omitted`` note instead of its
    request.  Each line is read under the depth and size policy of :mod:`agentactors._json`.  Synchronous: it reads the
    file as it iterates, so the events before a bad line have been yielded when its error is raised.

    :raises EventRecordError: a line (other than a cut-off one, as above) is not JSON (or not UTF-8), is past the
        policy's limits, or is an event record whose header is of the wrong kind (a ``type`` that is not a string,
        a ``seq`` that is not an integer, ...: :func:`event_from_dict`); it names the line (``.line``).
        A SQLite database (a journal's file) is said to be one, at line 1.
    :raises OSError: the file cannot be read.
    """
    where = str(path)
    cut: tuple[int, str] | None = None  # a line that did not parse: an error unless nothing follows it
    # Run id -> its last request read: seq and messages (what the run's next request, a delta, goes on from).
    requests: dict[Any, tuple[Any, list[Any]]] = {}
    with Path(path).open("rb") as file:
        for number, line in enumerate(file, 1):
            if number == 1 and line.startswith(_SQLITE_HEADER):
                # A journal's file, not a record: the bytes of line 1 say so better than "not UTF-8" would.
                raise EventRecordError(
                    f"{where} is a SQLite database (a journal?), not a JSONL event record: read it through "
                    "SqliteJournal(path) (replay, fork, explain_fork take one)", path=where, line=1,
                )
            raw = line.strip()
            if not raw:
                continue
            if raw == _RESUMED:  # a writer opened the file again after a crash: the cut line, if any, is explained
                if cut is not None:
                    _note_cut(where, cut[0], skipped)
                    cut = None
                continue
            if cut is not None:
                raise EventRecordError(f"{where}, line {cut[0]}: {cut[1]}", path=where, line=cut[0])
            try:
                # Decoded here, not by the parser: bytes that are not UTF-8 (a line cut inside a character)
                # are a line that does not parse, not one past the policy's limits.
                record = loads_bounded(raw.decode("utf-8"), what="the line", max_depth=MAX_DOCUMENT_DEPTH)
            except JsonBoundError as exc:
                raise EventRecordError(f"{where}, line {number}: {exc}", path=where, line=number) from None
            except ValueError as exc:  # not JSON (or not UTF-8): cut off, if nothing follows it
                cut = (number, f"not a JSON event record ({exc})")
                continue
            if not isinstance(record, dict) or record.get("type") is None:
                continue
            if not isinstance(record["type"], str):  # an event whose type was damaged: said, never skipped
                raise EventRecordError(
                    f"{where}, line {number}: not an event record (its 'type' is {_shown(record['type'])}, "
                    "not a string)", path=where, line=number,
                )
            if run_id is not None and record.get("run_id") != run_id:
                continue
            if record["type"] in _REQUEST_KINDS:
                record = _resolved(record, requests)
            try:
                event = event_from_dict(record)
            except ValueError as exc:
                raise EventRecordError(
                    f"{where}, line {number}: not an event record ({exc})", path=where, line=number
                ) from None
            yield event
    if cut is not None:
        _note_cut(where, cut[0], skipped)


def _resolved(record: dict[str, Any], requests: dict[Any, tuple[Any, list[Any]]]) -> dict[str, Any]:
    """A request record with its whole request (a delta's messages rebuilt from the run's last request read in
    ``requests``, which it updates), or with ``omitted`` instead when that request was not read (a line lost, a
    file rotated or cut before it).  A ``run.finished`` forgets its run's."""
    run = record.get("run_id")
    if run is not None and not isinstance(run, str):  # (a list cannot key ``requests``): event_from_dict says so
        return record
    request = record.get("request")
    if record["type"] != "llm.request" or not isinstance(request, dict):
        requests.pop(run, None)
        return record
    link = request.get("messages_from")
    if link is None:
        messages = request.get("messages")
        if isinstance(messages, list):
            requests[run] = (record.get("seq"), messages)
        else:
            requests.pop(run, None)
        return record
    base = requests.pop(run, None)
    seq = link.get("seq") if isinstance(link, dict) else None
    messages = _rebuilt(base[1], request.get("messages_delta")) if base is not None and base[0] == seq else None
    if messages is not None and type(seq) is int:
        whole = {"messages": messages}
        whole.update((k, v) for k, v in request.items() if k not in _DELTA_KEYS)
        requests[run] = (record.get("seq"), messages)
        return {**record, "request": whole}
    out = {k: v for k, v in record.items() if k != "request"}
    out["omitted"] = (
        f"the request goes on from the run's request of seq {_shown(seq)}, which was not read "
        "(a line lost, or a file rotated or cut before it)"
    )
    return out


_DELTA_KEYS = frozenset(("messages", "messages_from", "messages_delta"))


def _rebuilt(base: list[Any], delta: Any) -> list[Any] | None:
    """A request's messages from its base's and its ``messages_delta``; ``None`` if the delta is not one."""
    if not isinstance(delta, list):
        return None
    out: list[Any] = []
    n = len(base)
    for piece in delta:
        if type(piece) is not list:  # a message
            out.append(piece)
            continue
        if len(piece) != 2:
            return None
        start, end = piece
        if type(start) is not int or type(end) is not int or not 0 <= start <= end <= n:
            return None
        out += base[start:end]
    return out


def _note_cut(where: str, number: int, skipped: list[str] | None) -> None:
    """Say that line ``number``, cut off mid-write, was skipped: in ``skipped`` if given, else in the log."""
    if skipped is None:
        log.warning("%s, line %d was skipped: the record ends in the middle of it (a crash?)", where, number)
    else:
        skipped.append(f"line {number} was skipped: the record ends in the middle of it (a crash?)")
