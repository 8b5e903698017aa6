"""A ProviderActor over real HTTP waits for the vendor's reported reset instead of meeting its 429s.

A small OpenAI-compatible server on 127.0.0.1 keeps a fixed-window rate limit (``LIMIT`` requests a
``WINDOW``) and reports it as OpenAI does, on every answer: ``x-ratelimit-remaining-requests`` and
``x-ratelimit-reset-requests`` (counted when the request was admitted), a 429 past the limit.  Real sockets
and real clocks, both backends, generous bounds.  (The same on virtual time, with the edge cases:
``test_vendor_limits.py``.)
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest

from agentactors import (
    Complete,
    LLMRequest,
    Message,
    OpenAIProvider,
    ProviderActor,
    Runtime,
    Stream,
    StreamEnd,
    with_circuit_breaker,
    with_retry,
    with_timeout,
)

pytestmark = pytest.mark.anyio

KEY = "sk-vendor-limits-test-000000000000000"
LIMIT = 3
WINDOW = 0.5
HOLD = 0.05  # how long the server takes to answer an admitted request
BOUND = 30.0  # no test here may take longer than this: a hang fails, not times out the suite


class LimitedServer:
    """Answers chat completions (whole or streamed) within a fixed-window limit; counts what it admitted and refused."""

    def __init__(self) -> None:
        self.port = 0
        self.start = -1e9
        self.count = 0
        self.admitted: list[float] = []
        self.refused = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _admit(self) -> tuple[bool, dict[str, str]]:
        now = anyio.current_time()
        if now >= self.start + WINDOW:
            self.start, self.count = now, 0
        self.count += 1
        headers = {
            "x-ratelimit-limit-requests": str(LIMIT),
            "x-ratelimit-remaining-requests": str(max(0, LIMIT - self.count)),
            "x-ratelimit-reset-requests": f"{self.start + WINDOW - now:.3f}s",
        }
        if self.count > LIMIT:
            self.refused += 1
            return False, headers
        self.admitted.append(now)
        return True, headers

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        buffer = b""
        async with stream:
            try:
                while True:
                    while b"\r\n\r\n" not in buffer:
                        buffer += await stream.receive()
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                    length = int(found.group(1)) if found else 0
                    while len(buffer) < length:
                        buffer += await stream.receive()
                    body, buffer = buffer[:length], buffer[length:]
                    await stream.send(await self._answer(json.loads(body)))
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _answer(self, request: dict[str, Any]) -> bytes:
        admitted, headers = self._admit()
        if not admitted:
            error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
            return _response(429, json.dumps(error).encode(), headers, "application/json")
        await anyio.sleep(HOLD)
        if request.get("stream"):
            chunks = [
                {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "o"}}]},
                {"choices": [{"index": 0, "delta": {"content": "k"}, "finish_reason": "stop"}]},
                {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}},
            ]
            sse = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
            return _response(200, sse, headers, "text/event-stream")
        answer = {
            "id": "c",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
        return _response(200, json.dumps(answer).encode(), headers, "application/json")


def _response(status: int, body: bytes, headers: dict[str, str], ctype: str) -> bytes:
    fields = {"content-type": ctype, "content-length": str(len(body)), **headers}
    head = f"HTTP/1.1 {status} X\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    return head.encode("latin-1") + body


@asynccontextmanager
async def serving() -> AsyncIterator[LimitedServer]:
    server = LimitedServer()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.serve)
        yield server
        tg.cancel_scope.cancel()


def request() -> LLMRequest:
    return LLMRequest([Message.user("hello")])


def decorated(provider: Any) -> Any:
    return with_circuit_breaker(with_retry(with_timeout(provider, attempt=20.0), max_attempts=1))


@pytest.mark.parametrize("wrap", [False, True], ids=["bare", "decorated"])
async def test_complete_requests_wait_for_the_reported_reset_and_meet_no_429(wrap: bool) -> None:
    n = 3 * LIMIT
    with anyio.fail_after(BOUND):
        async with serving() as server, Runtime() as rt:
            provider = OpenAIProvider("m", api_key=KEY, base_url=server.base_url)
            ref = ProviderActor.shared(rt, decorated(provider) if wrap else provider, max_concurrency=2)
            answers: list[str] = []
            start = anyio.current_time()

            async def ask() -> None:
                answers.append((await ref.ask(Complete(request()))).content)

            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(ask)
            elapsed = anyio.current_time() - start
    assert server.refused == 0
    assert answers == ["ok"] * n
    # LIMIT a window: the last LIMIT went after the second reset at the earliest.
    assert elapsed >= 2 * WINDOW - 0.1


@pytest.mark.parametrize("pull", [False, True], ids=["fed", "pulled"])
async def test_streams_wait_for_the_reported_reset_and_meet_no_429(pull: bool) -> None:
    n = 2 * LIMIT + 1
    with anyio.fail_after(BOUND):
        async with serving() as server, Runtime() as rt:
            provider = OpenAIProvider("m", api_key=KEY, base_url=server.base_url)
            ref = ProviderActor.shared(rt, provider, max_concurrency=2)
            texts: list[str] = []

            async def ask() -> None:
                async with await ref.ask(Stream(request(), pull=pull)) as stream:
                    async for event in stream:
                        if isinstance(event, StreamEnd):
                            texts.append(event.response.content)

            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(ask)
    assert server.refused == 0
    assert texts == ["ok"] * n
