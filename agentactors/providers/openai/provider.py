"""The OpenAI Chat Completions wire (also OpenAI-compatible servers) and ``OpenAIProvider``.

:class:`OpenAIWire` is the pure codec (no I/O); :class:`OpenAIProvider` is the
thin httpx adapter around it (:class:`~agentactors.providers.http.provider.HTTPProvider`).
Decoding lives in :mod:`._openai_decode` (bodies, usage, tool calls, errors) and the stream decoder
in :mod:`._openai_stream`; imports go one way: this module → stream → decode.

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

The request's settings (``docs/settings.md``): ``max_tokens`` → ``max_completion_tokens`` on OpenAI's
endpoint and for reasoning models (``max_tokens`` elsewhere), ``temperature``, ``top_p``, ``stop``,
``seed``, ``reasoning_effort`` (validated per model), ``parallel_tool_calls`` (only with tools), an
extended cache retention → ``prompt_cache_retention: "24h"``; per-model data in :mod:`._openai_models`.

Content parts: an image → ``image_url`` (a ``data:`` URL, or the image's own URL), a PDF → ``file``
(``file_data``), a text document → a ``text`` part, audio → ``input_audio`` (WAV / MP3).  A tool message
takes text only, so media a tool returned follow the run of tool messages as one user message
(``"Media returned by tool call <id>:"`` and the parts).

``vendor_options["openai"]`` is merged over the request body (``seed``,
``prompt_cache_key``, ``n``, ``parallel_tool_calls``, ``reasoning``,
``max_completion_tokens``, ...); a ``None`` value removes a field the codec would
have sent (e.g. ``{"stream_options": None}`` for a server that rejects it).  One
key is the codec's own and is not sent: ``strict_tools`` (``True`` for every
tool, or an iterable of tool names) marks function definitions ``strict``.

``LLMRequest.response_format`` becomes ``response_format: {"type": "json_schema",
"json_schema": {"name", "schema", "strict"}}`` (plus ``description`` when given); a strict
format's schema is fitted to strict mode first (:mod:`._constrained_schema`).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import httpx

from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, Message, ResponseFormat, ToolCall, ToolChoice
from ...parts import Document, Image, Part, Text
from ...settings import ModelSettings
from .._constrained_schema import openai_strict_schema
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from . import decode as _openai_decode
from .decode import WIRE, build_tool_call, dict_or_empty, map_finish_reason, parse_usage
from .models import audio_format, check_parts, encode_settings, model_row
from .stream import OpenAIStreamDecoder

__all__ = [
    "DEFAULT_OPENAI_BASE_URL",
    "OpenAIProvider",
    "OpenAIStreamDecoder",
    "OpenAIWire",
    "build_tool_call",
    "encode_response_format",
    "map_finish_reason",
    "parse_usage",
]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
_CODEC_OPTIONS = frozenset({"strict_tools"})


# --- the codec ----------------------------------------------------------------------------------


class OpenAIWire:
    """The Chat Completions codec: pure functions from :class:`LLMRequest` to a body and back.

    ``max_tokens_field`` names the field ``LLMRequest.max_tokens`` is sent in:
    ``"max_tokens"`` (what every compatible server understands) or
    ``"max_completion_tokens"`` (what OpenAI's reasoning models require; always sent for a model
    :mod:`._openai_models` knows to reason).  ``official`` says the requests go to OpenAI's own
    endpoint, whose documented size limits are then checked before sending.

    Errors: encoding raises :class:`~agentactors.UnsupportedContentError` /
    :class:`~agentactors.UnsupportedSettingError` for what the model cannot take.  Decoding raises
    :class:`~agentactors.MalformedResponseError` (transient) for a body this wire does not allow and the classified
    :class:`~agentactors.ProviderError` for a vendor error body; nothing else.
    """

    def __init__(self, *, max_tokens_field: str = "max_tokens", official: bool = False) -> None:
        self.wire = WIRE
        if max_tokens_field not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_field must be 'max_tokens' or 'max_completion_tokens'")
        self.max_tokens_field = max_tokens_field
        self.official = official

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """See :meth:`~agentactors.providers.codec.WireCodec.url`."""
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """See :meth:`~agentactors.providers.codec.WireCodec.headers`."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    # -- encoding ---------------------------------------------------------------------------------

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The request body (see the module docstring for the mapping)."""
        options = request.options_for(WIRE)
        check_parts(request.messages, model, official=self.official)
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
            body[self._max_tokens_field(model)] = request.max_tokens
        body.update(encode_settings(request, model, tools=bool(request.tools)))
        if request.response_format is not None:
            body["response_format"] = encode_response_format(request.response_format)
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

    def _max_tokens_field(self, model: str) -> str:
        row = model_row(model)
        return "max_completion_tokens" if row is not None and row.reasons else self.max_tokens_field

    def encode_messages(self, messages: Iterable[Message]) -> list[dict[str, Any]]:
        """The conversation on the wire, empty assistant turns dropped.

        Media in tool results follow the run of tool messages as one user message: a tool message
        takes text only, and nothing may come between an assistant's calls and their results.
        """
        out: list[dict[str, Any]] = []
        returned: list[dict[str, Any]] = []  # media of the tool results since the last non-tool message
        for m in messages:
            if m.role != "tool" and returned:
                out.append({"role": "user", "content": returned})
                returned = []
            encoded = self.encode_message(m)
            if encoded is not None:
                out.append(encoded)
            if m.role == "tool" and m.media:
                returned.append({"type": "text", "text": f"Media returned by tool call {m.tool_call_id}:"})
                returned.extend(encode_part(p) for p in m.media)
        if returned:
            out.append({"role": "user", "content": returned})
        return out

    def encode_message(self, m: Message) -> dict[str, Any] | None:
        """One message on the wire, or ``None`` for an assistant message with neither text nor calls."""
        extra = dict_or_empty((m.provider_data or {}).get(WIRE))
        if m.role == "tool":
            # Media a tool returned travel in a user message after the results (see encode_messages).
            msg: dict[str, Any] = {"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}
        elif m.role == "assistant":
            if not m.tool_calls and not m.content and "content" not in extra:
                # null content and no calls is a 400; an empty turn says nothing anyway.
                return None
            msg = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [self._encode_call(c) for c in m.tool_calls]
        elif m.media:
            msg = {"role": m.role, "content": [encode_part(p) for p in m.parts]}
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
        encoded.update(dict_or_empty((call.provider_data or {}).get(WIRE)))
        return encoded

    @staticmethod
    def _encode_tool(name: str, description: str, parameters: dict[str, Any], strict: bool) -> dict[str, Any]:
        function: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    # -- decoding ---------------------------------------------------------------------------------

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`._openai_decode.decode_response`."""
        return _openai_decode.decode_response(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> OpenAIStreamDecoder:
        """A fresh :class:`OpenAIStreamDecoder` for one stream."""
        return OpenAIStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`._openai_decode.classify_error` (Groq's ``failed_generation`` kept in the excerpt)."""
        return _openai_decode.classify_error(status, headers, body, model=model, provider=provider)


def encode_part(part: Part) -> dict[str, Any]:
    """One content part as a Chat Completions content part (what the part is was checked by ``check_parts``)."""
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": part.url if part.url is not None else part.data_url()}}
    if isinstance(part, Document):
        text = part.text
        if text is not None:
            return {"type": "text", "text": f"{part.title}\n\n{text}" if part.title else text}
        return {"type": "file", "file": {"filename": part.title or "document.pdf", "file_data": part.data_url()}}
    return {"type": "input_audio", "input_audio": {"data": part.base64(), "format": audio_format(part)}}


def encode_response_format(fmt: ResponseFormat) -> dict[str, Any]:
    """``response_format`` on this wire: a ``json_schema`` format, its schema fitted to strict mode when strict.

    :raises ValueError: a strict schema with a field strict mode cannot carry (named in the message).
    """
    spec: dict[str, Any] = {
        "name": fmt.name,
        "schema": openai_strict_schema(fmt.schema) if fmt.strict else fmt.schema,
        "strict": fmt.strict,
    }
    if fmt.description:
        spec["description"] = fmt.description
    return {"type": "json_schema", "json_schema": spec}


def encode_tool_choice(choice: ToolChoice) -> Any:
    """``tool_choice`` on this wire: ``"auto"`` / ``"none"`` / ``"required"`` or a named function."""
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
    models reject ``max_tokens``); other servers get ``max_tokens``, but for a model
    known to reason.  ``settings`` are this provider's default
    :class:`~agentactors.ModelSettings` (an agent's and a run's win over them).

    ``max_response_bytes``, ``max_sse_line_bytes`` and ``max_event_bytes`` bound what is read
    of a response; errors and cancellation: see :class:`~agentactors.providers.http.provider.HTTPProvider`.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    #: Model-name patterns (``fnmatch``, case-insensitive) known to reject a forced tool choice.
    REJECTS_FORCED_TOOL_CHOICE: ClassVar[tuple[str, ...]] = ("o1-mini*", "o1-preview*")
    #: Model-name patterns known to have no JSON-schema response format (Structured Outputs came with
    #: gpt-4o-2024-08-06; the models before it, and o1's previews, answer it with a 400).
    REJECTS_RESPONSE_FORMAT: ClassVar[tuple[str, ...]] = (
        "gpt-3.5*", "gpt-4", "gpt-4-*", "gpt-4o-2024-05-13", "o1-mini*", "o1-preview*",
    )

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
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        carries_response_format: bool | None = None,
        rejects_response_format: Iterable[str] | None = None,
    ) -> None:
        official = base_url.rstrip("/") == DEFAULT_OPENAI_BASE_URL
        if carries_forced_tool_choice is None:
            carries_forced_tool_choice = official
        # Like a forced choice: a compatible server's JSON-schema support is its promise, declared explicitly.
        self.carries_response_format = official if carries_response_format is None else bool(carries_response_format)
        formats = self.REJECTS_RESPONSE_FORMAT if rejects_response_format is None else rejects_response_format
        self.rejects_response_format: tuple[str, ...] = tuple(p.lower() for p in formats)
        super().__init__(
            OpenAIWire(max_tokens_field="max_completion_tokens" if official else "max_tokens", official=official),
            model=model,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            name=name,
            carries_forced_tool_choice=carries_forced_tool_choice,
            timeout=timeout,
            settings=settings,
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
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

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema ``response_format`` reaches ``model``.

        ``carries_response_format=None`` means yes on OpenAI's own endpoint and no on any other (declare
        it for a compatible server that implements ``json_schema``); models matching
        ``rejects_response_format`` (default :attr:`REJECTS_RESPONSE_FORMAT`) never do.
        """
        if not self.carries_response_format:
            return False
        if model is None:
            return True
        name = model.lower().rsplit("/", 1)[-1]
        return not any(fnmatch.fnmatchcase(name, p) for p in self.rejects_response_format)

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt`` cannot go out on this wire (read through
        :func:`~agentactors.providers.port.response_format_refusal`): a strict schema with a field strict
        mode cannot carry (an open mapping, a tuple), named as the request error before sending names it.
        """
        if not fmt.strict:
            return None
        try:
            openai_strict_schema(fmt.schema)
        except ValueError as exc:
            return str(exc)
        return None
