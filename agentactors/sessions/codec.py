"""The lossless JSON codec of a session's contents: messages, parts, tool calls and results, usage, pauses.

A session outlives the process that started it, so what it holds must survive a trip through a file:
every field of every object, decoded into an object *equal* to the one encoded (the property tests in
``tests/unit/sessions/test_codec.py`` check it).  Plain JSON, not pickle: a stored session must be
readable by a later version of the library (and by a person with ``sqlite3`` and ``json_extract``), and
loading it must never run code.

What the wire-free shapes look like:

* a message is ``{"role": ...}`` plus only the fields that differ from their defaults; its ``parts``
  are stored when it has media (a text-only message is its ``content``);
* a media part's bytes are standard base64 (``"data"``), a part given by URL keeps its ``"url"``;
* a tool result's ``status`` is the :class:`~agentactors.tools.results.ToolStatus` value;
* free-form values (a call's ``arguments``, opaque ``provider_data``) are JSON as they are, with the
  few Python values JSON lacks tagged: ``{"$bytes": "<base64>"}``, ``{"$tuple": [...]}``, and a
  dict whose only key starts with ``$`` wrapped as ``{"$dict": {...}}`` so it cannot be mistaken for
  a tag.  A value of any other type (a datetime, an object) is refused with :class:`TypeError` when
  the turn is committed — a session stores data, not objects;
* a run's result (the children a pause keeps: :func:`run_result_to_json`) is its fields, but for its
  ``error`` (its type's name and text: read back as a :class:`~agentactors.errors.RedactedException`) and a
  typed output that is not JSON data (``null``).

Decoding builds the objects through their constructors, so a value that does not validate (a stored
file edited by hand, say) raises the constructor's ``TypeError`` / ``ValueError``;
:mod:`agentactors.sessions.format` turns that into a
:class:`~agentactors.errors.SessionFormatError` naming the session.  What a constructor takes as it is (a
pause's ``answer``, a result's ``truncated``) is checked here, for the type this codec writes: never coerced —
a stored ``"false"`` is not read as ``True``, nor ``"abc"`` as the handoffs ``("a", "b", "c")``, nor ``2.5``
as step 2, nor a list of pairs as a dict — so a record that loads is one every part of the library can use.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from .._json import MAX_DEPTH, MAX_INT_DIGITS, JsonBoundError
from ..errors import RedactedException
from ..loop.pause import PausedRun
from ..loop.result import RunResult
from ..messages import Message, StopReason, ToolCall, Usage
from ..parts import Audio, Document, Image, MediaPart, Part, Text
from ..pricing import Cost
from ..redaction import redact
from ..tools.results import ToolResult, ToolStatus

__all__ = [
    "call_from_json",
    "call_to_json",
    "message_from_json",
    "message_to_json",
    "messages_from_json",
    "messages_to_json",
    "part_from_json",
    "part_to_json",
    "paused_from_json",
    "paused_to_json",
    "result_from_json",
    "result_to_json",
    "run_result_from_json",
    "run_result_to_json",
    "usage_from_json",
    "usage_to_json",
    "value_from_json",
    "value_to_json",
]

_INT_LIMIT = 10**MAX_INT_DIGITS
# A record an older version wrote lacks the last ones (1-hour cache writes, audio, images): they read as 0, none
# reported.
_USAGE_FIELDS = (
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",
    "cache_write_1h_tokens", "input_audio_tokens", "cache_audio_read_tokens", "output_audio_tokens",
    "input_image_tokens", "cache_image_read_tokens", "output_image_tokens",
)


# --- free-form values ------------------------------------------------------------------------------


def value_to_json(value: Any, _depth: int = 0) -> Any:
    """A JSON value for ``value`` (see the module docstring for the tags).

    :raises TypeError: not storable.
    :raises ~agentactors._json.JsonBoundError: nested deeper than :data:`~agentactors._json.MAX_DEPTH`,
        or an integer longer than :data:`~agentactors._json.MAX_INT_DIGITS` digits — what a store
        could not read back, so it is refused when the turn is committed.
    """
    if isinstance(value, int) and not isinstance(value, bool) and not -_INT_LIMIT < value < _INT_LIMIT:
        raise JsonBoundError(f"a stored value holds an integer of more than {MAX_INT_DIGITS} digits", limit="digits")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    depth = _deeper(_depth)
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"a stored mapping's keys must be str, not {type(k).__name__}")
            out[k] = value_to_json(v, depth)
        if len(out) == 1 and next(iter(out)).startswith("$"):
            return {"$dict": out}
        return out
    if isinstance(value, list):
        return [value_to_json(v, depth) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [value_to_json(v, depth) for v in value]}
    raise TypeError(f"a session stores JSON data, bytes and tuples, not {type(value).__name__}")


def value_from_json(value: Any, _depth: int = 0) -> Any:
    """The value :func:`value_to_json` encoded.

    :raises ~agentactors._json.JsonBoundError: nested deeper than :func:`value_to_json` writes (a
        stored document edited by hand).
    """
    if isinstance(value, dict):
        if len(value) == 1 and "$bytes" in value:
            return _unb64(value["$bytes"])
        depth = _deeper(_depth)
        if len(value) == 1:
            tag, inner = next(iter(value.items()))
            if tag == "$tuple":  # a list, as written: a string or a dict would be read as its characters or keys
                return tuple([value_from_json(v, depth) for v in _checked(list, "a stored $tuple", inner)])
            if tag == "$dict":
                return {k: value_from_json(v, depth) for k, v in _checked(dict, "a stored $dict", inner).items()}
        return {k: value_from_json(v, depth) for k, v in value.items()}
    if isinstance(value, list):
        depth = _deeper(_depth)
        return [value_from_json(v, depth) for v in value]
    return value


def _deeper(depth: int) -> int:
    """One container deeper; past :data:`~agentactors._json.MAX_DEPTH` the value is refused."""
    if depth >= MAX_DEPTH:
        raise JsonBoundError(f"a stored value nests deeper than {MAX_DEPTH} levels", limit="depth")
    return depth + 1


# --- what a stored document must hold: the types the encoder writes, never coerced -----------------


def _checked(kind: type, what: str, value: Any) -> Any:
    """``value`` if it is a ``kind`` (never a bool for an int).  :raises TypeError: it is not."""
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise TypeError(f"{what} is stored as a {kind.__name__}, not {type(value).__name__}")
    return value


def _list(doc: Mapping[str, Any], name: str, *, required: bool = False) -> list[Any]:
    """The list stored under ``name`` (absent: empty, unless ``required``)."""
    return _checked(list, f"a stored {name!r}", doc[name] if required else doc.get(name, []))  # type: ignore[no-any-return]


def _flag(doc: Mapping[str, Any], name: str) -> bool:
    """A flag the encoder writes only when true (absent: false): a bool, never a truthy value."""
    return _checked(bool, f"a stored {name!r}", doc.get(name, False))  # type: ignore[no-any-return]


def _text(doc: Mapping[str, Any], name: str, default: str | None) -> Any:
    """A str stored under ``name`` (``None`` allowed only where it is the default)."""
    value = doc.get(name, default)
    return value if value is None and default is None else _checked(str, f"a stored {name!r}", value)


def _count(doc: Mapping[str, Any], name: str, default: int | None) -> Any:
    """An int >= 0 stored under ``name`` (``None`` allowed only where it is the default)."""
    value = doc.get(name, default)
    if value is None and default is None:
        return None
    if _checked(int, f"a stored {name!r}", value) < 0:
        raise ValueError(f"a stored {name!r} is an int >= 0, not {value!r}")
    return value


def _mapping(value: Any, what: str) -> dict[str, Any]:
    """A free-form mapping as decoded: a dict (a list of pairs is not one, though ``dict()`` would take it)."""
    return _checked(dict, what, value_from_json(value))  # type: ignore[no-any-return]


# --- parts -----------------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"a part's data is stored as base64 text, not {type(text).__name__}")
    return base64.b64decode(text, validate=True)


def part_to_json(part: Part) -> dict[str, Any]:
    """A content part: ``{"type": "text" | "image" | "document" | "audio", ...}``."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    out: dict[str, Any] = {"type": part.kind}
    if part.data is not None:
        out["data"] = _b64(part.data)
    else:
        out["url"] = part.url
    if part.media_type is not None:
        out["media_type"] = part.media_type
    if isinstance(part, Document) and part.title is not None:
        out["title"] = part.title
    return out


def part_from_json(doc: Mapping[str, Any]) -> Part:
    _checked(dict, "a stored part", doc)
    kind = doc["type"]
    if kind == "text":
        return Text(doc["text"])
    data = _unb64(doc["data"]) if "data" in doc else None
    url = doc.get("url")
    media_type = doc.get("media_type")
    if kind == "image":
        return Image(data=data, url=url, media_type=media_type)
    if kind == "document":
        return Document(data=data, url=url, media_type=media_type or "application/pdf", title=doc.get("title"))
    if kind == "audio":
        if data is None:
            raise ValueError("a stored audio part has no data")
        return Audio(data, media_type=media_type)
    raise ValueError(f"unknown stored part type {kind!r}")


def _media(parts: Any) -> tuple[MediaPart, ...]:
    out: list[MediaPart] = []
    for doc in _checked(list, "a tool result's stored parts", parts):
        part = part_from_json(doc)
        if isinstance(part, Text):
            raise ValueError("a tool result's stored parts are media, not text")
        out.append(part)
    return tuple(out)


# --- tool calls, results, usage --------------------------------------------------------------------


def call_to_json(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name, "arguments": value_to_json(call.arguments)}
    if call.raw_arguments is not None:
        out["raw_arguments"] = call.raw_arguments
    if call.arguments_error is not None:
        out["arguments_error"] = call.arguments_error
    if call.arguments_error_detail is not None:
        out["arguments_error_detail"] = call.arguments_error_detail
    if call.provider_data is not None:
        out["provider_data"] = value_to_json(call.provider_data)
    return out


def call_from_json(doc: Mapping[str, Any]) -> ToolCall:
    _checked(dict, "a stored tool call", doc)
    provider_data = doc.get("provider_data")
    return ToolCall(
        id=doc["id"],
        name=doc["name"],
        arguments=_mapping(doc.get("arguments", {}), "a stored call's arguments"),
        raw_arguments=doc.get("raw_arguments"),
        arguments_error=doc.get("arguments_error"),
        arguments_error_detail=doc.get("arguments_error_detail"),
        provider_data=None if provider_data is None else _mapping(provider_data, "a stored call's provider_data"),
    )


def result_to_json(result: ToolResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "call_id": result.call_id,
        "name": result.name,
        "status": result.status.value,
        "content": result.content,
        "size_chars": result.size_chars,
        "duration": result.duration,
    }
    if result.truncated:
        out["truncated"] = True
    if result.refused:
        out["refused"] = True
    if result.original_chars is not None:
        out["original_chars"] = result.original_chars
    if result.parts:
        out["parts"] = [part_to_json(p) for p in result.parts]
    if result.awaiting_approval:
        out["awaiting_approval"] = True
    return out


def result_from_json(doc: Mapping[str, Any]) -> ToolResult:
    _checked(dict, "a stored tool result", doc)
    return ToolResult(
        doc["call_id"],
        doc["name"],
        ToolStatus(doc["status"]),
        doc["content"],
        doc["size_chars"],
        doc["duration"],
        truncated=_flag(doc, "truncated"),
        refused=_flag(doc, "refused"),
        original_chars=_count(doc, "original_chars", None),
        parts=_media(doc.get("parts", [])),
        awaiting_approval=_flag(doc, "awaiting_approval"),
    )


def usage_to_json(usage: Usage) -> dict[str, int]:
    """The non-zero counts only (``{}`` for no usage)."""
    return {name: value for name in _USAGE_FIELDS if (value := getattr(usage, name))}


def usage_from_json(doc: Mapping[str, Any]) -> Usage:
    """The usage :func:`usage_to_json` wrote, or an older version did.

    Today's counts are ints, written and read as themselves.  An older version's :class:`Usage` kept what it
    was given, and wrote it: a ``NaN`` (which ``int()`` cannot read: the record would never load again),
    ``Infinity``, a string.  Each is read back as :class:`Usage` reads a count today — what is not one is
    0 — except a string of digits, which that version meant as its number (``int("12")`` read it so).
    """
    unknown = set(_checked(dict, "a stored usage", doc)) - set(_USAGE_FIELDS)
    if unknown:
        raise ValueError(f"unknown stored usage fields {sorted(unknown)}")
    return Usage(**{name: _stored_count(doc[name]) for name in _USAGE_FIELDS if name in doc})


def _stored_count(value: Any) -> Any:
    """A stored count for :class:`Usage` to read: a string of (at most 19) ASCII digits as its int, else itself."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    return value


# --- messages --------------------------------------------------------------------------------------


def message_to_json(message: Message) -> dict[str, Any]:
    """One message, with only the fields that differ from their defaults.

    :raises TypeError: not a :class:`~agentactors.messages.Message` (a record built by hand with a str, say).
    """
    if not isinstance(message, Message):
        raise TypeError(f"a session's messages are Message objects, not {type(message).__name__}")
    out: dict[str, Any] = {"role": message.role}
    if message.media:
        out["parts"] = [part_to_json(p) for p in message.parts]
    elif message.content:
        out["content"] = message.content
    if message.tool_calls:
        out["tool_calls"] = [call_to_json(c) for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    if message.reasoning:
        out["reasoning"] = message.reasoning
    if message.provider_data is not None:
        out["provider_data"] = value_to_json(message.provider_data)
    if message.is_error:
        out["is_error"] = True
    return out


def message_from_json(doc: Mapping[str, Any]) -> Message:
    _checked(dict, "a stored message", doc)
    parts = doc.get("parts")
    provider_data = doc.get("provider_data")
    return Message(
        role=doc["role"],
        content="" if parts is not None else doc.get("content", ""),
        tool_calls=tuple(call_from_json(c) for c in _list(doc, "tool_calls")),
        tool_call_id=doc.get("tool_call_id"),
        name=doc.get("name"),
        reasoning=doc.get("reasoning", ""),
        provider_data=None if provider_data is None else _mapping(provider_data, "a stored message's provider_data"),
        is_error=_flag(doc, "is_error"),
        parts=None if parts is None else tuple(part_from_json(p) for p in _list(doc, "parts")),
    )


def messages_to_json(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    return [message_to_json(m) for m in messages]


def messages_from_json(docs: Any) -> tuple[Message, ...]:
    if not isinstance(docs, list):
        raise TypeError(f"stored messages are a list, not {type(docs).__name__}")
    return tuple(message_from_json(d) for d in docs)


# --- a paused run ----------------------------------------------------------------------------------


def paused_to_json(state: PausedRun) -> dict[str, Any]:
    """Every field of a :class:`~agentactors.loop.pause.PausedRun` (a test checks none is left out)."""
    return {
        "run_id": state.run_id,
        "messages": messages_to_json(state.messages),
        "calls": [call_to_json(c) for c in state.calls],
        "results": [result_to_json(r) for r in state.results],
        "pending": [call_to_json(c) for c in state.pending],
        "reasons": dict(state.reasons),
        "step": state.step,
        "usage": usage_to_json(state.usage),
        "tool_calls": [call_to_json(c) for c in state.tool_calls],
        "answer": state.answer,
        "agent": state.agent,
        "handoffs": list(state.handoffs),
        "output_step": state.output_step,
    }


def paused_from_json(doc: Mapping[str, Any]) -> PausedRun:
    """The pause :func:`paused_to_json` wrote, every field of the type it wrote (:class:`PausedRun` checks only
    that its pending calls are among its calls)."""
    _checked(dict, "a stored pause", doc)
    reasons = _checked(dict, "a stored pause's 'reasons'", doc.get("reasons", {}))
    for reason in reasons.values():
        _checked(str, "a stored pause's reason", reason)
    return PausedRun(
        run_id=_text(doc, "run_id", None),
        messages=messages_from_json(doc["messages"]),
        calls=tuple(call_from_json(c) for c in _list(doc, "calls", required=True)),
        results=tuple(result_from_json(r) for r in _list(doc, "results")),
        pending=tuple(call_from_json(c) for c in _list(doc, "pending", required=True)),
        reasons=reasons,
        step=_count(doc, "step", 0),
        usage=usage_from_json(doc.get("usage", {})),
        tool_calls=tuple(call_from_json(c) for c in _list(doc, "tool_calls")),
        answer=_text(doc, "answer", ""),
        agent=_text(doc, "agent", None),
        handoffs=tuple(_checked(str, "a stored pause's handoff", h) for h in _list(doc, "handoffs")),
        output_step=_flag(doc, "output_step"),
    )


# --- a run's result: the delegated runs a pause keeps ----------------------------------------------


def run_result_to_json(result: RunResult[Any]) -> dict[str, Any]:
    """A run's result, for the children a stored pause keeps (``SessionRecord.children``): every field, the ones
    at their defaults left out, except two that JSON cannot hold as they are.

    * ``error``: ``{"type": its class's dotted name, "message": its text, credentials removed}`` — read back as a
      :class:`~agentactors.errors.RedactedException` standing in for it (``original_type``; ``RunResult``'s ``==``
      leaves the error out).
    * a typed ``output`` (``"output"``; absent for a text run, whose output is its content) is stored when it is
      JSON data; another value (a pydantic model, a dataclass) is stored as ``null`` — the child's ``content``
      holds its answer as text.

    :raises TypeError, ~agentactors._json.JsonBoundError: a message or call that is not storable (as for a
        conversation).
    """
    out: dict[str, Any] = {"content": result.content, "messages": messages_to_json(result.messages)}
    if result.tool_calls:
        out["tool_calls"] = [call_to_json(c) for c in result.tool_calls]
    if result.steps:
        out["steps"] = result.steps
    for flag in ("bounded", "cancelled", "generation_failed"):
        if getattr(result, flag):
            out[flag] = True
    if result.error is not None:
        out["error"] = _error_to_json(result.error)
    if result.followups:
        out["followups"] = list(result.followups)
    if usage := usage_to_json(result.usage):
        out["usage"] = usage
    for name in ("served_by", "run_id", "agent", "forked_from"):
        if (value := getattr(result, name)) is not None:
            out[name] = value
    output = result.output
    if output is not result.content:  # (a text run's output is its content, the very object: nothing to store)
        try:
            out["output"] = value_to_json(output)
        except (TypeError, JsonBoundError):
            out["output"] = None
    if result.children:
        out["children"] = [run_result_to_json(c) for c in result.children]
    if result.handoffs:
        out["handoffs"] = list(result.handoffs)
    if result.resume_state is not None:
        out["resume_state"] = paused_to_json(result.resume_state)
    if result.stop_reason is not None:
        out["stop_reason"] = result.stop_reason.value
    if result.cost is not None:
        cost = result.cost
        out["cost"] = {
            "input": cost.input, "output": cost.output, "total": cost.total, "currency": cost.currency,
            "estimated": cost.estimated,
        }
    return out


def run_result_from_json(doc: Mapping[str, Any]) -> RunResult[Any]:
    """The result :func:`run_result_to_json` wrote, every field of the type it wrote."""
    _checked(dict, "a stored run result", doc)
    error = doc.get("error")
    resume_state = doc.get("resume_state")
    cost = doc.get("cost")
    more: dict[str, Any] = {}
    if "output" in doc:
        more["output"] = value_from_json(doc["output"])
    return RunResult(
        _text(doc, "content", ""),
        messages_from_json(doc["messages"]),
        tuple(call_from_json(c) for c in _list(doc, "tool_calls")),
        _count(doc, "steps", 0),
        _flag(doc, "bounded"),
        _flag(doc, "cancelled"),
        _flag(doc, "generation_failed"),
        None if error is None else _error_from_json(error),
        tuple(_checked(str, "a stored result's followup", f) for f in _list(doc, "followups")),
        usage_from_json(doc.get("usage", {})),
        _text(doc, "served_by", None),
        _text(doc, "run_id", None),
        children=tuple(run_result_from_json(c) for c in _list(doc, "children")),
        agent=_text(doc, "agent", None),
        handoffs=tuple(_checked(str, "a stored result's handoff", h) for h in _list(doc, "handoffs")),
        resume_state=None if resume_state is None else paused_from_json(resume_state),
        cost=None if cost is None else _cost_from_json(cost),
        forked_from=_text(doc, "forked_from", None),
        stop_reason=_stop_reason(doc),
        **more,
    )


def _stop_reason(doc: Mapping[str, Any]) -> StopReason | None:
    """A stored result's ``stop_reason``: ``None`` when absent (a record written before it was stored) or a value
    this version does not know (a later one's: the result still loads)."""
    value = doc.get("stop_reason")
    try:
        return None if value is None else StopReason(value)
    except ValueError:
        return None


def _error_to_json(error: BaseException) -> dict[str, str]:
    if isinstance(error, RedactedException):  # a stand-in already (a child read back, stored again): as it was
        kind = error.original_type
        text = str(error).removeprefix(f"{kind}: ") if str(error) != kind else ""
        return {"type": kind, "message": text}
    kind = f"{type(error).__module__}.{type(error).__qualname__}"
    return {"type": kind, "message": redact(str(error))}


def _error_from_json(doc: Any) -> RedactedException:
    _checked(dict, "a stored result's error", doc)
    return RedactedException(_text(doc, "type", None) or "Exception", _text(doc, "message", ""))


def _cost_from_json(doc: Any) -> Cost:
    _checked(dict, "a stored result's cost", doc)
    amounts = {}
    for name in ("input", "output", "total", "estimated"):
        value = doc.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"a stored cost's {name!r} is a number, not {type(value).__name__}")
        amounts[name] = float(value)
    return Cost(
        amounts["input"], amounts["output"], amounts["total"], _text(doc, "currency", "USD"),
        estimated=amounts["estimated"],
    )
