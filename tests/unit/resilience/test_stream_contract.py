"""A member whose ``stream()`` returns no async context manager, read through the decorators themselves.

Such a ``stream()`` (a bare async generator, the coroutine of an ``async def stream``) failed in ``async with`` with
Python's "does not support the asynchronous context manager protocol", which the decorators classified as a
request error: not counted by a breaker, not moved on from by a fallback chain, named after nobody in particular,
and the coroutine left to warn "never awaited".  It is the member's broken contract: a
:class:`MalformedResponseError` naming it — transient (counted, moved on from) but not retryable — with the
returned object closed.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentactors.errors import MalformedResponseError
from agentactors.messages import LLMRequest, LLMResponse, StreamEnd, StreamEvent, TextDelta
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience import with_circuit_breaker, with_fallback, with_hedge, with_pool, with_retry
from tests.support.resilience import REQ

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

OK = LLMResponse(content="ok")


class NoManager:
    """``stream()`` returns a bare async generator (``shape="iterator"``) or a coroutine (``"coroutine"``)."""

    name = "mine"
    default_model = "mine-1"

    def __init__(self, shape: str) -> None:
        self.shape = shape
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        return OK

    def stream(self, request: LLMRequest) -> Any:
        self.calls += 1

        async def gen() -> AsyncIterator[StreamEvent]:
            yield TextDelta("ok")
            yield StreamEnd(OK)

        if self.shape == "iterator":
            return gen()

        async def opened() -> Any:
            return gen()

        return opened()

    async def aclose(self) -> None:
        pass


async def read_all(provider: Any) -> list[StreamEvent]:
    async with provider.stream(REQ) as events:
        return [event async for event in events]


SHAPES = pytest.mark.parametrize("shape", ["iterator", "coroutine"])


@SHAPES
async def test_retry_names_the_member_and_does_not_ask_again(shape: str) -> None:
    member = NoManager(shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the coroutine is closed, not left to warn
        with pytest.raises(MalformedResponseError) as caught:
            await read_all(with_retry(member))
    assert caught.value.provider == "mine"
    assert caught.value.retryable is False
    assert "async context manager" in str(caught.value)
    assert "coroutine" in str(caught.value) or "async_generator" in str(caught.value)
    assert member.calls == 1


@SHAPES
async def test_a_breaker_counts_it_as_the_members_failure(shape: str) -> None:
    breaker = with_circuit_breaker(NoManager(shape))
    with pytest.raises(MalformedResponseError):
        await read_all(breaker)
    stats = breaker.stats_for(None)
    assert stats.failures == 1
    assert isinstance(stats.last_error, MalformedResponseError)


@SHAPES
async def test_a_fallback_chain_moves_on_to_the_next_member(shape: str) -> None:
    chain = with_fallback(NoManager(shape), ScriptedProvider(["backup"], name="backup"))
    events = await read_all(chain)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.content == "backup"


@SHAPES
async def test_a_pool_moves_on_to_the_next_member(shape: str) -> None:
    pool = with_pool(NoManager(shape), ScriptedProvider(["backup"], name="backup"), strategy="round_robin")
    events = await read_all(pool)
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.content == "backup"


@SHAPES
async def test_a_hedge_names_the_member(shape: str) -> None:
    with pytest.raises(MalformedResponseError) as caught:
        await read_all(with_hedge(NoManager(shape), after=1.0))
    assert caught.value.provider == "mine"
