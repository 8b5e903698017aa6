"""A hedge among the other layers, as a hostile user stacks them; virtual time, both backends.

What these pin (each held already when the hedge was audited): a breaker inside the hedge never counts the loser
it cancelled; a caller cancelled mid-call leaves no copy running, on trio too; an
``UnsupportedToolChoiceError`` goes through every stacking of retry, breaker, pool and hedge without a request
sent, a retry, a hedge or a breaker count.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import LLMRequest, Message, ScriptedProvider
from agentactors.errors import UnsupportedToolChoiceError
from agentactors.resilience import CircuitState, with_circuit_breaker, with_hedge, with_pool, with_retry
from tests.support.resilience import FORCED_TOOL, recording
from tests.unit.resilience.test_hedge import Slow

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")])


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_a_breaker_inside_the_hedge_never_counts_the_cancelled_loser(anyio_backend: Any, streamed: bool) -> None:
    slow = Slow([30.0, 1.0] * 3)
    breaker = with_circuit_breaker(ScriptedProvider(slow), consecutive_failures=1, min_calls=1)
    hedged = with_hedge(breaker, after=2.0, max_extra=1.0)
    with recording() as recorder:
        for _ in range(3):
            if streamed:
                async with hedged.stream(REQUEST) as events:
                    [event async for event in events]
            else:
                await hedged.complete(REQUEST)
    assert slow.cancelled == [30.0] * 3 and hedged.hedged == 3
    stats = breaker.stats_for(None)
    assert stats.state is CircuitState.closed and stats.failures == 0 and stats.consecutive_failures == 0
    assert [e.winner for e in recorder.events if e.type == "hedge.won"] == ["hedge"] * 3


@pytest.mark.parametrize("streamed", [False, True], ids=["complete", "stream"])
async def test_a_caller_cancelled_mid_call_closes_both_copies(anyio_backend: Any, streamed: bool) -> None:
    slow = Slow([30.0, 30.0])
    hedged = with_hedge(ScriptedProvider(slow), after=1.0, max_extra=1.0)
    with anyio.move_on_after(5.0) as scope:
        if streamed:
            async with hedged.stream(REQUEST) as events:
                [event async for event in events]
        else:
            await hedged.complete(REQUEST)
    assert scope.cancelled_caught
    assert slow.cancelled == [30.0, 30.0] and slow.answered == []  # both requests closed, none left running
    await anyio.sleep(60.0)
    assert slow.answered == []


STACKS = ["retry(hedge)", "hedge(retry)", "breaker(hedge)", "hedge(breaker)", "pool(hedge)", "hedge(pool)"]


@pytest.mark.parametrize("stack", STACKS)
async def test_an_unsupported_tool_choice_is_never_sent_retried_hedged_or_counted(
    anyio_backend: Any, stack: str
) -> None:
    incapable = ScriptedProvider(["never"] * 4, name="incapable", carries_forced_tool_choice=False)
    other = ScriptedProvider(["never"] * 4, name="other")
    breaker: Any = None
    if stack == "retry(hedge)":
        provider: Any = with_retry(with_hedge(incapable, after=0.0, max_extra=1.0), max_attempts=3, base_delay=0.1)
    elif stack == "hedge(retry)":
        provider = with_hedge(with_retry(incapable, max_attempts=3, base_delay=0.1), after=0.0, max_extra=1.0, to=other)
    elif stack == "breaker(hedge)":
        breaker = with_circuit_breaker(with_hedge(incapable, after=0.0, max_extra=1.0), consecutive_failures=1)
        provider = breaker
    elif stack == "hedge(breaker)":
        breaker = with_circuit_breaker(incapable, consecutive_failures=1)
        provider = with_hedge(breaker, after=0.0, max_extra=1.0, to=other)
    elif stack == "pool(hedge)":
        provider = with_pool(with_hedge(incapable, after=0.0, max_extra=1.0), other)
    else:
        provider = with_hedge(with_pool(incapable, other), after=0.0, max_extra=1.0)
    for _ in range(2):
        with pytest.raises(UnsupportedToolChoiceError):
            await provider.complete(FORCED_TOOL)
        with pytest.raises(UnsupportedToolChoiceError):
            async with provider.stream(FORCED_TOOL) as events:
                [event async for event in events]
    assert incapable.calls == 0 and other.calls == 0
    if breaker is not None:
        assert breaker.stats_for(None).state is CircuitState.closed and breaker.stats_for(None).failures == 0
