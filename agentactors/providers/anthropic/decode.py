"""Reading the Anthropic Messages wire: response bodies, content blocks, usage, stop reasons, errors.

Pure functions, no I/O.  Both paths (a JSON body here, a stream in
:mod:`.stream`) end in :func:`assemble`, so a response decodes to the same :class:`LLMResponse`
whichever way it arrived.

Content blocks map as follows:

* ``text`` → ``LLMResponse.content`` (blocks concatenated verbatim, as the stream's deltas are);
* ``thinking`` → ``reasoning`` text, and the block itself (with its ``signature``);
* ``redacted_thinking`` and every server-side block (``server_tool_use``, ``*_tool_result``,
  ...) → kept verbatim, never executed;
* ``tool_use`` → a :class:`ToolCall` whose ``arguments`` is the ``input`` object
  (``raw_arguments`` is ``None``: the wire carries an object; it holds the streamed text
  only when that text did not parse, and the call is then marked ``"unparseable"``).

Opaque blocks travel in ``provider_data["anthropic"]["blocks"]`` in the order received;
the request encoder replays them in place (before the text and the ``tool_use`` blocks).  Beside them,
``provider_data["anthropic"]["model"]`` is the model the request was sent to (the ``model`` given, not the
body's ``model``): a thinking block's signature is valid for that model only, and the encoder leaves the
thinking of another model's message out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..._json import bound_problem, value_problem
from ...errors import MalformedResponseError, ProviderError
from ...messages import LLMRequest, LLMResponse, StopReason, ToolCall, Usage, parse_arguments
from ..errors import classify_http_error
from .models import WIRE

__all__ = [
    "WIRE",
    "assemble",
    "classify_error",
    "classify_error_body",
    "decode_message",
    "is_error_body",
    "map_stop_reason",
    "mark_cut_off",
    "merge_usage",
    "parse_usage",
    "tool_call_from_input",
    "tool_call_from_stream",
]

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.end_turn,
    "stop_sequence": StopReason.stop_sequence,
    "max_tokens": StopReason.max_tokens,
    "tool_use": StopReason.tool_use,
    "pause_turn": StopReason.pause_turn,
    "refusal": StopReason.content_filter,
    "model_context_window_exceeded": StopReason.max_tokens,
}

# The HTTP status each documented error type is sent with; an in-band (stream) error carries
# only the type, so this is how it gets the same classification as its HTTP twin.
_ERROR_STATUS: Mapping[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_CUT_OFF = "the arguments were cut off at max_tokens; ask for less or split the call"
_NOT_JSON = "the tool input the model streamed is not a JSON object"


def map_stop_reason(raw: Any) -> StopReason:
    """The library's stop reason for Anthropic's ``stop_reason`` (unknown or missing → ``other``)."""
    return _STOP_REASONS.get(raw, StopReason.other) if isinstance(raw, str) else StopReason.other


def _count(value: Any) -> int | None:
    # bool is an int subclass; a JSON true is not a token count.
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def parse_usage(obj: Any) -> Usage:
    """``usage`` → :class:`Usage` (missing or non-integer counts read as 0)."""
    return merge_usage(Usage(), obj)


def merge_usage(prev: Usage, obj: Any) -> Usage:
    """Fold a (cumulative) ``usage`` object into ``prev``.

    Anthropic's ``message_delta`` usage is cumulative and may omit fields (older API
    versions send only ``output_tokens``; today's leave out ``cache_creation``).  A field
    absent from ``obj`` keeps its previous value, and no count ever goes down, so the
    input tokens reported by ``message_start`` survive a ``message_delta`` that leaves
    them out.

    ``cache_creation.ephemeral_1h_input_tokens`` is the part of ``cache_creation_input_tokens``
    written with the 1-hour TTL (billed at 2x input, the 5-minute writes at 1.25x):
    ``Usage.cache_write_1h_tokens``.  The writes are never fewer than their breakdown says.
    """
    if not isinstance(obj, Mapping):
        return prev

    def pick(key: str, old: int, within: Mapping[str, Any] = obj) -> int:
        new = _count(within.get(key))
        return old if new is None else max(old, new)

    write = pick("cache_creation_input_tokens", prev.cache_write_tokens)
    write_1h = prev.cache_write_1h_tokens
    creation = obj.get("cache_creation")
    if isinstance(creation, Mapping):
        write_1h = pick("ephemeral_1h_input_tokens", write_1h, creation)
        write = max(write, write_1h + (_count(creation.get("ephemeral_5m_input_tokens")) or 0))
    return Usage(
        input_tokens=pick("input_tokens", prev.input_tokens),
        output_tokens=pick("output_tokens", prev.output_tokens),
        cache_read_tokens=pick("cache_read_input_tokens", prev.cache_read_tokens),
        cache_write_tokens=write,
        reasoning_tokens=prev.reasoning_tokens,
        cache_write_1h_tokens=write_1h,
    )


def is_error_body(body: Any) -> bool:
    """Whether ``body`` is Anthropic's ``{"type": "error", "error": {"type", "message"}}``."""
    return (
        isinstance(body, Mapping)
        and body.get("type") == "error"
        and isinstance(body.get("error"), Mapping)
        and isinstance(body["error"].get("type"), str)
    )


def classify_error_body(
    body: Mapping[str, Any], *, provider: str, model: str | None, status: int | None = None
) -> ProviderError:
    """Classify an Anthropic error body that arrived without (or inside) a 2xx status.

    The status is the one the error type is documented with (``overloaded_error`` →
    529, transient), so an in-band ``event: error`` gets the same kind as its HTTP twin.
    Unknown types are a vendor failure mid-answer (500, transient).
    """
    err = body.get("error")
    etype = err.get("type") if isinstance(err, Mapping) else None
    found = status if status is not None and status >= 400 else _ERROR_STATUS.get(str(etype), 500)
    return classify_http_error(found, None, dict(body), provider=provider, model=model)


def classify_error(
    status: int, headers: Mapping[str, str] | None, body: bytes, *, provider: str, model: str | None
) -> ProviderError:
    """``{"type":"error","error":{"type","message"},"request_id"}`` with a non-2xx status → the classified error.

    400 invalid_request_error / 413 request_too_large → request; 401 / 403 / 404 →
    account; 429 rate_limit_error → transient with ``retry-after``; 500 api_error and
    529 overloaded_error → transient (``x-should-retry`` overrides, see
    :func:`~agentactors.providers.errors.classify_http_error`).  The shared classifier knows
    every one of these types, so nothing is refined here.
    """
    return classify_http_error(status, headers, body, provider=provider, model=model)


def _tool_call_from_block(block: Mapping[str, Any], *, provider: str, model: str | None) -> ToolCall:
    call_id, name = block.get("id"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise MalformedResponseError("tool_use block without a string id and name", provider=provider, model=model)
    return tool_call_from_input(call_id, name, block.get("input"))


def tool_call_from_input(call_id: str, name: str, arguments: Any) -> ToolCall:
    """The :class:`ToolCall` for a Claude tool use whose ``input`` came as a JSON value (not streamed text).

    Claude's wires (Messages here, Bedrock Converse) promise an object: one is the call's arguments, one past
    the JSON bounds is marked ``"unparseable"`` with the bound it broke, and anything else is kept as its JSON
    text and marked, never read as ``{}``.
    """
    if isinstance(arguments, Mapping) and (bound := value_problem(arguments)) is not None:
        return ToolCall(id=call_id, name=name, raw_arguments=None, arguments_error="unparseable",
                        arguments_error_detail=bound)
    if isinstance(arguments, Mapping):
        return ToolCall(id=call_id, name=name, arguments=dict(arguments))
    return ToolCall(
        id=call_id,
        name=name,
        raw_arguments=json.dumps(arguments, ensure_ascii=False),
        arguments_error="unparseable",
        arguments_error_detail="the tool input is not a JSON object",
    )


def tool_call_from_stream(call_id: str, name: str, raw: str, *, request: LLMRequest | None) -> ToolCall:
    """The :class:`ToolCall` for a Claude tool use whose ``input`` was streamed as JSON text fragments.

    No text at all is fine for a tool without required properties and ``"empty"`` otherwise (the request's
    tool says which); text that is not a JSON object is kept and marked, with the bound it broke if any.
    """
    if not raw.strip():
        required = request is not None and any(t.name == name and t.required for t in request.tools)
        _, error = parse_arguments(raw, required=required)
        return ToolCall(
            id=call_id,
            name=name,
            raw_arguments=raw if error else None,
            arguments_error=error,
            arguments_error_detail="the model sent no tool input" if error else None,
        )
    args, error = parse_arguments(raw)
    if error is None:
        return ToolCall(id=call_id, name=name, arguments=args)
    return ToolCall(
        id=call_id, name=name, raw_arguments=raw, arguments_error=error,
        arguments_error_detail=bound_problem(raw) or _NOT_JSON,
    )


def mark_cut_off(calls: Sequence[ToolCall], stop: StopReason, *, last_block_is_call: bool = False) -> list[ToolCall]:
    """``calls``, each unreadable one told that ``max_tokens`` cut its arguments off when ``stop`` says so.

    A call whose arguments did not parse in an answer that ran out of tokens was truncated, not malformed:
    the detail says what to do about it (ask for less, or split the call).  With ``last_block_is_call`` (the
    answer's last content block is the last call), that call with no arguments at all is marked too: Claude
    sends no input for a call that takes none, but the answer's last block at ``max_tokens`` was cut off
    while it was written, right after its name, and running the tool with its defaults would be a guess.  A
    call followed by another block was finished before the tokens ran out and is left alone; so is one with
    any arguments (a cut in them left text that does not parse, marked above).
    """
    if stop is not StopReason.max_tokens:
        return list(calls)
    if last_block_is_call and calls and not calls[-1].arguments and calls[-1].arguments_error is None:
        cut = calls[-1]
        calls = [*calls[:-1], ToolCall(id=cut.id, name=cut.name, raw_arguments=cut.raw_arguments,
                                       arguments_error="unparseable", provider_data=cut.provider_data)]
    return [
        ToolCall(
            id=c.id,
            name=c.name,
            arguments=c.arguments,
            raw_arguments=c.raw_arguments,
            arguments_error=c.arguments_error,
            arguments_error_detail=_CUT_OFF,
            provider_data=c.provider_data,
        )
        if c.arguments_error is not None
        else c
        for c in calls
    ]


def assemble(
    items: Sequence[Mapping[str, Any] | ToolCall],
    *,
    message_id: Any,
    model_seen: Any,
    stop_reason: Any,
    stop_sequence: Any,
    usage: Usage,
    model: str | None,
    provider: str,
) -> LLMResponse:
    """One response from the decoded content items (blocks as dicts, client tool calls as ``ToolCall``)."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    opaque: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, ToolCall):
            calls.append(item)
            continue
        kind = item.get("type")
        if kind == "text":
            value = item.get("text")
            if not isinstance(value, str):
                raise MalformedResponseError("text block without text", provider=provider, model=model)
            text.append(value)
        else:
            if kind == "thinking":
                value = item.get("thinking")
                if not isinstance(value, str):
                    raise MalformedResponseError("thinking block without text", provider=provider, model=model)
                reasoning.append(value)
            opaque.append(dict(item))
    stop = map_stop_reason(stop_reason)
    calls = mark_cut_off(calls, stop, last_block_is_call=bool(items) and isinstance(items[-1], ToolCall))
    data: dict[str, Any] = {}
    if opaque:
        data["blocks"] = opaque
        if model:
            data["model"] = model  # a thinking signature is bound to the model asked: see encode._replayed_blocks
    if isinstance(stop_sequence, str):
        data["stop_sequence"] = stop_sequence
    return LLMResponse(
        content="".join(text),
        tool_calls=tuple(calls),
        stop_reason=stop,
        usage=usage,
        model=model_seen if isinstance(model_seen, str) and model_seen else model,
        provider=provider,
        raw_stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        reasoning="".join(reasoning),
        provider_data={WIRE: data} if data else None,
        response_id=message_id if isinstance(message_id, str) else None,
    )


def decode_message(body: Any, *, request: LLMRequest | None, model: str | None, provider: str) -> LLMResponse:
    """An :class:`LLMResponse` from a Messages API response body (parsed JSON).

    Raises the classified :class:`ProviderError` for an error body, and a transient
    :class:`MalformedResponseError` for anything that is not a message.
    """
    del request  # a non-streamed tool_use input is already an object: no schema needed
    if is_error_body(body):
        raise classify_error_body(body, provider=provider, model=model)
    if not isinstance(body, Mapping):
        raise MalformedResponseError(
            f"expected a JSON object, got {type(body).__name__}", provider=provider, model=model
        )
    if body.get("type", "message") != "message":
        raise MalformedResponseError(f"unexpected type {body.get('type')!r}", provider=provider, model=model)
    content = body.get("content")
    if not isinstance(content, list):
        raise MalformedResponseError("message without a content list", provider=provider, model=model)
    items: list[Mapping[str, Any] | ToolCall] = []
    for block in content:
        if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
            raise MalformedResponseError("content block without a type", provider=provider, model=model)
        items.append(
            _tool_call_from_block(block, provider=provider, model=model) if block["type"] == "tool_use" else block
        )
    try:
        return assemble(
            items,
            message_id=body.get("id"),
            model_seen=body.get("model"),
            stop_reason=body.get("stop_reason"),
            stop_sequence=body.get("stop_sequence"),
            usage=parse_usage(body.get("usage")),
            model=model,
            provider=provider,
        )
    except (TypeError, ValueError) as exc:  # a value the data model refuses (e.g. a non-str id)
        raise MalformedResponseError(str(exc), provider=provider, model=model) from exc
