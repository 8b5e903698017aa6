"""The demo's provider chain: one member per endpoint, each behind breaker, retry and timeout.

``build_chain`` makes the recommended stack, as is, over the fake vendor's endpoints
(:func:`offline_members`: OpenAI Chat Completions, OpenAI Responses, an Azure OpenAI
deployment, Anthropic, Gemini on Vertex AI and, with the ``[bedrock]`` extra, Bedrock)
or the real vendors whose keys are in the environment; every request it sends is
stamped with the client's send time and its run (see :data:`SENT_AT_HEADER`), so
the report can check that none reached a member while its breaker was open.
"""

from __future__ import annotations

import importlib.util
import os
import random
from collections.abc import Mapping, Sequence

import anyio
import attrs
import httpx

from ..errors import ErrorKind, ProviderError
from ..events import current_run_id
from ..messages import LLMRequest, LLMResponse
from ..providers.anthropic.provider import AnthropicProvider
from ..providers.azure import AzureOpenAIProvider
from ..providers.bedrock.provider import BedrockProvider
from ..providers.gemini.provider import GeminiProvider
from ..providers.openai.provider import OpenAIProvider
from ..providers.port import LLMProvider, StreamContext
from ..providers.responses.provider import OpenAIResponsesProvider
from ..resilience import CircuitBreakerProvider, FallbackProvider, resilient_chain, with_fallback
from ..resilience.decorator import ProviderDecorator
from .vendor import endpoint_of_path

__all__ = [
    "RUN_HEADER",
    "SENT_AT_HEADER",
    "DemoSettings",
    "Member",
    "Stamper",
    "VendorSpec",
    "build_chain",
    "fake_endpoint",
    "live_members",
    "offline_endpoints",
    "offline_members",
    "request_bound",
]

SENT_AT_HEADER = "x-demo-sent-at"
RUN_HEADER = "x-demo-run"



@attrs.frozen(slots=True)
class DemoSettings:
    """The fleet's parameters: the chain's (short, so one run shows a whole breaker cycle), the vendor's, the outage's.

    The first outage opens once ``outage_after`` of the expected model calls
    (about three a task) were answered and takes the primary down for
    ``outage_duration`` seconds; every further ``outage_every`` of them, another
    outage takes the primary down again with one more member beside it (the
    k-th outage: the first k members, for ``outage_lengthening`` seconds more than
    the one before it, as a request needs longer to find its way past more members),
    so that every member of the chain is seen serving, the last one in the last
    outage.  ``vendor_latency`` is the fake
    vendor's time to answer; every ``stream_every``-th run streams (``0``: none).
    """

    attempt_timeout: float = 5.0
    first_event_timeout: float = 3.0
    idle_timeout: float = 3.0
    max_attempts: int = 3
    base_delay: float = 0.05
    max_delay: float = 0.4
    max_retry_after: float = 2.0
    window: float = 10.0
    min_calls: int = 20
    failure_rate: float = 0.5
    consecutive_failures: int = 5
    open_duration: float = 0.5
    max_open_duration: float = 2.0
    max_half_open_wait: float = 2.0
    max_concurrency: int = 16
    max_steps: int = 6
    outage_after: float = 0.15
    outage_every: float = 0.15
    outage_duration: float = 2.5
    outage_lengthening: float = 1.0
    vendor_latency: float = 0.02
    stream_every: int = 2

    @classmethod
    def for_live(cls) -> DemoSettings:
        """Real models take seconds to answer: the same chain with timeouts that suit them."""
        return cls(attempt_timeout=90.0, first_event_timeout=45.0, idle_timeout=45.0, max_retry_after=20.0)


@attrs.frozen(slots=True)
class VendorSpec:
    """One member of the chain before it is built: endpoint, model, where and with which key.

    ``wire`` names the endpoint (and the member: its provider's name, its breaker's key):
    ``openai``, ``openai-responses``, ``azure-openai``, ``anthropic``, ``gemini``, ``gemini-vertex``
    or ``bedrock``.  ``model`` is what the member is bound to (an Azure deployment's name; its
    underlying model is ``underlying``).  The key is the credential of every kind: an API key, a
    bearer token (Vertex), or an access key id and secret (Bedrock, the demo's fake signs with one).
    """

    wire: str
    model: str
    base_url: str
    api_key: str = attrs.field(repr=False)
    underlying: str | None = None


@attrs.frozen(slots=True)
class Member:
    """A built member: its breaker (to read its state and key) and the decorated provider."""

    wire: str
    model: str
    breaker: CircuitBreakerProvider


#: The offline chain, in order: ``(endpoint, model, underlying model)``.  Bedrock needs botocore.
_OFFLINE: tuple[tuple[str, str, str | None], ...] = (
    ("openai", "gpt-4o-mini", None),
    ("openai-responses", "gpt-4.1-mini", None),
    ("azure-openai", "demo-gpt-4o-mini", "gpt-4o-mini"),  # a deployment, and the model it serves
    ("anthropic", "claude-3-5-haiku-latest", None),
    ("gemini-vertex", "gemini-2.0-flash", None),
    ("bedrock", "us.amazon.nova-micro-v1:0", None),
)
#: The FakeVendor's wire for each endpoint (what its outages and faults are keyed by, with the model).
_FAKE_WIRES = {"openai": "openai", "openai-responses": "responses", "azure-openai": "openai",
               "anthropic": "anthropic", "gemini": "gemini", "gemini-vertex": "gemini", "bedrock": "bedrock"}
_VERTEX_PROJECT = "agentactors-demo"
_REGION = "us-east-1"


def _has_botocore() -> bool:
    return importlib.util.find_spec("botocore") is not None


def offline_endpoints() -> list[tuple[str, str]]:
    """``(endpoint, model)`` of each offline member, in chain order: six, or five without botocore."""
    return [(wire, model) for wire, model, _ in _OFFLINE if wire != "bedrock" or _has_botocore()]


def offline_members(base_url: str, api_key: str) -> list[VendorSpec]:
    """The FakeVendor's endpoints: a Chat Completions primary, then Responses, Azure, Anthropic, Vertex, Bedrock.

    ``api_key`` is every member's credential (so it must be what an AWS access key id may be: letters
    and digits).  Bedrock joins the chain when botocore (the ``[bedrock]`` extra) is installed.
    """
    urls = {"openai": base_url + "/v1", "openai-responses": base_url + "/v1"}
    names = dict(offline_endpoints())
    return [
        VendorSpec(wire, model, urls.get(wire, base_url), api_key, underlying)
        for wire, model, underlying in _OFFLINE
        if wire in names
    ]


def fake_endpoint(spec: VendorSpec) -> tuple[str, str]:
    """``(wire, model)`` as the FakeVendor sees ``spec``'s requests: what an outage there is keyed by."""
    return _FAKE_WIRES[spec.wire], spec.model


_LIVE: tuple[tuple[str, tuple[str, ...], str, str, str], ...] = (
    # wire, key variables, base-url variable, default base url, default model
    ("openai", ("OPENAI_API_KEY",), "OPENAI_BASE_URL", "https://api.openai.com/v1", "gpt-4o-mini"),
    ("anthropic", ("ANTHROPIC_API_KEY",), "ANTHROPIC_BASE_URL", "https://api.anthropic.com", "claude-3-5-haiku-latest"),
    ("gemini", ("GEMINI_API_KEY", "GOOGLE_API_KEY"), "GEMINI_BASE_URL", "https://generativelanguage.googleapis.com",
     "gemini-2.0-flash"),
)


def live_members(environ: Mapping[str, str] | None = None) -> list[VendorSpec]:
    """The vendors whose API key is in the environment, in chain order (OpenAI, Anthropic, Gemini).

    Models can be overridden with ``AGENTACTORS_DEMO_<WIRE>_MODEL`` and endpoints with the
    usual ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` / ``GEMINI_BASE_URL``.
    """
    env = os.environ if environ is None else environ
    found = []
    for wire, key_vars, url_var, url, model in _LIVE:
        key = next((env[v] for v in key_vars if env.get(v)), None)
        if key:
            found.append(VendorSpec(
                wire,
                env.get(f"AGENTACTORS_DEMO_{wire.upper()}_MODEL") or model,
                env.get(url_var) or url,
                key,
            ))
    return found


def request_bound(agents: int, members: int, settings: DemoSettings, *, reruns: bool = True) -> int:
    """The most HTTP requests a fleet can send: every step of every run trying every member to exhaustion."""
    per_run = settings.max_steps * members * settings.max_attempts
    return agents * per_run * (2 if reruns else 1)


# --- client-side fault injection for --live (a real vendor cannot be told to fail) ---------------


class _InjectFaults(ProviderDecorator):
    """Fails a share of calls *before sending them*, as a 503 would: for ``--live --fault-rate R``."""

    def __init__(self, inner: LLMProvider, rate: float, seed: int) -> None:
        super().__init__(inner)
        self._rate = rate
        self._rng = random.Random(f"live-faults-{seed}")

    def _maybe_fail(self, request: LLMRequest) -> None:
        if self._rng.random() < self._rate:
            raise ProviderError(
                "injected by the demo (no request was sent)",
                provider=self.name,
                model=request.model or self.default_model,
                kind=ErrorKind.transient,
                status=503,
            )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self._maybe_fail(request)
        return await self.inner.complete(request)

    def stream(self, request: LLMRequest) -> StreamContext:
        self._maybe_fail(request)
        return self.inner.stream(request)


# --- building the chain --------------------------------------------------------------------------


class Stamper:
    """The HTTP client's request hook: stamps each request (see :data:`SENT_AT_HEADER`) and logs it.

    ``sent`` is the client's own log, ``(wire, sent_at, run_id)`` per request:
    the only record there is when the demo talks to real vendors.
    """

    def __init__(self) -> None:
        self.sent: list[tuple[str, float, str | None]] = []

    async def __call__(self, request: httpx.Request) -> None:
        now = anyio.current_time()
        run_id = current_run_id()
        request.headers[SENT_AT_HEADER] = repr(now)
        if run_id is not None:
            request.headers[RUN_HEADER] = run_id
        self.sent.append((endpoint_of_path(request.url.path), now, run_id))


def _provider(spec: VendorSpec, client: httpx.AsyncClient) -> LLMProvider:
    """The member's provider, named after its endpoint (so are its breaker's key and its failovers)."""
    key, url, name = spec.api_key, spec.base_url, spec.wire
    if spec.wire == "openai":
        # FakeVendor declares forced tool choice like OpenAI does; say so for a compatible server.
        return OpenAIProvider(spec.model, api_key=key, base_url=url, http_client=client,
                              carries_forced_tool_choice=True, name=name)
    if spec.wire == "openai-responses":
        return OpenAIResponsesProvider(spec.model, api_key=key, base_url=url, http_client=client, name=name)
    if spec.wire == "azure-openai":
        return AzureOpenAIProvider(spec.model, endpoint=url, api_key=key, model=spec.underlying, http_client=client,
                                   name=name)
    if spec.wire == "anthropic":
        return AnthropicProvider(spec.model, api_key=key, base_url=url, http_client=client, name=name)
    if spec.wire == "gemini-vertex":
        return GeminiProvider.vertex(spec.model, project=_VERTEX_PROJECT, token_provider=lambda: key,
                                     http_client=client, base_url=url, name=name)
    if spec.wire == "bedrock":
        return BedrockProvider(spec.model, region=_REGION, access_key_id=key, secret_access_key=key,
                               base_url=url, http_client=client, name=name)
    return GeminiProvider(spec.model, api_key=key, base_url=url, http_client=client, name=name)


def build_chain(
    specs: Sequence[VendorSpec],
    client: httpx.AsyncClient,
    settings: DemoSettings,
    *,
    client_faults: float = 0.0,
    seed: int = 0,
) -> tuple[LLMProvider, list[Member]]:
    """The recommended stack over ``specs``, in order: ``resilient_chain`` with the demo's settings.

    That is ``with_fallback(with_circuit_breaker(with_retry(with_timeout(p))), ...)``, as is: a
    member's retry sends no further attempt once that member's breaker has opened (the breaker's
    permit travels with the call it admitted), so the demo needs nothing of its own to keep its promise.
    """
    bases: list[LLMProvider] = []
    for n, spec in enumerate(specs):
        base: LLMProvider = _provider(spec, client)
        if client_faults > 0 and n == 0:
            base = _InjectFaults(base, client_faults, seed)
        bases.append(base)
    chain = resilient_chain(
        *bases,
        attempt_timeout=settings.attempt_timeout,
        first_event_timeout=settings.first_event_timeout,
        idle_timeout=settings.idle_timeout,
        max_attempts=settings.max_attempts,
        retry={
            "base_delay": settings.base_delay,
            "max_delay": settings.max_delay,
            "max_retry_after": settings.max_retry_after,
        },
        breaker={
            "window": settings.window,
            "min_calls": settings.min_calls,
            "failure_rate": settings.failure_rate,
            "consecutive_failures": settings.consecutive_failures,
            "open_duration": settings.open_duration,
            "max_open_duration": settings.max_open_duration,
            "max_half_open_wait": settings.max_half_open_wait,
        },
    )
    if not isinstance(chain, FallbackProvider):
        # One vendor (--live with one key): still a chain, so a failure reads the same as with three.
        chain = with_fallback(chain)
    members = [
        Member(spec.wire, spec.model, breaker)
        for spec, breaker in zip(specs, chain.members, strict=True)
        if isinstance(breaker, CircuitBreakerProvider)
    ]
    return chain, members
