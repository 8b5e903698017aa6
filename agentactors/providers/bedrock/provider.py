"""The Bedrock Converse wire: a pure codec (:class:`BedrockWire`) and :class:`BedrockProvider`.

``POST {base_url}/model/{modelId}/converse`` (JSON) and ``/converse-stream`` (the AWS event stream), the
model id percent-encoded into the path (``us.amazon.nova-micro-v1%3A0``, an inference-profile ARN with
``%3A`` and ``%2F``), signed with SigV4 (:mod:`.sigv4`).  The mappings are :mod:`.encode`, :mod:`.decode`
and :mod:`.stream`; the per-model rules :mod:`.models`.

Imports go one way: this module → encode / sigv4 / eventstream → stream → decode → models.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import quote

import attrs

import agentactors._reexport as _reexport
import agentactors.providers.bedrock.decode as decode

from ...errors import ProviderError
from ...messages import LLMRequest, LLMResponse, Message, ResponseFormat
from ...redaction import redact, register_secret
from ...settings import ModelSettings
from .._constrained_schema import anthropic_output_schema
from ..codec import StreamDecoder
from ..http.bearer import credential_failure
from ..http.body import BodyReader
from ..http.checks import check_base_url
from ..http.keys import clean_api_key
from ..http.provider import (
    DEFAULT_MAX_EVENT_BYTES,
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_MAX_SSE_LINE_BYTES,
    Framer,
    HTTPProvider,
)
from ..port import Capabilities, resolve_model
from .encode import encode_request, forced_choice_refusal
from .eventstream import EventStreamFramer
from .models import WIRE, model_row
from .sigv4 import SigV4Signer, default_region
from .stream import BedrockStreamDecoder

if TYPE_CHECKING:
    import httpx

__all__ = ["EVENT_STREAM", "BedrockProvider", "BedrockWire"]

#: The content type of a ConverseStream body.
EVENT_STREAM = "application/vnd.amazon.eventstream"


class BedrockWire:
    """The Bedrock Converse :class:`~agentactors.providers.codec.WireCodec`: pure, no I/O.

    ``headers`` carries no credential: a SigV4 signature covers each request's body and time, so the
    provider adds it per request.
    """

    wire: str = WIRE

    def url(self, base_url: str, model: str, *, stream: bool) -> str:
        """``{base_url}/model/{modelId}/converse`` (``/converse-stream``), the id percent-encoded whole."""
        return f"{base_url.rstrip('/')}/model/{quote(model, safe='')}/{'converse-stream' if stream else 'converse'}"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """See :meth:`~agentactors.providers.codec.WireCodec.headers`: nothing (the signature is per request)."""
        return {}

    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        """See :func:`.encode.encode_request`."""
        return encode_request(request, model, stream=stream)

    def decode_response(self, body: Any, *, request: LLMRequest | None, model: str, provider: str) -> LLMResponse:
        """See :func:`.decode.decode_converse`."""
        return decode.decode_converse(body, request=request, model=model, provider=provider)

    def stream_decoder(self, *, request: LLMRequest | None, model: str, provider: str) -> StreamDecoder:
        """A fresh :class:`BedrockStreamDecoder` for one stream."""
        return BedrockStreamDecoder(request=request, model=model, provider=provider)

    def classify_error(
        self, status: int, headers: Mapping[str, str], body: bytes, *, model: str, provider: str
    ) -> ProviderError:
        """See :func:`.decode.classify_error`."""
        return decode.classify_error(status, headers, body, provider=provider, model=model)


class BedrockProvider(HTTPProvider):
    """Amazon Bedrock's Converse and ConverseStream APIs, signed with SigV4 (the ``[bedrock]`` extra).

    :param model: the default model id (``request.model`` wins): a foundation model
        (``anthropic.claude-sonnet-4-5-20250929-v1:0``), a cross-region inference profile
        (``us.amazon.nova-pro-v1:0``) or an inference-profile ARN.
    :param region: the AWS region; ``None`` takes the ``base_url`` host's (a regional, FIPS or VPC endpoint), else
        reads ``AWS_REGION`` / ``AWS_DEFAULT_REGION`` / the profile's.  One not shaped like a region, or one
        against the ``base_url`` host's, is a ``ValueError`` (a request signed for another region is a 403).
    :param access_key_id: / :param secret_access_key: / :param session_token: explicit credentials; ``None``
        (all three) uses botocore's default chain (environment, shared credentials and config files, SSO,
        container and instance roles), resolved on the first request in a worker thread (a blank credential
        variable is an unset one; a set one is stripped).  When they cannot be resolved, the account or transient
        error names what to fix from botocore's named fields only (the missing variable, the profile not found),
        never its text.  The secret key
        and tokens are redacted from every error, event and log line, and never shown by ``repr``.
    :param base_url: the endpoint: a FIPS or VPC (``https://vpce-….bedrock-runtime.{region}.vpce.amazonaws.com``)
        endpoint, a proxy; not the control plane's ``bedrock.{region}.amazonaws.com`` (a ``ValueError`` naming the
        runtime's).  ``None`` reads ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, else ``AWS_ENDPOINT_URL`` (as the AWS SDKs
        do, and not when ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` is ``true``), else
        ``https://bedrock-runtime.{region}.amazonaws.com``; an endpoint from the environment is checked as
        ``base_url`` is, its errors naming the variable, and its host's region wins as ``base_url``'s does.
    :param http_client: an ``httpx.AsyncClient`` to use (not closed by :meth:`aclose`).
    :param name: the provider name in responses, errors and events (default ``"bedrock"``).
    :param timeout: / :param settings: / the byte limits: as :class:`~agentactors.providers.http.provider.HTTPProvider`.

    A forced tool choice goes only to the families Bedrock documents it for (:mod:`.models`: ``any`` for
    Claude, Nova and Mistral Large, a named tool for Claude and Nova) and never with Claude's extended
    thinking; anything else raises :class:`~agentactors.UnsupportedToolChoiceError` before sending.
    :raises ValueError: one of ``access_key_id`` / ``secret_access_key`` without the other, an empty or blank
        credential or one holding a character that is not visible ASCII (surrounding whitespace is stripped; the
        message names the parameter, never the value), no region, a region that cannot be one, or a region
        against ``base_url``'s.
    :raises TypeError: a credential that is not a str.
    :raises ImportError: botocore is not installed.
    """

    wire_name: ClassVar[str] = WIRE
    stream_content_type: ClassVar[str] = EVENT_STREAM

    def __init__(
        self,
        model: str | None = None,
        *,
        region: str | None = None,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        base_url: str | None = None,
        http_client: httpx.AsyncClient | None = None,
        name: str | None = None,
        timeout: httpx.Timeout | float | None = None,
        settings: ModelSettings | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        max_sse_line_bytes: int = DEFAULT_MAX_SSE_LINE_BYTES,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        source = "base_url"
        if base_url is None:
            base_url, source = _configured_endpoint()
        if base_url is not None:  # "" is refused, not read as the default; checked before its host is read
            check_base_url(base_url, parameter=source)
        label = name if isinstance(name, str) and name.strip() else WIRE  # a bad name is check_name's error
        signer = SigV4Signer(
            _region(region, base_url, source),
            access_key_id=_credential(access_key_id, "access_key_id", label),
            secret_access_key=_credential(secret_access_key, "secret_access_key", label),
            session_token=_credential(session_token, "session_token", label),
            provider=name or WIRE,
        )
        super().__init__(
            BedrockWire(),
            model=model,
            api_key=None,
            base_url=f"https://bedrock-runtime.{signer.region}.amazonaws.com" if base_url is None else base_url,
            http_client=http_client,
            name=name,
            timeout=timeout,
            settings=settings,
            max_response_bytes=max_response_bytes,
            max_sse_line_bytes=max_sse_line_bytes,
            max_event_bytes=max_event_bytes,
        )
        self._signer = signer

    def __repr__(self) -> str:
        # Never a credential: only where they come from.
        return (
            f"BedrockProvider(name={self.name!r}, model={self.default_model!r}, region={self.region!r}, "
            f"base_url={redact(self.base_url)!r}, credentials={self._signer.source!r})"
        )

    @property
    def region(self) -> str:
        """The AWS region requests are signed for."""
        return self._signer.region

    # -- what a model takes --------------------------------------------------------------------------

    def capabilities(self, model: str | None) -> Capabilities:
        """What ``model`` (``None``: the default model) can do on Bedrock: no native tools for a model Converse
        gives no tool use (Titan, Claude 2 and earlier, DeepSeek-R1: see :mod:`.models`)."""
        caps = super().capabilities(model)
        row = model_row(model or self.default_model)
        return caps if row is None or row.tools else attrs.evolve(caps, native_tools=False)

    def supports_forced_tool_choice(self, model: str | None) -> bool:
        """Whether ``model`` takes ``toolChoice`` ``any`` (Claude, Nova, Mistral Large; see :mod:`.models`)."""
        row = model_row(model or self.default_model)
        return row is not None and row.forced != "none"

    def supports_response_format(self, model: str | None) -> bool:
        """Whether ``model`` takes ``outputConfig.textFormat`` (Claude 4.5 and later)."""
        row = model_row(model or self.default_model)
        return row is not None and row.response_format

    def response_format_refusal(self, fmt: ResponseFormat, model: str | None, *, tools: bool = False) -> str | None:
        """Why ``fmt``'s schema cannot be compiled by Claude's structured outputs, or ``None``."""
        try:
            anthropic_output_schema(fmt.schema)
        except ValueError as exc:
            return str(exc)
        return None

    def forced_tool_choice_refusal(self, model: str | None, settings: ModelSettings | None) -> str | None:
        """Why ``settings`` rule out a forced tool choice ``model`` otherwise takes: Claude's extended thinking."""
        probe = self.with_defaults(
            LLMRequest((Message.user(""),), model=model, **(settings.request_fields() if settings else {}))
        )
        try:
            return forced_choice_refusal(probe, resolve_model(self, probe))
        except ProviderError:
            return None

    def _wire_traits(self, model: str | None) -> tuple[bool, frozenset[str], bool]:
        row = model_row(model)
        if row is None:
            return False, frozenset({"image", "document"}), False  # unknown: sent as given, Bedrock judges
        media = {kind for kind, on in (("image", row.vision), ("document", row.documents)) if on}
        return row.reasoning != "none", frozenset(media), False

    # -- I/O seams -----------------------------------------------------------------------------------

    def _framer(self, reader: BodyReader, model: str) -> Framer:
        # max_event_bytes bounds one event-stream message as it bounds one SSE event: botocore alone would
        # buffer a message up to its own 24 MiB bound, whatever the caller set.
        return EventStreamFramer(
            provider=self.name,
            model=model,
            max_event_bytes=self.limits.max_event_bytes,
            overflow=reader.too_large,
        )

    async def _authorize(self, url: str, headers: dict[str, str], content: bytes, model: str) -> dict[str, str]:
        try:
            return await self._signer.sign(url, headers, content, model)
        except ProviderError:
            raise
        except Exception as exc:
            # botocore's resolver: a broken profile or an expired SSO session (account), a container or instance
            # credentials endpoint that failed to answer (transient).  Its type and named fields, never its text.
            failure = credential_failure(exc, "AWS credentials could not be resolved", provider=self.name,
                                         model=model)
        raise failure


def _credential(value: object, parameter: str, provider: str) -> str | None:
    """``value`` (a credential given to the provider) stripped of surrounding whitespace; ``None`` stays ``None``.

    Checked as ``api_key`` is on the other HTTP providers (:class:`~agentactors.providers.http.provider.HTTPProvider`),
    here at construction: a non-str is a ``TypeError`` (``access_key_id=1`` used to end in ``len()``'s own
    ``TypeError``), an empty or whitespace-only one a ``ValueError`` (an empty secret key signed requests AWS
    refused with a 403), and so is one holding a character that is not visible ASCII — AWS keys and tokens are
    made of visible ASCII, and the key id and the token go in headers.  Each message names the parameter and the
    kind and position of a wrong character, never the value; the value is registered as a secret first.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{parameter} for provider {provider!r} must be a str, not {type(value).__name__}")
    register_secret(value)
    if not value.strip():
        raise ValueError(
            f"{parameter} for provider {provider!r} is empty (or only whitespace): pass it, or leave access_key_id, "
            "secret_access_key and session_token out for botocore's default chain (environment, profiles, roles)"
        )
    try:
        checked = clean_api_key(value, provider=provider, what=parameter)
    except ValueError as exc:
        if parameter != "secret_access_key":
            raise
        # The secret key signs, it is never sent: say what it cannot be (the rest of the message is the same).
        message = str(exc).replace("cannot be sent in an HTTP header", "cannot be an AWS secret key")
    else:
        register_secret(checked)
        return checked
    raise ValueError(message)  # outside the except block: the first message is not its context


#: An AWS region's shape (``us-east-1``, ``us-gov-west-1``, ``us-isob-east-1``): anything else went into the
#: endpoint's host and the signature's scope, and failed at the first request.
_REGION = re.compile(r"[a-z]{2}(?:-[a-z]+)+-\d{1,2}")


#: The environment variables an endpoint not given is read from, in the AWS SDKs' order: service-specific first.
_ENDPOINT_ENV = ("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL")


def _configured_endpoint() -> tuple[str | None, str]:
    """The endpoint the environment configures for Bedrock Runtime and the variable it came from (blank is unset),
    or ``(None, "base_url")``: none, or ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true`` (botocore's reading)."""
    if os.environ.get("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "").strip().lower() != "true":
        for var in _ENDPOINT_ENV:
            value = os.environ.get(var, "")
            if value.strip():
                return value, var
    return None, "base_url"


def _region(region: object, base_url: str | None, source: str = "base_url") -> str:
    """The region requests are signed for: ``region=``, else the endpoint's, else the environment's or profile's.

    The endpoint's wins over the environment's (a request signed for another region than its endpoint's is
    refused by AWS with a 403); ``region=`` against the endpoint's is a ``ValueError``.  ``source`` names where the
    endpoint came from (``base_url`` or an environment variable).
    """
    endpoint = _region_of(base_url, source)
    if region is not None:
        given = _checked_region(region, "region=")
        if endpoint is not None and endpoint != given:
            raise ValueError(
                f"region={given!r} but {source} {redact(str(base_url))!r} is in {endpoint!r}: requests would be signed "
                "for one region and sent to another (AWS answers 403); pass the endpoint's region or leave region= out"
            )
        return given
    if endpoint is not None:
        return endpoint
    found = default_region()
    if found:
        source = next((var for var in ("AWS_REGION", "AWS_DEFAULT_REGION") if os.environ.get(var, "").strip()),
                      "the AWS profile's region")
        return _checked_region(found, source)
    profile = os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE")
    where = f"a region in the AWS profile {profile!r} (AWS_PROFILE; is it in the config file?)" if profile else \
        "a region in the default AWS profile"
    raise ValueError(f"BedrockProvider needs a region: pass region=, or set AWS_REGION, or {where}")


def _checked_region(region: object, source: str) -> str:
    if not isinstance(region, str):
        raise TypeError(f"{source} must be a str such as 'us-east-1', not {type(region).__name__}")
    if _REGION.fullmatch(region) is None:
        raise ValueError(f"{source} must be an AWS region such as 'us-east-1', not {region!r}")
    return region


def _region_of(base_url: str | None, source: str = "base_url") -> str | None:
    """``us-west-2`` from ``https://bedrock-runtime.us-west-2.amazonaws.com``, a FIPS or a VPC endpoint's host
    (``vpce-….bedrock-runtime.us-west-2.vpce.amazonaws.com``); ``None`` for another host.  Bedrock's control-plane
    host (``bedrock.{region}.amazonaws.com``, which serves no Converse) is a ``ValueError`` naming the runtime's."""
    import httpx  # here, not at the top: `import agentactors` does not load httpx

    if not base_url:
        return None
    labels = httpx.URL(base_url).host.lower().split(".")
    if len(labels) >= 4 and labels[0] in ("bedrock", "bedrock-fips") and labels[-2:] == ["amazonaws", "com"]:
        leave = "leave base_url out" if source == "base_url" else f"unset {source}"
        raise ValueError(
            f"{source} {redact(base_url)!r} is Bedrock's control plane, which serves no Converse: the runtime "
            f"endpoint is 'https://bedrock-runtime.{labels[1]}.amazonaws.com' (or {leave})"
        )
    for at, label in enumerate(labels[:-1]):
        if label.startswith("bedrock-runtime") and _REGION.fullmatch(labels[at + 1]):
            return labels[at + 1]
    return None


# The package root serves this class on first use, as agentactors.<name> (where users import it from): it is
# relabelled here, so reprs, tracebacks and pickles say so whichever import loaded this module first.
_reexport.adopt(globals(), ["BedrockProvider"], "agentactors")
