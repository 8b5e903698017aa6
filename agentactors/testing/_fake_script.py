"""What a :class:`~agentactors.testing.FakeVendor` can be told to answer, and what it records.

These are wire-neutral: a :class:`FakeReply` becomes an OpenAI chat completion,
an Anthropic message or a Gemini candidate depending on the endpoint that was
called, in JSON or as a stream according to the request.  The server-side
encoding lives in :mod:`agentactors.testing._fake_wires`, written independently
of the client codecs so that the integration tests catch codec bugs.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import attrs

__all__ = [
    "MAX_DELAY",
    "WIRES",
    "Conversation",
    "FakeError",
    "FakeMalformed",
    "FakeReply",
    "FakeToolCall",
    "FaultKind",
    "FaultPlan",
    "Handler",
    "OfferedTool",
    "RecordedRequest",
    "ScriptItem",
    "SeenPart",
    "SeenToolCall",
    "SeenToolResult",
    "as_action",
]

# Every delay the server takes (latency, a hang, a pause between chunks) is capped, so a
# mis-scripted test cannot keep a server thread alive for long; closing the server also
# ends every delay at once.
MAX_DELAY = 120.0

#: The wires a FakeVendor speaks (a request's ``wire``; what a route, an outage or a FaultPlan names).
WIRES = ("openai", "responses", "anthropic", "gemini", "bedrock")

_STOPS = frozenset({"end_turn", "tool_use", "max_tokens", "stop_sequence", "content_filter"})


# RFC 9110 field names (tokens) and values (visible characters, inner spaces and tabs): what h11 sends.  A header
# it refuses made the server drop the connection on the request that used it, far from the script that was wrong.
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_VALUE = re.compile(r"(?:[\x21-\x7e\x80-\xff]+(?:[ \t]+[\x21-\x7e\x80-\xff]+)*)?")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(owner: str, value: object) -> float:
    """A real number of seconds or tokens, as a float; ``TypeError`` naming ``owner`` for anything else (a str
    was taken, and failed on the first request, in the server's thread)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{owner} must be a number, not {type(value).__name__}")
    return float(value)


def _delay(value: float | None) -> float | None:
    if value is None:
        return None
    value = _number("a delay", value)
    if math.isnan(value) or value < 0:
        raise ValueError(f"a delay must be a non-negative number of seconds, not {value!r}")
    return min(value, MAX_DELAY)


def _delay_or_zero(value: float | None) -> float:
    return _delay(value) or 0.0


def _nonneg(instance: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    """An optional count: an int >= 0 (a float or a str failed only in the server, as it built the answer)."""
    if value is None:
        return
    if not _is_int(value):
        raise TypeError(f"{type(instance).__name__}.{attribute.name} must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{attribute.name} must be >= 0, not {value!r}")


def _of_type(kind: type | tuple[type, ...], label: str) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    """A validator: the value is a ``kind`` (``label`` says which, in the ``TypeError``)."""

    def check(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not isinstance(value, kind):
            raise TypeError(f"{type(instance).__name__}.{attribute.name} must be {label}, not {type(value).__name__}")

    return check


#: A text field the wire's body carries (a number was sent as one, where a vendor sends text).
_optional_str = attrs.validators.optional(_of_type(str, "a str or None"))


def _seconds_or_none(instance: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    """A number of seconds, as sent in a header (and in Gemini's ``RetryInfo``): a str failed in the server's
    thread.  Any number goes out as it is — ``-1``, ``inf``, ``nan`` included: what a test of a client's handling
    of a bad retry-after sends."""
    if value is not None:
        _number(f"{type(instance).__name__}.{attribute.name}", value)


def _header_value(owner: str, value: str) -> str:
    if not _HEADER_VALUE.fullmatch(value):  # (the pattern's ranges also keep it within Latin-1, as it is sent)
        raise ValueError(f"{owner}: {value!r} is not a value an HTTP header can carry (control characters, "
                         "surrounding whitespace or characters beyond Latin-1)")
    return value


def _token_limit(value: int | None) -> int | None:
    """A request's output-token limit, or ``None`` for one no real vendor would take (negative, not an int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


def _headers(value: Mapping[str, str] | None) -> dict[str, str]:
    """Extra response headers, lower-cased; values that are not text are sent as their ``str`` (a number).

    Raises ``TypeError`` for what is not a mapping and ``ValueError`` for a name or value HTTP cannot carry: the
    server refused it only as it answered, dropping the connection.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"headers must be a mapping of names to values, not {type(value).__name__}")
    out: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _HEADER_NAME.fullmatch(name):
            raise ValueError(f"headers: {name!r} is not an HTTP header name")
        out[name.lower()] = _header_value(f"headers[{name!r}]", str(text))
    return out


def _arguments(value: Mapping[str, Any] | str) -> Mapping[str, Any] | str:
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"FakeToolCall.arguments must be a mapping or a str, not {type(value).__name__}")
    return dict(value)


@attrs.frozen(slots=True)
class FakeToolCall:
    """A tool call the fake model makes.

    ``arguments`` is an object, or a string sent verbatim: on the OpenAI wire as the
    ``arguments`` text, on Anthropic streams as ``input_json_delta`` fragments (so a
    truncated string such as ``'{"path": "a.t'`` models arguments cut off at
    ``max_tokens``).  On wires whose JSON carries an object, a string that does not
    parse is sent as a string value, which no real vendor does: a client must
    reject it as malformed.  ``id`` defaults to a unique ``call_…`` / ``toolu_…``
    id; Gemini calls carry an id only when one is given here (real Gemini sends none).
    """

    name: str = attrs.field()
    arguments: Mapping[str, Any] | str = attrs.field(factory=dict, converter=_arguments)
    id: str | None = attrs.field(default=None, validator=_optional_str)

    @name.validator
    def _check_name(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not value:
            raise ValueError("FakeToolCall.name must be a non-empty string")


def _calls(value: FakeToolCall | Sequence[FakeToolCall]) -> tuple[FakeToolCall, ...]:
    calls = (value,) if isinstance(value, FakeToolCall) else tuple(value)
    for c in calls:
        if not isinstance(c, FakeToolCall):
            raise TypeError(f"tool_calls must hold FakeToolCall objects, not {type(c).__name__}")
    return calls


@attrs.frozen(slots=True)
class FakeError:
    """An HTTP error answer, in the called wire's real error body shape.

    :param status: the HTTP status (429, 500, 503, 529, 400, 401, ...).
    :param message: the error message (a per-status default otherwise).
    :param code: the vendor's error type/code (``"insufficient_quota"``,
        ``"overloaded_error"``, ``"RESOURCE_EXHAUSTED"``, ...); a per-wire,
        per-status default otherwise.
    :param retry_after: seconds, sent as ``retry-after`` (and, on Gemini 429s, as ``RetryInfo.retryDelay`` in
        the body): any number, as it is (``-1``, ``inf``: to see how a client takes a bad one); a header that is
        no number (``soon``) goes in ``headers``.
    :param retry_after_ms: sent as ``retry-after-ms``, any number as it is.
    :param should_retry: sent as ``x-should-retry: true|false``.
    :param headers: extra response headers (names and values HTTP can carry).
    :param body: a body sent verbatim instead of the wire's shape (a mapping is
        JSON-encoded; ``str``/``bytes`` are sent as is).
    :param latency: seconds before the answer (``None``: the vendor's default latency).
    :param param: the request parameter the error names, on the OpenAI wires (``"messages[1].tool_calls[0].id"``;
        sent as the error's ``param``).

    Every field is checked here (``TypeError`` / ``ValueError``), as on :class:`FakeReply`,
    :class:`FakeMalformed` and :class:`FakeToolCall`: a value the server could not send failed on the request
    that met it, as a dropped connection, far from the script that was wrong.
    """

    status: int = attrs.field()
    message: str | None = attrs.field(default=None, validator=_optional_str)
    code: str | None = attrs.field(default=None, validator=_optional_str)
    retry_after: float | None = attrs.field(default=None, validator=_seconds_or_none)
    retry_after_ms: float | None = attrs.field(default=None, validator=_seconds_or_none)
    should_retry: bool | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(bool, "a bool or None")))
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_headers)
    body: Any = attrs.field(default=None)
    latency: float | None = attrs.field(default=None, converter=_delay)
    param: str | None = attrs.field(default=None, validator=_optional_str)

    @status.validator
    def _check_status(self, _: attrs.Attribute[int], value: int) -> None:
        if not isinstance(value, int) or not 400 <= value <= 599:
            raise ValueError(f"FakeError.status must be an HTTP error status (400-599), not {value!r}")

    @body.validator
    def _check_body(self, _: attrs.Attribute[Any], value: Any) -> None:
        """A body is sent as it is (``str``, ``bytes``) or JSON-encoded: one that JSON cannot encode failed in the
        server, as it answered."""
        if value is None or isinstance(value, str | bytes):
            return
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"FakeError.body must be a str, bytes or a JSON-encodable value: {exc}") from None


@attrs.frozen(slots=True)
class FakeMalformed:
    """A body that is not what the wire promises: invalid JSON by default.

    For a streaming request the body is sent as the data of one SSE event (and the
    stream then ends), so the client's stream decoder meets it.  ``status`` is a final
    response's, 200 to 599.
    """

    body: str | bytes = attrs.field(default='{"id": "fake-malformed", "choices": [{"message": ',
                                    validator=_of_type((str, bytes), "a str or bytes"))
    status: int = attrs.field(default=200)
    content_type: str | None = attrs.field(default=None, validator=_optional_str)
    latency: float | None = attrs.field(default=None, converter=_delay)

    @status.validator
    def _check_status(self, _: attrs.Attribute[int], value: int) -> None:
        # A final response's status: h11 refuses below 200 (the connection was dropped instead).
        if not _is_int(value):
            raise TypeError(f"FakeMalformed.status must be an int, not {type(value).__name__}")
        if not 200 <= value <= 599:
            raise ValueError(f"FakeMalformed.status must be an HTTP status from 200 to 599, not {value!r}")

    @content_type.validator
    def _check_content_type(self, _: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None:
            _header_value("FakeMalformed.content_type", value)


@attrs.frozen(slots=True)
class FakeReply:
    """A successful answer.

    :param text: the answer text (streamed a few words per chunk).
    :param tool_calls: calls the model makes (a single :class:`FakeToolCall` is accepted).
    :param reasoning: structured reasoning (Anthropic thinking block with a signature,
        Gemini ``thought`` parts, ``reasoning`` deltas on the OpenAI wire).
    :param stop: ``end_turn`` | ``tool_use`` | ``max_tokens`` | ``stop_sequence`` |
        ``content_filter``, mapped to the wire's vocabulary; ``None`` derives it.
    :param input_tokens: / :param output_tokens: usage (estimated from sizes if ``None``).
    :param latency: seconds before the response headers (``None``: vendor default).  Every delay of a script
        (this one, ``chunk_latency``, a fault plan's hang) is cut to :data:`MAX_DELAY` (120 s), ``inf`` included:
        a mis-scripted test cannot hold a server thread for longer.
    :param chunk_latency: seconds after each streamed content chunk (the events before
        the first chunk, like ``message_start``, go out together with it).
    :param words_per_chunk: text words per streamed chunk.
    :param cut_after: drop the connection after this many content chunks (text,
        reasoning or tool-argument deltas) were sent; a JSON answer is cut half way.
    :param stream_error: an error sent *inside* the HTTP 200 stream after
        ``stream_error_after`` content chunks (Anthropic ``event: error``, an OpenAI
        ``{"error": ...}`` chunk, a Gemini error chunk); a non-streaming request gets
        it as a plain HTTP error.
    :param headers: extra response headers.
    """

    text: str = attrs.field(default="", validator=_of_type(str, "a str"))
    tool_calls: tuple[FakeToolCall, ...] = attrs.field(default=(), converter=_calls)
    reasoning: str = attrs.field(default="", validator=_of_type(str, "a str"))
    stop: str | None = attrs.field(default=None)
    input_tokens: int | None = attrs.field(default=None, validator=_nonneg)
    output_tokens: int | None = attrs.field(default=None, validator=_nonneg)
    latency: float | None = attrs.field(default=None, converter=_delay)
    chunk_latency: float = attrs.field(default=0.0, converter=_delay_or_zero)
    words_per_chunk: int = attrs.field(default=2)
    cut_after: int | None = attrs.field(default=None, validator=_nonneg)
    stream_error: FakeError | None = attrs.field(
        default=None, validator=attrs.validators.optional(_of_type(FakeError, "a FakeError or None")))
    stream_error_after: int = attrs.field(default=1, validator=_nonneg)
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_headers)

    @stop.validator
    def _check_stop(self, _: attrs.Attribute[str | None], value: str | None) -> None:
        if value is not None and value not in _STOPS:
            raise ValueError(f"FakeReply.stop must be one of {sorted(_STOPS)} or None, not {value!r}")

    @words_per_chunk.validator
    def _check_words(self, _: attrs.Attribute[int], value: int) -> None:
        if not _is_int(value):
            raise TypeError(f"FakeReply.words_per_chunk must be an int, not {type(value).__name__}")
        if value < 1:
            raise ValueError("words_per_chunk must be >= 1")

    @property
    def stop_reason(self) -> str:
        """The stop reason sent: the given one, else ``tool_use`` with calls and ``end_turn`` without."""
        return self.stop or ("tool_use" if self.tool_calls else "end_turn")


class FaultKind(enum.StrEnum):
    """Faults a :class:`FaultPlan` injects."""

    rate_limit = "rate_limit"  # 429 with retry-after
    server_error = "server_error"  # 500
    overloaded = "overloaded"  # 529 on the Anthropic wire, 503 on the others
    timeout = "timeout"  # the answer comes only after FaultPlan.hang seconds
    disconnect = "disconnect"  # the connection drops mid-answer


_DEFAULT_WEIGHTS: Mapping[FaultKind, float] = {
    FaultKind.rate_limit: 3.0,
    FaultKind.server_error: 2.0,
    FaultKind.overloaded: 2.0,
    FaultKind.timeout: 1.0,
    FaultKind.disconnect: 2.0,
}


# What ``FaultPlan(weights=...)`` takes: kinds (members or their names) to weights.  A union of mappings, not the
# one ``Mapping[FaultKind | str, float]`` it was: a mapping is invariant in its key, so that one refused a user's
# ``dict[FaultKind, float]`` and a plan's own weights.  (mypy reads ``FaultKind | str`` as ``str``, a FaultKind
# being a str; the third member is for checkers that keep the union as written, pyright's.)
_GivenWeights: TypeAlias = Mapping[FaultKind, float] | Mapping[str, float] | Mapping[FaultKind | str, float]


def _weights(value: _GivenWeights | None) -> Mapping[FaultKind, float]:
    if value is None:
        return dict(_DEFAULT_WEIGHTS)
    if not isinstance(value, Mapping):
        raise TypeError(f"FaultPlan weights must be a mapping of fault kinds to weights, not {type(value).__name__}")
    try:
        out = {FaultKind(k): float(v) for k, v in value.items()}
    except ValueError as exc:
        raise ValueError(f"FaultPlan weights: {exc} (one of {', '.join(k.value for k in FaultKind)})") from None
    # Finite too: random.choices refuses an infinite total, and did so on every faulted request, in the server.
    if any(not 0 <= v < math.inf for v in out.values()) or not any(v > 0 for v in out.values()):
        raise ValueError("FaultPlan weights must be finite and non-negative with at least one positive")
    return out


def _rate(value: float) -> float:
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"FaultPlan.rate must be within [0, 1], not {value!r}")
    return value


def _names(value: Sequence[str] | str | None) -> frozenset[str] | None:
    if value is None:
        return None
    names = frozenset((value,) if isinstance(value, str) else value)
    if not all(isinstance(name, str) for name in names):
        # A model named by a number matched no request: the plan applied to nothing, silently.
        raise TypeError(f"FaultPlan names models and wires by str, not {sorted(map(repr, names))}")
    return names


def _wires(value: Sequence[str] | str | None) -> frozenset[str] | None:
    """Known wire names only: a misspelt one restricted the plan to no request at all, silently."""
    wires = _names(value)
    unknown = sorted(wires - set(WIRES)) if wires is not None else []
    if unknown:
        raise ValueError(f"FaultPlan.wires: unknown wire(s) {unknown}; the wires are {', '.join(WIRES)}")
    return wires


def _retry_after(value: float) -> float:
    """What a 429 sends as ``retry-after``: a finite, non-negative number of seconds (never ``nan``)."""
    value = float(value)
    if not 0.0 <= value < math.inf:
        raise ValueError(f"FaultPlan.retry_after must be a finite number of seconds >= 0, not {value!r}")
    return value


def _seed(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"FaultPlan.seed must be an int or None, not {type(value).__name__}")


def _count(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"FaultPlan.{attribute.name} must be an int >= 0, not {value!r}")


@attrs.frozen(slots=True)
class FaultPlan:
    """Random fault injection, reproducible with ``seed``.

    Each request that no queued script item answers fails with probability
    ``rate``; the fault is drawn from ``weights`` (:class:`FaultKind` → weight; a kind may be given by its
    name, ``{"rate_limit": 1}``, and any mapping keyed by kinds, names or both is taken).
    ``retry_after`` is what a 429 asks for, ``hang`` how long a ``timeout``
    fault withholds its answer (bounded; pick it longer than the client's
    timeout), ``cut_after`` how many content chunks a ``disconnect`` lets
    through.  ``wires`` / ``models`` restrict the plan to some endpoints.

    Raises ``ValueError`` for what it could not honour: a rate outside [0, 1] or NaN, an unknown fault kind,
    weights that are negative, infinite or all zero, a negative or non-finite ``retry_after`` or ``hang``, an
    unknown wire name; ``TypeError`` for a ``seed`` that is not an int.
    """

    rate: float = attrs.field(default=0.0, converter=_rate)
    seed: int | None = attrs.field(default=None, validator=_seed)
    weights: Mapping[FaultKind, float] = attrs.field(default=None, converter=_weights)
    retry_after: float = attrs.field(default=1.0, converter=_retry_after)
    hang: float = attrs.field(default=30.0, converter=_delay_or_zero)
    cut_after: int = attrs.field(default=1, validator=_count)
    wires: frozenset[str] | None = attrs.field(default=None, converter=_wires)
    models: frozenset[str] | None = attrs.field(default=None, converter=_names)

    def applies_to(self, wire: str, model: str | None) -> bool:
        if self.rate <= 0.0:
            return False
        if self.wires is not None and wire not in self.wires:
            return False
        return self.models is None or model in self.models


# --- what the server saw ------------------------------------------------------------------------


@attrs.frozen(slots=True)
class OfferedTool:
    """A tool declared in a request."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map)


@attrs.frozen(slots=True)
class SeenToolCall:
    """A tool call found in the conversation's history (an earlier assistant turn)."""

    id: str | None
    name: str
    arguments: Any = None


@attrs.frozen(slots=True)
class SeenToolResult:
    """A tool result found in the conversation (the tool's name when the wire carries it)."""

    call_id: str | None
    name: str | None
    content: str
    is_error: bool = False


@attrs.frozen(slots=True)
class SeenPart:
    """A media part found in a request: what it is and how it came, never its payload.

    ``kind`` is ``image``, ``document`` or ``audio``; ``source`` is ``data`` (inline, ``size`` decoded
    bytes) or ``url`` (``url`` as sent; the fake vendor never fetches it); ``role`` is ``user``, or ``tool``
    for media a tool returned.
    """

    kind: str
    media_type: str | None
    source: str
    size: int | None = None
    url: str | None = None
    role: str = "user"
    title: str | None = None


@attrs.frozen(slots=True)
class Conversation:
    """A wire-neutral reading of a request's conversation, for scripts and the default behaviour.

    ``parts`` are the media parts of the conversation, in order; ``settings`` the generation settings the
    request carried, under neutral names (``temperature``, ``top_p``, ``stop``, ``seed``,
    ``parallel_tool_calls``, ``reasoning_effort`` — the wire's effort or thinking level —,
    ``thinking`` — ``enabled`` / ``adaptive`` —, ``thinking_budget``, ``cache_breakpoints``,
    ``cache_retention``), only those present.
    """

    system: str = ""
    last_user_text: str = ""
    message_count: int = 0
    tools: tuple[OfferedTool, ...] = ()
    tool_choice: str = "auto"  # auto | none | required | tool
    tool_choice_name: str | None = None
    tool_calls: tuple[SeenToolCall, ...] = ()
    tool_results: tuple[SeenToolResult, ...] = ()
    max_tokens: int | None = attrs.field(default=None, converter=_token_limit)
    include_usage: bool = False  # OpenAI stream_options.include_usage
    parts: tuple[SeenPart, ...] = ()
    settings: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map)
    # The JSON-schema response format asked for, wire-neutral: {"name", "schema", "strict"} (None: text).
    response_format: Mapping[str, Any] | None = None


@attrs.frozen(slots=True)
class RecordedRequest:
    """One request the server received, and (in :attr:`FakeVendor.requests`) what became of it.

    Credentials are never stored: ``headers`` has them replaced by ``[REDACTED]``,
    ``api_key_present`` says whether one came in a credential header, and
    ``key_leaks`` lists the other places (``"url"``, ``"body"``, ``"header:<name>"``)
    where that key also appeared (it is redacted there too).  A correct client
    leaves ``key_leaks`` empty.

    ``outcome`` is ``pending`` while the answer is being produced, then ``ok``,
    ``error`` (an HTTP error status), ``stream_error`` (an in-band error),
    ``malformed``, ``cut`` (the server dropped the connection on purpose),
    ``disconnected`` (the client went away first; ``disconnected`` is then True)
    or ``aborted`` (the server was shut down mid-answer).
    """

    index: int
    wire: str
    method: str
    path: str
    model: str | None
    stream: bool
    body: Any
    body_size: int
    headers: Mapping[str, str] = attrs.field(converter=_frozen_map)
    api_key_present: bool
    key_leaks: tuple[str, ...] = ()
    conversation: Conversation | None = None
    received_at: float = 0.0
    status: int | None = None
    outcome: str = "pending"
    disconnected: bool = False
    fault: str | None = None
    completed_at: float | None = None


ScriptItem: TypeAlias = "FakeReply | FakeError | FakeMalformed | str | FakeToolCall | Sequence[FakeToolCall]"
Handler: TypeAlias = Callable[[RecordedRequest], "ScriptItem | None"]
Action: TypeAlias = FakeReply | FakeError | FakeMalformed


def as_action(item: Any) -> Action:
    """Normalise a script item: a ``str`` is a text reply, a call or list of calls a tool-call reply."""
    if isinstance(item, FakeReply | FakeError | FakeMalformed):
        return item
    if isinstance(item, str):
        return FakeReply(text=item)
    if isinstance(item, FakeToolCall):
        return FakeReply(tool_calls=(item,))
    if isinstance(item, Sequence) and item and all(isinstance(c, FakeToolCall) for c in item):
        return FakeReply(tool_calls=tuple(item))
    raise TypeError(
        "a FakeVendor script item is a FakeReply, FakeError, FakeMalformed, str, FakeToolCall "
        f"or a non-empty list of FakeToolCall, not {type(item).__name__}"
    )
