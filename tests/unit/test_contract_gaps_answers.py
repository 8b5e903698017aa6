"""A member whose ``complete()`` answers something that is no ``LLMResponse`` (``None``, a ``str``, a ``dict``).

It broke the contract: its failure, a :class:`MalformedResponseError` naming it — transient, so a circuit breaker
counts it and a pool or a hedge moves on, but not retryable.  Before, a breaker counted it as a success, a pool
failed with its own ``AttributeError`` (a request error, never moved on from), a hedge let it win the race, a retry
that had given up on an attempt failed with a ``TypeError``, and the stream path of a provider that cannot stream
failed with Python's ``AttributeError``.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Agent, LLMRequest, LLMResponse, ScriptedProvider
from agentactors.errors import MalformedResponseError
from agentactors.messages import Message, StreamEnd, StreamEvent
from agentactors.pricing import pop_cut_short
from agentactors.resilience import (
    CircuitState,
    with_circuit_breaker,
    with_fallback,
    with_hedge,
    with_pool,
    with_retry,
    with_timeout,
)

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

OK = LLMResponse(content="ok")
JUNK = pytest.mark.parametrize("junk", [None, "junk", {"content": "x"}], ids=["none", "str", "dict"])


class Answers:
    """``complete()`` answers ``answers[i]`` for call ``i`` (the last one again after), after ``delays[i]`` seconds;
    it cannot stream (``supports_streaming = False``): a stream of it is its ``complete()`` adapted."""

    name = "mine"
    default_model = "mine-1"
    supports_streaming = False

    def __init__(self, *answers: Any, delays: tuple[float, ...] = ()) -> None:
        self.answers = answers
        self.delays = delays
        self.calls = 0

    async def complete(self, request: LLMRequest) -> Any:
        call = self.calls
        self.calls += 1
        if call < len(self.delays) and self.delays[call]:
            await anyio.sleep(self.delays[call])
        return self.answers[min(call, len(self.answers) - 1)]

    def stream(self, request: LLMRequest) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass


def _req() -> LLMRequest:
    return LLMRequest([Message.user("hi")])


def _named(error: MalformedResponseError, junk: Any) -> None:
    assert error.provider == "mine"
    assert error.retryable is False
    assert f"was a {type(junk).__name__}, not an LLMResponse" in str(error)


@JUNK
async def test_a_breaker_counts_a_non_answer_as_the_members_failure(junk: Any) -> None:
    member = Answers(junk)
    breaker = with_circuit_breaker(member, consecutive_failures=2)
    for _ in range(2):
        with pytest.raises(MalformedResponseError) as caught:
            await breaker.complete(_req())
        _named(caught.value, junk)
    stats = breaker.stats_for(None)
    assert stats.failures == 2
    assert isinstance(stats.last_error, MalformedResponseError)
    assert stats.state is CircuitState.open


@JUNK
async def test_a_pool_moves_on_from_a_non_answer(junk: Any) -> None:
    pool = with_pool(Answers(junk), ScriptedProvider(["backup"], name="backup"), strategy="round_robin")
    response = await pool.complete(_req())
    assert response.content == "backup"


@JUNK
async def test_a_hedge_does_not_let_a_non_answer_win(junk: Any) -> None:
    # The first copy answers at 2 s; the hedge copy, sent at 1 s, answers a non-answer at once: it failed, it did not
    # win — the first copy's answer is the call's.
    member = Answers(OK, junk, delays=(2.0, 0.0))
    response = await with_hedge(member, after=1.0, max_extra=1.0).complete(_req())
    assert response.content == "ok"
    assert member.calls == 2


@JUNK
async def test_a_hedge_without_a_race_names_the_member(junk: Any) -> None:
    with pytest.raises(MalformedResponseError) as caught:
        await with_hedge(Answers(junk), after=1.0).complete(_req())
    _named(caught.value, junk)


@JUNK
async def test_a_retry_does_not_ask_again(junk: Any) -> None:
    member = Answers(junk)
    result = await Agent(with_retry(member)).run("hi")
    assert isinstance(result.error, MalformedResponseError)
    assert member.calls == 1


@JUNK
async def test_a_retry_that_gave_up_on_an_attempt_names_the_non_answer_and_charges_the_attempt(junk: Any) -> None:
    # The first attempt a with_timeout inside gave up on rode on the answer: with_cut_short on a str was a TypeError.
    member = Answers(OK, junk, delays=(60.0, 0.0))
    request = _req()
    with pytest.raises(MalformedResponseError) as caught:
        await with_retry(with_timeout(member, attempt=5)).complete(request)
    _named(caught.value, junk)
    assert member.calls == 2  # the non-answer is not asked again
    assert pop_cut_short(request), "the attempt given up on was lost"


async def _streamed(provider: Any) -> list[StreamEvent]:
    async with provider.stream(_req()) as events:
        return [event async for event in events]


@JUNK
@pytest.mark.parametrize("how", ["on_token", "stream"])
async def test_a_provider_that_cannot_stream_names_its_non_answer_on_the_stream_path(junk: Any, how: str) -> None:
    # Its complete() adapted as a stream (stream_from_complete) read the non-answer's fields: an AttributeError.
    member = Answers(junk)
    agent = Agent(with_retry(member))
    if how == "on_token":
        result = await agent.run("hi", on_token=lambda text: None)
    else:
        async with agent.stream("hi") as handle:
            async for _ in handle:
                pass
        assert handle.result is not None
        result = handle.result
    assert isinstance(result.error, MalformedResponseError), repr(result.error)
    _named(result.error, junk)
    assert member.calls == 1


@JUNK
async def test_the_stream_path_of_a_non_answer_is_counted_and_moved_on_from(junk: Any) -> None:
    breaker = with_circuit_breaker(Answers(junk))
    with pytest.raises(MalformedResponseError):
        await _streamed(breaker)
    assert breaker.stats_for(None).failures == 1
    events = await _streamed(with_fallback(Answers(junk), ScriptedProvider(["backup"], name="backup")))
    end = events[-1]
    assert isinstance(end, StreamEnd)
    assert end.response.content == "backup"
