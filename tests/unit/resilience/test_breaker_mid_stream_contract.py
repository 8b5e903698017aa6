"""A breaker that counts mid-stream outcomes counts a stream that broke the contract at its end.

``with_circuit_breaker(count_mid_stream=True)`` takes a stream's outcome when it ends.  A provider whose stream
ended with a ``StreamEnd`` carrying no ``LLMResponse`` (``None``, a dict), or that ended with no ``StreamEnd`` at
all, answered nothing: the run fails with a ``MalformedResponseError`` naming it (tests/unit/loop/
test_provider_contract.py) — and the breaker counts that call a failure, as it counts ``complete()``'s non-answer.
A consumer that stops reading early (its own choice) is no failure of the provider's, and a whole stream is a
success.
"""

from __future__ import annotations

from typing import Any

import pytest

from agentactors import Agent, LLMResponse
from agentactors.messages import StreamEnd, TextDelta
from agentactors.resilience import with_circuit_breaker

from ..loop.test_provider_contract import Mine

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

OK = LLMResponse(content="ok")


async def _stream_run(provider: Any) -> Any:
    agent = Agent(provider)
    async with agent.stream("hi") as handle:
        async for _ in handle:
            pass
    return handle.result


@pytest.mark.parametrize(
    "events",
    [
        pytest.param((TextDelta("ok"), StreamEnd(None)), id="end-without-response"),  # type: ignore[arg-type]
        pytest.param((TextDelta("ok"), StreamEnd({"content": "ok"})), id="end-with-a-dict"),  # type: ignore[arg-type]
        pytest.param((TextDelta("ok"),), id="no-end"),
    ],
)
async def test_a_stream_that_answered_nothing_is_counted_a_failure(events: tuple[Any, ...]) -> None:
    breaker = with_circuit_breaker(Mine(events=events), count_mid_stream=True, min_calls=1, failure_rate=1.0)
    result = await _stream_run(breaker)
    assert not result.ok and result.generation_failed
    stats = breaker.stats_for("mine-1")
    assert (stats.calls, stats.failures) == (1, 1), stats


async def test_a_whole_stream_is_a_success() -> None:
    breaker = with_circuit_breaker(Mine(events=(TextDelta("ok"), StreamEnd(OK))), count_mid_stream=True)
    result = await _stream_run(breaker)
    assert result.ok and result.content == "ok"
    stats = breaker.stats_for("mine-1")
    assert (stats.calls, stats.failures) == (1, 0), stats


async def test_a_consumer_that_stops_reading_early_costs_the_provider_nothing() -> None:
    breaker = with_circuit_breaker(Mine(events=(TextDelta("a"), TextDelta("b"), StreamEnd(OK))),
                                   count_mid_stream=True)
    from agentactors.messages import LLMRequest, Message

    async with breaker.stream(LLMRequest([Message.user("hi")])) as events:
        async for _ in events:
            break  # the consumer's choice: no StreamEnd read
    stats = breaker.stats_for("mine-1")
    assert (stats.calls, stats.failures) == (1, 0), stats
