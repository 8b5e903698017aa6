"""Getting and refreshing the credentials of Vertex AI (google-auth's default credentials, a token provider),
Azure (a token provider) and Bedrock (botocore's chain): a hung fetch gives way to a timeout or a cancel scope,
a passing network failure is transient while bad credentials stay an account error, concurrent first calls
fetch once, a 401 on Vertex refreshes the token at the next call, and a token that cannot go in a header (or is
not a str) is an account error that shows neither the token nor the provider's exception text.

Worker threads and a local credentials server are involved: real clocks, generous bounds.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agentactors import AzureOpenAIProvider, BedrockProvider, with_timeout
from agentactors.errors import ErrorKind, ProviderError, ProviderTimeoutError
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider

pytestmark = pytest.mark.anyio

SECRET = "eyJ0eXAiOiJKV1QiSECRETTOKEN0123456789"
GEMINI_OK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}],
             "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1}}
CLAUDE_OK = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5@20250929",
             "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
             "usage": {"input_tokens": 1, "output_tokens": 1}}
BEDROCK_OK = {"output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}}, "stopReason": "end_turn",
              "usage": {"inputTokens": 1, "outputTokens": 1}}
UNAUTHENTICATED = {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                             "status": "UNAUTHENTICATED"}}
# A hung fetch must end at the caller's bound (0.5 s), long before google-auth's own 120 s or botocore's
# ~6-9 s of container retries: this bound is generous for a loaded machine and still far below both.
PROMPT = 5.0


def ask() -> LLMRequest:
    return LLMRequest([Message.user("hi")])


class Vendor:
    """An httpx mock transport answering each request with the next scripted status (then 200s)."""

    def __init__(self, ok: dict[str, Any], *statuses: int) -> None:
        self.ok = ok
        self.statuses = list(statuses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        status = self.statuses.pop(0) if self.statuses else 200
        return httpx.Response(status, json=self.ok if status == 200 else UNAUTHENTICATED)

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self))


def chain_text(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc))


# --- Vertex: google-auth's default credentials ----------------------------------------------------------------


class FakeGoogleCredentials:
    """google-auth's credentials, refreshed in a worker thread: may block, fail, or take a while."""

    def __init__(self) -> None:
        self.token: str | None = None
        self.valid = False
        self.refreshes = 0
        self.delay = 0.0
        self.failure: BaseException | None = None
        self.gate: threading.Event | None = None  # refresh waits on it (a token endpoint that never answers)
        self._lock = threading.Lock()

    def refresh(self, request: object) -> None:
        with self._lock:
            self.refreshes += 1
            n = self.refreshes
        if self.gate is not None:
            self.gate.wait(60)
        if self.delay:
            time.sleep(self.delay)
        if self.failure is not None:
            raise self.failure
        self.token = f"ya29.google-default-{n:04d}-0123456789"
        self.valid = True


class GoogleDefault:
    """Stands in for ``google.auth.default``: counts lookups, may block on a gate."""

    def __init__(self, credentials: FakeGoogleCredentials) -> None:
        self.credentials = credentials
        self.calls = 0
        self.gate: threading.Event | None = None
        self.failure: BaseException | None = None

    def __call__(self, scopes: Any = None, **_: Any) -> tuple[FakeGoogleCredentials, str]:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(60)
        if self.failure is not None:
            raise self.failure
        return self.credentials, "proj"


@pytest.fixture
def google(monkeypatch: pytest.MonkeyPatch) -> Iterator[GoogleDefault]:
    import google.auth

    default = GoogleDefault(FakeGoogleCredentials())
    monkeypatch.setattr(google.auth, "default", default)
    monkeypatch.setattr("google.auth.transport.requests.Request", lambda: object())
    yield default
    for gate in (default.gate, default.credentials.gate):  # let an abandoned worker thread end
        if gate is not None:
            gate.set()


def vertex(kind: str, http: httpx.AsyncClient, token_provider: Any = None) -> GeminiProvider | AnthropicProvider:
    if kind == "gemini":
        return GeminiProvider.vertex("gemini-2.5-flash", project="p", token_provider=token_provider, http_client=http)
    return AnthropicProvider.vertex("claude-sonnet-4-5", project="p", token_provider=token_provider,
                                    http_client=http)


@pytest.mark.parametrize("where", ["lookup", "refresh"])
async def test_a_hung_google_credential_fetch_gives_way_to_with_timeout(google: GoogleDefault, where: str) -> None:
    gate = threading.Event()
    if where == "lookup":
        google.gate = gate
    else:
        google.credentials.gate = gate
    vendor = Vendor(GEMINI_OK)
    async with vendor.client() as http:
        p = with_timeout(vertex("gemini", http), attempt=0.5)
        started = time.perf_counter()
        with pytest.raises(ProviderTimeoutError) as caught:
            await p.complete(ask())
        elapsed = time.perf_counter() - started
    assert caught.value.kind is ErrorKind.transient and caught.value.retryable
    assert elapsed < PROMPT
    assert vendor.requests == []


async def test_a_hung_google_refresh_gives_way_to_an_outside_cancel_scope(google: GoogleDefault) -> None:
    google.credentials.gate = threading.Event()
    async with Vendor(GEMINI_OK).client() as http:
        p = vertex("gemini", http)
        started = time.perf_counter()
        with anyio.move_on_after(0.5) as scope:
            await p.complete(ask())
        elapsed = time.perf_counter() - started
    assert scope.cancelled_caught
    assert elapsed < PROMPT


def _google_exception(name: str) -> BaseException:
    import google.auth.exceptions

    exceptions: Any = google.auth.exceptions  # untyped: its constructors take **kwargs

    makers: dict[str, Callable[[], BaseException]] = {
        "TransportError": lambda: exceptions.TransportError(f"connection refused ({SECRET})"),
        "RefreshError(retryable)": lambda: exceptions.RefreshError(f"internal_failure {SECRET}", retryable=True),
        "google TimeoutError": lambda: exceptions.TimeoutError(f"timed out {SECRET}"),
        "ConnectionError": lambda: ConnectionError(f"reset {SECRET}"),
        "TimeoutError": lambda: TimeoutError(f"timed out {SECRET}"),
        "httpx.ConnectError": lambda: httpx.ConnectError(f"boom {SECRET}"),
        "RefreshError(invalid_grant)": lambda: exceptions.RefreshError(f"invalid_grant: {SECRET}"),
        "DefaultCredentialsError": lambda: exceptions.DefaultCredentialsError(f"no credentials {SECRET}"),
        "google OSError (credential file)": lambda: exceptions.OSError(f"cannot read {SECRET}"),
        "FileNotFoundError": lambda: FileNotFoundError(f"no such file {SECRET}"),
    }
    return makers[name]()


TRANSIENT_GOOGLE = ["TransportError", "RefreshError(retryable)", "google TimeoutError", "ConnectionError",
                    "TimeoutError", "httpx.ConnectError"]
ACCOUNT_GOOGLE = ["RefreshError(invalid_grant)", "DefaultCredentialsError", "google OSError (credential file)",
                  "FileNotFoundError"]


@pytest.mark.parametrize("name", TRANSIENT_GOOGLE + ACCOUNT_GOOGLE)
@pytest.mark.parametrize("where", ["lookup", "refresh"])
async def test_google_credential_failures_are_classified(google: GoogleDefault, name: str, where: str) -> None:
    failure = _google_exception(name)
    if where == "lookup":
        google.failure = failure
    else:
        google.credentials.failure = failure
    vendor = Vendor(GEMINI_OK)
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await vertex("gemini", http).complete(ask())
    err = caught.value
    if name in TRANSIENT_GOOGLE:
        assert (err.kind, err.retryable) == (ErrorKind.transient, True), err
    else:
        assert (err.kind, err.retryable) == (ErrorKind.account, False), err
    assert type(failure).__name__ in str(err)
    assert err.__cause__ is None and err.__context__ is None  # the credential file's contents stay out
    assert SECRET not in chain_text(err)
    assert vendor.requests == []


async def test_a_failing_token_provider_on_vertex_is_classified_like_azures() -> None:
    def unreachable() -> str:
        raise ConnectionError(f"login host unreachable {SECRET}")

    def refused() -> str:
        raise PermissionError(f"denied {SECRET}")

    async with Vendor(GEMINI_OK).client() as http:
        with pytest.raises(ProviderError) as passing:
            await vertex("gemini", http, unreachable).complete(ask())
        with pytest.raises(ProviderError) as lasting:
            await vertex("gemini", http, refused).complete(ask())
    assert (passing.value.kind, passing.value.retryable) == (ErrorKind.transient, True)
    assert (lasting.value.kind, lasting.value.retryable) == (ErrorKind.account, False)
    assert SECRET not in chain_text(passing.value) + chain_text(lasting.value)


@pytest.mark.parametrize("wire", ["gemini", "anthropic"])
async def test_concurrent_calls_fetch_the_google_token_once(google: GoogleDefault, wire: str) -> None:
    google.credentials.delay = 0.3
    vendor = Vendor(GEMINI_OK if wire == "gemini" else CLAUDE_OK)
    async with vendor.client() as http:
        p = vertex(wire, http)

        async def twenty() -> None:
            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(p.complete, ask())

        await twenty()
        assert (google.calls, google.credentials.refreshes) == (1, 1)
        google.credentials.valid = False  # google-auth says so a few minutes before the token expires
        await twenty()
        assert (google.calls, google.credentials.refreshes) == (1, 2)
    assert len(vendor.requests) == 40
    assert {r.headers["authorization"] for r in vendor.requests[20:]} == {
        "Bearer ya29.google-default-0002-0123456789"}


async def test_callers_waiting_for_a_refresh_take_its_token_even_a_short_lived_one(google: GoogleDefault) -> None:
    # A token endpoint granting less than google-auth's margin: the fresh token is already "not valid".
    google.credentials.delay = 0.2
    original = google.credentials.refresh

    def short_lived(request: object) -> None:
        original(request)
        google.credentials.valid = False

    google.credentials.refresh = short_lived  # type: ignore[method-assign]
    vendor = Vendor(GEMINI_OK)
    async with vendor.client() as http:
        p = vertex("gemini", http)
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(p.complete, ask())
    assert google.credentials.refreshes == 1
    assert len(vendor.requests) == 20


@pytest.mark.parametrize("wire", ["gemini", "anthropic"])
@pytest.mark.parametrize("streamed", [False, True])
async def test_a_401_on_vertex_refreshes_the_google_token_at_the_next_call(
    google: GoogleDefault, wire: str, streamed: bool
) -> None:
    vendor = Vendor(GEMINI_OK if wire == "gemini" else CLAUDE_OK, 200, 401, 200)
    async with vendor.client() as http:
        p = vertex(wire, http)
        await p.complete(ask())
        with pytest.raises(ProviderError) as caught:
            if streamed:
                async with p.stream(ask()) as events:
                    async for _ in events:
                        pass
            else:
                await p.complete(ask())
        assert caught.value.kind is ErrorKind.account  # this call fails: the token was sent already
        await p.complete(ask())
    assert google.credentials.refreshes == 2
    assert [r.headers["authorization"][-15:] for r in vendor.requests] == [
        "0001-0123456789", "0001-0123456789", "0002-0123456789"]


@pytest.mark.parametrize("bad", [SECRET[:10] + "\n" + SECRET[10:], SECRET[:10] + " " + SECRET[10:], SECRET + "é"])
async def test_a_vertex_token_that_cannot_go_in_a_header_is_an_account_error(bad: str) -> None:
    vendor = Vendor(GEMINI_OK)
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await vertex("gemini", http, lambda: bad).complete(ask())
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)
    assert "token_provider" in str(caught.value)
    text = chain_text(caught.value)
    assert SECRET[:10] not in text and SECRET[10:] not in text
    assert vendor.requests == []


async def test_a_vertex_token_with_a_trailing_newline_is_stripped_and_sent() -> None:
    vendor = Vendor(GEMINI_OK)
    async with vendor.client() as http:
        await vertex("gemini", http, lambda: SECRET + "\n").complete(ask())
    assert vendor.requests[0].headers["authorization"] == f"Bearer {SECRET}"


# --- Azure: a token provider ----------------------------------------------------------------------------------


def azure(http: httpx.AsyncClient, token_provider: Callable[[], Any]) -> AzureOpenAIProvider:
    return AzureOpenAIProvider("dep", endpoint="https://unit.openai.azure.com", token_provider=token_provider,
                               model="gpt-4o", http_client=http)


class AccessToken:
    def __repr__(self) -> str:
        return f"AccessToken({SECRET})"


@pytest.mark.parametrize("answer", [None, SECRET.encode(), AccessToken(), "", SECRET[:10] + "\n" + SECRET[10:]],
                         ids=["None", "bytes", "object", "empty", "inner newline"])
async def test_an_azure_token_provider_answer_that_is_no_usable_str_is_an_account_error(answer: Any) -> None:
    vendor = Vendor({})
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await azure(http, lambda: answer).complete(ask())
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.account, False)
    text = chain_text(caught.value)
    assert SECRET[:10] not in text and SECRET[10:] not in text
    assert vendor.requests == []


async def test_an_azure_token_provider_failure_shows_the_type_never_the_text() -> None:
    def broken() -> str:
        raise RuntimeError(f"refresh failed for {SECRET}")

    def unreachable() -> str:
        raise ConnectionError(f"login.microsoftonline.com unreachable {SECRET}")

    async with Vendor({}).client() as http:
        with pytest.raises(ProviderError) as lasting:
            await azure(http, broken).complete(ask())
        with pytest.raises(ProviderError) as passing:
            await azure(http, unreachable).complete(ask())
    assert "RuntimeError" in str(lasting.value) and "ConnectionError" in str(passing.value)
    assert (lasting.value.kind, passing.value.kind) == (ErrorKind.account, ErrorKind.transient)
    assert passing.value.retryable and not lasting.value.retryable
    for err in (lasting.value, passing.value):
        assert err.__cause__ is None and err.__context__ is None
        assert SECRET not in chain_text(err)


# --- Bedrock: botocore's chain, container credentials from a local server --------------------------------------


class ContainerCredentials:
    """The container credentials endpoint (``AWS_CONTAINER_CREDENTIALS_FULL_URI``) on 127.0.0.1."""

    def __init__(self) -> None:
        self.hits = 0
        self.mode = "ok"  # ok | hang | 500
        self.delay = 0.0
        self.gate = threading.Event()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with outer._lock:
                    outer.hits += 1
                if outer.delay:
                    time.sleep(outer.delay)
                if outer.mode == "hang":
                    outer.gate.wait(60)
                    return
                if outer.mode == "500":
                    body = b"{}"
                    self.send_response(500)
                else:
                    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=6)
                    body = json.dumps({"AccessKeyId": "ASIACONTAINERKEYID01", "SecretAccessKey": SECRET,
                                       "Token": "IQoJcontainer-session-token-0000",
                                       "Expiration": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}).encode()
                    self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/creds"

    def close(self) -> None:
        self.gate.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def container(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[ContainerCredentials]:
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    server = ContainerCredentials()
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url)
    try:
        yield server
    finally:
        server.close()


def bedrock(http: httpx.AsyncClient) -> BedrockProvider:
    return BedrockProvider("us.amazon.nova-pro-v1:0", region="us-east-1", http_client=http)


async def test_concurrent_first_calls_resolve_aws_credentials_once(container: ContainerCredentials) -> None:
    container.delay = 0.3
    vendor = Vendor(BEDROCK_OK)
    async with vendor.client() as http:
        p = bedrock(http)
        async with anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(p.complete, ask())
    assert container.hits == 1
    assert len(vendor.requests) == 20


async def test_a_failing_container_credentials_endpoint_is_transient(container: ContainerCredentials) -> None:
    container.mode = "500"
    vendor = Vendor(BEDROCK_OK)
    async with vendor.client() as http:
        with pytest.raises(ProviderError) as caught:
            await bedrock(http).complete(ask())
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.transient, True)
    assert "CredentialRetrievalError" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert vendor.requests == []


@pytest.mark.parametrize("bound", ["with_timeout", "move_on_after"])
async def test_a_hung_container_credentials_fetch_gives_way(container: ContainerCredentials, bound: str) -> None:
    container.mode = "hang"
    vendor = Vendor(BEDROCK_OK)
    async with vendor.client() as http:
        started = time.perf_counter()
        if bound == "with_timeout":
            with pytest.raises(ProviderTimeoutError):
                await with_timeout(bedrock(http), attempt=0.5).complete(ask())
        else:
            with anyio.move_on_after(0.5) as scope:
                await bedrock(http).complete(ask())
            assert scope.cancelled_caught
        elapsed = time.perf_counter() - started
    assert elapsed < PROMPT
    assert vendor.requests == []


def test_botocore_network_failures_are_transient_and_missing_credentials_are_not() -> None:
    import importlib

    from agentactors.providers.http.bearer import credential_failure

    exceptions: Any = importlib.import_module("botocore.exceptions")  # untyped
    transient = [exceptions.CredentialRetrievalError(provider="container-role", error_msg="500"),
                 exceptions.EndpointConnectionError(endpoint_url="http://169.254.170.2"),
                 exceptions.ConnectTimeoutError(endpoint_url="http://169.254.170.2"),
                 exceptions.ReadTimeoutError(endpoint_url="http://169.254.170.2")]
    account = [exceptions.NoCredentialsError(), exceptions.ProfileNotFound(profile="nope"),
               exceptions.PartialCredentialsError(provider="env", cred_var="AWS_SECRET_ACCESS_KEY")]
    for exc in transient:
        err = credential_failure(exc, "AWS credentials could not be resolved", provider="bedrock", model="m")
        assert (err.kind, err.retryable) == (ErrorKind.transient, True), exc
    for exc in account:
        err = credential_failure(exc, "AWS credentials could not be resolved", provider="bedrock", model="m")
        assert (err.kind, err.retryable) == (ErrorKind.account, False), exc


# --- one provider, one event loop after another (either backend) -------------------------------------------------


def test_the_credential_lock_follows_the_event_loop(google: GoogleDefault, container: ContainerCredentials) -> None:
    """The lock is made in the loop that needs it: a provider used under asyncio, then trio, then asyncio
    again still fetches once per need, with concurrent callers waiting on a lock of their own loop."""
    google.credentials.delay = 0.2
    container.delay = 0.2
    gemini_vendor, bedrock_vendor = Vendor(GEMINI_OK), Vendor(BEDROCK_OK)
    gemini_http, bedrock_http = gemini_vendor.client(), bedrock_vendor.client()  # mock transports: no sockets
    p = vertex("gemini", gemini_http)
    b = bedrock(bedrock_http)

    async def five_each() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(p.complete, ask())
                tg.start_soon(b.complete, ask())

    for backend in ("asyncio", "trio", "asyncio"):
        google.credentials.valid = False
        anyio.run(five_each, backend=backend)
    assert (google.calls, google.credentials.refreshes) == (1, 3)
    assert container.hits == 1
    assert (len(gemini_vendor.requests), len(bedrock_vendor.requests)) == (15, 15)
