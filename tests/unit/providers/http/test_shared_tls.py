"""One default client TLS context for the process, shared by every owned sender not given its own.

Each owned sender used to build httpx's default context (certifi's bundle loaded: ~20 ms of CPU and over a MB)
on its first https request (the h11 and aiohttp senders) or when it was made (the owned httpx client): once per
provider, and again each time a provider made a new pool on another event loop.  Loads are counted here
(``SSLContext.load_verify_locations``), never timed; the contexts a connection really used are seen where a
client-side TLS connection is made (``SSLContext.wrap_bio``: asyncio's TLS layer, anyio's TLS stream).
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentactors import LLMRequest, Message, OpenAIProvider
from agentactors.providers.http.h11_transport import H11Sender
from agentactors.providers.http.transport import ENV, ClientSender, Sender, owned_sender
from agentactors.testing.fakevendor import FakeVendor
from tests.support.fakevendor import auth_headers, body, url
from tests.support.tls import TestAuthority

pytestmark = pytest.mark.anyio

TIMEOUT = httpx.Timeout(10.0)
REQUEST = LLMRequest([Message.user("What is the capital of France?")], max_tokens=50)
CA_ENV = ("SSL_CERT_FILE", "SSL_CERT_DIR")


class TLSSpy:
    """Counts CA loads and records the context of each client-side TLS connection (a server's are left out)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.loads = 0
        self.client_contexts: list[ssl.SSLContext] = []
        load, wrap = ssl.SSLContext.load_verify_locations, ssl.SSLContext.wrap_bio
        lock = threading.Lock()

        def counting_load(context: ssl.SSLContext, *args: Any, **kwargs: Any) -> None:
            with lock:
                self.loads += 1
            load(context, *args, **kwargs)

        def recording_wrap(context: ssl.SSLContext, *args: Any, **kwargs: Any) -> ssl.SSLObject:
            server_side = kwargs.get("server_side", args[2] if len(args) > 2 else False)
            if not server_side:
                self.client_contexts.append(context)
            return wrap(context, *args, **kwargs)

        monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting_load)
        monkeypatch.setattr(ssl.SSLContext, "wrap_bio", recording_wrap)


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestAuthority:
    """A CA of this test's own (a new file: so a new shared context), trusted through ``SSL_CERT_FILE``."""
    made = TestAuthority(tmp_path)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(made.ca_file))
    return made


def stranger(tmp_path: Path) -> TestAuthority:
    """Another CA, in a directory of its own: one the client does not trust."""
    (tmp_path / "stranger").mkdir()
    return TestAuthority(tmp_path / "stranger")


def senders_to_try(backend: str) -> Iterator[tuple[str, Any]]:
    yield "h11", lambda **kw: H11Sender(timeout=TIMEOUT, **kw)
    if backend == "asyncio":
        from agentactors.providers.http.aiohttp_transport import AiohttpSender

        yield "aiohttp", lambda **kw: AiohttpSender(timeout=TIMEOUT, **kw)


async def post(sender: Sender, fv: FakeVendor) -> int:
    content = json.dumps(body("openai")).encode()
    headers = {**auth_headers("openai"), "content-type": "application/json"}
    response = await sender.send(url(fv, "openai"), headers, content)
    try:
        return response.status_code
    finally:
        await response.aclose()


def failed_verification(error: BaseException) -> bool:
    """Whether a certificate that did not verify is in ``error``'s chain (httpx on trio keeps no message)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError) or "certificate verify failed" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@pytest.mark.parametrize("transport", ["h11", "httpx", "aiohttp"])
async def test_providers_share_one_context_and_load_the_ca_bundle_once(
    transport: str, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    """Five providers, five owned pools, one first https request each: one CA load, one context for all (on trio,
    which aiohttp cannot run on, ``=aiohttp`` gives the default: the h11 sender)."""
    expected = "h11" if transport == "aiohttp" and anyio_backend_name == "trio" else transport
    monkeypatch.setenv(ENV, transport)
    async with FakeVendor(ssl_context=authority.server_context()) as fv:
        spy = TLSSpy(monkeypatch)
        fv.script(*[f"answer {i}" for i in range(5)])
        providers = [OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=fv.openai_base_url) for _ in range(5)]
        try:
            answers = [(await provider.complete(REQUEST)).content for provider in providers]
            used = {provider.transport for provider in providers}
        finally:
            for provider in providers:
                await provider.aclose()
    assert answers == [f"answer {i}" for i in range(5)]  # each verified the server against SSL_CERT_FILE's CA
    assert used == {expected}
    assert spy.loads == 1
    assert len(spy.client_contexts) >= 5 and len({id(c) for c in spy.client_contexts}) == 1
    from agentactors.providers.http._tls import default_client_context, thread_client_context

    # httpx clients share their thread's (httpcore sets ALPN on its context per connection); the others the process's.
    shared = thread_client_context() if expected == "httpx" else default_client_context()
    assert spy.client_contexts[0] is shared


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_httpx_clients_share_their_threads_context_and_another_thread_gets_its_own(
    backend: str, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpcore sets ALPN on its client's context before each connection: a context shared across threads could be
    changed while another thread's SSL_new (run without the GIL) copies it.  One per thread, one load each."""
    import anyio

    monkeypatch.setenv(ENV, "httpx")
    spy = TLSSpy(monkeypatch)
    given: dict[int, list[Any]] = {}
    made = httpx.AsyncClient

    def recording(*args: Any, **kwargs: Any) -> httpx.AsyncClient:
        given.setdefault(threading.get_ident(), []).append(kwargs.get("verify"))
        return made(*args, **kwargs)

    monkeypatch.setattr(httpx, "AsyncClient", recording)

    async def build() -> None:
        for _ in range(3):
            sender = owned_sender(TIMEOUT)
            assert isinstance(sender, ClientSender)
            await sender.aclose()

    anyio.run(build, backend=backend)
    worker = threading.Thread(target=lambda: anyio.run(build, backend=backend))
    worker.start()
    worker.join()
    assert len(given) == 2 and all(len(contexts) == 3 for contexts in given.values())
    here, there = given.values()
    assert all(isinstance(c, ssl.SSLContext) and c is here[0] for c in here)
    assert all(c is there[0] for c in there) and here[0] is not there[0]
    assert spy.loads == 2


@pytest.mark.parametrize("why", ["forced", "proxy"])
async def test_building_owned_httpx_clients_loads_the_bundle_once(
    why: str, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owned httpx client took its context when made (with a proxy configured, one more per proxy mount):
    twenty of them now share one load."""
    if why == "forced":
        monkeypatch.setenv(ENV, "httpx")
    else:  # the usual way to this sender: a proxy in the environment (never reached: nothing is sent)
        monkeypatch.delenv(ENV, raising=False)
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, "http://127.0.0.1:9")
    spy = TLSSpy(monkeypatch)
    senders = [owned_sender(TIMEOUT) for _ in range(20)]
    for sender in senders:
        assert isinstance(sender, ClientSender)
        await sender.aclose()
    assert spy.loads == 1


async def test_a_context_given_to_a_sender_is_the_one_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    """The shared context would not trust this server (SSL_CERT_FILE names another CA): the given one does."""
    server_ca = TestAuthority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(stranger(tmp_path).ca_file))
    given = server_ca.client_context()
    async with FakeVendor(ssl_context=server_ca.server_context()) as fv:
        spy = TLSSpy(monkeypatch)
        for _, make in senders_to_try(anyio_backend_name):
            sender = make(ssl_context=given)
            try:
                assert await post(sender, fv) == 200
            finally:
                await sender.aclose()
    assert spy.client_contexts and all(context is given for context in spy.client_contexts)
    assert spy.loads == 0  # no default context was made for them


async def test_a_server_the_shared_context_does_not_trust_fails_verification(
    tmp_path: Path, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str
) -> None:
    """Shared, the default context still verifies: a certificate from another CA is a ConnectError, on every sender."""
    async with FakeVendor(ssl_context=stranger(tmp_path).server_context()) as fv:
        monkeypatch.setenv(ENV, "httpx")
        makers = [*senders_to_try(anyio_backend_name), ("httpx", lambda: owned_sender(TIMEOUT))]
        for name, make in makers:
            sender = make()
            assert sender.name == name
            try:
                with pytest.raises(httpx.ConnectError) as info:
                    await post(sender, fv)
                assert failed_verification(info.value), name
            finally:
                await sender.aclose()


@pytest.fixture
def cert_dir_authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestAuthority:
    """A CA trusted through ``SSL_CERT_DIR`` only: a directory holding it under its OpenSSL subject-hash name."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command names the hashed file")
    made = TestAuthority(tmp_path)
    digest = subprocess.run(
        [openssl, "x509", "-noout", "-subject_hash", "-in", str(made.ca_file)],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    certs = tmp_path / "certs"
    certs.mkdir()
    shutil.copy(made.ca_file, certs / f"{digest}.0")
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.setenv("SSL_CERT_DIR", str(certs))
    return made


async def test_ssl_cert_dir_is_honoured(cert_dir_authority: TestAuthority) -> None:
    """As httpx reads it: ``SSL_CERT_DIR`` (when ``SSL_CERT_FILE`` is unset) is a directory of hashed CA files."""
    made = cert_dir_authority
    async with FakeVendor(ssl_context=made.server_context()) as fv:
        sender = H11Sender(timeout=TIMEOUT)
        try:
            assert await post(sender, fv) == 200
        finally:
            await sender.aclose()


def test_the_environment_is_read_when_the_context_is_made_and_a_change_makes_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentactors.providers.http._tls import default_client_context

    first, second = TestAuthority(tmp_path), stranger(tmp_path)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(first.ca_file))
    context = default_client_context()
    assert default_client_context() is context
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "agentactors test CA"),),)]
    monkeypatch.setenv("SSL_CERT_FILE", str(second.ca_file))
    other = default_client_context()
    assert other is not context and default_client_context() is other
    assert other.get_ca_certs() != context.get_ca_certs()  # the second CA's certificate, not the first's


def test_it_is_httpxs_default_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no CA variable set: certifi's bundle, and the verification httpx's own default applies."""
    from agentactors.providers.http._tls import default_client_context

    for name in CA_ENV:
        monkeypatch.delenv(name, raising=False)
    ours, httpxs = default_client_context(), httpx.create_ssl_context()
    assert ours.verify_mode == httpxs.verify_mode == ssl.CERT_REQUIRED
    assert ours.check_hostname and httpxs.check_hostname
    assert (ours.protocol, ours.options, ours.verify_flags) == (httpxs.protocol, httpxs.options, httpxs.verify_flags)
    assert (ours.minimum_version, ours.maximum_version) == (httpxs.minimum_version, httpxs.maximum_version)
    assert ours.get_ca_certs() == httpxs.get_ca_certs() and len(ours.get_ca_certs()) > 50


def test_threads_asking_at_once_get_one_context_made_once(
    authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentactors.providers.http._tls import default_client_context

    spy = TLSSpy(monkeypatch)
    start = threading.Barrier(8)
    got: list[ssl.SSLContext] = []

    def ask() -> None:
        start.wait()
        got.append(default_client_context())

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 8 and all(context is got[0] for context in got)
    assert spy.loads == 1
