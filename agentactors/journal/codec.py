"""How a recorded run's pieces are read back: lossless from a journal, leniently from a JSONL event record.

A journal stores what it commits in the sessions' lossless codec (:mod:`agentactors.sessions.codec`:
messages, tool calls, results and usage, every field, equal after the trip) plus the model response,
encoded here the same way.  A JSONL record (:class:`~agentactors.events.JsonlRecorder`) holds the same
objects in their event form (:func:`~agentactors.events.to_jsonable`), which is not lossless: a media
part's bytes are recorded as their size only, tuples become lists.  The ``*_from_event`` readers rebuild
what that form holds — the text, the calls — and leave out what it lost (media parts).
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
    """The response :func:`response_to_json` encoded."""
    data = doc.get("provider_data")
    return LLMResponse(
        doc.get("content", ""),
        tuple(call_from_json(c) for c in doc.get("tool_calls", ())),
        StopReason(doc.get("stop_reason", StopReason.end_turn.value)),
        usage_from_json(doc.get("usage", {})),
        doc.get("model"),
        doc.get("provider"),
        doc.get("raw_stop_reason"),
        doc.get("reasoning", ""),
        None if data is None else _provider_data(value_from_json(data)),
        doc.get("response_id"),
    )


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
    """The ``(parent_run_id, parent_call_id, resume)`` :func:`origin_now` encoded."""
    if not doc:
        return None, None, None
    resume = None
    if doc.get("resume") is not None:
        decisions = {str(k): v if isinstance(v, bool) else str(v) for k, v in (doc.get("decisions") or {}).items()}
        resume = (paused_from_json(doc["resume"]), decisions)
    return doc.get("parent_run_id"), doc.get("parent_call_id"), resume


def session_from_origin(doc: Mapping[str, Any] | None) -> SessionTurn | None:
    """The session turn :func:`origin_now` recorded (``None``: the run was no session's turn)."""
    turn = doc.get("session") if doc else None
    return None if turn is None else SessionTurn.from_json(turn)


# --- lenient: what a JSONL event record holds -------------------------------------------------------


def _call_from_event(doc: Mapping[str, Any]) -> ToolCall:
    return ToolCall(
        doc["id"],
        doc["name"],
        dict(doc.get("arguments") or {}),
        doc.get("raw_arguments"),
        doc.get("arguments_error"),
        doc.get("arguments_error_detail"),
        doc.get("provider_data"),
    )


def _usage_from_event(doc: Any) -> Usage:
    """The usage an event recorded; a count that is not one (a NaN an older version recorded) is 0, as
    :class:`Usage` reads it — never an error that makes the whole record unreadable."""
    if not isinstance(doc, Mapping):
        return Usage()
    return Usage(**{name: doc.get(name, 0) for name in _USAGE_FIELDS})


def message_from_event(doc: Mapping[str, Any]) -> Message:
    """A message as an event recorded it (its media parts are not rebuilt: their bytes were not recorded)."""
    return Message(
        doc["role"],
        doc.get("content") or "",
        tuple(_call_from_event(c) for c in doc.get("tool_calls") or ()),
        doc.get("tool_call_id"),
        doc.get("name"),
        doc.get("reasoning") or "",
        doc.get("provider_data"),
        bool(doc.get("is_error", False)),
    )


def response_from_event(doc: Mapping[str, Any]) -> LLMResponse:
    """An ``llm.response`` event's ``response`` as it was recorded."""
    return LLMResponse(
        doc.get("content") or "",
        tuple(_call_from_event(c) for c in doc.get("tool_calls") or ()),
        StopReason(doc.get("stop_reason") or StopReason.end_turn.value),
        _usage_from_event(doc.get("usage")),
        doc.get("model"),
        doc.get("provider"),
        doc.get("raw_stop_reason"),
        doc.get("reasoning") or "",
        doc.get("provider_data"),
        doc.get("response_id"),
    )
