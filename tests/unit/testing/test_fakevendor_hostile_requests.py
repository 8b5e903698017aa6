"""Hostile requests end their own exchange, never the FakeVendor: malformed HTTP and wrongly typed fields.

An auditor found one malformed chunked body stopped the whole server (every later connection refused,
``stop()`` raising), and wrongly typed fields answered with an empty, retryable 500 that was not recorded.
The real vendors answer both with a 400 and keep serving.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.abc
import h11
import httpx
import pytest

from agentactors.testing import FakeError, FakeVendor
from agentactors.testing._fake_server import FakeServer

pytestmark = pytest.mark.anyio

KEY = "sk-hostile-0123456789"
OPENAI = {"authorization": f"Bearer {KEY}"}
ANTHROPIC = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
GEMINI = {"x-goog-api-key": KEY}
BEDROCK = {"authorization": "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE1234/20250101/us-east-1/bedrock/aws4_request, "
           "SignedHeaders=host;x-amz-date, Signature=" + "a" * 64, "x-amz-date": "20250101T000000Z"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
BAD_CHUNK = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n"


async def raw_exchange(port: int, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection; everything the server answers before it closes (3 s at most)."""
    received = b""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(data)
        with anyio.move_on_after(3):
            while True:
                try:
                    received += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    break
    return received


# --- 1. a protocol error from one client ----------------------------------------------------------


@pytest.mark.parametrize("data", [
    BAD_CHUNK,
    # The health route answers without reading the body: the body's error comes after the answer started.
    b"GET /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n\r\n",
    # A valid chunk, then garbage where the next chunk's size should be.
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nqq\r\n\r\n",
])
async def test_a_malformed_body_ends_its_connection_not_the_fakevendor(data: bytes) -> None:
    fv = FakeVendor()
    async with fv, httpx.AsyncClient(timeout=10) as client:
        answer = await raw_exchange(fv.port, data)
        if answer and b"/health" not in data:
            assert answer.startswith(b"HTTP/1.1 400"), answer
        assert fv.running
        for _ in range(3):
            ok = await client.post(f"{fv.openai_base_url}/chat/completions", json=CHAT, headers=OPENAI)
            assert ok.status_code == 200, ok.text
    # stop() used to raise RuntimeError("the FakeVendor server failed") here.
    assert not fv.running


async def test_a_bad_chunk_is_answered_400_when_nothing_was_sent_yet() -> None:
    async with FakeVendor() as fv:
        answer = await raw_exchange(fv.port, BAD_CHUNK)
    assert answer.startswith(b"HTTP/1.1 400"), answer


async def test_the_server_survives_bad_chunks_on_the_callers_own_backend() -> None:
    # The FakeServer on this test's backend (the FakeVendor always runs it on asyncio in its thread).
    async def app(scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    closing = anyio.Event()
    server = FakeServer(app, closing=closing)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, listener)
        for _ in range(3):
            assert (await raw_exchange(port, BAD_CHUNK)).startswith(b"HTTP/1.1 400")
        good = b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        assert (await raw_exchange(port, good)).startswith(b"HTTP/1.1 200")
        closing.set()


async def test_no_failure_of_one_connection_ends_the_server(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    # Whatever escapes one connection's handling (a bug), the server logs it and serves the next client.
    real = FakeServer._exchange
    failures = iter([ExceptionGroup("one connection", [RuntimeError("boom")]), KeyError("x")])

    async def failing(self: FakeServer, conn: h11.Connection, stream: Any, request: h11.Request) -> bool:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return await real(self, conn, stream, request)

    monkeypatch.setattr(FakeServer, "_exchange", failing)
    async with FakeVendor() as fv, httpx.AsyncClient(timeout=10) as client:
        for _ in range(2):
            # Dropped without an answer: a clean close, or a reset when the unread body was still queued.
            with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
                await client.post(f"{fv.openai_base_url}/chat/completions", json=CHAT, headers=OPENAI)
        ok = await client.post(f"{fv.openai_base_url}/chat/completions", json=CHAT, headers=OPENAI)
        assert ok.status_code == 200, ok.text
        assert fv.running
    assert "a connection failed" in caplog.text


# --- 2. wrongly typed fields: a typed 400, recorded ------------------------------------------------


def _error_message(wire: str, payload: Any) -> str:
    """The error message, read where each wire puts it (so the shape is checked too)."""
    if wire == "anthropic":
        assert payload["type"] == "error" and payload["error"]["type"] == "invalid_request_error"
        return str(payload["error"]["message"])
    if wire == "gemini":
        assert payload["error"]["status"] == "INVALID_ARGUMENT" and payload["error"]["code"] == 400
        return str(payload["error"]["message"])
    if wire == "bedrock":
        return str(payload["message"])
    assert payload["error"]["type"] == "invalid_request_error"
    return str(payload["error"]["message"])


TYPED = [
    ("gemini", "/v1beta/models/gm:generateContent", GEMINI,
     {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": 5}),
    ("gemini", "/v1beta/models/gm:generateContent", GEMINI,
     {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": 5}]}),
    ("anthropic", "/v1/messages", ANTHROPIC,
     {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}], "tools": 5}),
    ("openai", "/v1/chat/completions", OPENAI,
     {"model": "m", "messages": [{"role": "user", "content": [{"type": ["text"]}]}]}),
    ("openai", "/v1/chat/completions", OPENAI,
     {"model": "m", "messages": [{"role": "user", "content": [{"type": {"a": 1}}]}]}),
    ("openai", "/v1/chat/completions", OPENAI,
     {"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": -1}),
    ("responses", "/v1/responses", OPENAI, {"model": "m", "input": "x", "reasoning": {"effort": ["low"]}}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"text": "x"}]}],
      "toolConfig": {"tools": [{"toolSpec": {"name": "f", "inputSchema": {"json": "x"}}}]}}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"text": "x"}]}], "toolConfig": {"tools": 5}}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"text": "x"}]}],
      "toolConfig": {"tools": [{"toolSpec": {"x": 1}}]}}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"text": "x"}]}], "inferenceConfig": {"maxTokens": -1}}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"text": "x"}]},
                   {"role": "assistant", "content": [{"toolUse": 5}]}]}),
    ("bedrock", "/model/m/converse", BEDROCK,
     {"messages": [{"role": "user", "content": [{"toolResult": "x"}]}]}),
]


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
@pytest.mark.parametrize(("wire", "path", "headers", "body"), TYPED,
                         ids=[f"{w}-{i}" for i, (w, *_) in enumerate(TYPED)])
async def test_a_wrongly_typed_field_is_a_recorded_vendor_shaped_answer_never_a_500(
    wire: str, path: str, headers: dict[str, str], body: dict[str, Any], strict: bool
) -> None:
    async with FakeVendor(strict=strict) as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=headers)
        assert response.status_code < 500, response.text
        if strict:
            assert response.status_code == 400, response.text
            assert _error_message(wire, response.json())
        assert "x-should-retry" not in response.headers
        assert len(fv.requests) == 1
        assert fv.requests[0].wire == wire
        ok = await client.post("/v1/chat/completions", json=CHAT, headers=OPENAI)
        assert ok.status_code == 200, ok.text


@pytest.mark.parametrize(("wire", "path", "headers"), [
    ("anthropic", "/v1/messages/batches", ANTHROPIC),
    ("openai", "/v1/batches", OPENAI),
    ("gemini", "/v1beta/models/gm:batchGenerateContent", GEMINI),
])
async def test_a_batch_body_nested_too_deep_is_a_recorded_400(wire: str, path: str, headers: dict[str, str]) -> None:
    # json.loads raises RecursionError there, which the batch readers did not catch beside ValueError.
    nested = b"[" * 100_000 + b"]" * 100_000
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=60) as client:
        response = await client.post(path, content=nested, headers={**headers, "content-type": "application/json"})
        assert response.status_code == 400, response.text
        assert "could not parse the JSON body" in _error_message(wire, response.json())
        assert len(fv.requests) == 1


async def test_an_unexpected_parse_failure_is_the_wires_400_invalid_request_body(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    # Whatever a reader misses still gets the vendor's 400, not a bare 500: the generic guard in the app.
    from agentactors.testing import _fake_app

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("a case no reader checks")

    monkeypatch.setattr(_fake_app, "parse_request", broken)
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        for wire, path, headers, body in TYPED[:3]:
            response = await client.post(path, json=body, headers=headers)
            assert response.status_code == 400, response.text
            assert _error_message(wire, response.json()) == "invalid request body"
        assert len(fv.requests) == 3
        assert all(r.body is not None for r in fv.requests)


# --- 4. strict mode refuses what the real vendors refuse --------------------------------------------


ACCEPTED_BEFORE = [
    ("openai", "/v1/chat/completions", OPENAI, {"model": "m", "messages": [{"role": "user"}]}),
    ("openai", "/v1/chat/completions", OPENAI, {"model": "m", "messages": [{"role": "user", "content": 5}]}),
    ("openai", "/v1/chat/completions", OPENAI, {**CHAT, "stream": "yes"}),
    ("openai", "/v1/chat/completions", OPENAI, {**CHAT, "max_tokens": "a"}),
    ("openai", "/v1/chat/completions", OPENAI, {**CHAT, "stop": 5}),
    ("openai", "/v1/chat/completions", OPENAI, {**CHAT, "tools": "x"}),
    ("responses", "/v1/responses", OPENAI, {"model": "m", "input": "x", "text": 5}),
    ("responses", "/v1/responses", OPENAI, {"model": "m", "input": "x", "reasoning": 5}),
    ("responses", "/v1/responses", OPENAI, {"model": "m", "input": "x", "instructions": 5}),
    ("responses", "/v1/responses", OPENAI, {"model": "m", "input": "x", "include": 5}),
    ("gemini", "/v1beta/models/gm:generateContent", GEMINI,
     {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": [5]}),
    ("gemini", "/v1beta/models/gm:generateContent", GEMINI,
     {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "toolConfig": 5}),
    ("gemini", "/v1beta/models/gm:generateContent", GEMINI,
     {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "systemInstruction": 5}),
    # Beyond the audit's list, as cheap to check:
    ("openai", "/v1/chat/completions", OPENAI, {**CHAT, "stream": True, "stream_options": 5}),
    ("openai", "/v1/chat/completions", OPENAI, {"model": "m", "messages": [{"role": "assistant", "tool_calls": 5}]}),
    *[("anthropic", "/v1/messages", ANTHROPIC, {"model": "m", "max_tokens": 10, **extra}) for extra in (
        {"messages": [{"role": "user", "content": [5]}]},
        {"messages": [{"role": "user", "content": "x"}], "system": 5},
        {"messages": [{"role": "user", "content": "x"}], "system": [5]},
        {"messages": [{"role": "user", "content": "x"}], "tools": [5]},
        {"messages": [{"role": "user", "content": "x"}], "tools": [{"name": "f", "input_schema": 5}]},
        {"messages": [{"role": "user", "content": "x"}], "tool_choice": 5},
        {"messages": [{"role": "user", "content": "x"}], "thinking": 5},
    )],
]


@pytest.mark.parametrize(("wire", "path", "headers", "body"), ACCEPTED_BEFORE,
                         ids=[f"{w}-{json.dumps(b)[-40:]}" for w, _, _, b in ACCEPTED_BEFORE])
async def test_strict_mode_refuses_wrongly_typed_fields_the_real_vendors_refuse(
    wire: str, path: str, headers: dict[str, str], body: dict[str, Any]
) -> None:
    async with FakeVendor() as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=headers)
        assert response.status_code == 400, response.text
        assert _error_message(wire, response.json())
    async with FakeVendor(strict=False) as fv, httpx.AsyncClient(base_url=fv.base_url, timeout=10) as client:
        response = await client.post(path, json=body, headers=headers)
        assert response.status_code == 200, response.text


# --- status lines -----------------------------------------------------------------------------------


def _request(method: str, path: str, headers: dict[str, str], body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: x", "Connection: close", f"Content-Length: {len(body)}",
             *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def test_every_status_line_carries_its_reason_phrase() -> None:
    """``HTTP/1.1 200 `` (no phrase) is valid HTTP, but clients in other languages print it, and some
    (curl's status line, a Go ``resp.Status``) show nothing where a reader expects ``OK``."""
    chat = json.dumps(CHAT).encode()
    async with FakeVendor() as fv:
        fv.script(FakeError(429, retry_after=1), FakeError(529), FakeError(599), wire="openai")
        answers = [
            await raw_exchange(fv.port, _request("GET", "/health", {})),
            await raw_exchange(fv.port, _request("POST", "/v1/chat/completions", OPENAI, chat)),
            await raw_exchange(fv.port, _request("POST", "/v1/chat/completions", OPENAI, chat)),
            await raw_exchange(fv.port, _request("POST", "/v1/chat/completions", OPENAI, chat)),
            await raw_exchange(fv.port, _request("POST", "/v1/chat/completions", OPENAI, chat)),
            await raw_exchange(fv.port, _request("POST", "/v1/nowhere", OPENAI, chat)),
            await raw_exchange(fv.port, _request("POST", "/v1/chat/completions", {}, chat)),
            await raw_exchange(fv.port, BAD_CHUNK),
        ]
    assert [a.split(b"\r\n", 1)[0] for a in answers] == [
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 429 Too Many Requests",
        b"HTTP/1.1 529 Overloaded",  # no standard phrase: the name Anthropic's 529 goes by
        b"HTTP/1.1 599 Server Error",  # no phrase at all: its class's
        b"HTTP/1.1 200 OK",
        b"HTTP/1.1 404 Not Found",
        b"HTTP/1.1 401 Unauthorized",
        b"HTTP/1.1 400 Bad Request",
    ]
