"""Reading the OpenAI Chat Completions wire: response bodies, tool calls, usage, finish reasons, errors.

Pure functions, no I/O.  :class:`~agentactors.providers.openai.provider.OpenAIWire` decodes a JSON body with
:func:`decode_response` and classifies a non-2xx answer with :func:`classify_error`; the stream
decoder (:mod:`.stream`) builds on the same readers (:func:`build_tool_call`,
:func:`parse_usage`, :func:`map_finish_reason`, :func:`reasoning_of`), so a streamed answer and a
whole one decode alike.

Fields a server answers with and wants back (OpenRouter's ``reasoning_details``, Gemini's ``extra_content`` /
``thought_signature``, on the message or a call) are kept in ``provider_data[WIRE]``, and beside them
``provider_data[WIRE]["model"]``: the model the request was sent to (the ``model`` given, not the body's), as what they
carry is signed or encrypted for that model only (see :func:`.encode.encode_message`).

Vendor data is untrusted: every reader is total (a value of the wrong type reads as absent), and a
body this wire does not allow raises a transient :class:`~agentactors.MalformedResponseError`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from ..._json import bound_problem
from ...errors import MalformedResponseError, ProviderError
from ...messages import LLMRequest, LLMResponse, StopReason, ToolCall, Usage
from ..errors import classify_error_body, classify_http_error
from .models import WIRE

__all__ = [
    "FOREIGN_MESSAGE_FIELDS",
    "WIRE",
    "build_tool_call",
    "classify_error",
    "decode_response",
    "dict_or_empty",
    "malformed",
    "map_finish_reason",
    "new_call_id",
    "opaque_message_fields",
    "parse_usage",
    "raw_arguments",
    "reasoning_of",
    "stamped",
    "token_count",
    "tool_required",
]

_FINISH = {
    "stop": StopReason.end_turn,
    "length": StopReason.max_tokens,
    "tool_calls": StopReason.tool_use,
    "function_call": StopReason.tool_use,
    "content_filter": StopReason.content_filter,
}
# Message fields worth replaying: dropping them loses reasoning continuity or is a 400 next turn.
_MESSAGE_OPAQUE = ("reasoning_details", "extra_content", "thought_signature")
#: The replayed message fields (above) that only other servers of this wire send and take back: OpenAI's own
#: endpoint refuses them (the encoder leaves them out there).
FOREIGN_MESSAGE_FIELDS: frozenset[str] = frozenset(_MESSAGE_OPAQUE)
_CALL_OPAQUE = ("extra_content",)


# --- small, total readers (vendor data is untrusted) --------------------------------------------


def dict_or_empty(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``{}`` (vendor data is untrusted)."""
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int:
    """A usage count as an int: ``0`` for a bool, a negative, a non-finite float or anything not a number.

    Vendor data is untrusted, so a count that cannot be one reads as none rather than failing the answer.
    """
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(0, value)
    if isinstance(value, float) and value == value and abs(value) < 1e18:
        return max(0, int(value))
    return 0


def _text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def new_call_id() -> str:
    """A tool-call id unique across conversations (for servers that send ``""``)."""
    return "call_" + uuid.uuid4().hex[:24]


def map_finish_reason(raw: str | None, *, has_calls: bool) -> StopReason:
    """``finish_reason`` → :class:`StopReason`.

    Some compatible servers say ``stop`` after calling tools; the calls decide then.
    """
    if raw is None:
        return StopReason.tool_use if has_calls else StopReason.end_turn
    reason = _FINISH.get(raw, StopReason.other)
    if reason is StopReason.end_turn and has_calls:
        return StopReason.tool_use
    return reason


def parse_usage(usage: Any) -> Usage | None:
    """OpenAI usage (``prompt_tokens_details.cached_tokens`` / ``audio_tokens`` / ``image_tokens``,
    ``completion_tokens_details.reasoning_tokens`` / ``audio_tokens`` / ``image_tokens``).

    ``input_tokens`` is ``prompt_tokens``, which on this wire includes the cached tokens (and the audio and image
    ones: ``Usage.input_audio_tokens`` and ``input_image_tokens`` are parts of it, as ``output_audio_tokens`` and
    ``output_image_tokens`` are of ``completion_tokens`` — the latter a compatible server's, such as a gateway's
    for an image model: each priced at its own rate).
    """
    if not isinstance(usage, dict):
        return None
    prompt = dict_or_empty(usage.get("prompt_tokens_details"))
    completion = dict_or_empty(usage.get("completion_tokens_details"))
    return Usage(
        input_tokens=token_count(usage.get("prompt_tokens")),
        output_tokens=token_count(usage.get("completion_tokens")),
        cache_read_tokens=token_count(prompt.get("cached_tokens")),
        cache_write_tokens=token_count(prompt.get("cache_write_tokens")),
        reasoning_tokens=token_count(completion.get("reasoning_tokens")),
        input_audio_tokens=token_count(prompt.get("audio_tokens")),
        output_audio_tokens=token_count(completion.get("audio_tokens")),
        input_image_tokens=token_count(prompt.get("image_tokens")),
        output_image_tokens=token_count(completion.get("image_tokens")),
    )


def tool_required(request: LLMRequest | None, name: str) -> bool:
    """Whether ``request``'s tool ``name`` has required parameters (so empty arguments are an error)."""
    if request is None:
        return False
    spec = next((t for t in request.tools if t.name == name), None)
    return bool(spec is not None and spec.required)


def build_tool_call(
    request: LLMRequest | None,
    call_id: str,
    name: str,
    raw: str | None,
    finish_reason: str | None,
    provider_data: Mapping[str, Any] | None = None,
    *,
    last: bool = True,
) -> ToolCall:
    """A :class:`ToolCall` from raw argument text, marked (with the finish reason) when it does not parse.

    Cut-off arguments are unparseable whatever the finish reason says: some
    servers report ``tool_calls`` for a call cut off at ``max_tokens``.  No
    arguments at all in the answer's ``last`` call when ``finish_reason`` is
    ``"length"`` were cut off too, right after the name (OpenAI sends ``"{}"``
    for a finished call that has none), so they are marked even for a tool that
    requires nothing: never run with its defaults.
    """
    call = ToolCall.from_raw(
        call_id or new_call_id(),
        name,
        raw,
        required=tool_required(request, name),
        provider_data={WIRE: dict(provider_data)} if provider_data else None,
    )
    if call.arguments_error is None:
        if finish_reason != "length" or not last or (raw is not None and raw.strip()):
            return call
        call = attrs.evolve(call, arguments_error="unparseable")
    if (bound := bound_problem(raw)) is not None:
        detail = bound
    elif finish_reason == "length":
        detail = "the arguments were cut off at max_tokens (finish_reason 'length'); ask for less or split the call"
    elif call.arguments_error == "empty":
        detail = f"the arguments were empty but the tool requires some (finish_reason {finish_reason!r})"
    else:
        detail = f"the arguments are not a complete JSON object (finish_reason {finish_reason!r})"
    return attrs.evolve(call, arguments_error_detail=detail)


def malformed(detail: str, *, provider: str, model: str | None) -> MalformedResponseError:
    """The transient error for a body (or stream event) this wire does not allow."""
    return MalformedResponseError(detail, provider=provider, model=model)


def opaque_message_fields(message: Mapping[str, Any], model: str = "") -> dict[str, Any] | None:
    """The fields of a response message that are replayed on the next request, stamped with ``model`` (asked)."""
    kept = {k: message[k] for k in _MESSAGE_OPAQUE if message.get(k) not in (None, [], {})}
    return {WIRE: stamped(kept, model)} if kept else None


def stamped(kept: dict[str, Any], model: str) -> dict[str, Any]:
    """``kept`` (fields kept for replay, not empty) with ``"model"``: the model asked, for whom they were signed.

    Nothing is stamped for a nameless request.  The encoder compares it with the request's model and never sends it.
    """
    if model:
        kept["model"] = model
    return kept


def raw_arguments(value: Any) -> str | None:
    """Tool arguments as raw text (a server that sends an object gets it re-encoded)."""
    if value is None or isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None


def reasoning_of(message: Mapping[str, Any]) -> str:
    """Structured reasoning: ``reasoning`` (OpenRouter, Groq) or ``reasoning_content`` (vLLM, DeepSeek)."""
    for key in ("reasoning", "reasoning_content"):
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""



# --- decoding a response body and an error body ----------------------------------------------


def decode_response(body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
    """An :class:`LLMResponse` from a Chat Completions body (parsed JSON); the first choice is the answer.

    Raises the classified :class:`~agentactors.ProviderError` for an error body sent with a 2xx
    status and a transient :class:`~agentactors.MalformedResponseError` for anything else this wire
    does not allow.
    """
    if not isinstance(body, dict):
        raise malformed(f"expected a JSON object, got {type(body).__name__}", provider=provider, model=model)
    if body.get("error") is not None:
        # OpenRouter and some proxies answer 200 with an error body.
        raise classify_error_body(body, provider=provider, model=model)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed("no choices in the response", provider=provider, model=model)
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed("the choice has no message", provider=provider, model=model)
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    calls = _decode_calls(message.get("tool_calls"), request, finish, provider=provider, model=model)
    content = _text(message.get("content"))
    stop = map_finish_reason(finish, has_calls=bool(calls))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        # A refusal is the model's answer to show; it is a content-filter stop.
        content = content or refusal
        stop = StopReason.content_filter
    usage = parse_usage(body.get("usage")) or parse_usage(dict_or_empty(body.get("x_groq")).get("usage")) or Usage()
    served = body.get("model")
    response_id = body.get("id")
    return LLMResponse(
        content=content,
        tool_calls=calls,
        stop_reason=stop,
        usage=usage,
        model=served if isinstance(served, str) and served else model,
        provider=provider,
        raw_stop_reason=finish,
        reasoning=reasoning_of(message),
        provider_data=opaque_message_fields(message, model),
        response_id=response_id if isinstance(response_id, str) and response_id else None,
    )


def _decode_calls(
    raw_calls: Any, request: LLMRequest | None, finish: str | None, *, provider: str, model: str
) -> tuple[ToolCall, ...]:
    if raw_calls is None:
        return ()
    if not isinstance(raw_calls, list):
        raise malformed("tool_calls is not a list", provider=provider, model=model)
    calls: list[ToolCall] = []
    final = len(raw_calls) - 1
    for i, item in enumerate(raw_calls):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(function, dict):
            raise malformed("a tool call without a function", provider=provider, model=model)
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise malformed("a tool call without a name", provider=provider, model=model)
        call_id = item.get("id")
        opaque = {k: item[k] for k in _CALL_OPAQUE if item.get(k) is not None}
        if opaque:
            stamped(opaque, model)  # a signature is bound to the model asked: see encode.encode_message
        calls.append(
            build_tool_call(
                request,
                call_id if isinstance(call_id, str) else "",
                name,
                raw_arguments(function.get("arguments")),
                finish,
                opaque,
                last=i == final,
            )
        )
    return tuple(calls)


def classify_error(
    status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
) -> ProviderError:
    """Classify a non-2xx answer; Groq's ``failed_generation`` is kept at the front of ``body_excerpt``."""
    parsed: Any = body
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        value = None
    error = value.get("error") if isinstance(value, dict) else None
    if isinstance(error, dict) and "failed_generation" in error:
        # The excerpt is capped; put what the model produced where the cap cannot cut it off.
        front = {"failed_generation": error["failed_generation"]}
        parsed = {**value, "error": {**front, **{k: v for k, v in error.items() if k not in front}}}
    return classify_http_error(status, headers, parsed, provider=provider, model=model)
