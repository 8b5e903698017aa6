"""The OpenAI Chat Completions wire (also OpenAI-compatible servers) and ``OpenAIProvider``.

:class:`OpenAIWire` is the pure codec (no I/O); :class:`OpenAIProvider` is the
thin httpx adapter around it (:class:`~agentactors.providers.http.provider.HTTPProvider`).
Encoding lives in :mod:`.encode` (the request body: settings, parts, tools, response format),
decoding in :mod:`.decode` (bodies, usage, tool calls, errors) and the stream decoder in
:mod:`.stream`; imports go one way: this module → encode / stream → decode → models.

Compatible servers (Groq, OpenRouter, vLLM, llama.cpp, NIM, Gemini's compat
endpoint) speak the same wire with additions this codec understands:
``reasoning`` / ``reasoning_content`` (structured reasoning, never content),
OpenRouter ``reasoning_details`` and Gemini ``extra_content`` /
``thought_signature`` (kept as opaque provider data and replayed in place),
empty tool-call ids (a unique id is synthesised), numeric error codes, Groq's
``x_groq.usage`` and ``failed_generation``.

The request mapping (settings, content parts, opaque ``provider_data["openai"]``,
``vendor_options["openai"]`` and its codec-only ``strict_tools``, the response format) is
:mod:`.encode`'s docstring.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import agentactors.providers.openai.decode as decode

from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, Message, ResponseFormat
from ...settings import ModelSettings
from .._constrained_schema import openai_strict_schema
from ..http.checks import check_base_url
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from .decode import build_tool_call, map_finish_reason, parse_usage
from .encode import encode_message, encode_messages, encode_request, encode_response_format
from .models import WIRE, model_row
from .stream import OpenAIStreamDecoder

if TYPE_CHECKING:
    import httpx

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


# --- the codec ----------------------------------------------------------------------------------


class OpenAIWire:
    """The Chat Completions codec: :mod:`.encode`, :mod:`.decode` and :mod:`.stream` behind one object.

    ``max_tokens_field`` names the field ``LLMRequest.max_tokens`` is sent in:
    ``"max_tokens"`` (what every compatible server understands) or
    ``"max_completion_tokens"`` (what OpenAI's reasoning models require; always sent for a model
    :mod:`.models` knows to reason).  ``official`` says the requests go to OpenAI's own
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
        """The request body: :func:`.encode.encode_request` with this codec's ``max_tokens`` field and limits."""
        return encode_request(
            request, model, stream=stream, max_tokens_field=self.max_tokens_field, official=self.official
        )

    def encode_messages(self, messages: Iterable[Message]) -> list[dict[str, Any]]:
        """See :func:`.encode.encode_messages`."""
        return encode_messages(messages)

    def encode_message(self, m: Message) -> dict[str, Any] | None:
        """See :func:`.encode.encode_message`."""
        return encode_message(m)

    # -- decoding ---------------------------------------------------------------------------------

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`.decode.decode_response`."""
        return decode.decode_response(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> OpenAIStreamDecoder:
        """A fresh :class:`OpenAIStreamDecoder` for one stream."""
        return OpenAIStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`.decode.classify_error` (Groq's ``failed_generation`` kept in the excerpt)."""
        return decode.classify_error(status, headers, body, model=model, provider=provider)


# --- the provider -------------------------------------------------------------------------------


class OpenAIProvider(HTTPProvider):
    """OpenAI Chat Completions over httpx; also any OpenAI-compatible server via ``base_url``.

    ``POST {base_url}/chat/completions``.  The key comes from ``api_key`` or
    ``OPENAI_API_KEY`` and travels only in the ``Authorization`` header (a
    local server may need none; OpenAI's own endpoint does, so a call there
    without one raises an account-kind error before sending).  ``carries_forced_tool_choice=None`` means
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
    key_required_host: ClassVar[str | None] = "api.openai.com"
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
        official = check_base_url(base_url).rstrip("/") == DEFAULT_OPENAI_BASE_URL
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

    def _wire_traits(self, model: str | None) -> tuple[bool, frozenset[str], bool]:
        """Thinking and media per :data:`~agentactors.providers.openai.models.MODELS` (a reasoning model thinks;
        one with vision takes images and PDFs; a gpt-audio model hears); the ``parallel_tool_calls`` setting
        reaches every model.  A model the table does not know gets what the wire carries: the server judges."""
        row = model_row(model) if model else None
        if row is None:
            return True, frozenset({"image", "document", "audio"}), True
        media = frozenset({"image", "document"} if row.vision else ()) | frozenset({"audio"} if row.audio else ())
        return row.reasons, media, True

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
