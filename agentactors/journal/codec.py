"""How a recorded run's pieces are read back: lossless from a journal, leniently from a JSONL event record.

A journal stores what it commits in the sessions' lossless codec (:mod:`agentactors.sessions.codec`:
messages, tool calls, results and usage, every field, equal after the trip) plus the model response,
encoded here the same way.  A JSONL record (:class:`~agentactors.events.JsonlRecorder`) holds the same
objects in their event form (:func:`~agentactors.events.to_jsonable`), which is not lossless: a media
part's bytes are recorded as their size only, tuples become lists.  The ``*_from_event`` readers rebuild
what that form holds — the text, the calls — and leave out what it lost (media parts).

Both read what was written as it was written, the sessions' codec's rule: a field that every version wrote is
required, each field must be of the type written (never coerced: a ``{}`` is not an empty list of calls, ``"false"``
not a flag), and a key this version does not know is left alone.  A document of another shape (``{"role": "user"}``
where a response belongs) raised nothing and loaded as an empty answer, which a replay then served; now it is a
``TypeError`` / ``ValueError`` that the readers (:mod:`agentactors.journal._rows`, :mod:`agentactors.journal.jsonl`)
make the run's :class:`~agentactors.journal.JournalFormatError`.  What an older version wrote and this one must go
on reading is said where it is read (a ``null`` content, usage counts written as strings).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..loop import lineage
from ..loop.pause import PausedRun
from ..loop.tape import resuming
from ..messages import LLMResponse, Message, StopReason, ToolCall, Usage
from ..sessions.codec import (
    call_from_json,
    call_to_json,
    paused_from_json,
    paused_to_json,
    usage_from_json,
    usage_to_json,
    value_from_json,
    value_to_json,
)
from ..sessions.journaled import SessionTurn, current_turn

__all__ = [
    "RunOrigin",
    "message_from_event",
    "origin_from_json",
    "origin_now",
    "response_from_event",
    "response_from_json",
    "response_to_json",
    "session_from_origin",
]

# A record an older version wrote lacks the last ones (1-hour cache writes, audio, images): they read as 0, none
# reported.
_USAGE_FIELDS = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "cache_write_1h_tokens", "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
    "input_image_tokens", "cache_image_read_tokens", "output_image_tokens",
)


# --- lossless: what a journal stores --------------------------------------------------------------


def response_to_json(response: LLMResponse) -> dict[str, Any]:
    """Every field of a model response (the defaults left out)."""
    out: dict[str, Any] = {"content": response.content, "stop_reason": response.stop_reason.value}
    if response.tool_calls:
        out["tool_calls"] = [call_to_json(c) for c in response.tool_calls]
    usage = usage_to_json(response.usage)
    if usage:
        out["usage"] = usage
    for name in ("model", "provider", "raw_stop_reason", "response_id"):
        value = getattr(response, name)
        if value is not None:
            out[name] = value
    if response.reasoning:
        out["reasoning"] = response.reasoning
    if response.provider_data is not None:
        out["provider_data"] = value_to_json(response.provider_data)
    return out


def response_from_json(doc: Mapping[str, Any]) -> LLMResponse:
    """The response :func:`response_to_json` encoded, every field of the type it wrote.

    ``content`` and ``stop_reason`` are required: every version wrote both, so a document without them (``{"role":
    "user"}``, a message where a response belongs) is not a response — filled with defaults it loaded as an empty
    answer and replayed to one.  The rest is absent when at its default, as written.  Keys this version does not
    know are left alone (a later version's, and the step's own ``steers`` / ``ended`` / ``steers_after``).

    :raises TypeError, ValueError: a field missing or of the wrong kind — never coerced (the journal's readers
        make it the run's :class:`~agentactors.journal.JournalFormatError`).
    """
    _required_keys(_checked(dict, "a stored response", doc), "a stored response", ("content", "stop_reason"))
    data = doc.get("provider_data")
    return LLMResponse(
        _content(doc, "a stored response"),
        tuple(call_from_json(c) for c in _list(doc, "tool_calls", "a stored response")),
        _stop(doc["stop_reason"], "a stored response"),
        usage_from_json(doc.get("usage", {})),
        _optional_text(doc, "model", "a stored response"),
        _optional_text(doc, "provider", "a stored response"),
        _optional_text(doc, "raw_stop_reason", "a stored response"),
        _checked(str, "a stored response's 'reasoning'", doc.get("reasoning", "")),
        None if data is None else _provider_data(value_from_json(data)),
        _optional_text(doc, "response_id", "a stored response"),
    )


# --- what a stored document must hold: the types the encoders write, never coerced --------------------


def _checked(kind: type, what: str, value: Any) -> Any:
    """``value`` if it is a ``kind`` (never a bool for an int).  :raises TypeError: it is not."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} is a {kind.__name__}, not {type(value).__name__}")
    return value


def _required_keys(doc: Mapping[str, Any], what: str, names: tuple[str, ...]) -> None:
    """:raises ValueError: ``doc`` lacks one of ``names`` (it is something else than ``what``)."""
    missing = [name for name in names if name not in doc]
    if missing:
        held = ", ".join(repr(str(k)[:40]) for k in list(doc)[:6]) or "nothing"
        raise ValueError(f"{what} has no {' nor '.join(repr(n) for n in missing)} (it holds {held})")


def _list(doc: Mapping[str, Any], name: str, what: str) -> list[Any]:
    """The list under ``name`` (absent or, in an event record, ``null``: empty) — a ``{}`` is not an empty one."""
    value = doc.get(name)
    return [] if value is None else _checked(list, f"{what}'s {name!r}", value)


def _optional_text(doc: Mapping[str, Any], name: str, what: str) -> str | None:
    value = doc.get(name)
    return None if value is None else _checked(str, f"{what}'s {name!r}", value)


def _content(doc: Mapping[str, Any], what: str) -> str:
    """A response's or message's text: a str — or ``null``, which a version before the value types were checked
    recorded for a custom provider's ``content=None`` (no text: read as ``""``, as it meant)."""
    value = doc.get("content")
    return "" if value is None else _checked(str, f"{what}'s 'content'", value)


def _stop(value: Any, what: str) -> StopReason:
    """A stored stop reason: one of :class:`StopReason`'s values."""
    _checked(str, f"{what}'s 'stop_reason'", value)
    try:
        return StopReason(value)
    except ValueError:
        known = ", ".join(r.value for r in StopReason)
        raise ValueError(f"{what}'s 'stop_reason' is one of {known}, not {value[:40]!r}") from None


def _provider_data(value: Any) -> dict[str, Any]:
    """A stored response's ``provider_data``: an object, as written — a list of pairs is not one, though ``dict()``
    would read it as one (the session codec refuses it the same way)."""
    if not isinstance(value, dict):
        raise TypeError(f"a stored response's provider_data is stored as a dict, not {type(value).__name__}")
    return value


# --- where a run came from: a parent's tool call, or a pause ---------------------------------------------


#: ``(parent_run_id, parent_call_id, resume)`` of a recorded run: what :func:`origin_from_json` reads back.
RunOrigin = tuple["str | None", "str | None", "tuple[PausedRun, dict[str, bool | str]] | None"]


def origin_now(parent_run_id: str | None) -> dict[str, Any] | None:
    """Where the run a journal's ``open_run`` is opening comes from, as JSON (``None``: a plain top-level run).

    A delegated run: its parent and the parent's call that runs it (:func:`agentactors.loop.lineage.current`,
    which the run starts under); a resumed run: its pause and decisions (:func:`agentactors.loop.tape.resuming`)
    — what recovery needs to start the run again the same way; a session's turn: which turn
    (:func:`agentactors.sessions.journaled.current_turn`) — what recovery needs to commit it.
    """
    doc: dict[str, Any] = {}
    if parent_run_id is not None:
        doc["parent_run_id"] = parent_run_id
        origin = lineage.current()
        if origin is not None and origin.call_id is not None:
            doc["parent_call_id"] = origin.call_id
    resume = resuming()
    if resume is not None:
        doc["resume"] = paused_to_json(resume[0])
        doc["decisions"] = {str(k): v for k, v in resume[1].items()}
    if parent_run_id is None:  # a session's turn is a top-level run (the runs its tools start inherit the mark)
        turn = current_turn()
        if turn is not None:
            doc["session"] = turn.to_json()
    return doc or None


def origin_from_json(doc: Mapping[str, Any] | None) -> RunOrigin:
    """The ``(parent_run_id, parent_call_id, resume)`` :func:`origin_now` encoded.

    :raises TypeError, ValueError: not what it wrote (an object of run ids, a pause and its decisions: a bool, or a
        denial's text, by call id) — never coerced.
    """
    if doc is None:
        return None, None, None
    _checked(dict, "a stored origin", doc)
    resume = None
    if doc.get("resume") is not None:
        decisions = _checked(dict, "a stored origin's 'decisions'", doc.get("decisions", {}))
        for value in decisions.values():
            if not isinstance(value, bool | str):
                raise TypeError(f"a stored decision is a bool or a denial's text, not {type(value).__name__}")
        resume = (paused_from_json(doc["resume"]), dict(decisions))
    what = "a stored origin"
    return _optional_text(doc, "parent_run_id", what), _optional_text(doc, "parent_call_id", what), resume


def session_from_origin(doc: Mapping[str, Any] | None) -> SessionTurn | None:
    """The session turn :func:`origin_now` recorded (``None``: the run was no session's turn)."""
    turn = doc.get("session") if doc else None
    return None if turn is None else SessionTurn.from_json(turn)


# --- lossy: what a JSONL event record holds ----------------------------------------------------------


# An event record holds every field of the objects it recorded (to_jsonable: attrs fields, enums as their values),
# so a key the object had since the first version is required; ``null`` where an older version let a custom
# provider's ``None`` through (a response's or message's text and reasoning, a stop reason) reads as that field's
# default, as it meant.


def _call_from_event(doc: Any) -> ToolCall:
    what = "a recorded tool call"
    _required_keys(_checked(dict, what, doc), what, ("id", "name"))
    arguments = doc.get("arguments")
    return ToolCall(
        doc["id"],
        doc["name"],
        {} if arguments is None else _checked(dict, f"{what}'s 'arguments'", arguments),
        _optional_text(doc, "raw_arguments", what),
        _optional_text(doc, "arguments_error", what),
        _optional_text(doc, "arguments_error_detail", what),
        _optional_dict(doc, "provider_data", what),
    )


def _optional_dict(doc: Mapping[str, Any], name: str, what: str) -> dict[str, Any] | None:
    value = doc.get(name)
    return None if value is None else _checked(dict, f"{what}'s {name!r}", value)


def _usage_from_event(doc: Any) -> Usage:
    """The usage an event recorded (an object, ``null`` read as none); a count that is not one (a NaN an older
    version recorded) is 0, as :class:`Usage` reads it — never an error that makes the whole record unreadable."""
    if doc is None:
        return Usage()
    _checked(dict, "a recorded usage", doc)
    return Usage(**{name: doc.get(name, 0) for name in _USAGE_FIELDS})


def message_from_event(doc: Mapping[str, Any]) -> Message:
    """A message as an event recorded it (its media parts are not rebuilt: their bytes were not recorded).

    :raises TypeError, ValueError: not a message as an event records one (no ``role``, a field of the wrong kind).
    """
    what = "a recorded message"
    _required_keys(_checked(dict, what, doc), what, ("role",))
    is_error = doc.get("is_error")
    return Message(
        doc["role"],
        _content(doc, what),
        tuple(_call_from_event(c) for c in _list(doc, "tool_calls", what)),
        _optional_text(doc, "tool_call_id", what),
        _optional_text(doc, "name", what),
        _reasoning(doc, what),
        _optional_dict(doc, "provider_data", what),
        False if is_error is None else _checked(bool, f"{what}'s 'is_error'", is_error),
    )


def _reasoning(doc: Mapping[str, Any], what: str) -> str:
    value = doc.get("reasoning")
    return "" if value is None else _checked(str, f"{what}'s 'reasoning'", value)


def response_from_event(doc: Mapping[str, Any]) -> LLMResponse:
    """An ``llm.response`` event's ``response`` as it was recorded.

    :raises TypeError, ValueError: not a response as an event records one — ``content`` and ``stop_reason``
        missing (a message where the response belongs), a field of the wrong kind (the JSONL reader makes it
        the run's :class:`~agentactors.journal.JournalFormatError`).
    """
    what = "a recorded response"
    _required_keys(_checked(dict, what, doc), what, ("content", "stop_reason"))
    stop = doc["stop_reason"]
    return LLMResponse(
        _content(doc, what),
        tuple(_call_from_event(c) for c in _list(doc, "tool_calls", what)),
        StopReason.end_turn if stop is None else _stop(stop, what),
        _usage_from_event(doc.get("usage")),
        _optional_text(doc, "model", what),
        _optional_text(doc, "provider", what),
        _optional_text(doc, "raw_stop_reason", what),
        _reasoning(doc, what),
        _optional_dict(doc, "provider_data", what),
        _optional_text(doc, "response_id", what),
    )
