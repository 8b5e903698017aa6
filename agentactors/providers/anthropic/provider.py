"""The Anthropic Messages wire: a pure codec (:class:`AnthropicWire`) and :class:`AnthropicProvider`.

``POST {base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``.

Encoding lives in :mod:`.encode` (the request mapping: messages, tools, settings, parts, vendor
options, the response format), decoding in :mod:`.decode` and the stream decoder in :mod:`.stream`;
imports go one way: this module → encode / stream → decode → models.

Response format: :data:`RESPONSE_FORMAT_REJECTED` lists the models that predate ``output_config.format``
(generally available from Claude Sonnet 4.5 / Opus 4.5 / Haiku 4.5 on); the provider refuses a response
format for them before sending.

Forced tool choice: :data:`FORCED_TOOL_CHOICE_REJECTED` lists model-name patterns that reject
``any`` / ``tool``; a request with extended thinking enabled rejects them on every model.  The
provider raises :class:`~agentactors.UnsupportedToolChoiceError` for both before sending.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import agentactors._reexport as _reexport
import agentactors.providers.anthropic.decode as decode

from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, Message, ResponseFormat
from ...settings import ModelSettings
from .._constrained_schema import anthropic_output_schema
from ..codec import StreamDecoder
from ..http.bearer import BearerTokens, TokenProvider
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from ..port import resolve_model
from ..vertex import (
    PROJECT_ENV,
    check_vertex_location,
    one_place,
    vertex_base_url,
    vertex_location,
    vertex_model_name,
    vertex_model_url,
    vertex_project,
)
from .encode import (
    DEFAULT_MAX_TOKENS,
    encode_request,
    forced_choice_refusal,
    part_block,
    thinking_enabled,
)
from .encode import forced_with_thinking_error as _forced_with_thinking
from .models import WIRE, model_row
from .stream import AnthropicStreamDecoder

if TYPE_CHECKING:
    import httpx

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "FORCED_TOOL_CHOICE_REJECTED",
    "RESPONSE_FORMAT_REJECTED",
    "AnthropicProvider",
    "AnthropicStreamDecoder",
    "AnthropicWire",
    "encode_request",
    "forced_choice_refusal",
    "model_accepts_forced_tool_choice",
    "part_block",
    "thinking_enabled",
]

ANTHROPIC_VERSION = "2023-06-01"

# Model-name patterns (fnmatch, case-insensitive) that reject tool_choice any/tool with a 400 on
# every request.  These are the always-thinking variants (OpenRouter's ":thinking" suffix and
# "-thinking" aliases of proxies): extended thinking is on for every call, and the Messages API
# refuses a forced choice together with thinking.  Extend with a pattern, or per provider with
# ``AnthropicProvider(rejects_forced_tool_choice=...)``.
FORCED_TOOL_CHOICE_REJECTED: tuple[str, ...] = (
    "*:thinking",
    "*-thinking",
    "*-thinking-*",
)

# Model-name patterns (fnmatch, case-insensitive) with no ``output_config.format``: structured outputs are
# generally available from the 4.5 models on; everything before them answers it with a 400.
RESPONSE_FORMAT_REJECTED: tuple[str, ...] = (
    "claude-instant*",
    "claude-2*",
    "claude-3*",
    "claude-opus-4",
    "claude-sonnet-4",
    "claude-opus-4-0*",
    "claude-sonnet-4-0*",
    "claude-opus-4-1*",
    "claude-opus-4-2025*",
    "claude-sonnet-4-2025*",
)


def model_accepts_forced_tool_choice(model: str | None, rejected: Iterable[str] = FORCED_TOOL_CHOICE_REJECTED) -> bool:
    """Whether ``model`` accepts ``tool_choice`` ``any`` / ``tool`` (no pattern of ``rejected`` matches)."""
    if not model:
        return True
    name = model.lower()
    return not any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in rejected)


class AnthropicWire:
    """The Anthropic Messages :class:`~agentactors.providers.codec.WireCodec`: pure, no I/O.

    ``betas`` are sent as the ``anthropic-beta`` header (comma-separated) for beta features.
    """

    wire: str = WIRE

    def __init__(self, *, version: str = ANTHROPIC_VERSION, betas: Iterable[str] = ()) -> None:
        self.version = version
        self.betas = tuple(betas)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """See :meth:`~agentactors.providers.codec.WireCodec.url`."""
        return base_url.rstrip("/") + "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """See :meth:`~agentactors.providers.codec.WireCodec.headers`."""
        out = {"anthropic-version": self.version, "content-type": "application/json"}
        if api_key:
            out["x-api-key"] = api_key
        if self.betas:
            out["anthropic-beta"] = ",".join(self.betas)
        return out

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The request body: :func:`.encode.encode_request`."""
        return encode_request(request, model, stream=stream)

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`.decode.decode_message`."""
        return decode.decode_message(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> StreamDecoder:
        """A fresh :class:`AnthropicStreamDecoder` for one stream."""
        return AnthropicStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`.decode.classify_error`."""
        return decode.classify_error(status, headers, body, provider=provider, model=model)


class AnthropicProvider(HTTPProvider):
    """Anthropic's Messages API over httpx.

    :param model: the default model (``request.model`` wins).
    :param api_key: the key; ``None`` reads ``ANTHROPIC_API_KEY``.  Sent only in the
        ``x-api-key`` header and redacted from every error and log line.  With neither, a call to
        ``api.anthropic.com`` raises an account-kind error before sending.
    :param base_url: ``POST {base_url}/v1/messages``.
    :param http_client: an ``httpx.AsyncClient`` to use (not closed by :meth:`aclose`);
        by default one pooled client is created lazily inside the running event loop.
    :param name: the provider name in responses, errors and events (default ``"anthropic"``).
    :param rejects_forced_tool_choice: model-name patterns, added to
        :data:`FORCED_TOOL_CHOICE_REJECTED`, that reject a forced tool choice.
    :param betas: ``anthropic-beta`` feature names to send.
    :param timeout: an httpx timeout for every call (default: the adapter's).
    :param settings: default :class:`~agentactors.ModelSettings` (an agent's and a run's win over them).
    :param max_response_bytes: / :param max_sse_line_bytes: / :param max_event_bytes: the
        byte limits responses are read under (see :class:`~agentactors.providers.http.provider.HTTPProvider`).
    :param rejects_response_format: model-name patterns, added to :data:`RESPONSE_FORMAT_REJECTED`,
        that have no JSON-schema response format.

    Errors and cancellation are those of :class:`~agentactors.providers.http.provider.HTTPProvider`;
    in particular a forced tool choice for a model that rejects it, or together with
    extended thinking, raises :class:`~agentactors.UnsupportedToolChoiceError` before
    anything is sent.
    """

    wire_name: ClassVar[str] = WIRE
    api_key_env: ClassVar[tuple[str, ...]] = ("ANTHROPIC_API_KEY",)
    key_required_host: ClassVar[str | None] = "api.anthropic.com"

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str = "https://api.anthropic.com",
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        rejects_forced_tool_choice: Iterable[str] = (),
        betas: Iterable[str] = (),
        timeout: httpx.Timeout | float | None = None,
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        rejects_response_format: Iterable[str] = (),
    ) -> None:
        super().__init__(
            AnthropicWire(betas=betas),
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
        self._rejected = FORCED_TOOL_CHOICE_REJECTED + tuple(rejects_forced_tool_choice)
        self._no_format = RESPONSE_FORMAT_REJECTED + tuple(rejects_response_format)

    @classmethod
    def vertex(
        cls,
        model: str | None = None,
        *,
        project: str | None = None,
        region: str | None = None,
        token_provider: TokenProvider | None = None,
        http_client: httpx.AsyncClient | None = None,
        base_url: str | None = None,
        location: str | None = None,
        **options: Any,
    ) -> AnthropicProvider:
        """The same Messages wire for Claude on Vertex AI: ``POST {host}/v1/projects/{project}/locations/{region}/
        publishers/anthropic/models/{model}:rawPredict`` (``:streamRawPredict``), with ``anthropic_version:
        "vertex-2023-10-16"`` in the body and no ``model`` field; ``region="global"`` at ``aiplatform.googleapis.com``.
        ``project`` not given is ``ANTHROPIC_VERTEX_PROJECT_ID``'s, else ``GOOGLE_CLOUD_PROJECT``'s, else — on google's
        default credentials (no ``token_provider``) — the ``project_id`` of the service-account key file
        ``GOOGLE_APPLICATION_CREDENTIALS`` names, read here, as google-auth's ``default()`` finds it (none: a
        ``ValueError`` naming the argument, both variables and the file); ``region`` not given ``CLOUD_ML_REGION``'s,
        else ``GOOGLE_CLOUD_LOCATION``'s, else ``"us-east5"``.  So an argument given wins over the environment, and the
        Anthropic SDK's names (what ``anthropic.AnthropicVertex`` and Claude Code read) over Google's; a blank
        variable is unset, and one that cannot be a project or region is a ``ValueError`` naming it.  ``location``
        is the same as ``region`` (Google's word, :meth:`GeminiProvider.vertex
        <agentactors.providers.gemini.provider.GeminiProvider.vertex>`'s); both naming two places is a ``ValueError``.

        Authorised by ``Authorization: Bearer`` from ``token_provider`` (sync or async, asked on every request),
        or from google-auth's default credentials (the ``[vertex]`` extra), refreshed before they expire.
        ``base_url`` replaces the host (a test server); ``options`` are the constructor's other keywords but
        ``api_key`` (a ``ValueError``: Vertex takes the bearer token).

        ``model`` as Vertex spells it: ``claude-sonnet-4-5@20250929``, ``publishers/anthropic/models/…`` or the full
        resource name in this project and region.  Gemini (``gemini-…``, ``publishers/google/…``) is refused naming
        :meth:`GeminiProvider.vertex <agentactors.providers.gemini.provider.GeminiProvider.vertex>`, as are another
        project's or region's resource name, a tuned model's endpoint, a project or region that cannot be one
        (``ValueError``; named by one request: a request-kind error, before sending).
        """
        region = one_place(region, location, name="region", other_name="location")
        return _AnthropicOnVertex(model, project=project, region=region, token_provider=token_provider,
                                  http_client=http_client, base_url=base_url, **options)

    def _wire_traits(self, model: str | None) -> tuple[bool, frozenset[str], bool]:
        """Thinking and media per :data:`~agentactors.providers.anthropic.models.MODELS` (a model whose thinking
        is not ``"none"`` thinks; one with vision takes images and documents; none hears);
        ``parallel_tool_calls`` reaches every model (as ``disable_parallel_tool_use``).  A model the table
        does not know gets what the wire carries: the vendor judges."""
        row = model_row(model) if model else None
        if row is None:
            return True, frozenset({"image", "document"}), True
        return row.thinking != "none", frozenset({"image", "document"} if row.vision else ()), True

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether ``model`` accepts ``tool_choice`` ``any`` / ``tool`` (per-model data; see the module)."""
        return model_accepts_forced_tool_choice(model, self._rejected)

    def supports_response_format(self, model: str | None) -> bool:
        """Whether ``model`` takes ``output_config.format`` (no pattern of :data:`RESPONSE_FORMAT_REJECTED`
        or of ``rejects_response_format`` matches)."""
        return model_accepts_forced_tool_choice(model, self._no_format)

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt`` cannot go out as ``output_config.format``: a field Anthropic's structured outputs cannot
        carry (an open mapping, a tuple), named as the request error before sending names it."""
        try:
            anthropic_output_schema(fmt.schema)
        except ValueError as exc:
            return str(exc)
        return None

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """Why ``settings`` (with this provider's defaults under them) rule out a forced tool choice: extended
        thinking on (read through :func:`~agentactors.providers.port.forced_tool_choice_refusal`).

        The codec's own reading (:func:`forced_choice_refusal`); settings refused for another reason
        (a thinking budget for a model that does not think, say) answer ``None``: that request fails
        before sending whatever its tool choice.
        """
        probe = self.with_defaults(
            LLMRequest((Message.user(""),), model=model, **(settings.request_fields() if settings else {}))
        )
        try:
            return forced_choice_refusal(probe, resolve_model(self, probe))
        except ProviderError:
            return None

    def _prepare(self, request: LLMRequest, *, stream: bool) -> tuple[str, str, dict[str, str], bytes]:
        # Extended thinking is per request, not per model: the API refuses any/tool with it.
        request = self.with_defaults(request)
        if request.tool_choice.forced and thinking_enabled(request.options_for(WIRE)):
            raise _forced_with_thinking(request, resolve_model(self, request), self.name)
        return super()._prepare(request, stream=stream)


#: The ``anthropic_version`` a rawPredict body carries on Vertex AI.
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"


class _VertexAnthropicWire(AnthropicWire):
    """The Messages codec at a Vertex AI rawPredict URL: the model in the path, the version in the body."""

    def __init__(self, *, project: str, region: str, betas: Iterable[str] = ()) -> None:
        super().__init__(betas=betas)
        self.project = project
        self.region = region

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """``…/publishers/anthropic/models/{model}:rawPredict`` (``:streamRawPredict``)."""
        return vertex_model_url(base_url, project=self.project, location=self.region, publisher="anthropic",
                                model=model, method="streamRawPredict" if stream else "rawPredict")

    def headers(self, api_key: str | None) -> dict[str, str]:
        """Only ``anthropic-beta`` (when asked for): the token is added per request, the version is in the body."""
        return {"anthropic-beta": ",".join(self.betas)} if self.betas else {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The Messages body without ``model``, with ``anthropic_version: "vertex-2023-10-16"``, for a model Vertex
        serves under ``publishers/anthropic`` (a ``ValueError`` naming the constructor to use otherwise: Gemini is
        :meth:`GeminiProvider.vertex`'s; a request error, unsent)."""
        vertex_model_name(model, publisher="anthropic", project=self.project, location=self.region)
        body = super().encode_request(request, model, stream=stream)
        body.pop("model", None)
        return {"anthropic_version": VERTEX_ANTHROPIC_VERSION, **body}


#: The region :meth:`AnthropicProvider.vertex` calls when neither ``region=`` nor a variable names one.
_VERTEX_REGION = "us-east5"
#: The Anthropic SDK's variables (``anthropic.AnthropicVertex``, Claude Code), read before Google's.
_SDK_PROJECT_ENV = "ANTHROPIC_VERTEX_PROJECT_ID"
_SDK_REGION_ENV = "CLOUD_ML_REGION"


def _vertex_project(project: object, *, from_credentials: bool) -> str:
    """``project``, else ``ANTHROPIC_VERTEX_PROJECT_ID``'s, else ``GOOGLE_CLOUD_PROJECT``'s (blank is unset), else
    (``from_credentials``: google's default credentials) the service-account key file's ``project_id``."""
    return vertex_project(project, constructor="AnthropicProvider.vertex", variables=(_SDK_PROJECT_ENV, PROJECT_ENV),
                          from_credentials=from_credentials)


def _vertex_region(region: object) -> str:
    """``region``, else ``CLOUD_ML_REGION``'s, else ``GOOGLE_CLOUD_LOCATION``'s, else ``"us-east5"``."""
    if region is None:
        found = os.environ.get(_SDK_REGION_ENV, "")
        if found.strip():
            return check_vertex_location(found, source=_SDK_REGION_ENV)
    return vertex_location(region, default=_VERTEX_REGION, parameter="region")


class _AnthropicOnVertex(AnthropicProvider):
    """:meth:`AnthropicProvider.vertex`: the Messages wire with Vertex's URL, body and a bearer token per request."""

    api_key_env: ClassVar[tuple[str, ...]] = ()  # an API key has no place on Vertex
    key_required_host: ClassVar[str | None] = None  # the bearer token is the credential

    def __init__(
        self,
        model: str | None,
        *,
        project: str | None,
        region: str | None,
        token_provider: TokenProvider | None,
        http_client: httpx.AsyncClient | None,
        base_url: str | None,
        **options: Any,
    ) -> None:
        # Without a token_provider the credentials are google's default ones: a project named nowhere else is theirs.
        project = _vertex_project(project, from_credentials=token_provider is None)
        region = _vertex_region(region)
        if options.get("api_key") is not None:
            # Vertex authorises with the bearer token; a key given here would be silently unused.
            raise ValueError("api_key has no place on Vertex AI (it takes a bearer token): pass token_provider=, or "
                             "leave both out for google-auth's default credentials")
        if model is not None and isinstance(model, str) and model.strip():
            vertex_model_name(model, publisher="anthropic", project=project, location=region)
        base = vertex_base_url(region) if base_url is None else base_url  # "" is refused, not the default
        super().__init__(model, base_url=base, http_client=http_client, **options)
        self._codec = _VertexAnthropicWire(project=project, region=region, betas=options.get("betas", ()))
        self._tokens = BearerTokens(token_provider, provider=self.name)

    def __repr__(self) -> str:
        wire = self._codec
        assert isinstance(wire, _VertexAnthropicWire)
        return (f"AnthropicProvider.vertex(model={self.default_model!r}, project={wire.project!r}, "
                f"region={wire.region!r}, credentials={self._tokens.source!r})")

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
_reexport.adopt(globals(), ["AnthropicProvider"], "agentactors")
