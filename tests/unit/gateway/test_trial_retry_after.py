"""A vendor's 429 with ``retry_after`` under a token budget: the requests behind it wait that long, not longer.

Found in a trial of many agents against a rate-limited vendor (tokens_per_minute=30,000, a request of ~4,600 tokens
estimated: its prompt and its ``max_tokens``): the vendor said "retry after 1 s", and the next request went after
10.2 s.  ``Scheduler.hold_off`` drained the token bucket until its next *token* was 1 s away — whatever the bucket
held, 25,000 tokens here — so a request then waited 1 s and the refill of its whole estimate from nothing besides.
The vendor's word is that a request of the refused one's size fits at its retry-after; nothing goes before it.
On virtual time, both backends.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Complete, LLMRequest, Message, ProviderActor, Runtime, ScriptedProvider
from agentactors.errors import ErrorKind, ProviderError

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

BIG = LLMRequest([Message.user("x" * 2000)], max_tokens=4096)  # ~4,600 tokens estimated
SMALL = LLMRequest([Message.user("x")])


def limited_once(calls: list[float], retry_after: float) -> ScriptedProvider:
    """A vendor whose first answer is a 429 saying ``retry_after``; every call's time in ``calls``."""

    async def vendor(req: LLMRequest) -> str:
        calls.append(anyio.current_time())
        if len(calls) == 1:
            raise ProviderError("rate limited", provider="p", kind=ErrorKind.transient, status=429,
                                retry_after=retry_after)
        return "ok"

    return ScriptedProvider(vendor)


async def refused_once(rt: Runtime, calls: list[float], retry_after: float, **budgets: int) -> tuple[Any, float]:
    """The runtime's ProviderActor over :func:`limited_once` with ``budgets``, after its first (BIG) request was
    refused with a 429: the actor, and when that request was sent."""
    ref = ProviderActor.shared(rt, limited_once(calls, retry_after), **budgets)
    start = anyio.current_time()
    with pytest.raises(ProviderError):
        await ref.ask(Complete(BIG))
    return ref, start


async def test_after_a_429_a_request_of_the_refused_size_goes_at_its_retry_after() -> None:
    calls: list[float] = []
    async with Runtime() as rt:
        ref, start = await refused_once(rt, calls, 1.0, tokens_per_minute=30_000)
        assert (await ref.ask(Complete(BIG))).content == "ok"
    assert calls[1] - start == pytest.approx(1.0, abs=0.01)  # was 10.19: the estimate refilled from nothing


async def test_after_a_429_no_request_however_small_goes_before_its_retry_after() -> None:
    calls: list[float] = []
    async with Runtime() as rt:
        ref, start = await refused_once(rt, calls, 2.0, tokens_per_minute=30_000)
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(ref.ask, Complete(SMALL))
    assert len(calls) == 4
    assert min(calls[1:]) - start == pytest.approx(2.0, abs=0.01)


async def test_after_a_429_the_requests_behind_go_at_the_budgets_pace_not_in_a_burst() -> None:
    """The refused request's tokens are spent: after the hold, the bucket holds one such request's worth, and the
    next waits for its own refill (500 tokens a second here)."""
    calls: list[float] = []
    async with Runtime() as rt:
        ref, start = await refused_once(rt, calls, 1.0, tokens_per_minute=30_000)
        async with anyio.create_task_group() as tg:
            for _ in range(2):
                tg.start_soon(ref.ask, Complete(BIG))
    estimate = 2000 // 4 + 1 + 4096
    assert calls[1] - start == pytest.approx(1.0, abs=0.01)
    assert calls[2] - calls[1] == pytest.approx(estimate / 500, abs=0.01)


async def test_a_429_under_a_request_budget_still_holds_every_request_that_long() -> None:
    calls: list[float] = []
    async with Runtime() as rt:
        ref, start = await refused_once(rt, calls, 3.0, requests_per_minute=600, tokens_per_minute=30_000)
        assert (await ref.ask(Complete(SMALL))).content == "ok"
    assert calls[1] - start == pytest.approx(3.0, abs=0.01)
