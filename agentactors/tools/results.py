"""What a tool call comes back as: one status for every outcome, and the texts the model reads.

Every call the model makes gets exactly one :class:`ToolResult`; its
:class:`ToolStatus` says what happened (``docs/loop.md``, "Tool results").  The
model-facing texts live here, in one place, so the loop, the executor and the
tests agree on them word for word:

* :func:`invalid_arguments_text` — a call rejected by schema validation (types,
  never values, of what was sent; at most :data:`MAX_LISTED_ISSUES` issues);
* :func:`refusal_text` — a result over the tool author's :class:`ResultCeiling`;
* :func:`truncate` — a result over the operator's ``max_tool_result_chars`` cap;
* :func:`format_error` / :func:`timeout_text` / :func:`denied_text` / :func:`refused_itself_text` /
  :func:`unknown_tool_text`;
* :func:`encodable_text` — any of them made sendable (lone surrogates replaced).

Two answers to an oversized result serve two owners.  The author's ceiling
*refuses* (the payload never leaves the dispatch; the model retries narrower).
The operator's cap *truncates* (a marker plus a verbatim head).  The ceiling is
checked first.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import re
import uuid
from collections.abc import Iterable, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import attrs

from .._slots import draft
from ..errors import ModelRetry, redact
from ..messages import Message, text_message
from ..parts import MediaPart, Text, is_part

__all__ = [
    "MAX_LISTED_ISSUES",
    "ResultCeiling",
    "ToolResult",
    "ToolStatus",
    "ValidationIssue",
    "denied_text",
    "encodable_text",
    "format_error",
    "invalid_arguments_text",
    "refusal_text",
    "refused_itself_text",
    "render_result",
    "result_of",
    "split_parts",
    "timeout_text",
    "truncate",
    "truncated_head_length",
    "truncation_marker",
    "unknown_tool_text",
    "unreadable_arguments_text",
    "unsendable_text",
]

#: At most this many validation issues are listed to the model (the rest are counted).
MAX_LISTED_ISSUES = 10


class ToolStatus(enum.StrEnum):
    """How a tool call ended.  Closed: every outcome is one of these.

    ``ok`` the tool returned; ``error`` it raised; ``invalid`` the call could not
    be run as asked (unknown tool, bad or unparseable arguments, result over its
    ceiling); ``denied`` the agent's ``tool_policy`` refused it; ``timeout`` it
    ran past its timeout; ``cancelled`` the run was cancelled mid-call.
    """

    ok = "ok"
    error = "error"
    invalid = "invalid"
    denied = "denied"
    timeout = "timeout"
    cancelled = "cancelled"


def _to_status(value: ToolStatus | str) -> ToolStatus:
    return value if type(value) is ToolStatus else ToolStatus(value)


def _to_names(value: str | Iterable[str]) -> tuple[str, ...]:
    # A bare string is one parameter name, not a sequence of letters.
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen(slots=True)
class ResultCeiling:
    """The largest result a tool's author considers sane.

    A result over ``max_chars`` characters is *refused*: status ``invalid``, no
    data returned, and the model is told to call again narrowing by the
    parameters named in ``narrow_by`` (e.g. ``("limit", "since")``).

    :raises ValueError: ``max_chars`` is not a positive int, or a ``narrow_by`` entry is not a non-empty str.
    """

    max_chars: int = attrs.field()
    narrow_by: tuple[str, ...] = attrs.field(default=(), converter=_to_names)

    @max_chars.validator
    def _check_max(self, _: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"ResultCeiling.max_chars must be a positive int, not {value!r}")

    @narrow_by.validator
    def _check_narrow(self, _: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
        for name in value:
            if not isinstance(name, str) or not name:
                raise ValueError(f"ResultCeiling.narrow_by must hold non-empty parameter names, not {name!r}")


if TYPE_CHECKING:

    def _to_media(value: Iterable[MediaPart]) -> tuple[MediaPart, ...]: ...

else:
    # ``tuple`` itself at run time: no Python frame per result (attrs' mypy plugin reads the signature above).
    _to_media = tuple


# isinstance() tuples, made once: ``int | float`` in a call builds a union object every time it runs.
_NUMBER = (int, float)
_SEQUENCE = (list, tuple)


@attrs.frozen(slots=True)
class ToolResult:
    """The outcome of one tool call, as the model will read it.

    ``content`` is the model-facing text; ``size_chars`` its length;
    ``duration`` seconds spent dispatching the call (validation included).
    ``original_chars`` is the size of what the tool returned before a cap or a
    ceiling acted (``None`` when the tool produced nothing: invalid, denied,
    timeout, ...); ``truncated`` / ``refused`` say which of the two acted.
    ``parts`` are the images, documents or audio the tool returned beside its text
    (:func:`split_parts`); the cap and the ceiling measure the text.
    ``awaiting_approval`` marks the placeholder of a call that waits for a person's decision
    (:mod:`agentactors.tools.approval`): the run pauses, and the placeholder is never sent.

    :raises ValueError: for a status that is not a :class:`ToolStatus`, a
        negative size or duration, or a non-str content.
    """

    call_id: str
    name: str
    status: ToolStatus = attrs.field(converter=_to_status)
    content: str
    size_chars: int
    duration: float
    truncated: bool = False
    refused: bool = False
    original_chars: int | None = None
    parts: tuple[MediaPart, ...] = attrs.field(default=(), converter=_to_media)
    # A call that waits for a person's decision (agentactors.tools.approval): its placeholder, never sent.
    awaiting_approval: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        # One check of every field, in field order (one call per result instead of one per field).
        if not isinstance(self.call_id, str):
            raise TypeError(f"ToolResult.call_id must be a str, not {type(self.call_id).__name__}")
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("ToolResult.name must be a non-empty str")
        if not isinstance(self.content, str):
            raise TypeError(f"ToolResult.content must be a str, not {type(self.content).__name__}")
        size = self.size_chars
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            raise ValueError(f"size_chars must be a non-negative int, not {size!r}")
        duration = self.duration
        # ``not >= 0`` rather than ``< 0``: a NaN compares false both ways, and one stored would read back as a
        # duration no sum or comparison can use.
        if not isinstance(duration, _NUMBER) or isinstance(duration, bool) or not duration >= 0:
            raise ValueError(f"ToolResult.duration must be a non-negative number, not {duration!r}")

    @classmethod
    def of(
        cls,
        call_id: str,
        name: str,
        status: ToolStatus | str,
        content: str,
        duration: float = 0.0,
        **extra: Any,
    ) -> ToolResult:
        """Build a result whose ``size_chars`` is ``len(content)``."""
        return cls(call_id, name, ToolStatus(status), content, len(content), duration, **extra)

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.ok

    @property
    def is_error(self) -> bool:
        """Every status but ``ok`` reads as an error result on the wire."""
        return self.status is not ToolStatus.ok

    def to_message(self) -> Message:
        """The tool message that feeds this result back to the model (its media parts after the text)."""
        if self.parts:
            return Message.tool(self.call_id, (Text(self.content), *self.parts), self.name, is_error=self.is_error)
        # Message.tool(call_id, content, name, is_error=), set field by field (text_message): once per call.
        return text_message("tool", self.content, (), self.call_id, self.name, "", None, self.is_error)


# What result_of fills, field by field, then makes a ToolResult (agentactors._slots).
_new = object.__new__
_ResultDraft = draft(
    ToolResult,
    "call_id name status content size_chars duration truncated refused original_chars parts awaiting_approval",
)


def result_of(
    call_id: str,
    name: str,
    status: ToolStatus,
    content: str,
    duration: float,
    truncated: bool,
    refused: bool,
    original_chars: int | None,
    parts: tuple[MediaPart, ...],
) -> ToolResult:
    """``ToolResult(call_id, name, status, content, len(content), duration, truncated, refused, original_chars,
    parts)``, its fields set one by one — what the executor answers every call with.

    The same result as the constructor's, with its checks made inline (arguments that fail one go to the
    constructor, which raises its error), in about half the time.  Every argument is positional.
    """
    if (
        type(call_id) is not str
        or type(name) is not str
        or not name
        or type(status) is not ToolStatus
        or type(content) is not str
        or type(duration) is not float
        or not duration >= 0
        or type(parts) is not tuple
    ):
        size = len(content) if type(content) is str else 0  # (a content that is no str: the constructor says so)
        return ToolResult(call_id, name, status, content, size, duration, truncated, refused, original_chars, parts)
    result: Any = _new(_ResultDraft)
    result.call_id = call_id
    result.name = name
    result.status = status
    result.content = content
    result.size_chars = len(content)
    result.duration = duration
    result.truncated = truncated
    result.refused = refused
    result.original_chars = original_chars
    result.parts = parts
    result.awaiting_approval = False
    result.__class__ = ToolResult
    made: ToolResult = result
    return made


# --- rendering a tool's return value -------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if is_part(value):
        # A part's bytes must never become text the model reads: parts travel as parts (split_parts), alone.
        raise TypeError("a content part can be returned alone or in a list of parts, not inside other values")
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:
            return list(value)
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    import decimal  # here, not at the top: only a tool's odd return value needs it (~3 ms to import)

    if isinstance(value, uuid.UUID | decimal.Decimal | PurePath):
        return str(value)
    if isinstance(value, bytes | bytearray):
        return _bytes_text(bytes(value))
    dump = getattr(value, "model_dump", None)  # pydantic models, without importing pydantic
    if callable(dump):
        # By alias: what its schema (``model_json_schema``, by alias) names the fields, and so what a typed answer
        # was asked for and an endpoint's client validates against.  A model_dump of another make may not take it.
        try:
            return dump(mode="json", by_alias=True)
        except TypeError:
            return dump(mode="json")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class _Unsendable(TypeError):
    """A value refused for what it holds (a NaN, binary data), not for its type: its reason is worth the model's
    reading too (:func:`unsendable_text`)."""


_BINARY = (
    "it holds binary data (bytes that are not UTF-8 text): return a str, base64-encode the bytes, "
    "or return an Image, Document or Audio part"
)


def _bytes_text(data: bytes) -> str:
    """Bytes a tool returned, as the text they hold.

    Bytes are sent when they are text: UTF-8 (``subprocess.check_output``'s, a file read in binary mode) with
    no NUL — git's test for binary, since no text holds one.  Anything else is binary data, and no text the
    model reads can carry it faithfully: decoded with replacement characters it would be silently corrupted,
    escaped (``"\\u0000\\u0001..."``) it would be noise the model might take for the data.  So it is the tool's
    ``error``, saying what to return instead, as for every other value JSON cannot carry.
    """
    if b"\0" not in data:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    raise _Unsendable(_BINARY)


# json.dumps with options builds an encoder per call; one shared encoder (it keeps no state
# between calls) writes exactly the same text.  ``allow_nan=False``: Python would write ``NaN`` and ``Infinity``,
# which no JSON parser (the model's vendor's) reads; the encoder refuses them instead, for the same cost.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=_json_default, allow_nan=False)
_NOT_A_NUMBER = "it holds a NaN or an infinity, which JSON has no number for: return None or a str for it"


def split_parts(value: Any) -> tuple[str, tuple[MediaPart, ...]] | None:
    """A tool's return value as (text, media parts) when it is content parts, else ``None``.

    A tool returns media by returning a part (``Image(data=png)``) or a list or tuple of parts
    (``[Text("the chart:"), Image(...)]``); the text parts, joined by newlines, are the result's text.
    A list mixing parts with other values is not parts: it is rendered as JSON (and fails there).
    """
    if is_part(value):
        items: tuple[Any, ...] = (value,)
    elif isinstance(value, _SEQUENCE) and value and all(is_part(v) for v in value):
        items = tuple(value)
    else:
        return None
    texts = [p.text for p in items if isinstance(p, Text)]
    return "\n".join(texts), tuple(p for p in items if not isinstance(p, Text))


def render_result(value: Any) -> str:
    """A tool's return value as the text the model reads: a str as is, anything else as JSON.

    ``None`` becomes ``"null"``.  attrs classes, dataclasses, enums, sets, dates,
    UUIDs, paths, bytes that are UTF-8 text and pydantic models are converted.  What JSON cannot carry is
    refused, never sent as something else: a NaN or an infinity (Python would write ``NaN``, which is no JSON),
    bytes that are binary data (not UTF-8, or holding a NUL).

    :raises TypeError: the value cannot be represented as JSON — whatever went wrong on the way
        (a circular or too deeply nested value, a ``model_dump`` that raised, ...) is this one
        error, with the reason in its message: the caller has one thing to catch.
    """
    if isinstance(value, str):
        return value if type(value) is str else str.__str__(value)  # a subclass's overrides go nowhere
    if type(value) is int:
        return int.__repr__(value)  # what json.dumps writes for an int, without building an encoder
    try:
        return _ENCODER.encode(value)
    except TypeError:
        raise
    except RecursionError:
        # Caught after the stack unwound: there is room again to build the error.
        raise TypeError("it is nested too deeply to be sent as JSON") from None
    except ValueError as exc:  # "Circular reference detected", "Out of range float values are not JSON compliant"
        message = _message_of(exc) or "ValueError"
        if message.startswith("Out of range float"):
            raise _Unsendable(_NOT_A_NUMBER) from None
        raise TypeError(f"it cannot be sent as JSON ({_clip(message, 200)})") from None
    except Exception as exc:  # a conversion that raised (a model_dump, an attrs field, ...)
        raise TypeError(f"it cannot be sent as JSON (converting it raised {type(exc).__name__})") from None


def unsendable_text(value: Any, exc: BaseException) -> str:
    """What the model reads of a tool's ``value`` that :func:`render_result` refused with ``exc`` (the executor
    makes it an ``Error: TypeError: ...`` result): its type, and the reason when it is one of a value's contents
    (a NaN, binary data) rather than of its type."""
    kind = type(value).__name__
    head = f"the tool returned {'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind} that cannot be sent as JSON"
    return f"{head} ({exc})" if isinstance(exc, _Unsendable) else head


# Lone surrogates (U+D800–U+DFFF) are str code points that no UTF-8 text can hold: a request body
# carrying one cannot be encoded, so the step after the tool's would fail.
_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable_text(text: str) -> tuple[str, int]:
    """``text`` as UTF-8 can carry it, and how many surrogate code points had to be repaired.

    A surrogate pair written as two code points becomes the one character it encodes; a lone
    surrogate becomes U+FFFD.  Text without surrogates is returned as the same object (the
    common case costs one ``isascii`` or one regex scan).
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text, 0
    count = len(_SURROGATE.findall(text))
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"), count


# --- the texts the model reads -------------------------------------------------------------------


def format_error(exc: BaseException) -> str:
    """``Error: <ExcType>: <message>`` with registered secrets removed, no traceback; an exception group's (a
    tool's own task group failed) followed by what its members were (``— ValueError: bad input``, at most five).

    Never raises: an exception whose ``__str__`` raises (or returns something odd) is named
    by its type alone, with a note that its message could not be read.  A
    :class:`~agentactors.ModelRetry` a tool raised is a message for the model, not an error
    report: ``Retry: <message>``.
    """
    if isinstance(exc, ModelRetry):
        retry = redact(exc.message).strip()
        return f"Retry: {retry}" if retry else "Retry: call again with corrected arguments"
    name = type(exc).__name__
    message = _message_of(exc)
    if message is None:
        return f"Error: {name} (its message could not be read)"
    message = redact(message).strip()
    text = f"Error: {name}: {message}" if message else f"Error: {name}"
    if isinstance(exc, BaseExceptionGroup):
        # A tool's own task group (a nursery) raised: its message says only how many failed ("Exceptions from Trio
        # nursery (1 sub-exception)"), so the model is told what they were.
        return f"{text} — {_leaves_text(exc)}"
    return text


_MOST_LEAVES = 5


def _leaves_text(group: BaseExceptionGroup[BaseException]) -> str:
    """The first :data:`_MOST_LEAVES` exceptions of ``group``'s tree, each as :func:`format_error` words it."""
    leaves: list[BaseException] = []
    pending = list(reversed(group.exceptions))
    while pending and len(leaves) <= _MOST_LEAVES:
        current = pending.pop()
        if isinstance(current, BaseExceptionGroup):
            pending.extend(reversed(current.exceptions))
        else:
            leaves.append(current)
    more = len(leaves) > _MOST_LEAVES or bool(pending)
    shown = "; ".join(format_error(leaf).removeprefix("Error: ") for leaf in leaves[:_MOST_LEAVES])
    return f"{shown}; and more" if more else shown


def _message_of(exc: BaseException) -> str | None:
    """``str(exc)``, or ``None`` when the exception's own ``__str__`` fails."""
    try:
        message = str(exc)
    except Exception:
        return None
    return message if type(message) is str else str.__str__(message)


def timeout_text(name: str, seconds: float) -> str:
    return (
        f"Tool '{name}' timed out after {seconds:g} s and returned no result. "
        "Try narrower parameters or a smaller request."
    )


def denied_text(name: str, reason: str) -> str:
    reason = redact(reason.strip()).rstrip(".") or "no reason given"
    return (
        f"Call refused: tool '{name}' was denied by this agent's tool policy — the call was not executed. "
        f"Reason: {reason}. Do not call '{name}' again; continue without it."
    )


def refused_itself_text(name: str, reason: str) -> str:
    """A tool's own refusal (it raised :class:`~agentactors.errors.ToolDenied`): ``denied``, but not
    :func:`denied_text`'s — no policy need exist, and the tool's body ran (it may have done part of its work)."""
    reason = redact(reason.strip()).rstrip(".") or "no reason given"
    return f"Tool '{name}' refused this call: {reason}. Do not make the same call again; continue without it."


def unknown_tool_text(name: str, available: Sequence[str]) -> str:
    listed = ", ".join(f"'{n}'" for n in available) if available else "(none)"
    return (
        f"Invalid call: there is no tool named '{_clip(name, 64)}' — the call was not executed. "
        f"Available tools: {listed}. Call one of them by its exact name."
    )


def refusal_text(name: str, size: int, ceiling: ResultCeiling) -> str:
    """The text of a refused result; counts carry thousands separators, like the truncation marker."""
    suggestions = (", e.g. " + ", ".join(f"'{p}'" for p in ceiling.narrow_by)) if ceiling.narrow_by else ""
    return (
        f"Result too large: {name} returned {size:,} chars, over its {ceiling.max_chars:,}-char ceiling. "
        f"No data was returned. Call it again with narrower parameters{suggestions}."
    )


def truncation_marker(name: str, size: int, shown: int) -> str:
    """``[truncated: T returned 191,245 chars; showing the first 7,900 of them]``."""
    return f"[truncated: {name} returned {size:,} chars; showing the first {shown:,} of them]"


def truncated_head_length(name: str, size: int, cap: int) -> int:
    """How many chars of a ``size``-char result fit after the marker within ``cap`` (0 when none do)."""
    # The marker states how many chars follow, and its own length depends on that
    # number's digits: iterate to the fixed point (a few rounds at most).
    shown = max(0, cap - len(truncation_marker(name, size, 0)) - 1)
    for _ in range(8):
        room = max(0, cap - len(truncation_marker(name, size, shown)) - 1)
        if room == shown:
            break
        shown = room
    while shown > 0 and len(truncation_marker(name, size, shown)) + 1 + shown > cap:
        shown -= 1  # a digit boundary can leave the fixed point one over; step down until it fits
    return shown


def truncate(name: str, content: str, cap: int) -> str:
    """``content`` cut to at most ``cap`` chars as ``marker + "\\n" + head``.

    ``head`` is the longest verbatim prefix of ``content`` that keeps the whole
    within ``cap``.  Content at or under the cap is returned as the same object.
    When the cap is too small to hold even the marker, the marker itself is
    clipped to the cap (the invariant ``len(result) <= cap`` always holds).
    """
    size = len(content)
    if size <= cap:
        return content
    shown = truncated_head_length(name, size, cap)
    marker = truncation_marker(name, size, shown)
    if len(marker) + 1 + shown > cap:
        return marker[:cap]
    return marker + "\n" + content[:shown]


#: How the wires' decoders word a call whose arguments are not JSON (``openai``, ``responses``): the text below
#: says it already, so a detail that begins so adds only what follows.
_NOT_COMPLETE = "the arguments are not a complete json object"


def unreadable_arguments_text(name: str, error: str, detail: str | None, required: Sequence[str], fix: str) -> str:
    """The text for a call whose arguments did not parse (``"unparseable"``) or were missing (``"empty"``)."""
    head = f"Invalid arguments for tool '{name}' — the call was not executed."
    if error == "empty":
        needed = ", ".join(required) if required else "its parameters"
        why = f"No arguments were sent, but '{name}' requires: {needed}."
    else:
        said = (detail or "").strip()
        if said.lower().startswith(_NOT_COMPLETE):  # a wire's own words for it: only what it adds (a finish reason)
            said = said[len(_NOT_COMPLETE):].strip().removeprefix("(").removesuffix(")").strip()
        because = f" ({redact(_clip(said, 200))})" if said else ""
        why = (
            f"The arguments were not a complete JSON object{because}. If they were cut off at max_tokens, "
            "ask for less or split the call into smaller ones; otherwise send one valid JSON object."
        )
    return f"{head}\n{why}\n{fix}"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@attrs.frozen(slots=True)
class ValidationIssue:
    """One problem with a call's arguments: where, what was expected, and the JSON type that was sent."""

    path: str
    expected: str
    got: str

    def line(self) -> str:
        return f"- {self.path}: expected {self.expected}, got {self.got}"


def invalid_arguments_text(name: str, issues: Sequence[ValidationIssue], fix: str) -> str:
    """The model-facing text of a call rejected before running.

    Lists at most :data:`MAX_LISTED_ISSUES` issues (and how many more there
    were), then ``fix``: how to call the tool correctly.
    """
    lines = [f"Invalid arguments for tool '{name}' — the call was not executed."]
    lines.extend(issue.line() for issue in issues[:MAX_LISTED_ISSUES])
    extra = len(issues) - MAX_LISTED_ISSUES
    if extra > 0:
        lines.append(f"- ... and {extra} more issue{'s' if extra != 1 else ''}")
    lines.append(fix)
    return "\n".join(lines)
