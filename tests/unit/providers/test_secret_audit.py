"""A secrets audit of every wire: canary credentials through every failure a hostile vendor can cause.

Each provider (OpenAI, Anthropic, Gemini, OpenAI Responses, Azure with a key and with an Entra ID token
provider, Bedrock with an access key id, secret key and session token, Vertex with a token provider and with a
service account's default credentials) is driven against :class:`~tests.support.echo_vendor.EchoVendor`, whose
every answer repeats the credentials it was sent: 401/403 bodies and headers, a redirect's ``Location``, a
malformed body, a wrong shape, a failure mid-stream, a timeout; then connection refused and a TLS handshake
with a plain server.  Nothing may show a canary, nor its first 8 characters: not an exception (its ``str``,
``repr``, args, attributes, notes, pickle, whole cause and context chain), a log record at DEBUG (message,
traceback and ``extra`` attributes), an event (in memory and in a JsonlRecorder file), an OTel span, or a
repr of a provider or of a with_retry / with_fallback / with_circuit_breaker chain.

The leaks this closed: a vendor's request id (from a header or the body) kept verbatim on the error (its
``__dict__``, so its pickle); the AWS access key id unregistered; a bearer token answered with surrounding
whitespace registered only in its raw form; a ``JSONDecodeError`` whose ``.doc`` held the echoed body kept as
a cause (streams) or ``__context__`` (a malformed body); google-auth's debug records carrying the signed JWT
assertion of the service-account flow in their ``extra``.
"""

from __future__ import annotations

import json
import logging
import pickle
import secrets
import traceback
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentactors import Agent, InMemoryRecorder, JsonlRecorder, Runtime, with_circuit_breaker, with_fallback, with_retry
from agentactors._scrub import scrub_chain
from agentactors.errors import ErrorKind, ProviderError, RedactedException
from agentactors.messages import LLMRequest, Message
from agentactors.otel import OTelRecorder
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.azure import AzureOpenAIProvider
from agentactors.providers.bedrock.decode import classify_error as bedrock_classify
from agentactors.providers.bedrock.provider import BedrockProvider
from agentactors.providers.errors import classify_http_error
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.bearer import BearerTokens
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.responses.provider import OpenAIResponsesProvider
from agentactors.redaction import register_secret
from tests.support.echo_vendor import MODES, EchoVendor

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180)]

REQUEST = LLMRequest([Message.user("hi")])
_LOGGERS = ("httpx", "httpcore", "aiohttp", "asyncio", "agentactors", "hpack", "h11", "botocore", "google", "urllib3")


def canary(label: str) -> str:
    """A credential never seen before (not key-shaped: only registration can mask it), unique per call."""
    return f"cny{label}{secrets.token_hex(8)}"


def chain_texts(exc: BaseException) -> list[str]:
    """Everything an exception keeps reachable: texts, args, attributes, notes, pickle, cause and context."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        out += [str(cur), repr(cur), repr(cur.args), repr(getattr(cur, "__dict__", {}))]
        out += [str(n) for n in getattr(cur, "__notes__", None) or ()]
        # An httpx error's pickle carries its request's headers: test_a_kept_httpx_cause_holds_no_request_headers.
        if not isinstance(cur, httpx.HTTPError):
            try:
                out.append(repr(pickle.dumps(cur)))
            except Exception as failure:  # an unpicklable link has nothing to ship
                out.append(type(failure).__name__)
        todo += [e for e in (cur.__cause__, cur.__context__) if e is not None]
        todo += list(getattr(cur, "exceptions", ()))
    return out


def leaks(texts: list[str], secrets_: list[str]) -> list[str]:
    """Each text holding a secret, or its first 8 characters, shown around the hit."""
    found = []
    for text in texts:
        for secret in secrets_:
            for piece in (secret, secret[:8]):
                at = text.find(piece)
                if at >= 0:
                    found.append(f"{secret[:8]}…: {text[max(0, at - 120):at + 40]!r}")
    return found


def record_texts(records: list[logging.LogRecord]) -> list[str]:
    return [f"{r.getMessage()} {r.exc_text or ''} {r.stack_info or ''} {vars(r)!r}" for r in records]


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every logger at DEBUG; google's too (it does not propagate unless configured, so it gets the handler)."""
    caplog.set_level(logging.DEBUG)
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG)
    google = logging.getLogger("google")
    google.addHandler(caplog.handler)
    try:
        yield caplog
    finally:
        google.removeHandler(caplog.handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def service_account(tmp_path: Path, token_uri: str) -> tuple[Path, list[str]]:
    """A service-account JSON with a fresh private key; the key's base64 lines are the canaries."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    info = {"type": "service_account", "project_id": "p", "private_key_id": "kid", "private_key": pem,
            "client_email": "sa@p.iam.gserviceaccount.com", "client_id": "1", "token_uri": token_uri}
    path = tmp_path / "sa.json"
    path.write_text(json.dumps(info))
    return path, [line for line in pem.splitlines() if not line.startswith("-----")]


class Credentials:
    """One canary per credential of every wire."""

    def __init__(self) -> None:
        self.openai, self.anthropic, self.gemini = canary("OA"), canary("AN"), canary("GE")
        self.responses, self.azure, self.azure_ad = canary("RE"), canary("AZ"), canary("AD")
        self.akid = "AKIA" + secrets.token_hex(8).upper()
        self.aws_secret, self.aws_session = canary("SK") + "/x+y", canary("ST") + "/z+w"
        self.vertex, self.google = canary("VX"), canary("GO")

    def all(self) -> list[str]:
        return [v for v in vars(self).values() if isinstance(v, str)]


def providers(c: Credentials, base: str, timeout: float) -> dict[str, Any]:
    """Every wire, with canary credentials; the token providers answer with surrounding whitespace."""
    return {
        "openai": OpenAIProvider("gpt-4o", api_key=c.openai, base_url=base + "/v1", timeout=timeout),
        "anthropic": AnthropicProvider("claude-x", api_key=c.anthropic, base_url=base, timeout=timeout),
        "gemini": GeminiProvider("gemini-2.5-flash", api_key=c.gemini, base_url=base, timeout=timeout),
        "responses": OpenAIResponsesProvider("gpt-4o", api_key=c.responses, base_url=base + "/v1", timeout=timeout),
        "azure": AzureOpenAIProvider("dep", endpoint=base, api_key=c.azure, timeout=timeout),
        "azure-responses": AzureOpenAIProvider("dep", endpoint=base, api_key=c.azure, api="responses",
                                               timeout=timeout),
        "azure-ad": AzureOpenAIProvider("dep", endpoint=base, token_provider=lambda: c.azure_ad + "\n",
                                        timeout=timeout),
        "bedrock": BedrockProvider("anthropic.claude-x", region="us-east-1", access_key_id=c.akid,
                                   secret_access_key=c.aws_secret, session_token=c.aws_session, base_url=base,
                                   timeout=timeout),
        "vertex": GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=lambda: f" {c.vertex}\n",
                                        base_url=base, timeout=timeout),
        "vertex-claude": AnthropicProvider.vertex("claude-x", project="p", token_provider=lambda: f" {c.vertex}\n",
                                                  base_url=base, timeout=timeout),
        "vertex-adc": GeminiProvider.vertex("gemini-2.5-flash", project="p", base_url=base, timeout=timeout),
    }


async def failures(provider: Any) -> list[str]:
    """The texts of a complete() and of a stream() of ``provider``: each answer, or each error's whole chain."""
    out: list[str] = []
    for streaming in (False, True):
        try:
            if streaming:
                async with provider.stream(REQUEST) as events:
                    out += [repr(event) async for event in events]
            else:
                out.append(repr(await provider.complete(REQUEST)))
        except Exception as exc:
            out += chain_texts(exc)
    return out


async def side_by_side(wires: Iterable[Any]) -> list[str]:
    """:func:`failures` of every provider, all at once, each closed after: the vendor answers each connection
    on its own, so the ``hang`` mode waits out one client timeout, not one per wire and call."""
    out: list[str] = []

    async def one(provider: Any) -> None:
        try:
            out.extend(await failures(provider))
        finally:
            await provider.aclose()

    async with anyio.create_task_group() as group:
        for provider in wires:
            group.start_soon(one, provider)
    return out


@pytest.mark.parametrize("sender", ["auto", "httpx"])
async def test_no_wire_shows_a_credential_on_any_failure(
    sender: str, tmp_path: Path, debug_logs: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every wire, every failure mode, on both owned senders: the default (the h11 sender: no proxy is configured,
    ``NO_PROXY`` alone is none) and httpx's client (what an environment with a proxy gets)."""
    monkeypatch.setenv("AGENTACTORS_HTTP_TRANSPORT", sender)
    c = Credentials()
    seen: list[str] = []
    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    async with EchoVendor(access_token=c.google) as vendor:
        sa_path, key_lines = service_account(tmp_path, f"{vendor.base_url}/token")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(sa_path))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        for mode in MODES:
            vendor.mode = mode
            wires = providers(c, vendor.base_url, 0.5 if mode == "hang" else 10.0).values()
            seen += [text for provider in wires for text in (repr(provider), str(provider))]
            seen += await side_by_side(wires)
        plain_over_tls = f"https://127.0.0.1:{vendor.port}"
        for base in ("http://127.0.0.1:9", plain_over_tls):  # nothing listens on port 9: refused
            seen += await side_by_side(providers(c, base, 2.0).values())
        vendor.mode = "echo401"
        members = providers(c, vendor.base_url, 10.0)
        chain = with_fallback(
            with_circuit_breaker(with_retry(members["bedrock"], max_attempts=2, base_delay=0.01), min_calls=1,
                                 consecutive_failures=1),
            with_retry(members["azure-ad"], max_attempts=2, base_delay=0.01), members["vertex-adc"], members["openai"])
        memory, jsonl = InMemoryRecorder(), tmp_path / "events.jsonl"
        recorder = JsonlRecorder(str(jsonl))
        async with Runtime(recorders=[memory, recorder, OTelRecorder(tracing)]) as rt:
            for provider in (chain, members["azure"], members["gemini"]):
                result = (await rt.run_many(Agent(provider, nudges=False), ["hello"], concurrency=1))[0]
                seen += [repr(result), repr(provider)]
                if result.error is not None:
                    seen += chain_texts(result.error)
        seen += chain_texts(await _raised(chain))
        for member in members.values():
            await member.aclose()
        getattr(recorder, "close", lambda: None)()
    seen += [repr(e) for e in memory.events] + [jsonl.read_text()]
    for span in exporter.get_finished_spans():
        seen += [span.name, repr(span.attributes), repr(span.status.description)]
        seen += [f"{e.name} {e.attributes!r}" for e in span.events]
    seen += record_texts(debug_logs.records)
    assert memory.events and exporter.get_finished_spans() and debug_logs.records
    assert vendor.token_requests, "the service-account flow ran against the local token endpoint"
    assert not leaks(seen, [*c.all(), *key_lines]), leaks(seen, [*c.all(), *key_lines])[:5]


async def _raised(provider: Any) -> BaseException:
    with pytest.raises(Exception) as caught:
        await provider.complete(REQUEST)
    return caught.value


# --- each leak on its own ------------------------------------------------------------------------------


def test_an_echoed_request_id_is_redacted() -> None:
    secret = canary("RID")
    register_secret(secret)
    for err in (
        classify_http_error(401, {"x-request-id": f"Bearer{secret}"}, b"{}", provider="p"),
        classify_http_error(401, None, json.dumps({"request_id": secret}).encode(), provider="p"),
        bedrock_classify(400, {"x-amzn-requestid": secret, "x-amzn-errortype": "ThrottlingException"},
                         json.dumps({"message": "slow down"}).encode(), provider="p", model="m"),
    ):
        assert err.request_id is not None and secret not in err.request_id
        assert secret.encode() not in pickle.dumps(err)


def test_a_cause_holding_a_credential_only_in_an_attribute_is_replaced() -> None:
    secret = canary("DOC")
    register_secret(secret)
    with pytest.raises(json.JSONDecodeError) as caught:
        json.loads(f'{{"echo": "{secret}", ')
    assert secret not in str(caught.value) + repr(caught.value)  # the message is clean; .doc is not
    kept = scrub_chain(caught.value)
    assert isinstance(kept, RedactedException)
    assert not leaks(chain_texts(kept), [secret])
    assert not isinstance(scrub_chain(ValueError("clean")), RedactedException)
    assert isinstance(scrub_chain(UnicodeDecodeError("utf-8", b"x" * 5000, 0, 1, "bad")), RedactedException)


def test_a_kept_httpx_cause_holds_no_request_headers() -> None:
    secret = canary("REQ")
    register_secret(secret)
    request = httpx.Request(
        "POST", f"http://127.0.0.1:9/v1/x?key={secret}", headers={"authorization": f"Bearer {secret}"},
        content=secret.encode(),
    )
    kept = scrub_chain(httpx.ReadTimeout("timed out", request=request))
    assert isinstance(kept, httpx.TransportError)  # kept as itself: callers tell a network failure by its type
    assert secret.encode() not in pickle.dumps(kept) and secret[:8].encode() not in pickle.dumps(kept)
    assert str(kept.request.url) == "http://127.0.0.1:9/v1/x"


async def test_a_malformed_body_keeps_no_context() -> None:
    secret = canary("CTX")
    async with EchoVendor() as vendor:
        vendor.mode = "malformed"
        async with OpenAIProvider("gpt-4o", api_key=secret, base_url=vendor.base_url + "/v1") as provider:
            err = await _raised(provider)
    assert isinstance(err, ProviderError) and err.__context__ is None and err.__cause__ is None
    assert not leaks(chain_texts(err), [secret])


@pytest.mark.parametrize("answer", [" {t}\n", "{t}\r\n", "\t{t}"])
async def test_a_token_with_surrounding_whitespace_is_registered_as_sent(answer: str) -> None:
    for make in (_vertex_token, _azure_token):
        secret = canary("WS")
        sent = await make(answer.format(t=secret))
        assert sent == secret
        err = classify_http_error(401, {"x-request-id": secret}, b"{}", provider="p")
        assert err.request_id == "[REDACTED]"


async def _vertex_token(answer: str) -> str:
    return await BearerTokens(lambda: answer, provider="vertex").token("m")


async def _azure_token(answer: str) -> str:
    provider = AzureOpenAIProvider("dep", endpoint="http://127.0.0.1:9", token_provider=lambda: answer)
    return await provider._token("dep")


def test_the_aws_access_key_id_is_registered() -> None:
    akid = "AKIA" + secrets.token_hex(8).upper()
    provider = BedrockProvider("m", region="us-east-1", access_key_id=akid, secret_access_key=canary("S"))
    err = ProviderError(f"Credential={akid}/20250101/us-east-1/bedrock", provider="b", kind=ErrorKind.account)
    assert akid not in str(err) + repr(err) + repr(provider)


async def test_google_auth_debug_records_hold_no_assertion(
    tmp_path: Path, debug_logs: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = canary("GAT")
    async with EchoVendor(access_token=token) as vendor:
        sa_path, key_lines = service_account(tmp_path, f"{vendor.base_url}/token")
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(sa_path))
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        tokens = BearerTokens(None, provider="vertex")
        assert await tokens.token("m") == token
    (request,) = vendor.token_requests
    assertion = dict(pair.split("=", 1) for pair in request.decode().split("&"))["assertion"]
    texts = record_texts(debug_logs.records)
    assert any("httpRequest" in t for t in texts), "google-auth logged its token request"
    assert not leaks(texts, [assertion, token, *key_lines]), leaks(texts, [assertion, token])[:3]


