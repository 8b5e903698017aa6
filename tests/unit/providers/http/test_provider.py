"""``HTTPProvider`` (through ``OpenAIProvider``) over ``httpx.MockTransport``: credentials, errors, streams."""

from __future__ import annotations

import gc
import http.server
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import httpx
import pytest

from agentactors.errors import (
    ErrorKind,
    MalformedResponseError,
    ProviderError,
    ProviderTimeout,
    StreamInterruptedError,
    UnsupportedToolChoiceError,
)
from agentactors.messages import LLMRequest, Message, StreamEnd, StreamEvent, TextDelta, ToolChoice, ToolSpec
from agentactors.providers.http.provider import HTTPProvider, iter_sse
from agentactors.providers.openai.provider import OpenAIProvider, OpenAIWire
from agentactors.providers.port import forced_tool_choice_for

pytestmark = pytest.mark.anyio

CANARY = "canary-HTTPPROVIDER-0123456789abcdef"  # not key-shaped: only registration can redact it
BASE = "http://vendor.test/v1"
TOOL = ToolSpec("pick", "Pick one.", {"type": "object", "properties": {"x": {"enum": ["a", "b"]}}, "required": ["x"]})
REQUEST = LLMRequest([Message.user("hi")])


def ok_body(text: str = "hello") -> dict[str, Any]:
    return {
        "id": "r1",
        "model": "served-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def sse(*datas: str) -> bytes:
    return "".join(f"data: {d}\n\n" for d in datas).encode()


def text_chunk(text: str, finish: str | None = None) -> str:
    return json.dumps({"id": "s", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})


SSE_HEADERS = {"content-type": "text/event-stream"}
GOOD_STREAM = sse(text_chunk("Hel"), text_chunk("lo", "stop"), "[DONE]")


class Recorder:
    """A MockTransport handler that records requests and answers with ``respond``."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response]) -> None:
        self.respond = respond
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.respond(request)


class ScriptedBody(httpx.AsyncByteStream):
    """A response body that yields ``chunks`` then fails, hangs or ends; records whether it was closed."""

    def __init__(self, chunks: list[bytes], then: str = "end") -> None:
        self.chunks = chunks
        self.then = then
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for c in self.chunks:
            yield c
            await anyio.lowlevel.checkpoint()
        if self.then == "fail":
            raise httpx.ReadError("connection reset by peer")
        if self.then == "hang":
            await anyio.sleep_forever()

    async def aclose(self) -> None:
        self.closed = True


def provider_for(
    handler: Callable[[httpx.Request], httpx.Response], **kw: Any
) -> tuple[OpenAIProvider, httpx.AsyncClient]:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kw.setdefault("api_key", CANARY)
    kw.setdefault("base_url", BASE)
    return OpenAIProvider(kw.pop("model", "m"), http_client=client, **kw), client


async def collect(provider: HTTPProvider, request: LLMRequest = REQUEST) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    async with provider.stream(request) as stream:
        async for event in stream:
            events.append(event)
    return events


def texts_of(exc: BaseException, *, chain: bool = True) -> list[str]:
    """Every text an error exposes: str, repr, notes, message, body excerpt, and (with ``chain``) its causes'."""
    out: list[str] = []
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out += [str(cur), repr(cur), *getattr(cur, "__notes__", [])]
        out += [str(getattr(cur, "body_excerpt", "") or ""), str(getattr(cur, "message", "") or "")]
        cur = (cur.__cause__ or cur.__context__) if chain else None
    return out


# --- credentials --------------------------------------------------------------------------------


async def test_the_key_travels_in_the_authorization_header_only() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    provider, client = provider_for(rec)
    async with client:
        resp = await provider.complete(REQUEST)
    assert resp.content == "hello" and resp.provider == "openai" and resp.model == "served-model"
    (sent,) = rec.requests
    assert sent.headers["authorization"] == f"Bearer {CANARY}"
    assert str(sent.url) == f"{BASE}/chat/completions"
    assert CANARY not in str(sent.url)
    assert CANARY not in sent.content.decode()
    assert json.loads(sent.content)["model"] == "m"
    assert CANARY not in repr(provider)


async def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    async with httpx.AsyncClient(transport=httpx.MockTransport(rec)) as client:
        await OpenAIProvider("m", base_url=BASE, http_client=client).complete(REQUEST)
    assert rec.requests[0].headers["authorization"] == "Bearer sk-from-env-0123456789"


async def test_no_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    async with httpx.AsyncClient(transport=httpx.MockTransport(rec)) as client:
        await OpenAIProvider("m", base_url=BASE, http_client=client).complete(REQUEST)
    assert "authorization" not in rec.requests[0].headers


async def test_a_key_echoed_by_the_vendor_never_reaches_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"error": {"message": f"Incorrect API key provided: {CANARY}.", "code": "invalid_api_key"}}
    rec = Recorder(lambda r: httpx.Response(401, json=body))
    provider, client = provider_for(rec)
    async with client:
        with pytest.raises(ProviderError) as complete_info:
            await provider.complete(REQUEST)
        with pytest.raises(ProviderError) as stream_info:
            await collect(provider)
    for info in (complete_info, stream_info):
        assert info.value.kind is ErrorKind.account and info.value.status == 401
        for text in texts_of(info.value):
            assert CANARY not in text
    assert caplog.records, "the provider logs its requests at DEBUG"
    for record in caplog.records:
        assert CANARY not in record.getMessage()
    assert all(CANARY not in str(r.url) for r in rec.requests)


async def test_transport_failure_text_never_carries_the_key() -> None:
    def boom(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError(f"cannot connect (header was Bearer {CANARY})", request=request)

    provider, client = provider_for(boom)
    async with client:
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQUEST)
    assert info.value.kind is ErrorKind.transient
    # Our error's own texts are redacted even when the transport's message is not (the cause is httpx's own).
    for text in texts_of(info.value, chain=False):
        assert CANARY not in text


# --- checks before sending ----------------------------------------------------------------------


async def test_a_rejected_forced_choice_sends_nothing() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    forced = LLMRequest([Message.user("x")], tools=[TOOL], tool_choice=ToolChoice.required())
    official, client = provider_for(rec, model="o1-mini", base_url="https://api.openai.com/v1")
    compat, _ = provider_for(rec)  # a compatible server that did not declare forced-choice support
    async with client:
        for provider in (official, compat):
            with pytest.raises(UnsupportedToolChoiceError) as info:
                await provider.complete(forced)
            assert (info.value.kind, info.value.retryable) == (ErrorKind.request, False)
            with pytest.raises(UnsupportedToolChoiceError):
                provider.stream(forced)  # at call time, before any context is entered
            assert forced_tool_choice_for(provider, provider.default_model) is False
    assert rec.requests == []


async def test_a_declared_compatible_server_sends_the_forced_choice() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    provider, client = provider_for(rec, carries_forced_tool_choice=True)
    forced = LLMRequest([Message.user("x")], tools=[TOOL], tool_choice=ToolChoice.tool("pick"))
    async with client:
        await provider.complete(forced)
    assert json.loads(rec.requests[0].content)["tool_choice"] == {"type": "function", "function": {"name": "pick"}}


async def test_no_model_is_a_request_error_before_sending() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    provider, client = provider_for(rec, model=None)
    async with client:
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQUEST)
        with pytest.raises(ProviderError):
            provider.stream(REQUEST)
    assert info.value.kind is ErrorKind.request and rec.requests == []


async def test_an_unserialisable_body_is_a_request_error_before_sending() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    provider, client = provider_for(rec)
    # A NaN temperature is refused where the request is built; a vendor option is passed through as given.
    bad = LLMRequest([Message.user("x")], vendor_options={"openai": {"logit_bias_scale": float("nan")}})
    async with client:
        with pytest.raises(ProviderError) as info:
            await provider.complete(bad)
    assert info.value.kind is ErrorKind.request and rec.requests == []


class _RefusingWire(OpenAIWire):
    def encode_request(self, request: LLMRequest, model: str, *, stream: bool) -> dict[str, Any]:
        raise ValueError("this wire cannot say that")


async def test_a_request_the_codec_cannot_encode_is_a_request_error_before_sending() -> None:
    rec = Recorder(lambda r: httpx.Response(200, json=ok_body()))
    async with httpx.AsyncClient(transport=httpx.MockTransport(rec)) as client:
        provider = HTTPProvider(_RefusingWire(), model="m", api_key=None, base_url=BASE, http_client=client)
        for attempt in (lambda: provider.complete(REQUEST), lambda: collect(provider)):
            with pytest.raises(ProviderError) as info:
                await attempt()
            assert info.value.kind is ErrorKind.request and "cannot say that" in info.value.message
    assert rec.requests == []


# --- complete() failures ------------------------------------------------------------------------


async def test_transport_errors_are_transient_and_timeouts_are_provider_timeouts() -> None:
    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    for handler, kind in ((timeout, ProviderTimeout), (refused, ProviderError)):
        provider, client = provider_for(handler)
        async with client:
            with pytest.raises(kind) as info:
                await provider.complete(REQUEST)
        assert (info.value.kind, info.value.retryable) == (ErrorKind.transient, True)
        assert isinstance(info.value.__cause__, httpx.TransportError)


@pytest.mark.parametrize(
    ("status", "headers", "kind", "retry_after"),
    [
        (429, {"retry-after": "3"}, ErrorKind.transient, 3.0),
        (500, {}, ErrorKind.transient, None),
        (400, {}, ErrorKind.request, None),
        (400, {"x-should-retry": "true"}, ErrorKind.transient, None),
    ],
)
async def test_non_2xx_is_classified_through_the_codec(
    status: int, headers: dict[str, str], kind: ErrorKind, retry_after: float | None
) -> None:
    body = {"error": {"message": "nope", "type": "invalid_request_error", "code": None}}
    provider, client = provider_for(lambda r: httpx.Response(status, headers=headers, json=body))
    async with client:
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQUEST)
    assert (info.value.kind, info.value.status, info.value.retry_after) == (kind, status, retry_after)
    assert info.value.provider == "openai" and info.value.model == "m"


@pytest.mark.parametrize("content", [b"<html>oops</html>", b"", b'{"choices": [', b"[]"])
async def test_an_undecodable_200_is_a_malformed_response(content: bytes) -> None:
    provider, client = provider_for(lambda r: httpx.Response(200, content=content))
    async with client:
        with pytest.raises(MalformedResponseError) as info:
            await provider.complete(REQUEST)
    assert info.value.kind is ErrorKind.transient and info.value.retryable


async def test_the_response_names_the_provider() -> None:
    provider, client = provider_for(lambda r: httpx.Response(200, json=ok_body()), name="groq")
    async with client:
        assert (await provider.complete(REQUEST)).provider == "groq"
        events = await collect(
            OpenAIProvider(
                "m",
                base_url=BASE,
                name="groq",
                http_client=httpx.AsyncClient(
                    transport=httpx.MockTransport(
                        lambda r: httpx.Response(200, headers=SSE_HEADERS, content=GOOD_STREAM)
                    )
                ),
            )
        )
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.response.provider == "groq"


# --- streams ------------------------------------------------------------------------------------


async def test_a_stream_yields_deltas_then_exactly_one_stream_end() -> None:
    rec = Recorder(lambda r: httpx.Response(200, headers=SSE_HEADERS, content=GOOD_STREAM))
    provider, client = provider_for(rec)
    async with client:
        events = await collect(provider)
    assert events[:2] == [TextDelta("Hel"), TextDelta("lo")]
    assert isinstance(events[2], StreamEnd) and events[2].response.content == "Hello" and len(events) == 3
    sent = json.loads(rec.requests[0].content)
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    assert rec.requests[0].headers["accept"] == "text/event-stream"


async def test_a_failure_before_the_first_event_is_raised_as_classified() -> None:
    for then, chunks, expected in (
        ("fail", [b": keep-alive\n\n"], ProviderError),  # transport error, no event yet
        ("end", [b": keep-alive\n\n"], MalformedResponseError),  # EOF without [DONE]
    ):
        body = ScriptedBody(chunks, then=then)

        def reply(r: httpx.Request, b: ScriptedBody = body) -> httpx.Response:
            return httpx.Response(200, headers=SSE_HEADERS, stream=b)

        provider, client = provider_for(reply)
        async with client:
            with pytest.raises(expected) as info:
                await collect(provider)
        assert not isinstance(info.value, StreamInterruptedError)
        assert info.value.kind is ErrorKind.transient and info.value.retryable
        assert body.closed


async def test_an_http_error_on_a_stream_is_classified() -> None:
    provider, client = provider_for(lambda r: httpx.Response(503, json={"error": {"message": "overloaded"}}))
    async with client:
        with pytest.raises(ProviderError) as info:
            await collect(provider)
    assert (info.value.kind, info.value.status) == (ErrorKind.transient, 503)
    assert not isinstance(info.value, StreamInterruptedError)


async def test_an_in_band_error_as_the_first_event_is_the_classified_error() -> None:
    data = b'event: error\ndata: {"error": {"message": "bad", "code": "tool_use_failed", "status_code": 400}}\n\n'
    provider, client = provider_for(lambda r: httpx.Response(200, headers=SSE_HEADERS, content=data))
    async with client:
        with pytest.raises(ProviderError) as info:
            await collect(provider)
    assert not isinstance(info.value, StreamInterruptedError)
    assert (info.value.kind, info.value.status) == (ErrorKind.request, 400)


@pytest.mark.parametrize("then", ["fail", "end"])
async def test_a_failure_after_the_first_event_is_an_interrupted_stream(then: str) -> None:
    body = ScriptedBody([sse(text_chunk("partial "), text_chunk("answer"))], then=then)
    provider, client = provider_for(lambda r: httpx.Response(200, headers=SSE_HEADERS, stream=body))
    seen: list[StreamEvent] = []
    async with client:
        with pytest.raises(StreamInterruptedError) as info:
            async with provider.stream(REQUEST) as stream:
                async for event in stream:
                    seen.append(event)
    assert seen == [TextDelta("partial "), TextDelta("answer")]
    assert info.value.partial_text == "partial answer"
    assert info.value.retryable is False
    assert isinstance(info.value.__cause__, ProviderError)
    assert body.closed


async def test_leaving_the_stream_early_closes_the_response() -> None:
    body = ScriptedBody([sse(text_chunk("a"))], then="hang")
    provider, client = provider_for(lambda r: httpx.Response(200, headers=SSE_HEADERS, stream=body))
    async with client:
        async with provider.stream(REQUEST) as stream:
            async for event in stream:
                assert event == TextDelta("a")
                break
        assert body.closed


async def test_cancelling_a_stream_closes_the_response() -> None:
    body = ScriptedBody([sse(text_chunk("a"))], then="hang")
    provider, client = provider_for(lambda r: httpx.Response(200, headers=SSE_HEADERS, stream=body))
    got: list[StreamEvent] = []
    async with client:
        with anyio.CancelScope() as scope:
            async with provider.stream(REQUEST) as stream:
                async for event in stream:
                    got.append(event)
                    scope.cancel()  # the next read hangs: cancellation must unwind it
        assert scope.cancelled_caught
        assert body.closed and got == [TextDelta("a")]


async def test_cancelling_complete_during_the_request() -> None:
    started = anyio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as client:
        provider = OpenAIProvider("m", base_url=BASE, http_client=client)
        async with anyio.create_task_group() as tg:
            tg.start_soon(provider.complete, REQUEST)
            await started.wait()
            tg.cancel_scope.cancel()  # cancellation propagates as anyio's, never as a ProviderError


async def test_a_server_that_ignores_stream_true_still_streams_its_answer() -> None:
    provider, client = provider_for(lambda r: httpx.Response(200, json=ok_body("whole")))
    async with client:
        events = await collect(provider)
    assert events[0] == TextDelta("whole")
    assert isinstance(events[-1], StreamEnd) and events[-1].response.content == "whole"


async def test_a_stream_answered_with_html_is_malformed() -> None:
    provider, client = provider_for(
        lambda r: httpx.Response(200, headers={"content-type": "text/html"}, content=b"<html>login</html>")
    )
    async with client:
        with pytest.raises(MalformedResponseError):
            await collect(provider)


# --- client lifecycle ---------------------------------------------------------------------------


async def test_an_injected_client_is_not_closed_by_aclose() -> None:
    provider, client = provider_for(lambda r: httpx.Response(200, json=ok_body()))
    async with client:
        async with provider:
            await provider.complete(REQUEST)
        assert not client.is_closed
        await provider.complete(REQUEST)  # still usable


async def test_an_owned_client_is_created_lazily_and_closed() -> None:
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key=CANARY)
    assert "client" not in repr(provider)
    async with provider:
        # Port 9 (discard) on loopback refuses: a transient, classified transport error.
        with pytest.raises(ProviderError) as info:
            await provider.complete(REQUEST)
        assert info.value.kind is ErrorKind.transient
    await provider.aclose()  # idempotent


def test_iter_sse_follows_whatwg_framing() -> None:
    raw = b": comment\r\ndata:no-space\r\n\r\nevent: error\ndata: line1\ndata: line2  \n\nid: 7\n\n\ndata: [DONE]\n\n"
    assert list(iter_sse(raw)) == [
        ("message", "no-space"),
        ("error", "line1\nline2  "),
        ("message", "[DONE]"),
    ]


class _KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep connections open, so the client's pool holds one

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        payload = json.dumps(ok_body("pooled")).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_owned_client_follows_the_event_loop_across_runs() -> None:
    """One provider used by successive ``anyio.run`` calls gets a fresh pool in each loop.

    A pooled keep-alive connection belongs to the loop that opened it; reusing it from the next
    loop fails.  The provider notices the loop changed and starts a new pool — and each loop's pool
    is closed when that loop ends (the suite turns an unclosed socket's ResourceWarning into an error).
    """
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _KeepAliveHandler)
    # serve_forever looks for shutdown() every poll_interval: 0.5 s by default, the most of this test's time.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        provider = OpenAIProvider("m", base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key=CANARY)

        async def call() -> str:
            return (await provider.complete(REQUEST)).content

        for backend in ("asyncio", "trio", "asyncio"):
            assert anyio.run(call, backend=backend) == "pooled", backend
        provider = None  # type: ignore[assignment]
        gc.collect()  # the abandoned pools go now, under this test's warning filter
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
