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
"""

from __future__ import annotations

import contextvars
import enum
import itertools
import json
import logging
import time as _time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import anyio
import attrs

from .errors import redact

__all__ = [
    "Event",
    "EventSink",
    "FanOut",
    "InMemoryRecorder",
    "JsonlRecorder",
    "Recorder",
    "current_sink",
    "emit",
    "event_to_dict",
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


@runtime_checkable
class Recorder(Protocol):
    """Anything with a synchronous ``record(event)`` that does not block."""

    def record(self, event: Event) -> None: ...


class FanOut:
    """Delivers each event to several recorders; one that raises is logged once and skipped that time."""

    __slots__ = ("_failed", "recorders")

    def __init__(self, recorders: Sequence[Recorder] = ()) -> None:
        self.recorders: tuple[Recorder, ...] = tuple(recorders)
        self._failed: set[int] = set()

    def __bool__(self) -> bool:
        return bool(self.recorders)

    def record(self, event: Event) -> None:
        for r in self.recorders:
            try:
                r.record(event)
            except Exception as exc:
                if id(r) not in self._failed:
                    self._failed.add(id(r))
                    log.warning(
                        "recorder %s raised %s while recording %s; the run goes on "
                        "(further failures of this recorder are not logged)",
                        type(r).__name__,
                        redact(f"{type(exc).__name__}: {exc}"),
                        event.type,
                    )

    def with_recorders(self, more: Sequence[Recorder]) -> FanOut:
        if not more:
            return self
        return FanOut(self.recorders + tuple(r for r in more if r not in self.recorders))


class EventSink:
    """Where the events of one run (or of the runtime, outside runs) go.

    Holds the run id, the per-run sequence counter, the current step and the
    recorders.  Mutable on purpose: it belongs to exactly one run.
    """

    __slots__ = ("_seq", "fanout", "run_id", "step")

    def __init__(self, recorders: Sequence[Recorder] | FanOut = (), *, run_id: str | None = None) -> None:
        self.fanout = recorders if isinstance(recorders, FanOut) else FanOut(recorders)
        self.run_id = run_id
        self.step: int | None = None
        self._seq = itertools.count(1)

    def __bool__(self) -> bool:
        return bool(self.fanout)

    def emit(self, type: str, /, **data: Any) -> Event | None:
        """Build and deliver one event; returns it (``None`` when nobody listens)."""
        if not self.fanout.recorders:
            return None
        event = Event(type, self.run_id, next(self._seq), _now(), self.step, data)
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

    Writes are buffered by the file object (recording must not block the loop on
    a disk flush); call :meth:`close` or use it as a context manager to flush.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = self.path.open("a", encoding="utf-8")

    def record(self, event: Event) -> None:
        if self._file is None:
            raise RuntimeError(f"JsonlRecorder({self.path}) is closed")
        self._file.write(json.dumps(event_to_dict(event), ensure_ascii=False, default=_json_default) + "\n")

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> JsonlRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- serialisation ------------------------------------------------------------------------------


def to_jsonable(value: Any) -> Any:
    """A JSON-friendly view of event payloads: attrs classes, enums, exceptions, containers."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, bytes | bytearray | memoryview):
        # A payload (an image's bytes, say) never enters a record: only its size does.
        return {"bytes": len(value)}
    if isinstance(value, BaseException):
        out: dict[str, Any] = {"error": type(value).__name__, "message": redact(str(value))}
        for key in ("kind", "status", "provider", "model", "retry_after"):
            v = getattr(value, key, None)
            if v is not None:
                out[key] = to_jsonable(v)
        return out
    if attrs.has(type(value)):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(value))}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    return redact(repr(value))


def event_to_dict(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"type": event.type, "run_id": event.run_id, "seq": event.seq, "time": event.time}
    if event.step is not None:
        out["step"] = event.step
    out.update({k: to_jsonable(v) for k, v in event.data.items() if k not in out})
    return out


def _json_default(value: Any) -> Any:
    return to_jsonable(value)
