"""API keys at the HTTP layer: checked when a provider is made, and never in a cause chain or a log record.

The leak these close: a key read from a file ends in ``"\\n"``; h11 refuses the header with
``LocalProtocolError("Illegal header value b'Bearer <KEY>\\n'")``, which was kept as the
``ProviderError``'s cause (so every traceback printed the key), logged by httpcore at DEBUG,
and classified transient (so it was retried, counted by a breaker and failed over).
"""

from __future__ import annotations

import logging
import traceback

import httpx
import pytest

from agentactors.errors import ErrorKind, ProviderError, RedactedException, scrub_chain
from agentactors.messages import LLMRequest, Message
from agentactors.providers.anthropic.provider import AnthropicProvider
from agentactors.providers.gemini.provider import GeminiProvider
from agentactors.providers.http.provider import HTTPProvider
from agentactors.providers.http.transport import ENV
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from agentactors.redaction import redact, register_secret
from agentactors.testing import FakeVendor

pytestmark = pytest.mark.anyio

CANARY = "canary-SECRETS-0123456789abcdef"  # not key-shaped: only registration can redact it
REQUEST = LLMRequest([Message.user("hi")])
OK = {
    "id": "r1",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


def chain_texts(exc: BaseException) -> list[str]:
    """Everything a traceback, a repr or a cause walker can show of ``exc`` and every exception it keeps."""
    out = ["".join(traceback.format_exception(exc))]
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        out += [str(cur), repr(cur), *map(str, getattr(cur, "__notes__", None) or ()), repr(cur.args)]
        out += [str(getattr(cur, "body_excerpt", "") or "")]
        todo += [e for e in (cur.__cause__, cur.__context__) if e is not None]
    return out


def recording(handler: object) -> tuple[httpx.AsyncClient, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def respond(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return handler(request)  # type: ignore[operator,no-any-return]

    return httpx.AsyncClient(transport=httpx.MockTransport(respond)), sent


# --- checked when the provider is made ----------------------------------------------------------


@pytest.mark.parametrize("raw", [f"{CANARY}\n", f"  {CANARY}\r\n", f"\t{CANARY} "])
async def test_surrounding_whitespace_is_stripped_from_the_key(raw: str) -> None:
    client, sent = recording(lambda r: httpx.Response(200, json=OK))
    async with client:
        await OpenAIProvider("m", api_key=raw, base_url="http://vendor.test/v1", http_client=client).complete(REQUEST)
    assert sent[0].headers["authorization"] == f"Bearer {CANARY}"


async def test_a_key_read_from_the_environment_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", f"{CANARY}\n")
    client, sent = recording(lambda r: httpx.Response(200, json={"type": "message", "content": [], "usage": {}}))
    async with client:
        await AnthropicProvider("claude-x", http_client=client).complete(REQUEST)
    assert sent[0].headers["x-api-key"] == CANARY


def test_a_whitespace_only_key_in_the_environment_is_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # An explicit api_key=" \n" is a ValueError (tests/unit/providers/test_provider_config.py).
    monkeypatch.setenv("OPENAI_API_KEY", " \n")
    assert "api_key=none" in repr(OpenAIProvider("m"))


@pytest.mark.parametrize(
    ("inner", "kind"),
    [("\n", "control character"), (" ", "space or tab"), ("\x00", "control character"), ("é", "non-ASCII")],
)
@pytest.mark.parametrize("make", [OpenAIProvider, AnthropicProvider, GeminiProvider])
def test_a_key_no_header_can_carry_is_refused_without_showing_it(inner: str, kind: str, make: type) -> None:
    key = CANARY[:12] + inner + CANARY[12:]
    with pytest.raises(ValueError, match=kind) as info:
        make("m", api_key=key)
    text = "".join(traceback.format_exception(info.value))
    assert CANARY[:12] not in text and CANARY[12:] not in text
    assert "position 12" in str(info.value)


# --- cause chains -------------------------------------------------------------------------------


def test_a_clean_foreign_cause_is_kept_as_it_is() -> None:
    exc = httpx.ConnectError("connection refused")
    assert scrub_chain(exc) is exc


def test_a_foreign_cause_holding_a_secret_is_replaced_whole() -> None:
    register_secret(CANARY)
    try:
        try:
            raise ValueError(f"Illegal header value b'Bearer {CANARY}\\n'")
        except ValueError as inner:
            raise httpx.LocalProtocolError(str(inner)) from inner
    except httpx.LocalProtocolError as outer:
        scrubbed = scrub_chain(outer)
    assert isinstance(scrubbed, RedactedException)
    assert scrubbed.original_type == "httpx.LocalProtocolError"
    assert isinstance(scrubbed.__cause__, RedactedException)
    assert scrubbed.__cause__.original_type == "builtins.ValueError"
    assert "[REDACTED]" in str(scrubbed)
    assert any("original traceback" in note for note in scrubbed.__notes__)
    for text in chain_texts(scrubbed):
        assert CANARY not in text


async def test_a_transport_error_holding_the_key_leaves_no_trace_of_it_in_the_chain() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        try:
            raise OSError(f"proxy said: Authorization: Bearer {CANARY}")
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect ({exc})", request=request) from exc

    client, _ = recording(boom)
    async with client:
        with pytest.raises(ProviderError) as info:
            await OpenAIProvider("m", api_key=CANARY, base_url="http://vendor.test/v1", http_client=client).complete(
                REQUEST
            )
    assert info.value.kind is ErrorKind.transient
    assert isinstance(info.value.__cause__, RedactedException)
    assert info.value.__cause__.original_type == "httpx.ConnectError"
    for text in chain_texts(info.value):
        assert CANARY not in text


async def test_a_header_the_http_stack_refuses_is_a_request_fault_with_a_clean_chain(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The real h11 path, over loopback: a header value with a line break never leaves the client.

    The key itself can no longer carry one (it is checked when the provider is made), so the
    bad header comes from an injected client's defaults here — what h11 says and httpcore logs
    is the same.
    """
    caplog.set_level(logging.DEBUG)
    async with FakeVendor() as fv:
        client = httpx.AsyncClient(headers={"x-trace": f"{CANARY}\n"})
        async with client:
            provider = OpenAIProvider("m", api_key=CANARY, base_url=fv.openai_base_url, http_client=client)
            with pytest.raises(ProviderError) as info:
                await provider.complete(REQUEST)
        assert fv.requests == ()
    assert (info.value.kind, info.value.retryable) == (ErrorKind.request, False)
    for text in chain_texts(info.value):
        assert CANARY not in text
    assert any(r.name.startswith("httpcore") for r in caplog.records), "httpcore logs at DEBUG"
    for record in caplog.records:
        assert CANARY not in record.getMessage()
        assert CANARY not in (record.exc_text or "")


class _TracingWire(OpenAIWire):
    """The OpenAI wire with one more header, whose value holds a line break (as a key read from a file did)."""

    def headers(self, api_key: str | None) -> dict[str, str]:
        return {**super().headers(api_key), "x-trace": f"{CANARY}\n"}


@pytest.mark.parametrize("sender", ["h11", "aiohttp"])
async def test_a_header_the_owned_pool_refuses_is_a_request_fault_too(
    anyio_backend_name: str, sender: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No injected client: the provider's own pool — the h11 sender, or aiohttp's on asyncio — refuses it too.

    aiohttp refuses the value with a ``ValueError`` before sending, h11 when the request head is
    built; each sender maps it to ``httpx.LocalProtocolError``, so the classifier says request fault
    (never retried, never failed over), as for h11's refusal through httpx above.
    """
    monkeypatch.setenv(ENV, sender)  # aiohttp cannot run on trio: the h11 sender there either way
    async with FakeVendor() as fv:
        async with HTTPProvider(
            _TracingWire(), model="m", api_key=CANARY, base_url=fv.openai_base_url.rstrip("/")
        ) as provider:
            with pytest.raises(ProviderError) as info:
                await provider.complete(REQUEST)
            assert provider.transport == (sender if anyio_backend_name == "asyncio" else "h11")
            with pytest.raises(ProviderError) as streamed:
                async with provider.stream(REQUEST) as events:
                    async for _ in events:
                        pass
        assert fv.requests == ()
    for error in (info.value, streamed.value):
        assert (error.kind, error.retryable) == (ErrorKind.request, False)
        assert "LocalProtocolError" in str(error)
        for text in chain_texts(error):
            assert CANARY not in text


async def test_a_local_protocol_error_is_never_retried() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.LocalProtocolError("Illegal header value", request=request)

    client, _ = recording(refuse)
    async with client:
        with pytest.raises(ProviderError) as info:
            await OpenAIProvider("m", base_url="http://vendor.test/v1", http_client=client).complete(REQUEST)
    assert (info.value.kind, info.value.retryable) == (ErrorKind.request, False)


# --- logs of loggers we do not own --------------------------------------------------------------


@pytest.mark.parametrize("name", ["httpcore.http11", "httpcore.connection", "httpx", "hpack.hpack", "aiohttp.client"])
def test_records_of_the_http_stack_are_redacted_before_any_handler(name: str, caplog: pytest.LogCaptureFixture) -> None:
    OpenAIProvider("m", api_key=CANARY)  # making a provider installs the filters
    caplog.set_level(logging.DEBUG)
    logger = logging.getLogger(name)
    logger.debug("send_request_headers.failed exception=LocalProtocolError(%r)", f"Bearer {CANARY}\n")
    try:
        raise RuntimeError(f"key {CANARY}")
    except RuntimeError:
        logger.exception("failed with %s", CANARY)
    assert len(caplog.records) == 2
    for record in caplog.records:
        assert CANARY not in record.getMessage()
        assert CANARY not in (record.exc_text or "")
    assert "[REDACTED]" in caplog.text and CANARY not in caplog.text


def test_a_secret_is_redacted_in_its_escaped_spellings() -> None:
    key = "odd\\key'with\"quotes-0123456789"
    register_secret(key)
    for text in (key, repr(key), repr(key.encode()), f"{key.encode()!r}"):
        assert "quotes-0123456789" not in redact(text), text
