"""Azure OpenAI: a constructor over the two OpenAI wires, not a copy of either.

``AzureOpenAIProvider(deployment, endpoint=..., api="chat")`` posts the Chat Completions wire
(:class:`~agentactors.providers.openai.OpenAIWire`) to
``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…`` (the deployment names the
model: no ``model`` in the body); ``api="responses"`` posts the Responses wire
(:class:`~agentactors.providers.responses.ResponsesWire`) to the v1 route ``{endpoint}/openai/v1/responses``
with the deployment as the body's ``model`` (no ``api-version``: the v1 surface has none).

What differs from OpenAI is only where requests go, how they authenticate and how content filtering is
reported, so each wire's codec is subclassed for its URL, its header and its error refinement:

* auth: an ``api-key`` header, or ``Authorization: Bearer <token>`` with a Microsoft Entra ID token from
  ``token_provider`` (a sync or async callable, asked on every request: it caches and refreshes as it
  likes).  Keys and every token are registered secrets: redacted from errors, events, reprs and logs;
* ``model=`` names the underlying model (a deployment's name is its owner's choice): the per-model tables
  (settings, media, forced tool choice, response format, ``capabilities``) follow it;
* content filtering: an error with ``code: "content_filter"`` or an ``innererror`` of code
  ``ResponsibleAIPolicyViolation`` is a :attr:`~agentactors.ErrorKind.content_policy` error, a
  ``finish_reason: "content_filter"`` (or an ``incomplete`` Responses answer for ``content_filter``) a
  :attr:`~agentactors.StopReason.content_filter` answer; 429s carry ``retry-after`` / ``retry-after-ms`` and
  ``x-ratelimit-*`` like OpenAI's and are read the same way.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import quote, urlsplit

import agentactors._reexport as _reexport

from ..errors import ErrorKind, ProviderError
from ..messages import LLMRequest, ResponseFormat
from ..redaction import redact, register_secret
from ..settings import ModelSettings
from ._settings import OPENAI_TOOL_NAMES, check_tool_names
from .errors import classify_http_error
from .http.bearer import credential_failure
from .http.checks import check_base_url, check_model
from .http.keys import clean_api_key
from .http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    HTTPProvider,
)
from .http.transport import WireResponse
from .openai.encode import encode_request as chat_request
from .openai.models import model_row
from .openai.provider import OpenAIWire
from .port import Capabilities
from .responses.decode import refine_by_code
from .responses.encode import encode_request as responses_request
from .responses.provider import ResponsesWire, response_format_refusal, responses_capabilities

if TYPE_CHECKING:
    import httpx

__all__ = ["DEFAULT_AZURE_API_VERSION", "AzureChatWire", "AzureOpenAIProvider", "AzureResponsesWire", "TokenProvider"]

DEFAULT_AZURE_API_VERSION = "2024-10-21"
TokenProvider = Callable[[], "str | Awaitable[str]"]
_POLICY_INNER = "responsibleaipolicyviolation"
#: The data-plane ``api-version`` values: a date, ``-preview`` for a preview surface (``2025-04-01-preview``).
_API_VERSION = re.compile(r"\d{4}-\d{2}-\d{2}(?:-preview)?")
#: Characters no deployment name holds (Azure's: letters, digits, ``-``, ``_``, ``.``): sent, each made a 404.
_NOT_IN_DEPLOYMENT = re.compile(r"[\s/?#%\\]")
#: An Azure OpenAI route inside an endpoint's path (``/openai/deployments/…``, ``/openai/v1/responses``).
_ROUTE = re.compile(r"/openai/(?:deployments|v1/|responses|chat|completions|models|files|batches)")
#: Endpoint path tails read as the resource's root: the OpenAI SDK's ``base_url`` forms of the same resource.
_ROOT_TAILS = ("/openai/v1", "/openai")


def azure_endpoint(endpoint: object) -> str:
    """The resource URL requests are made from: ``endpoint`` checked, a ``/openai`` or ``/openai/v1`` tail cut.

    An endpoint naming one route (``…/openai/deployments/NAME/chat/completions?api-version=…``, ``…/openai/v1/
    responses``) or another API of an AI Foundry resource (its ``/models`` inference or ``/api/projects/…``
    project endpoint) is a ``ValueError`` naming the resource's root URL: the route's parts were appended to it
    and Azure answered a bare 404.  Another host keeps its path (a gateway's own prefix).
    """
    if isinstance(endpoint, str):
        try:
            parts = urlsplit(endpoint.strip())
        except ValueError:
            parts = None
        if parts is not None and parts.scheme in ("http", "https") and parts.hostname and "@" not in parts.netloc:
            root = f"{parts.scheme}://{parts.netloc}"  # shown without its query (it may hold a key)
            path = parts.path.rstrip("/")
            lowered = path.lower()
            cut = next((tail for tail in _ROOT_TAILS if lowered.endswith(tail)), None)
            if cut is not None and not parts.query and not parts.fragment:
                return check_base_url(endpoint.strip()[: len(root) + len(path) - len(cut)], parameter="endpoint")
            route = _ROUTE.search(lowered + "/")
            if route is not None:
                at = route.start()
                raise ValueError(
                    f"endpoint must be the resource's URL, like {redact(root + path[:at])!r}, not one route's URL: the "
                    "deployment goes in deployment= (the route's /openai/deployments/<name> segment) and the "
                    "api-version in api_version= (the chat route's query); the provider appends the route"
                )
            host = parts.hostname.lower()
            if host.endswith(".services.ai.azure.com") and lowered.startswith(("/models", "/api/projects")):
                raise ValueError(
                    f"endpoint {redact(root + path)!r} is an AI Foundry project or model-inference endpoint, another "
                    f"API: AzureOpenAIProvider speaks the Azure OpenAI routes of the resource, "
                    f"endpoint={redact(root)!r}"
                )
    return check_base_url(endpoint, parameter="endpoint")


def check_api_version(api_version: object) -> str:
    """``api_version`` if Azure's data plane could serve it (``2024-10-21``, ``2025-04-01-preview``)."""
    if not isinstance(api_version, str):
        raise TypeError(f"api_version must be a str such as {DEFAULT_AZURE_API_VERSION!r}, "
                        f"not {type(api_version).__name__}")
    if _API_VERSION.fullmatch(api_version) is None:
        raise ValueError(
            f"api_version must be a dated version such as {DEFAULT_AZURE_API_VERSION!r} or '2025-04-01-preview', "
            f"not {api_version!r}: Azure answers any other with a bare 404 (the v1 route, api=\"responses\", "
            "takes none)"
        )
    return api_version


def check_deployment(deployment: object) -> str:
    """``deployment`` if it is a name Azure could have given a deployment."""
    if not isinstance(deployment, str):
        raise TypeError(f"deployment must be a str, not {type(deployment).__name__}")
    if not deployment.strip():
        raise ValueError("deployment must be a non-empty str")
    if _NOT_IN_DEPLOYMENT.search(deployment):
        raise ValueError(
            f"deployment must be a deployment's name (letters, digits, '-', '_', '.'), not {deployment!r}: the "
            "name the Azure portal lists under Deployments, not a URL or a path"
        )
    return deployment


def classify_azure_error(
    status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
) -> ProviderError:
    """Azure's error bodies: OpenAI's shape, content filtering also told by ``innererror.code``."""
    try:
        parsed: Any = json.loads(body)
    except (ValueError, RecursionError):
        return classify_http_error(status, headers, body, provider=provider, model=model)
    error = parsed.get("error") if isinstance(parsed, dict) else None
    inner = error.get("innererror") if isinstance(error, dict) else None
    inner_code = inner.get("code") if isinstance(inner, dict) else None
    if isinstance(inner_code, str) and inner_code.lower() == _POLICY_INNER and isinstance(error, dict):
        parsed = {**parsed, "error": {**error, "code": "content_filter"}}
    # "content_filter" is a content-policy code of the shared classifier.
    return classify_http_error(status, headers, parsed, provider=provider, model=model)


class _Deployment:
    """The deployment ↔ model naming one Azure wire shares: the deployment goes out, the model is judged."""

    def __init__(self, deployment: str, model: str | None) -> None:
        self.deployment = deployment
        self.model = model or deployment

    def judged(self, sent: str) -> str:
        """The model name the tables judge a request to ``sent`` by."""
        return self.model if sent == self.deployment else sent


class AzureChatWire(OpenAIWire):
    """Chat Completions on an Azure deployment: the deployment in the path, ``api-version`` in the query."""

    def __init__(self, deployment: str, *, api_version: str, model: str | None = None) -> None:
        super().__init__(max_tokens_field="max_tokens", official=False)
        self.names = _Deployment(deployment, model)
        self.api_version = api_version

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=…``."""
        return (
            f"{base_url.rstrip('/')}/openai/deployments/{quote(model, safe='')}/chat/completions"
            f"?api-version={quote(self.api_version, safe='')}"
        )

    def headers(self, api_key: str | None) -> dict[str, str]:
        """``api-key`` (a bearer token is added per request by the provider)."""
        return {"api-key": api_key} if api_key else {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """OpenAI's body judged for the underlying model; no ``model`` field (the path names the deployment)."""
        judged = self.names.judged(model)
        # Azure serves OpenAI's models under OpenAI's tool-name rule, whatever the deployment is called.
        check_tool_names(self.wire, judged, request.tools, OPENAI_TOOL_NAMES)
        # Replayed signatures are compared with the deployment: the decoders stamp the name the request was sent to.
        # Azure OpenAI refuses message fields it does not know, as OpenAI does: another server's replayed fields
        # (Gemini's extra_content, OpenRouter's reasoning_details: a fallback's earlier turns, stamped or not) are
        # left out; only what this deployment itself answered with goes back to it.
        body = chat_request(request, judged, stream=stream, max_tokens_field=self.max_tokens_field,
                            official=self.official, sent_as=model, own_only=True)
        body.pop("model", None)
        return body

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`classify_azure_error`; Azure's bare 404 says which parts of the URL it may mean."""
        err = classify_azure_error(status, headers, body, model=model, provider=provider)
        if status != 404 or type(err) is not ProviderError:
            return err
        return _with_hint(err, f"the endpoint (the resource's URL), the deployment {model!r} or the api_version "
                               f"{self.api_version!r} is not found there")


class AzureResponsesWire(ResponsesWire):
    """The Responses API on Azure's v1 route; the deployment is the body's ``model``."""

    def __init__(self, deployment: str, *, model: str | None = None) -> None:
        super().__init__(official=False)
        self.names = _Deployment(deployment, model)

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """``{endpoint}/openai/v1/responses``."""
        return f"{base_url.rstrip('/')}/openai/v1/responses"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """``api-key`` (a bearer token is added per request by the provider)."""
        return {"api-key": api_key} if api_key else {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """The Responses body judged for the underlying model, sent to the deployment."""
        judged = self.names.judged(model)
        check_tool_names(self.wire, judged, request.tools, OPENAI_TOOL_NAMES)  # OpenAI's rule, as on chat
        # Replayed reasoning is compared with the deployment: the decoder stamps the name the request was sent to.
        body = responses_request(request, judged, stream=stream, official=self.official, sent_as=model)
        body["model"] = model
        return body

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`classify_azure_error`; a Responses ``invalid_prompt`` or ``image_content_policy_violation``
        code is a content-policy error, as on OpenAI's Responses wire (over HTTP as in a 200)."""
        err = classify_azure_error(status, headers, body, model=model, provider=provider)
        try:
            parsed: Any = json.loads(body)
        except (ValueError, RecursionError):
            parsed = None
        err = refine_by_code(err, parsed)
        if status != 404 or type(err) is not ProviderError:
            return err
        return _with_hint(err, "the endpoint (the resource's URL) has no v1 route, or the deployment named as "
                               "the model is not found there")


def _with_hint(err: ProviderError, hint: str) -> ProviderError:
    """``err`` with ``hint`` after its message (a 404 of Azure's says only "Resource not found")."""
    return ProviderError(
        f"{err.message} ({hint})",
        provider=err.provider,
        model=err.model,
        kind=err.kind,
        status=err.status,
        retry_after=err.retry_after,
        retryable=err.retryable,
        request_id=err.request_id,
        body_excerpt=err.body_excerpt,
    )


class AzureOpenAIProvider(HTTPProvider):
    """An Azure OpenAI deployment, over the Chat Completions (``api="chat"``) or Responses wire.

    :param deployment: the deployment's name (sent in the path, or as the Responses body's ``model``).
    :param endpoint: the resource's endpoint, ``https://<resource>.openai.azure.com`` (``.services.ai.azure.com``,
        ``.cognitiveservices.azure.com``); a ``/openai`` or ``/openai/v1`` tail is cut, and one route's URL
        (``…/openai/deployments/…``) is a ``ValueError`` naming the resource's (:func:`azure_endpoint`).
    :param api_version: the ``api-version`` of the chat route (the Responses v1 route takes none): a dated one,
        ``2024-10-21`` or ``2025-04-01-preview`` (any other is a ``ValueError``: Azure answers it with a 404).
    :param api_key: the resource key (``api-key`` header); else ``AZURE_OPENAI_API_KEY``, unless a
        ``token_provider`` is given.  With neither, a call raises an account-kind
        :class:`~agentactors.ProviderError` before sending (every Azure endpoint refuses it).
    :param token_provider: a callable returning a Microsoft Entra ID bearer token (sync or async), asked on
        every request; a failure there is raised as a :class:`~agentactors.ProviderError` before anything is
        sent, showing the exception's type, never its text (transient for a connection error or a timeout,
        an account error otherwise, as is an answer that is not a usable str).  A sync one is called in the
        event loop (it is asked per request and answers from its cache): one that may block on a refresh
        should be async — ``azure.identity.aio.get_bearer_token_provider``.
    :param model: the underlying model (``gpt-4o``, ``gpt-5-mini``): what settings, media, forced tool
        choice and :meth:`capabilities` are judged by.  ``None``: the deployment's name is taken for it.
    :param api: ``"chat"`` or ``"responses"``.
    :param max_response_bytes: / :param max_sse_line_bytes: / :param max_event_bytes: the byte limits responses
        are read under, on either wire (see :class:`~agentactors.providers.http.provider.HTTPProvider`).

    Vendor-hosted tools (web search, file search, code interpreter) are out of scope on both wires.
    """

    wire_name: ClassVar[str] = "azure-openai"
    api_key_env: ClassVar[tuple[str, ...]] = ("AZURE_OPENAI_API_KEY",)
    _key_sources: ClassVar[str] = "api_key= or token_provider=,"

    def __init__(
        self,
        deployment: str,
        *,
        endpoint: str,
        api_version: str = DEFAULT_AZURE_API_VERSION,
        api_key: str | None = None,
        token_provider: TokenProvider | None = None,
        model: str | None = None,
        api: Literal["chat", "responses"] = "chat",
        http_client: httpx.AsyncClient | None = None,
        settings: ModelSettings | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        check_deployment(deployment)
        endpoint = azure_endpoint(endpoint)  # the resource's URL, https://<resource>.openai.azure.com
        check_api_version(api_version)
        check_model(model, default="the deployment's name")
        if token_provider is not None and not callable(token_provider):
            raise TypeError("token_provider must be a callable returning a token (sync or async)")
        if token_provider is not None and api_key is not None:
            raise ValueError("give api_key or token_provider, not both")
        codec: AzureChatWire | AzureResponsesWire
        if api == "chat":
            codec = AzureChatWire(deployment, api_version=api_version, model=model)
        elif api == "responses":
            codec = AzureResponsesWire(deployment, model=model)
        else:
            raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
        self.api: Literal["chat", "responses"] = api
        self.deployment = deployment
        self.underlying_model = model or deployment
        self.api_version = api_version
        self._token_provider = token_provider
        super().__init__(
            codec,
            model=deployment,
            api_key=api_key,  # with a token provider, None: _key_from_env reads no AZURE_OPENAI_API_KEY then
            base_url=endpoint,
            http_client=http_client,
            name=name,
            carries_forced_tool_choice=True,
            timeout=timeout,
            settings=settings,
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
        )

    def _key_from_env(self) -> str | None:
        """``AZURE_OPENAI_API_KEY``, unless a token provider is the credential."""
        return None if self._token_provider is not None else super()._key_from_env()

    def _key_required(self) -> bool:
        """Always, but with a token provider: every Azure OpenAI endpoint refuses a request without either."""
        return self._token_provider is None

    def _judged(self, model: str | None) -> str:
        return self.underlying_model if model is None or model == self.deployment else model

    def capabilities(self, model: str | None) -> Capabilities:
        """What the underlying model (``model=``; another deployment's name as given) can do on this wire."""
        judged = self._judged(model)
        caps = responses_capabilities(judged)
        row = model_row(judged)
        if self.api == "chat" and row is not None and row.audio:
            return Capabilities(
                forced_tool_choice=caps.forced_tool_choice,
                response_format=caps.response_format,
                thinking=caps.thinking,
                media=caps.media | {"audio"},
                parallel_tool_calls=caps.parallel_tool_calls,
            )
        return caps

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether a forced choice may be sent (judged by the underlying model)."""
        return self.capabilities(model).forced_tool_choice

    def supports_response_format(self, model: str | None) -> bool:
        """Whether a JSON-schema response format reaches the model (judged by the underlying model)."""
        return self.capabilities(model).response_format

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt`` cannot go out: a strict schema with a field OpenAI's strict mode cannot carry."""
        return response_format_refusal(fmt)

    async def _send(
        self,
        url: str,
        headers: dict[str, str],
        content: bytes,
        model: str,
        *,
        stream: bool,
        io_timeout: float | None = None,
    ) -> WireResponse:
        if self._token_provider is not None:
            token = await self._token(model)
            headers = {**headers, "authorization": f"Bearer {token}"}
        return await super()._send(url, headers, content, model, stream=stream, io_timeout=io_timeout)

    async def _token(self, model: str) -> str:
        """A fresh answer of the token provider, registered as a secret before anything else sees it.

        A failure shows the exception's type, never its text (which may hold a token this library never saw,
        so could not redact), and is classified by :func:`~.http.bearer.credential_failure`: transient for a
        network failure, an account error otherwise.  An answer that is not a str, is empty or cannot go in
        a header is an account error too.
        """
        provider = self._token_provider
        assert provider is not None
        try:
            value = provider()
            if inspect.isawaitable(value):
                value = await value
        except ProviderError:
            raise
        except Exception as exc:  # cancellation is no Exception: it propagates as it is
            failure = credential_failure(exc, "the token provider failed", provider=self.name, model=model)
        else:
            if not isinstance(value, str):
                raise ProviderError(f"the token provider returned a {type(value).__name__}, not a str",
                                    provider=self.name, model=model, kind=ErrorKind.account, retryable=False)
            register_secret(value)
            try:
                token = clean_api_key(value, provider=self.name, what="the token from the token provider")
            except ValueError as exc:
                failure = ProviderError(str(exc), provider=self.name, model=model, kind=ErrorKind.account,
                                        retryable=False)
            else:
                if token is None:
                    raise ProviderError("the token provider returned an empty token", provider=self.name,
                                        model=model, kind=ErrorKind.account, retryable=False)
                register_secret(token)  # the stripped form is what goes out: "<token>\n" registered alone misses it
                return token
        raise failure  # outside the except block: the provider's exception is kept neither as cause nor context


# The package root serves this class on first use, as agentactors.<name> (where users import it from): it is
# relabelled here, so reprs, tracebacks and pickles say so whichever import loaded this module first.
_reexport.adopt(globals(), ["AzureOpenAIProvider"], "agentactors")
