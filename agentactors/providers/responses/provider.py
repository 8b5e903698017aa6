"""The OpenAI Responses wire (``POST {base_url}/responses``): the codec and ``OpenAIResponsesProvider``.

:class:`ResponsesWire` is the pure codec (:mod:`.encode`, :mod:`.decode`, :mod:`.stream` behind one
object); :class:`OpenAIResponsesProvider` is the thin httpx adapter around it
(:class:`~agentactors.providers.http.provider.HTTPProvider`).  Imports go one way: this module →
encode / stream → decode; models → decode.

Stateless by design: every request carries the whole conversation with ``store: false``, and reasoning
items come back with their ``encrypted_content`` (``include: ["reasoning.encrypted_content"]``) to be
replayed untouched; ``previous_response_id`` is never sent.  Function tools only: the vendor-hosted
tools (web search, file search, code interpreter, computer use, MCP, image generation) are out of scope —
their output items are ignored if a ``vendor_options`` body asks for them anyway.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import agentactors._reexport as _reexport
import agentactors.providers.responses.decode as decode

from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, ResponseFormat
from ...settings import ModelSettings
from .._constrained_schema import openai_strict_schema
from ..http.checks import check_base_url
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from ..port import Capabilities
from .encode import encode_request
from .models import WIRE, model_row
from .stream import ResponsesStreamDecoder

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_RESPONSES_BASE_URL", "OpenAIResponsesProvider", "ResponsesWire", "responses_capabilities"]

DEFAULT_RESPONSES_BASE_URL = "https://api.openai.com/v1"

#: Model-name patterns (``fnmatch``, lower case) known to reject a forced tool choice.
REJECTS_FORCED_TOOL_CHOICE: tuple[str, ...] = ("o1-mini*", "o1-preview*")
#: Model-name patterns known to have no JSON-schema ``text.format`` (Structured Outputs came with
#: gpt-4o-2024-08-06; the models before it answer it with a 400).
REJECTS_RESPONSE_FORMAT: tuple[str, ...] = (
    "gpt-3.5*", "gpt-4", "gpt-4-*", "gpt-4o-2024-05-13", "o1-mini*", "o1-preview*",
)


def _matches(model: str, patterns: tuple[str, ...]) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def responses_capabilities(model: str | None) -> Capabilities:
    """What an OpenAI ``model`` can do on this wire, from the model tables (``None``: the provider's default)."""
    if model is None:
        return Capabilities(forced_tool_choice=True, response_format=True, thinking=True,
                            media=frozenset({"image", "document"}), parallel_tool_calls=True)
    row = model_row(model)
    return Capabilities(
        forced_tool_choice=not _matches(model, REJECTS_FORCED_TOOL_CHOICE),
        response_format=not _matches(model, REJECTS_RESPONSE_FORMAT),
        thinking=row is None or row.reasons,
        media=frozenset({"image", "document"}) if row is None or row.vision else frozenset(),
        parallel_tool_calls=True,
    )


class ResponsesWire:
    """The Responses codec: pure functions from :class:`LLMRequest` to a body and back (no I/O).

    ``official`` says the requests go to OpenAI's own endpoint, whose documented size limits are then
    checked before sending.  Errors as :class:`~agentactors.providers.openai.OpenAIWire`'s.
    """

    def __init__(self, *, official: bool = False) -> None:
        self.wire = WIRE
        self.official = official

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """See :meth:`~agentactors.providers.codec.WireCodec.url`."""
        return base_url.rstrip("/") + "/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """See :meth:`~agentactors.providers.codec.WireCodec.headers`."""
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The request body: :func:`.encode.encode_request`."""
        return encode_request(request, model, stream=stream, official=self.official)

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`.decode.decode_response`."""
        return decode.decode_response(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> ResponsesStreamDecoder:
        """A fresh :class:`ResponsesStreamDecoder` for one stream."""
        return ResponsesStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`.decode.classify_error`."""
        return decode.classify_error(status, headers, body, model=model, provider=provider)


def response_format_refusal(fmt: ResponseFormat) -> str | None:
    """Why a strict ``fmt`` cannot go out (a field OpenAI's strict mode cannot carry), or ``None``."""
    if not fmt.strict:
        return None
    try:
        openai_strict_schema(fmt.schema)
    except ValueError as exc:
        return str(exc)
    return None


class OpenAIResponsesProvider(HTTPProvider):
    """OpenAI's Responses API over httpx: ``POST {base_url}/responses``, stateless (``store: false``).

    The key comes from ``api_key`` or ``OPENAI_API_KEY`` and travels only in the ``Authorization``
    header.  Reasoning items are kept on the assistant message (opaque ``provider_data``) and replayed
    untouched on the next request; function tools, parallel calls, ``tool_choice`` (a forced choice is
    checked per model before sending: :class:`~agentactors.UnsupportedToolChoiceError`), structured
    output through ``text.format``, ``reasoning.effort`` from ``ModelSettings.reasoning_effort``
    (``vendor_options={"openai-responses": {"reasoning_summary": "auto"}}`` asks for summaries, which
    become :attr:`~agentactors.LLMResponse.reasoning`).  The mapping: ``docs/wire.md``.

    Vendor-hosted tools (web search, file search, code interpreter) are out of scope.

    ``max_response_bytes``, ``max_sse_line_bytes`` and ``max_event_bytes`` bound what is read of a response
    (past one: :class:`~agentactors.ResponseTooLargeError`), as on every HTTP provider.

    Errors and cancellation: see :class:`~agentactors.providers.http.provider.HTTPProvider`; a
    ``response.incomplete`` answer cut at ``max_output_tokens`` is a
    :attr:`~agentactors.StopReason.max_tokens` response, ``response.failed`` and ``error`` events raise.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("OPENAI_API_KEY",)
    key_required_host: ClassVar[str | None] = "api.openai.com"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_RESPONSES_BASE_URL,
        http_client: httpx.AsyncClient | None = None,
        settings: ModelSettings | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        official = check_base_url(base_url).rstrip("/") == DEFAULT_RESPONSES_BASE_URL
        super().__init__(
            ResponsesWire(official=official),
            model=model,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            name=name,
            carries_forced_tool_choice=True,
            timeout=timeout,
            settings=settings,
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
        )

    def capabilities(self, model: str | None) -> Capabilities:
        """What ``model`` (``None``: the default model) can do on this wire (:func:`responses_capabilities`)."""
        return responses_capabilities(model or self.default_model)

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced choice may be sent to ``model`` (``o1-mini`` / ``o1-preview`` reject it)."""
        return self.capabilities(model).forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema ``text.format`` reaches ``model``."""
        return self.capabilities(model).response_format

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt`` cannot go out on this wire: a strict schema with a field strict mode cannot carry."""
        return response_format_refusal(fmt)


# The package root serves this class on first use, as agentactors.<name> (where users import it from): it is
# relabelled here, so reprs, tracebacks and pickles say so whichever import loaded this module first.
_reexport.adopt(globals(), ["OpenAIResponsesProvider"], "agentactors")
