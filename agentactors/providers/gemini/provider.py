"""The Gemini ``generateContent`` wire: a pure codec (:class:`GeminiWire`) and :class:`GeminiProvider`.

Encoding lives in :mod:`.encode` (the request mapping, per ``docs/wire.md``: contents, function
declarations sanitised by :func:`to_gemini_schema` (:mod:`.schema`), ``generationConfig`` from the
settings, parts, thought-signature replay, the response format, vendor options), decoding in
:mod:`.decode` and the stream decoder in :mod:`.stream`; imports go one way: this module → encode /
stream → decode → models.

Response format: :data:`RESPONSE_FORMAT_REJECTED` lists the model prefixes without
``responseJsonSchema`` (refused before sending), and :data:`RESPONSE_FORMAT_WITH_TOOLS_REJECTED` those
that take it only without tools (models before Gemini 3: a request with both is refused before sending).

Gemini has no call ids of its own in most responses, so calls without one get a
random id, unique within the conversation (never a per-response counter, which
would key a later result to an earlier call's tool).  Thought signatures are stored
as received (standard base64 in responses) and replayed as :mod:`.encode` says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

import agentactors._reexport as _reexport
import agentactors.providers.gemini.decode as decode

from ...errors import ErrorKind, ProviderError
from ...messages import LLMRequest, LLMResponse, ResponseFormat
from ...settings import ModelSettings
from ..http.bearer import BearerTokens, TokenProvider
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from ..port import resolve_model
from ..vertex import (
    one_place,
    vertex_base_url,
    vertex_location,
    vertex_model_name,
    vertex_model_url,
    vertex_project,
)
from .encode import SKIP_SIGNATURE, encode_request
from .models import WIRE, model_row
from .models import bare_name as _bare_model
from .schema import GeminiSchemaError, to_gemini_schema
from .stream import GeminiStreamDecoder

if TYPE_CHECKING:
    import httpx

__all__ = [
    "DEFAULT_BASE_URL",
    "FORCED_TOOL_CHOICE_REJECTED",
    "RESPONSE_FORMAT_REJECTED",
    "RESPONSE_FORMAT_WITH_TOOLS_REJECTED",
    "SKIP_SIGNATURE",
    "GeminiProvider",
    "GeminiSchemaError",
    "GeminiStreamDecoder",
    "GeminiWire",
    "to_gemini_schema",
]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"

#: Model-name prefixes that reject ``mode: ANY`` (a forced tool choice) with a 400 on every
#: request: Gemini 1.0 predates ANY, Gemma and the 2.0 thinking previews have no function
#: calling on this API.  Extend per provider with ``GeminiProvider(rejects_forced_tool_choice=...)``.
FORCED_TOOL_CHOICE_REJECTED: tuple[str, ...] = (
    "gemini-1.0-",
    "gemini-pro",
    "gemma-",
    "gemini-2.0-flash-thinking",
)

#: Model-name prefixes with no ``responseJsonSchema`` (JSON Schema in structured outputs came with the
#: models after Gemini 1.5; Gemma has no structured outputs on this API).
RESPONSE_FORMAT_REJECTED: tuple[str, ...] = (
    "gemini-1.0-",
    "gemini-1.5-",
    "gemini-pro",
    "gemma-",
    "gemini-2.0-flash-thinking",
)

#: Model-name prefixes that refuse a JSON response format beside function declarations with a 400
#: ("Function calling with a response mime type: 'application/json' is unsupported"): every model before
#: Gemini 3, which is the first to take structured outputs together with tools.  The provider refuses such a
#: request before sending; extend per provider with ``GeminiProvider(rejects_response_format_with_tools=...)``.
RESPONSE_FORMAT_WITH_TOOLS_REJECTED: tuple[str, ...] = (
    "gemini-1",
    "gemini-2",
    "gemini-pro",
    "gemini-exp",
    "gemma-",
)


class GeminiWire:
    """The Gemini ``generateContent`` codec (pure: no I/O): :mod:`.encode`, :mod:`.decode` and :mod:`.stream`.

    ``encode_request`` raises a request-kind :class:`~agentactors.ProviderError` for a
    conversation it cannot express (a tool result answering no known call, a tool
    schema with a recursive ``$ref``).  ``decode_response`` and the stream decoder
    raise :class:`~agentactors.MalformedResponseError` (transient) for bodies the
    wire does not allow, the classified error for an error body, and a
    content-policy error for a blocked prompt.
    """

    wire: str = WIRE

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """See :meth:`~agentactors.providers.codec.WireCodec.url`."""
        path = model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return f"{base_url.rstrip('/')}/v1beta/{quote(path, safe='/-._~@')}:{method}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """See :meth:`~agentactors.providers.codec.WireCodec.headers`."""
        return {"x-goog-api-key": api_key} if api_key else {}

    # -- requests --------------------------------------------------------------------------------

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The request body: :func:`.encode.encode_request`."""
        return encode_request(request, model, stream=stream)

    # -- responses -------------------------------------------------------------------------------

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`.decode.decode_response`."""
        return decode.decode_response(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> GeminiStreamDecoder:
        """A fresh :class:`GeminiStreamDecoder` for one stream."""
        return GeminiStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`.decode.classify_error`."""
        return decode.classify_error(status, headers, body, model=model, provider=provider)


# -- provider ------------------------------------------------------------------------------------


class GeminiProvider(HTTPProvider):
    """Google Gemini over ``POST {base_url}/v1beta/models/{model}:generateContent``
    (streams: ``:streamGenerateContent?alt=sse``).

    The key comes from ``api_key`` or the ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``
    environment variables and travels only in the ``x-goog-api-key`` header (with neither, a call to
    ``generativelanguage.googleapis.com`` raises an account-kind error before sending).
    Forced tool choices are refused before sending for models listed in
    :data:`FORCED_TOOL_CHOICE_REJECTED` or ``rejects_forced_tool_choice``
    (model-name prefixes); a JSON response format beside tools, for models listed in
    :data:`RESPONSE_FORMAT_WITH_TOOLS_REJECTED` or ``rejects_response_format_with_tools`` (models
    before Gemini 3), is a request-kind :class:`~agentactors.ProviderError` naming the model, before
    sending.  ``settings`` are the provider's default
    :class:`~agentactors.ModelSettings` (an agent's and a run's win over them).
    ``max_response_bytes``, ``max_sse_line_bytes`` and ``max_event_bytes`` bound what is read
    of a response.  Error and cancellation semantics are
    :class:`~agentactors.providers.http.provider.HTTPProvider`'s.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    key_required_host: ClassVar[str | None] = "generativelanguage.googleapis.com"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str = DEFAULT_BASE_URL,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        rejects_forced_tool_choice: Iterable[str] = (),
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        rejects_response_format: Iterable[str] = (),
        rejects_response_format_with_tools: Iterable[str] = (),
    ) -> None:
        super().__init__(
            GeminiWire(),
            model=model,
            api_key=api_key,
            base_url=base_url,
            http_client=http_client,
            name=name,
            timeout=timeout,
            settings=settings,
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
        )
        self._rejects = tuple(p.lower() for p in (*FORCED_TOOL_CHOICE_REJECTED, *rejects_forced_tool_choice))
        self._no_format = tuple(p.lower() for p in (*RESPONSE_FORMAT_REJECTED, *rejects_response_format))
        self._no_format_with_tools = tuple(
            p.lower() for p in (*RESPONSE_FORMAT_WITH_TOOLS_REJECTED, *rejects_response_format_with_tools)
        )

    @classmethod
    def vertex(
        cls,
        model: str | None = None,
        *,
        project: str | None = None,
        location: str | None = None,
        token_provider: TokenProvider | None = None,
        http_client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        region: str | None = None,
        **options: Any,
    ) -> GeminiProvider:
        """The same Gemini wire on Vertex AI: ``POST {host}/v1/projects/{project}/locations/{location}/publishers/
        google/models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``), ``location="global"`` at
        ``aiplatform.googleapis.com``.  ``project`` not given is ``GOOGLE_CLOUD_PROJECT``'s, else — on google's default
        credentials (no ``token_provider``) — the ``project_id`` of the service-account key file
        ``GOOGLE_APPLICATION_CREDENTIALS`` names, read here, as google-auth's ``default()`` finds it (none: a
        ``ValueError`` naming the argument, the variable and the file); ``location`` not given
        ``GOOGLE_CLOUD_LOCATION``'s, else ``"us-central1"``: an argument given wins over the environment.
        ``region`` is the same as ``location`` (the Anthropic SDK's word, :meth:`AnthropicProvider.vertex
        <agentactors.providers.anthropic.provider.AnthropicProvider.vertex>`'s); both naming two places is a
        ``ValueError``.

        Authorised by ``Authorization: Bearer`` from ``token_provider`` (sync or async, asked on every request),
        or from google-auth's default credentials (the ``[vertex]`` extra), refreshed before they expire.
        ``base_url`` replaces the host (a test server); ``options`` are the constructor's other keywords but
        ``api_key`` (a ``ValueError``: Vertex takes the bearer token).

        ``model`` as Vertex spells it: ``gemini-2.5-flash``, ``publishers/google/models/…`` or the full resource
        name in this project and location.  Claude (``claude-…``, ``publishers/anthropic/…``) is refused naming
        :meth:`AnthropicProvider.vertex <agentactors.providers.anthropic.provider.AnthropicProvider.vertex>`, as
        are another project's or location's resource name, a tuned model's endpoint, a project or location that
        cannot be one (``ValueError``; named by one request: a request-kind error, before sending).
        """
        location = one_place(location, region, name="location", other_name="region")
        return _GeminiOnVertex(model, project=project, location=location, token_provider=token_provider,
                               http_client=http_client, base_url=base_url, **options)

    def _wire_traits(self, model: str | None) -> tuple[bool, frozenset[str], bool]:
        """Thinking and media per :data:`~agentactors.providers.gemini.models.MODELS` (a model that thinks; a
        multimodal one takes images, documents and audio); generateContent has no ``parallel_tool_calls``
        setting (it is dropped).  A model the table does not know gets what the wire carries."""
        row = model_row(model) if model else None
        if row is None:
            return True, frozenset({"image", "document", "audio"}), False
        return row.thinks, frozenset({"image", "document", "audio"} if row.multimodal else ()), False

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """False for a model whose name starts with a rejected prefix; True otherwise."""
        if not self.carries_forced_tool_choice:
            return False
        bare = _bare_model(model or self.default_model or "")
        return not any(bare.startswith(prefix) for prefix in self._rejects)

    def supports_response_format(self, model: str | None) -> bool:
        """False for a model whose name starts with a prefix of :data:`RESPONSE_FORMAT_REJECTED` (or of
        ``rejects_response_format``); True otherwise."""
        bare = _bare_model(model or self.default_model or "")
        return not any(bare.startswith(prefix) for prefix in self._no_format)

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt`` cannot go out with this request (read through
        :func:`~agentactors.providers.port.response_format_refusal`): beside ``tools``, on a model before
        Gemini 3 (:data:`RESPONSE_FORMAT_WITH_TOOLS_REJECTED`)."""
        if not tools:
            return None
        name = model or self.default_model or ""
        bare = _bare_model(name)
        if any(bare.startswith(prefix) for prefix in self._no_format_with_tools):
            return (
                f"model {name!r} cannot combine function calling with a JSON response format "
                "(responseMimeType application/json): Gemini takes both together from Gemini 3 on"
            )
        return None

    def _prepare(self, request: LLMRequest, *, stream: bool) -> tuple[str, str, dict[str, str], bytes]:
        # A response format beside tools on a model before Gemini 3: the API answers 400; refuse it unsent.
        if request.response_format is not None and request.tools:
            model = resolve_model(self, request)
            refusal = self.response_format_refusal(request.response_format, model, tools=True)
            if refusal is not None:
                raise ProviderError(
                    f"{refusal}; use PromptedOutput, a bare output type (auto) or an agent without tools",
                    provider=self.name,
                    model=model,
                    kind=ErrorKind.request,
                    retryable=False,
                )
        return super()._prepare(request, stream=stream)


class _VertexGeminiWire(GeminiWire):
    """The Gemini codec at a Vertex AI publisher-model URL; the credential is a per-request bearer token."""

    def __init__(self, *, project: str, location: str) -> None:
        self.project = project
        self.location = location

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """``…/publishers/google/models/{model}:generateContent`` (``:streamGenerateContent?alt=sse``)."""
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        return vertex_model_url(base_url, project=self.project, location=self.location, publisher="google",
                                model=model, method=method)

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Nothing: the bearer token is added per request."""
        return {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The Gemini body, for a model Vertex serves under ``publishers/google`` (a ``ValueError`` naming the
        constructor to use otherwise: Claude is :meth:`AnthropicProvider.vertex`'s; a request error, unsent)."""
        vertex_model_name(model, publisher="google", project=self.project, location=self.location)
        return super().encode_request(request, model, stream=stream)


#: The location :meth:`GeminiProvider.vertex` calls when neither ``location=`` nor ``GOOGLE_CLOUD_LOCATION`` names one.
_VERTEX_LOCATION = "us-central1"


class _GeminiOnVertex(GeminiProvider):
    """:meth:`GeminiProvider.vertex`: the Gemini wire with Vertex's URL and a bearer token per request."""

    api_key_env: ClassVar[tuple[str, ...]] = ()  # an API key has no place on Vertex
    key_required_host: ClassVar[str | None] = None  # the bearer token is the credential

    def __init__(
        self,
        model: str | None,
        *,
        project: str | None,
        location: str | None,
        token_provider: TokenProvider | None,
        http_client: httpx.AsyncClient | None,
        base_url: str | None,
        **options: Any,
    ) -> None:
        # Without a token_provider the credentials are google's default ones: a project named nowhere else is theirs.
        project = vertex_project(project, constructor="GeminiProvider.vertex", from_credentials=token_provider is None)
        location = vertex_location(location, default=_VERTEX_LOCATION)
        if options.get("api_key") is not None:
            # Vertex authorises with the bearer token; a key given here would be silently unused.
            raise ValueError("api_key has no place on Vertex AI (it takes a bearer token): pass token_provider=, or "
                             "leave both out for google-auth's default credentials")
        if model is not None and isinstance(model, str) and model.strip():
            vertex_model_name(model, publisher="google", project=project, location=location)
        base = vertex_base_url(location) if base_url is None else base_url  # "" is refused, not the default
        super().__init__(model, base_url=base, http_client=http_client, **options)
        self._codec = _VertexGeminiWire(project=project, location=location)
        self._tokens = BearerTokens(token_provider, provider=self.name)

    def __repr__(self) -> str:
        wire = self._codec
        assert isinstance(wire, _VertexGeminiWire)
        return (f"GeminiProvider.vertex(model={self.default_model!r}, project={wire.project!r}, "
                f"location={wire.location!r}, credentials={self._tokens.source!r})")

    async def _authorize(self, url: str, headers: dict[str, str], content: bytes, model: str) -> dict[str, str]:
        return {**headers, "authorization": f"Bearer {await self._tokens.token(model)}"}

    def _classified(self, status: int, headers: Mapping[str, str], body: bytes, model: str) -> ProviderError:
        # A 401 says the token was refused (revoked, invalidated early): google-auth's is refreshed before the
        # next request rather than reused until its expiry.  This call stays an account error: it was sent.
        if status == 401:
            self._tokens.refresh_at_next_call()
        return super()._classified(status, headers, body, model)


# The package root serves this class on first use, as agentactors.<name> (where users import it from): it is
# relabelled here, so reprs, tracebacks and pickles say so whichever import loaded this module first.
_reexport.adopt(globals(), ["GeminiProvider"], "agentactors")
