"""The FakeVendor over HTTPS: the providers' own pools as its clients, on both backends, and its command lines."""

from __future__ import annotations

import signal
import ssl
import sys
from pathlib import Path

import httpx
import pytest

from agentactors import AnthropicProvider, LLMRequest, Message, OpenAIProvider, TextDelta
from agentactors.testing.fakevendor import FakeVendor, main, server_context
from tests.support.fakevendor import auth_headers, command_line, url
from tests.support.tls import TestAuthority

REQUEST = LLMRequest([Message.user("What is the capital of France?")], max_tokens=50)


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestAuthority:
    """A CA of the test's own, trusted by the providers' pools through ``SSL_CERT_FILE``."""
    made = TestAuthority(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(made.ca_file))
    return made


@pytest.mark.anyio
async def test_the_providers_talk_to_it_over_https_json_and_streamed(authority: TestAuthority) -> None:
    async with FakeVendor(ssl_context=authority.server_context()) as fv:
        fv.script("Paris.", "Paris, again.")
        assert fv.base_url.startswith("https://127.0.0.1:")
        async with OpenAIProvider("gpt-4o-mini", api_key="sk-test", base_url=fv.openai_base_url) as openai:
            assert (await openai.complete(REQUEST)).content == "Paris."
        async with AnthropicProvider("claude-x", api_key="sk-test", base_url=fv.base_url) as anthropic:
            async with anthropic.stream(REQUEST) as events:
                text = "".join([e.text async for e in events if isinstance(e, TextDelta)])
        assert text == "Paris, again."
        assert [r.wire for r in fv.requests] == ["openai", "anthropic"]


@pytest.mark.anyio
async def test_a_client_that_fails_the_handshake_does_not_stop_it_serving(authority: TestAuthority) -> None:
    async with FakeVendor(ssl_context=authority.server_context()) as fv:
        plain = fv.base_url.replace("https://", "http://")
        async with httpx.AsyncClient(timeout=10) as client:  # plain HTTP to the TLS port: the server drops it
            with pytest.raises(httpx.HTTPError):
                await client.post(f"{plain}/v1/chat/completions", json={})
        async with httpx.AsyncClient(timeout=10, verify=False) as client:  # a client that skips verification
            response = await client.post(url(fv, "openai"), headers=auth_headers("openai"),
                                         json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert response.status_code == 200
        assert len(fv.requests) == 1  # the refused connection recorded nothing


def test_a_context_that_is_not_an_ssl_context_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"ssl_context must be an ssl\.SSLContext"):
        FakeVendor(ssl_context="server.pem")  # type: ignore[arg-type]


def test_server_context_loads_a_chain_and_refuses_what_it_cannot_load(tmp_path: Path) -> None:
    made = TestAuthority(tmp_path)
    assert isinstance(server_context(str(made.cert_file), str(made.key_file)), ssl.SSLContext)
    assert server_context(None, None) is None
    with pytest.raises(ValueError, match="--keyfile needs --certfile"):
        server_context(None, str(made.key_file))
    with pytest.raises(ValueError, match="cannot load the certificate") as info:
        server_context(str(made.cert_file))  # the key is in another file
    assert isinstance(info.value.__cause__, ssl.SSLError)
    with pytest.raises(ValueError, match="cannot load"):
        server_context(str(tmp_path / "missing.pem"), str(made.key_file))


@pytest.mark.parametrize(
    ("argv", "says"),
    [(["--keyfile", "key.pem"], "--keyfile needs --certfile"), (["--certfile", "/nonexistent.pem"], "cannot load")],
)
def test_the_command_line_refuses_a_bad_certificate_as_a_usage_error(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--port", "0", *argv])
    assert exited.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT delivery to a child differs on Windows")
@pytest.mark.parametrize("module", ["agentactors", "agentactors.testing.fakevendor"])
def test_both_command_lines_serve_https_with_certfile_and_keyfile(module: str, tmp_path: Path) -> None:
    made = TestAuthority(tmp_path)
    command = ["-m", module] + (["fakevendor"] if module == "agentactors" else [])
    with command_line(*command, "--port", "0", "--certfile", str(made.cert_file), "--keyfile", str(made.key_file)) as (
        proc,
        base,
    ):
        assert base.startswith("https://127.0.0.1:"), base
        response = httpx.post(f"{base}/v1/chat/completions", headers=auth_headers("openai"), timeout=60,
                              verify=ssl.create_default_context(cafile=str(made.ca_file)),
                              json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert response.status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
