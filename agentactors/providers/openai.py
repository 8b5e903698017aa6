"""The OpenAI Chat Completions wire (also OpenAI-compatible servers) and ``OpenAIProvider``.

:class:`OpenAIWire` is the pure codec (no I/O); :class:`OpenAIProvider` is the
thin httpx adapter around it (:class:`~agentactors.providers.http.HTTPProvider`).
The stream decoder lives in :mod:`._openai_stream`.

Compatible servers (Groq, OpenRouter, vLLM, llama.cpp, NIM, Gemini's compat
endpoint) speak the same wire with additions this codec understands:
``reasoning`` / ``reasoning_content`` (structured reasoning, never content),
OpenRouter ``reasoning_details`` and Gemini ``extra_content`` /
``thought_signature`` (kept as opaque provider data and replayed in place),
empty tool-call ids (a unique id is synthesised), numeric error codes, Groq's
``x_groq.usage`` and ``failed_generation``.

Opaque data travels in ``provider_data["openai"]``: on a :class:`Message` it is a
dict of extra wire fields merged into that message when it is sent; on a
:class:`ToolCall`, extra fields of that tool call.

``vendor_options["openai"]`` is merged over the request body (``seed``,
``prompt_cache_key``, ``n``, ``parallel_tool_calls``, ``reasoning``,
``max_completion_tokens``, ...); a ``None`` value removes a field the codec would
have sent (e.g. ``{"stream_options": None}`` for a server that rejects it).  One
key is the codec's own and is not sent: ``strict_tools`` (``True`` for every
tool, or an iterable of tool names) marks function definitions ``strict``.
"""

from __future__ import annotations

import fnmatch
import json
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import httpx

from ..errors import MalformedResponseError, ProviderError, classify_error_body, classify_http_error
from ..messages import LLMRequest, LLMResponse, Message, StopReason, ToolCall, ToolChoice, Usage
from .http import HTTPProvider

if TYPE_CHECKING:
    from ._openai_stream import OpenAIStreamDecoder

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "OpenAIProvider",
    "OpenAIWire",
    "build_tool_call",
    "map_finish_reason",
    "parse_usage",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
WIRE = "openai"

_FINISH = {
    "stop": StopReason.end_turn,
    "length": StopReason.max_tokens,
    "tool_calls": StopReason.tool_use,
    "function_call": StopReason.tool_use,
    "content_filter": StopReason.content_filter,
}
# Message fields worth replaying: dropping them loses reasoning continuity or is a 400 next turn.
_MESSAGE_OPAQUE = ("reasoning_details", "extra_content", "thought_signature")
_CALL_OPAQUE = ("extra_content",)
_CODEC_OPTIONS = frozenset({"strict_tools"})


# --- small, total readers (vendor data is untrusted) --------------------------------------------


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
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
    """OpenAI usage (``prompt_tokens_details.cached_tokens``, ``completion_tokens_details.reasoning_tokens``).

    ``input_tokens`` is ``prompt_tokens``, which on this wire includes the cached tokens.
    """
    if not isinstance(usage, dict):
        return None
    prompt = _dict(usage.get("prompt_tokens_details"))
    completion = _dict(usage.get("completion_tokens_details"))
    return Usage(
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        cache_read_tokens=_int(prompt.get("cached_tokens")),
        cache_write_tokens=_int(prompt.get("cache_write_tokens")),
        reasoning_tokens=_int(completion.get("reasoning_tokens")),
    )


def _required(request: LLMRequest | None, name: str) -> bool:
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
) -> ToolCall:
    """A :class:`ToolCall` from raw argument text, marked (with the finish reason) when it does not parse.

    Cut-off arguments are unparseable whatever the finish reason says: some
    servers report ``tool_calls`` for a call cut off at ``max_tokens``.
    """
    call = ToolCall.from_raw(
        call_id or new_call_id(),
        name,
        raw,
        required=_required(request, name),
        provider_data={WIRE: dict(provider_data)} if provider_data else None,
    )
    if call.arguments_error is None:
        return call
    if finish_reason == "length":
        detail = "the arguments were cut off at max_tokens (finish_reason 'length'); ask for less or split the call"
    elif call.arguments_error == "empty":
        detail = f"the arguments were empty but the tool requires some (finish_reason {finish_reason!r})"
    else:
        detail = f"the arguments are not a complete JSON object (finish_reason {finish_reason!r})"
    return attrs.evolve(call, arguments_error_detail=detail)


def malformed(detail: str, *, provider: str, model: str | None) -> MalformedResponseError:
    return MalformedResponseError(detail, provider=provider, model=model)


def opaque_message_fields(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The fields of a response message that are replayed on the next request."""
    kept = {k: message[k] for k in _MESSAGE_OPAQUE if message.get(k) not in (None, [], {})}
    return {WIRE: kept} if kept else None


# --- the codec ----------------------------------------------------------------------------------


class OpenAIWire:
    """The Chat Completions codec: pure functions from :class:`LLMRequest` to a body and back.

    ``max_tokens_field`` names the field ``LLMRequest.max_tokens`` is sent in:
    ``"max_tokens"`` (what every compatible server understands) or
    ``"max_completion_tokens"`` (what OpenAI's reasoning models require).

    Errors: decoding raises :class:`~agentactors.MalformedResponseError`
    (transient) for a body this wire does not allow and the classified
    :class:`~agentactors.ProviderError` for a vendor error body; nothing else.
    """

    def __init__(self, *, max_tokens_field: str = "max_tokens") -> None:
        self.wire = WIRE
        if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_field must be 'max_tokens' or 'max_completion_tokens'")
        self.max_tokens_field = max_tokens_field

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    # -- encoding ---------------------------------------------------------------------------------

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        options = request.options_for(WIRE)
        body: dict[str, Any] = {"model": model, "messages": self.encode_messages(request.messages)}
        if request.tools:
            strict = options.get("strict_tools", False)
            body["tools"] = [
                self._encode_tool(t.name, t.description, t.parameters, _is_strict(strict, t.name))
                for t in request.tools
            ]
            body["tool_choice"] = encode_tool_choice(request.tool_choice)
        body["stream"] = stream
        if stream:
            body["stream_options"] = {"include_usage": True}
        if request.max_tokens is not None and "max_tokens" not in options and "max_completion_tokens" not in options:
            body[self.max_tokens_field] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        for key, value in options.items():
            if key in _CODEC_OPTIONS:
                continue
            if value is None:
                body.pop(key, None)
            else:
                body[key] = value
        if not request.tools:
            # parallel_tool_calls without tools is a 400 on OpenAI.
            body.pop("parallel_tool_calls", None)
        return body

    def encode_messages(self, messages: Iterable[Message]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            encoded = self.encode_message(m)
            if encoded is not None:
                out.append(encoded)
        return out

    def encode_message(self, m: Message) -> dict[str, Any] | None:
        """One message on the wire, or ``None`` for an assistant message with neither text nor calls."""
        extra = _dict((m.provider_data or {}).get(WIRE))
        if m.role == "tool":
            msg: dict[str, Any] = {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
        elif m.role == "assistant":
            if not m.tool_calls and not m.content and "content" not in extra:
                # null content and no calls is a 400; an empty turn says nothing anyway.
                return None
            msg = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [self._encode_call(c) for c in m.tool_calls]
        else:
            msg = {"role": m.role, "content": m.content}
        msg.update(extra)
        return msg

    @staticmethod
    def _encode_call(call: ToolCall) -> dict[str, Any]:
        encoded: dict[str, Any] = {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments_json},
        }
        encoded.update(_dict((call.provider_data or {}).get(WIRE)))
        return encoded

    @staticmethod
    def _encode_tool(name: str, description: str, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
        function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    # -- decoding ---------------------------------------------------------------------------------

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
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
        calls = self._decode_calls(message.get("tool_calls"), request, finish, provider=provider, model=model)
        content = _text(message.get("content"))
        stop = map_finish_reason(finish, has_calls=bool(calls))
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            # A refusal is the model's answer to show; it is a content-filter stop.
            content = content or refusal
            stop = StopReason.content_filter
        usage = parse_usage(body.get("usage")) or parse_usage(_dict(body.get("x_groq")).get("usage")) or Usage()
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
            provider_data=opaque_message_fields(message),
            response_id=response_id if isinstance(response_id, str) and response_id else None,
        )

    @staticmethod
    def _decode_calls(
        raw_calls: Any, request: LLMRequest | None, finish: str | None, *, provider: str, model: str
    ) -> tuple[ToolCall, ...]:
        if raw_calls is None:
            return ()
        if not isinstance(raw_calls, list):
            raise malformed("tool_calls is not a list", provider=provider, model=model)
        calls: list[ToolCall] = []
        for item in raw_calls:
            function = item.get("function") if isinstance(item, dict) else None
            if not isinstance(item, dict) or not isinstance(function, dict):
                raise malformed("a tool call without a function", provider=provider, model=model)
            name = function.get("name")
            if not isinstance(name, str) or not name:
                raise malformed("a tool call without a name", provider=provider, model=model)
            call_id = item.get("id")
            opaque = {k: item[k] for k in _CALL_OPAQUE if item.get(k) is not None}
            calls.append(
                build_tool_call(
                    request,
                    call_id if isinstance(call_id, str) else "",
                    name,
                    raw_arguments(function.get("arguments")),
                    finish,
                    opaque,
                )
            )
        return tuple(calls)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> OpenAIStreamDecoder:
        from ._openai_stream import OpenAIStreamDecoder  # it builds on this module's helpers

        return OpenAIStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
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


def encode_tool_choice(choice: ToolChoice) -> Any:
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def _is_strict(option: Any, name: str) -> bool:
    if option is True:
        return True
    if isinstance(option, str):
        return option == name
    if isinstance(option, Iterable):
        return name in set(option)
    return False


# --- the provider -------------------------------------------------------------------------------


class OpenAIProvider(HTTPProvider):
    """OpenAI Chat Completions over httpx; also any OpenAI-compatible server via ``base_url``.

    ``POST {base_url}/chat/completions``.  The key comes from ``api_key`` or
    ``OPENAI_API_KEY`` and travels only in the ``Authorization`` header (a
    local server may need none).  ``carries_forced_tool_choice=None`` means
    ``True`` for OpenAI's own endpoint and ``False`` for any other: a compatible
    server's support is its promise, not OpenAI's, so declare it explicitly.

    Requests to OpenAI's endpoint send ``max_completion_tokens`` (its reasoning
    models reject ``max_tokens``); other servers get ``max_tokens``.

    Errors and cancellation: see :class:`~agentactors.providers.http.HTTPProvider`.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    #: Model-name patterns (``fnmatch``, case-insensitive) known to reject a forced tool choice.
    REJECTS_FORCED_TOOL_CHOICE: ClassVar[tuple[str, ...]] = ("o1-mini*", "o1-preview*")

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        carries_forced_tool_choice: bool | None = None,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        rejects_forced_tool_choice: Iterable[str] | None = None,
        timeout: httpx.Timeout | float | None = None,
    ) -> None:
        official = base_url.rstrip("/") == DEFAULT_OPENAI_BASE_URL
        if carries_forced_tool_choice is None:
            carries_forced_tool_choice = official
        super().__init__(
            OpenAIWire(max_tokens_field="max_completion_tokens" if official else "max_tokens"),
            model=model,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            name=name,
            carries_forced_tool_choice=carries_forced_tool_choice,
            timeout=timeout,
        )
        patterns = self.REJECTS_FORCED_TOOL_CHOICE if rejects_forced_tool_choice is None else rejects_forced_tool_choice
        self.rejects_forced_tool_choice: tuple[str, ...] = tuple(p.lower() for p in patterns)

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """``False`` when the server does not carry forced choices or ``model`` matches a rejecting pattern."""
        if not self.carries_forced_tool_choice:
            return False
        if model is None:
            return True
        name = model.lower().rsplit("/", 1)[-1]  # "openai/o1-mini" on a router is still o1-mini
        return not any(fnmatch.fnmatchcase(name, p) for p in self.rejects_forced_tool_choice)
