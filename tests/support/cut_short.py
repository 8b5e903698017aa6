"""What the tests of calls cut short (docs/costs.md, "Calls cut short") share: a long prompt, a streaming vendor that
can hang or fail, checks of a charge's shape, and a batch API that never ends.

With :func:`tests.support.prices.gpt_4o_priced` (an autouse fixture to import), :data:`PROMPT` is ~10,000 prompt
tokens: $0.025 at gpt-4o's input price (:data:`ESTIMATE`), and a delta of :data:`PIECE` ~100 output tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest

from agentactors import (
    LLMRequest,
    LLMResponse,
    Message,
    OpenAIProvider,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    Usage,
)
from agentactors.errors import ErrorKind, ProviderError
from agentactors.gateway import PulledStream, Stream
from agentactors.messages import StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import CutShort

PROMPT = "x" * 40_000  # ~10,000 prompt tokens: $0.025 at gpt-4o's input price
ESTIMATE = 0.025  # PROMPT's estimated charge at gpt-4o's input price
PIECE = "y" * 400  # ~100 output tokens a delta: $0.001 at gpt-4o's output price
USAGE = Usage(10_000, 300)  # what Vendor's StreamEnd reports: its three deltas


def request() -> LLMRequest:
    """A request of :data:`PROMPT` (the model the provider's own)."""
    return LLMRequest([Message.user(PROMPT)])


class Vendor:
    """Streams three deltas of :data:`PIECE` one second apart, then its ``StreamEnd`` at :data:`USAGE`.

    ``silent``: that many of its first calls send nothing for a long while (a hedge or a timeout gives up on them).
    ``fails``: its stream fails after its first delta.  Counts the calls sent, and the streams closed before their end.
    """

    name = "openai"
    default_model = "gpt-4o"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self, silent: int = 0, *, fails: bool = False) -> None:
        self.silent = silent
        self.fails = fails
        self.sent = 0
        self.closed_early = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - streamed only
        raise AssertionError("streamed only")

    def stream(self, request: LLMRequest) -> Any:
        return self._stream()

    @asynccontextmanager
    async def _stream(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        self.sent += 1
        hangs = self.sent <= self.silent
        ended = False

        async def events() -> AsyncIterator[StreamEvent]:
            nonlocal ended
            if hangs:
                await anyio.sleep(1000)
            for _ in range(3):
                await anyio.sleep(1.0)
                yield TextDelta(PIECE)
                if self.fails:
                    raise ConnectionError("reset")
            ended = True
            yield StreamEnd(LLMResponse(PIECE * 3, usage=USAGE, provider="openai", model="gpt-4o"))

        gen = events()
        try:
            yield gen
        finally:
            if not ended:
                self.closed_early += 1
            with anyio.CancelScope(shield=True):
                await gen.aclose()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        pass


def answering(delay: float, model: str = "gpt-4o", *, refuse: bool = False) -> ScriptedProvider:
    """A vendor whose every call answers after ``delay`` s (a long one: it hangs) — or, ``refuse``, is refused then
    with a request error (not billed)."""

    def item(request: LLMRequest) -> Any:
        async def answer() -> LLMResponse:
            await anyio.sleep(delay)
            if refuse:
                raise ProviderError("bad request", provider="openai", model=model, kind=ErrorKind.request)
            return LLMResponse("answer", usage=Usage(1, 1), provider="openai", model=model)

        return answer()

    return ScriptedProvider(item, name="openai", model=model)


def failing(model: str = "gpt-4o") -> ScriptedProvider:
    """A vendor that fails every call at once, in a way a fallback or a pool moves on from (not billed)."""

    def item(request: LLMRequest) -> Any:
        raise ProviderError("overloaded", provider="openai", model=model, kind=ErrorKind.transient, retryable=True)

    return ScriptedProvider(item, name="openai", model=model)


def in_flight(call: CutShort, deltas: int, provider: str = "openai") -> None:
    """``call`` is a call in flight's charge: its prompt and the ``deltas`` it had delivered, estimated."""
    assert call.estimated and call.provider == provider and call.model == "gpt-4o"
    assert call.input_tokens == pytest.approx(10_000, rel=0.01)
    assert call.output_tokens == deltas * 100


def unanswered(call: CutShort) -> None:
    """``call`` is a copy or an attempt given up before its first event: its prompt alone, estimated."""
    assert call.estimated and call.input_tokens == pytest.approx(10_000, rel=0.01) and call.output_tokens == 0


def never_ending_batches() -> OpenAIProvider:
    """An OpenAI provider whose batches are submitted and then run forever (each status read: in progress)."""

    def handler(http: httpx.Request) -> httpx.Response:
        path = http.url.path
        if path == "/v1/files":
            return httpx.Response(200, json={"id": "file-in"})
        if path == "/v1/batches":
            return httpx.Response(200, json={"id": "batch-1", "status": "validating"})
        return httpx.Response(200, json={"id": "batch-1", "status": "in_progress"})

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIProvider("gpt-4o", api_key="sk-unit-key-000", base_url="https://api.openai.com/v1",
                          http_client=client)


async def pulled(rt: Runtime, provider: Any, req: LLMRequest) -> PulledStream:
    """A pulled stream of ``req`` from ``provider``'s shared ``ProviderActor`` in ``rt`` (what a streamed run reads)."""
    stream = await ProviderActor.shared(rt, provider).ask(Stream(req, pull=True))
    assert isinstance(stream, PulledStream)
    return stream
