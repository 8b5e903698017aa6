"""Proxies and TLS on every owned HTTP sender, against real local servers: a CONNECT proxy and an HTTPS FakeVendor.

Nothing reaches the network: the proxy (:class:`tests.support.connect_proxy.ConnectProxy`) and the vendor
listen on 127.0.0.1, and the vendor's certificate is signed by a CA made for the test (``tests.support.tls``),
trusted through ``SSL_CERT_FILE`` or a given ``ssl_context``.  Each sender is asked what a corporate network asks
of it: ``HTTPS_PROXY`` (credentials in its URL sent as ``Proxy-Authorization``, never shown), ``NO_PROXY``
(hosts, ports, ``*``), a proxy that refuses the tunnel (407 not retried, the proxy named), a server whose
certificate does not verify (a typed error naming the host, not retried).  Which senders speak to proxies: the
owned httpx client and the aiohttp sender; the h11 sender does not, so a proxied environment gets the httpx
client instead (``docs/wire.md``).
"""

from __future__ import annotations

import base64
import json
import logging
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from agentactors import LLMRequest, Message, OpenAIProvider, ProviderError
from agentactors.providers.http._proxies import proxy_for
from agentactors.providers.http.h11_transport import H11Sender
from agentactors.providers.http.transport import ENV, Sender, owned_sender
from agentactors.testing.fakevendor import FakeVendor
from tests.support.connect_proxy import ConnectProxy
from tests.support.fakevendor import auth_headers, body, url
from tests.support.tls import TestAuthority

pytestmark = pytest.mark.anyio

TIMEOUT = httpx.Timeout(20.0)
REQUEST = LLMRequest([Message.user("What is the capital of France?")], max_tokens=20)
PASSWORD = "pr0xy-s3cret-Pa55"
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy")
SENDERS = ("h11", "aiohttp", "httpx")


def on_backends(*kinds: str) -> pytest.MarkDecorator:
    """``kinds`` on each backend they run on: aiohttp's sender on asyncio only (never generated on trio, so never
    skipped there); the pair is this test's ``anyio_backend`` and ``kind``."""
    cases = [(backend, kind) for backend in ("asyncio", "trio") for kind in kinds
             if not (kind == "aiohttp" and backend == "trio")]
    return pytest.mark.parametrize(("anyio_backend", "kind"), cases, ids=[f"{b}-{k}" for b, k in cases])


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (*PROXY_ENV, "SSL_CERT_FILE", "SSL_CERT_DIR", ENV):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def authority(tmp_path: Path) -> TestAuthority:
    return TestAuthority(tmp_path)


@pytest.fixture
async def vendor(authority: TestAuthority) -> AsyncIterator[FakeVendor]:
    async with FakeVendor(ssl_context=authority.server_context()) as fv:
        yield fv


def _sender(kind: str, ssl_context: ssl.SSLContext | None = None) -> Sender:
    """The owned sender ``kind`` as a provider would get it (aiohttp: asyncio only, never generated on trio)."""
    if kind == "aiohttp":
        pytest.importorskip("aiohttp")
        from agentactors.providers.http.aiohttp_transport import AiohttpSender

        return AiohttpSender(timeout=TIMEOUT, ssl_context=ssl_context)
    if kind == "h11":
        return H11Sender(timeout=TIMEOUT, ssl_context=ssl_context)
    assert ssl_context is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ENV, "httpx")
        return owned_sender(TIMEOUT)


async def _post(sender: Sender, fv: FakeVendor) -> int:
    try:
        headers = {**auth_headers("openai"), "content-type": "application/json"}
        response = await sender.send(url(fv, "openai"), headers, json.dumps(body("openai")).encode())
        try:
            async for _ in response.aiter_raw():
                pass
        finally:
            await response.aclose()
        return response.status_code
    finally:
        await sender.aclose()


def _texts(exc: BaseException) -> str:
    """Everything an error shows: its text and repr, and those of each exception in its chain."""
    shown: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        shown += [str(current), repr(current)]
        current = current.__cause__ or current.__context__
    return "\n".join(shown)


# --- HTTPS_PROXY ---------------------------------------------------------------------------------------------


async def test_a_proxied_environment_gets_a_sender_that_tunnels_through_the_proxy_with_its_credentials(
    vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with("corp-user", PASSWORD))
        sender = owned_sender(TIMEOUT)
        assert sender.name == "httpx"  # the h11 sender does not speak to proxies: the default falls back to httpx
        assert await _post(sender, vendor) == 200
    port = vendor.base_url.rsplit(":", 1)[1].split("/")[0]
    expected = "Basic " + base64.b64encode(f"corp-user:{PASSWORD}".encode()).decode()
    assert [(r.method, r.target, r.proxy_authorization) for r in proxy.requests] == [
        ("CONNECT", f"127.0.0.1:{port}", expected)
    ]


@on_backends("aiohttp", "httpx")
async def test_each_sender_that_speaks_to_proxies_tunnels_through_it(
    kind: str, vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with("corp-user", PASSWORD))
        assert await _post(_sender(kind), vendor) == 200
    assert [r.method for r in proxy.requests] == ["CONNECT"]
    assert proxy.requests[0].proxy_authorization is not None


@on_backends("aiohttp", "httpx")
async def test_the_proxy_password_is_in_no_log_record_at_debug(
    kind: str, vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    caplog.set_level(logging.DEBUG)  # httpx's, httpcore's, asyncio's and the library's own loggers alike
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with("corp-user", PASSWORD))
        assert await _post(_sender(kind), vendor) == 200
    assert proxy.requests
    assert PASSWORD not in caplog.text
    assert base64.b64encode(f"corp-user:{PASSWORD}".encode()).decode() not in caplog.text


async def test_the_h11_sender_forced_goes_straight_to_the_server_even_with_a_proxy_configured(
    vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    # AGENTACTORS_HTTP_TRANSPORT=h11 is the documented escape hatch: it does not speak to proxies.
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv(ENV, "h11")
        sender = owned_sender(TIMEOUT)
        assert sender.name == "h11"
        assert await _post(sender, vendor) == 200
    assert proxy.requests == []


# --- NO_PROXY ------------------------------------------------------------------------------------------------


@on_backends("aiohttp", "httpx")
@pytest.mark.parametrize("entry", ["127.0.0.1", "127.0.0.1:{port}", "*", "example.com,127.0.0.1"])
async def test_no_proxy_sends_a_listed_host_straight_to_the_server(
    kind: str, entry: str, vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    port = vendor.base_url.rsplit(":", 1)[1].split("/")[0]
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", entry.format(port=port))
        assert await _post(_sender(kind), vendor) == 200
    assert proxy.requests == []


@on_backends("aiohttp", "httpx")
async def test_a_no_proxy_entry_for_another_port_or_host_does_not_bypass_the_proxy(
    kind: str, vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    async with ConnectProxy() as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1:1,example.com")
        assert await _post(_sender(kind), vendor) == 200
    assert [r.method for r in proxy.requests] == ["CONNECT"]


@pytest.mark.parametrize(
    ("no_proxy", "target", "proxied"),
    [
        ("example.com", "https://api.example.com/v1", False),  # a domain: its subdomains too
        ("example.com", "https://example.com/v1", False),
        ("example.com", "https://notexample.com/v1", True),  # not a suffix of another name
        (".example.com", "https://api.example.com/v1", False),
        (".example.com", "https://example.com/v1", True),  # a leading dot: subdomains only
        ("example.com:8443", "https://example.com:8443/v1", False),
        ("example.com:8443", "https://example.com/v1", True),  # another port
        ("*", "https://anything.test/v1", False),
        ("localhost,::1", "https://[::1]:9/v1", False),
        ("", "https://api.example.com/v1", True),
    ],
)
async def test_proxy_for_reads_no_proxy_as_httpx_does(
    no_proxy: str, target: str, proxied: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:{PASSWORD}@proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", no_proxy)
    found = proxy_for(target)
    assert found == (f"http://user:{PASSWORD}@proxy.corp:3128" if proxied else None)
    # ... and as httpx's own client does (its mounts: the proxy, or none for a bypassed host).
    client = httpx.AsyncClient()
    try:
        transport = client._transport_for_url(httpx.URL(target))  # the reference it is checked against
        assert (transport is not client._transport) is proxied
    finally:
        await client.aclose()


# --- a proxy that refuses the tunnel -------------------------------------------------------------------------


@on_backends("aiohttp", "httpx")
@pytest.mark.parametrize(("status", "retryable"), [(407, False), (403, False), (502, True)])
async def test_a_refused_tunnel_is_a_proxy_error_naming_the_proxy_never_its_password(
    kind: str, status: int, retryable: bool, vendor: FakeVendor, authority: TestAuthority,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    if kind == "aiohttp":
        pytest.importorskip("aiohttp")
    monkeypatch.setenv(ENV, kind)
    async with ConnectProxy(refuse=status) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url_with("corp-user", PASSWORD))
        async with OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=vendor.openai_base_url) as provider:
            with pytest.raises(ProviderError) as raised:
                await provider.complete(REQUEST)
    error = raised.value
    assert error.retryable is retryable
    assert f"127.0.0.1:{proxy.port}" in str(error)  # the proxy named ...
    assert str(status) in str(error)
    assert "proxy" in str(error).lower()
    assert PASSWORD not in _texts(error)  # ... never its credentials
    assert "corp-user" not in str(error)
    assert len(proxy.requests) == 1  # asked once: no retry inside the sender
    assert not vendor.requests


# --- TLS: SSL_CERT_FILE, ssl_context, a certificate that does not verify --------------------------------------


@on_backends(*SENDERS)
async def test_ssl_cert_file_is_honoured_by_every_sender(
    kind: str, vendor: FakeVendor, authority: TestAuthority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(authority.ca_file))
    assert await _post(_sender(kind), vendor) == 200


@on_backends("h11", "aiohttp")
async def test_a_given_ssl_context_is_honoured_by_the_fast_paths(
    kind: str, vendor: FakeVendor, authority: TestAuthority
) -> None:
    assert await _post(_sender(kind, authority.client_context()), vendor) == 200  # SSL_CERT_FILE is unset


@on_backends(*SENDERS)
async def test_a_certificate_that_does_not_verify_is_a_connect_error_naming_the_host_not_retried(
    kind: str, vendor: FakeVendor, monkeypatch: pytest.MonkeyPatch
) -> None:
    if kind == "aiohttp":
        pytest.importorskip("aiohttp")
    monkeypatch.setenv(ENV, kind)  # SSL_CERT_FILE unset: the test CA is not trusted
    async with OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=vendor.openai_base_url) as provider:
        with pytest.raises(ProviderError) as raised:
            await provider.complete(REQUEST)
    error = raised.value
    port = vendor.base_url.rsplit(":", 1)[1].split("/")[0]
    assert error.retryable is False
    assert f"127.0.0.1:{port}" in str(error)
    assert "certificate" in str(error).lower()
    assert isinstance(error.__cause__, httpx.ConnectError)
    assert not vendor.requests
