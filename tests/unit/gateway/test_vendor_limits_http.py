"""A ProviderActor over real HTTP waits for what the vendor reports instead of meeting its 429s.

A small OpenAI-compatible server on 127.0.0.1 keeps a rate limit of ``LIMIT`` requests a ``WINDOW`` and reports
it on every answer (counted when the request was admitted), a 429 when it has none left.  Either as OpenAI keeps
it — a token bucket refilled continuously, reporting ``x-ratelimit-limit-requests``,
``x-ratelimit-remaining-requests`` and ``x-ratelimit-reset-requests`` (the time until full): the requests go at
its refill pace — or as a fixed window that does not say its limit: they wait for its reset.  Real sockets and
real clocks, both backends, generous bounds.  (The same on virtual time, with the edge cases:
``test_vendor_limits.py``.)
"""

from __future__ import annotations

import itertools
import json
import math
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
from tests.support.raw_http import read_request

pytestmark = pytest.mark.anyio

KEY = "sk-vendor-limits-test-000000000000000"
LIMIT = 3
WINDOW = 0.5
HOLD = 0.05  # how long the server takes to answer an admitted request
BOUND = 30.0  # no test here may take longer than this: a hang fails, not times out the suite


class LimitedServer:
    """Answers chat completions (whole or streamed) within its limit; counts what it admitted and refused.

    ``bucket``: ``limit`` requests refilled continuously over ``window`` seconds, the limit said (OpenAI's way);
    else a fixed window of ``limit`` requests whose limit is not said.
    """

    def __init__(self, bucket: bool = True, limit: int = LIMIT, window: float = WINDOW) -> None:
        self.port = 0
        self.bucket = bucket
        self.limit = limit
        self.window = window
        self.start = -1e9
        self.count = 0
        self.level = float(limit)
        self.last: float | None = None
        self.admitted: list[float] = []
        self.refused = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _admit(self) -> tuple[bool, dict[str, str]]:
        return self._admit_bucket() if self.bucket else self._admit_window()

    def _admit_bucket(self) -> tuple[bool, dict[str, str]]:
        now = anyio.current_time()
        per_second = self.limit / self.window
        if self.last is not None:
            self.level = min(self.limit, self.level + (now - self.last) * per_second)
        self.last = now
        admitted = self.level >= 1.0
        if admitted:
            self.level -= 1.0
            self.admitted.append(now)
        else:
            self.refused += 1
        # Rounded as a vendor rounds: the requests left down, the time until full up.
        full = math.ceil((self.limit - self.level) / per_second * 1000) / 1000
        headers = {
            "x-ratelimit-limit-requests": str(self.limit),
            "x-ratelimit-remaining-requests": str(math.floor(self.level)),
            "x-ratelimit-reset-requests": f"{full:.3f}s",
        }
        return admitted, headers

    def _admit_window(self) -> tuple[bool, dict[str, str]]:
        now = anyio.current_time()
        if now >= self.start + self.window:
            self.start, self.count = now, 0
        self.count += 1
        headers = {
            "x-ratelimit-remaining-requests": str(max(0, self.limit - self.count)),
            "x-ratelimit-reset-requests": f"{self.start + self.window - now:.3f}s",
        }
        if self.count > self.limit:
            self.refused += 1
            return False, headers
        self.admitted.append(now)
        return True, headers

    async def serve(self, stream: anyio.abc.ByteStream) -> None:
        buffer = b""
        async with stream:
            try:
                while True:
                    _, body, buffer = await read_request(stream, buffer)
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
async def serving(bucket: bool = True, limit: int = LIMIT, window: float = WINDOW) -> AsyncIterator[LimitedServer]:
    server = LimitedServer(bucket, limit, window)
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


@pytest.mark.parametrize("bucket", [True, False], ids=["bucket", "window"])
@pytest.mark.parametrize("wrap", [False, True], ids=["bare", "decorated"])
async def test_complete_requests_wait_for_the_vendor_and_meet_no_429(wrap: bool, bucket: bool) -> None:
    n = 3 * LIMIT
    with anyio.fail_after(BOUND):
        async with serving(bucket) as server, Runtime() as rt:
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
    # LIMIT a window: the last LIMIT went after the second reset (or refill of 2 * LIMIT) at the earliest.
    assert elapsed >= 2 * WINDOW - 0.1


@pytest.mark.parametrize("pull", [False, True], ids=["fed", "pulled"])
async def test_streams_wait_for_the_vendor_and_meet_no_429(pull: bool) -> None:
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


async def test_requests_go_at_a_token_buckets_refill_pace_not_in_bursts_at_each_full_bucket() -> None:
    """20 requests refilled over 2 s (one every 0.1 s): once the bucket is empty, one goes each refill — not none
    until it is full again (2 s) and then a burst."""
    limit, window, n = 20, 2.0, 30
    with anyio.fail_after(BOUND):
        async with serving(True, limit, window) as server, Runtime() as rt:
            provider = OpenAIProvider("m", api_key=KEY, base_url=server.base_url)
            ref = ProviderActor.shared(rt, provider, max_concurrency=2)
            start = anyio.current_time()

            async def ask() -> None:
                assert (await ref.ask(Complete(request()))).content == "ok"

            async with anyio.create_task_group() as tg:
                for _ in range(n):
                    tg.start_soon(ask)
            elapsed = anyio.current_time() - start
    assert server.refused == 0
    assert len(server.admitted) == n
    # The bucket allows no faster than `limit` at once then one a refill; the actor keeps close to that pace.
    ideal = (n - limit) * window / limit
    assert ideal - 0.1 <= elapsed <= 3 * ideal + 1.0
    # No pause near the time to fill the whole bucket (the wait for a full reset).
    gaps = [b - a for a, b in itertools.pairwise(server.admitted)]
    assert max(gaps) < window / 2
