"""Reading the Bedrock Converse wire: response bodies, content blocks, usage, stop reasons, errors.

Pure functions, no I/O.  Both paths (a Converse JSON body here, a ConverseStream in :mod:`.stream`) end
in :func:`assemble`, so an answer decodes alike whichever way it arrived.

Content blocks are single-key objects:

* ``text`` → ``LLMResponse.content`` (blocks concatenated, in order);
* ``reasoningContent.reasoningText {text, signature}`` → ``reasoning``, and the block kept verbatim in
  ``provider_data["bedrock"]["blocks"]`` (with ``redactedContent`` blocks) for replay on the next turn, with
  ``provider_data["bedrock"]["model"]``, the model the request was sent to: a signature is valid for that
  model only, and the encoder leaves another model's reasoning out;
* ``toolUse {toolUseId, name, input}`` → a :class:`ToolCall` (``input`` is an object on this wire);
* anything else (citations, guard content, future kinds) is not shown and not replayed.

Usage: ``inputTokens`` **excludes** cached tokens, which come separately as ``cacheReadInputTokens`` and
``cacheWriteInputTokens``; they map to ``Usage.input_tokens``, ``cache_read_tokens`` and
``cache_write_tokens`` as they are (``docs/wire.md``, "What input_tokens means").

Errors: the type is the ``x-amzn-ErrorType`` header (``ThrottlingException:http://…``) and the body is
``{"message": …}``; in a stream the same types arrive as exception messages (``throttlingException``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...errors import ErrorKind, MalformedResponseError, ProviderError
from ...messages import LLMRequest, LLMResponse, StopReason, ToolCall, Usage
from ..anthropic.decode import mark_cut_off, tool_call_from_input
from ..errors import as_headers, classify_http_error, request_id_of
from .models import WIRE

__all__ = [
    "ERROR_KINDS",
    "assemble",
    "classify_error",
    "classify_exception_event",
    "decode_converse",
    "map_stop_reason",
    "parse_usage",
    "tool_call",
]

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": StopReason.end_turn,
    "tool_use": StopReason.tool_use,
    "max_tokens": StopReason.max_tokens,
    "stop_sequence": StopReason.stop_sequence,
    "guardrail_intervened": StopReason.content_filter,
    "content_filtered": StopReason.content_filter,
    "model_context_window_exceeded": StopReason.max_tokens,
}

#: Bedrock's error types (lower case, ``Exception`` kept) and whose fault each is.
ERROR_KINDS: Mapping[str, ErrorKind] = {
    "throttlingexception": ErrorKind.transient,
    "modelnotreadyexception": ErrorKind.transient,
    "serviceunavailableexception": ErrorKind.transient,
    "internalserverexception": ErrorKind.transient,
    "modeltimeoutexception": ErrorKind.transient,
    "modelerrorexception": ErrorKind.transient,
    "modelstreamerrorexception": ErrorKind.transient,
    "validationexception": ErrorKind.request,
    "accessdeniedexception": ErrorKind.account,
    "resourcenotfoundexception": ErrorKind.account,
    "servicequotaexceededexception": ErrorKind.account,
    "unrecognizedclientexception": ErrorKind.account,
    "invalidsignatureexception": ErrorKind.account,
    "expiredtokenexception": ErrorKind.account,
}
# The HTTP status each type is documented with: an in-band exception carries only its type.
_ERROR_STATUS: Mapping[str, int] = {
    "throttlingexception": 429,
    "modelnotreadyexception": 429,
    "serviceunavailableexception": 503,
    "internalserverexception": 500,
    "modeltimeoutexception": 408,
    "modelerrorexception": 424,
    "modelstreamerrorexception": 424,
    "validationexception": 400,
    "accessdeniedexception": 403,
    "resourcenotfoundexception": 404,
    "servicequotaexceededexception": 400,
}
# ValidationException messages that say the conversation is too long for the model.
_CONTEXT_PHRASES = ("input is too long", "too many input tokens", "context window", "prompt is too long")


def map_stop_reason(raw: Any) -> StopReason:
    """The library's stop reason for Converse's ``stopReason`` (unknown or missing → ``other``)."""
    return _STOP_REASONS.get(raw, StopReason.other) if isinstance(raw, str) else StopReason.other


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def parse_usage(obj: Any) -> Usage:
    """``usage`` → :class:`Usage`: ``inputTokens`` (cached tokens not included), output, cache read and write.

    ``cacheDetails`` (``[{"ttl": "1h" | "5m", "inputTokens"}]``, sent when the cache was written) says how many of
    the writes were made with the 1-hour TTL, billed at their own rate: ``Usage.cache_write_1h_tokens``.
    """
    if not isinstance(obj, Mapping):
        return Usage()
    write = _count(obj.get("cacheWriteInputTokens", obj.get("cacheWriteInputTokenCount")))
    write_1h = 0
    details = obj.get("cacheDetails")
    if isinstance(details, list):
        by_ttl = [d for d in details if isinstance(d, Mapping)]
        write_1h = sum(_count(d.get("inputTokens")) for d in by_ttl if d.get("ttl") == "1h")
        write = max(write, sum(_count(d.get("inputTokens")) for d in by_ttl))
    return Usage(
        input_tokens=_count(obj.get("inputTokens")),
        output_tokens=_count(obj.get("outputTokens")),
        cache_read_tokens=_count(obj.get("cacheReadInputTokens", obj.get("cacheReadInputTokenCount"))),
        cache_write_tokens=write,
        cache_write_1h_tokens=write_1h,
    )


def _error_type(raw: str | None) -> str:
    """``ThrottlingException:http://internal.amazon.com/…`` (or ``…#ThrottlingException``) → ``throttlingexception``."""
    if not raw:
        return ""
    name = raw.split(":", 1)[0].rsplit("#", 1)[-1]
    return name.strip().lower()


def _message_of(body: Any) -> str:
    if isinstance(body, Mapping):
        for key in ("message", "Message"):
            if isinstance(body.get(key), str):
                return str(body[key])
    return ""


def _classified(
    status: int, etype: str, body: Any, headers: Mapping[str, str] | None, *, provider: str, model: str | None
) -> ProviderError:
    # The shared classifier reads the message, retry-after and the excerpt; the type, when Bedrock sent one,
    # decides the kind.
    base = classify_http_error(status, headers, body, provider=provider, model=model)
    kind = ERROR_KINDS.get(etype)
    message = _message_of(body if not isinstance(body, bytes | str) else _loads(body))
    if kind is ErrorKind.request and any(p in message.lower() for p in _CONTEXT_PHRASES):
        kind = ErrorKind.context
    if kind is None or kind is base.kind:
        return base
    return ProviderError(
        message or f"HTTP {status}",
        provider=provider,
        model=model,
        kind=kind,
        status=status,
        retry_after=base.retry_after,
        request_id=request_id_of(headers, "x-amzn-requestid") or base.request_id,
        body_excerpt=base.body_excerpt,
    )


def _loads(body: bytes | str) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def classify_error(
    status: int, headers: Mapping[str, str] | None, body: bytes, *, provider: str, model: str | None
) -> ProviderError:
    """A non-2xx Converse answer → the classified error.

    ``ThrottlingException`` (429), ``ModelNotReadyException``, ``ServiceUnavailableException`` (503),
    ``InternalServerException`` (500), ``ModelTimeoutException`` (408) and ``ModelErrorException`` (424) are
    transient; ``ValidationException`` (400) a request fault (a context fault when it says the input is too
    long); ``AccessDeniedException`` (403), ``ResourceNotFoundException`` (404), ``ServiceQuotaExceededException``
    and signature/credential failures an account fault.  Without the header, the status decides.
    """
    h = as_headers(headers)  # any value a transport decoded (a proxy's non-ASCII header) is read, not raised on
    return _classified(status, _error_type(h.get("x-amzn-errortype")), body, h, provider=provider, model=model)


def classify_exception_event(exception_type: str, payload: Any, *, provider: str, model: str | None) -> ProviderError:
    """An exception message inside a ConverseStream (``:message-type: exception``) → the classified error.

    Classified as its HTTP twin (``throttlingException`` as a 429 ``ThrottlingException``); an unknown type is
    a vendor failure mid-answer (transient).
    """
    etype = _error_type(exception_type)
    status = _ERROR_STATUS.get(etype, 500)
    body = payload if isinstance(payload, Mapping) else {"message": str(payload)}
    return _classified(status, etype, dict(body), None, provider=provider, model=model)


def tool_call(block: Mapping[str, Any], *, provider: str, model: str | None) -> ToolCall:
    """A ``toolUse`` block's :class:`ToolCall` (an ``input`` that is not an object is kept and marked)."""
    call_id, name = block.get("toolUseId"), block.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise MalformedResponseError("toolUse block without a string toolUseId and name", provider=provider,
                                     model=model)
    return tool_call_from_input(call_id, name, block.get("input"))


def assemble(
    blocks: Sequence[Mapping[str, Any] | ToolCall],
    *,
    stop_reason: Any,
    usage: Usage,
    model: str | None,
    provider: str,
    extra: Mapping[str, Any] | None = None,
) -> LLMResponse:
    """One response from decoded content blocks (single-key dicts; tool uses as ``ToolCall``)."""
    text: list[str] = []
    reasoning: list[str] = []
    calls: list[ToolCall] = []
    replay: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolCall):
            calls.append(block)
        elif "text" in block:
            value = block["text"]
            if not isinstance(value, str):
                raise MalformedResponseError("text block without text", provider=provider, model=model)
            text.append(value)
        elif "reasoningContent" in block:
            content = block["reasoningContent"]
            if not isinstance(content, Mapping):
                raise MalformedResponseError("reasoningContent is not an object", provider=provider, model=model)
            said = content.get("reasoningText")
            if isinstance(said, Mapping) and isinstance(said.get("text"), str):
                reasoning.append(said["text"])
            replay.append({"reasoningContent": dict(content)})
    stop = map_stop_reason(stop_reason)
    # The last block a call: at max_tokens, one with no input was cut right after its name (as on Anthropic's wire).
    calls = mark_cut_off(calls, stop, last_block_is_call=bool(blocks) and isinstance(blocks[-1], ToolCall))
    data: dict[str, Any] = {}
    if replay:
        data["blocks"] = replay
        if model:
            data["model"] = model  # a reasoning signature is bound to the model asked: see encode._replayed
    if extra:
        data.update(extra)
    return LLMResponse(
        content="".join(text),
        tool_calls=tuple(calls),
        stop_reason=stop,
        usage=usage,
        model=model,
        provider=provider,
        raw_stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        reasoning="".join(reasoning),
        provider_data={WIRE: data} if data else None,
    )


def decode_converse(body: Any, *, request: LLMRequest | None, model: str | None, provider: str) -> LLMResponse:
    """An :class:`LLMResponse` from a Converse response body (parsed JSON).

    Raises a transient :class:`MalformedResponseError` for anything that is not a Converse answer.
    """
    del request  # a non-streamed toolUse input is already an object: no schema needed
    if not isinstance(body, Mapping):
        raise MalformedResponseError(f"expected a JSON object, got {type(body).__name__}", provider=provider,
                                     model=model)
    output = body.get("output")
    message = output.get("message") if isinstance(output, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        if "message" in body and "output" not in body:  # an error body sent with a 2xx status
            raise _classified(500, "", dict(body), None, provider=provider, model=model)
        raise MalformedResponseError("Converse answer without output.message.content", provider=provider,
                                     model=model)
    blocks: list[Mapping[str, Any] | ToolCall] = []
    for block in content:
        if not isinstance(block, Mapping):
            raise MalformedResponseError("content block is not an object", provider=provider, model=model)
        if "toolUse" in block and not isinstance(block["toolUse"], Mapping):
            # Read as an unknown block it would vanish, leaving a tool_use answer without its call.
            raise MalformedResponseError("toolUse block is not an object", provider=provider, model=model)
        use = block.get("toolUse")
        blocks.append(tool_call(use, provider=provider, model=model) if isinstance(use, Mapping) else block)
    fields = body.get("additionalModelResponseFields")
    try:
        return assemble(
            blocks,
            stop_reason=body.get("stopReason"),
            usage=parse_usage(body.get("usage")),
            model=model,
            provider=provider,
            extra={"additionalModelResponseFields": dict(fields)} if isinstance(fields, Mapping) else None,
        )
    except (TypeError, ValueError) as exc:
        raise MalformedResponseError(str(exc), provider=provider, model=model) from exc
