"""The scheduler reviewed a second time: what it gives back, what it promises a waiter, what it refunds.

Every test runs on virtual time, on both backends.  The property test drives the :class:`Scheduler` itself
(no actor, no provider): thousands of seeded requests, each cancelled at a random instant — while it waits,
at the instant it is granted, while it holds its slot — and the counters must balance to the unit.
"""

from __future__ import annotations

import math
import random
from typing import Any

import anyio
import pytest

from agentactors import Complete, LLMRequest, Message, Overloaded, ProviderActor, Runtime, ScriptedProvider
from agentactors.errors import CircuitOpenError, ErrorKind, ProviderError
from agentactors.gateway.budgets import TokenBucket
from agentactors.gateway.scheduling import Scheduler
from agentactors.gateway.ticket import RunTicket, enter, leave

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def request(text: str = "hello") -> LLMRequest:
    return LLMRequest([Message.user(text)])


class CountingBucket(TokenBucket):
    """A bucket that counts what was taken and what was given back (as asked, before the capacity clamp)."""

    __slots__ = ("given", "taken")

    def __init__(self, per_minute: float, now: float) -> None:
        super().__init__(per_minute, now)
        self.taken = 0.0
        self.given = 0.0

    def take(self, amount: float) -> None:
        self.taken += amount
        super().take(amount)

    def give_back(self, amount: float) -> None:
        self.given += amount
        super().give_back(amount)


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_cancellations_give_every_slot_and_budget_back_exactly_once(seed: int) -> None:
    rng = random.Random(seed)
    now = anyio.current_time()
    sched = Scheduler(
        "p", slots=3, requests_per_minute=600, tokens_per_minute=6000, policy=rng.choice(["oldest_run", "fifo"]),
        max_waiting=rng.choice([20, 40]), max_wait=rng.choice([15.0, 30.0]), max_overtakes=2,
    )
    requests = sched.requests = CountingBucket(600, now)
    tokens = sched.tokens = CountingBucket(6000, now)
    served = {"requests": 0, "tokens": 0}
    outcomes = {"served": 0, "refused": 0, "cancelled": 0}

    async def one(estimate: int, priority: int, order: int, cancel_at: float, hold: float) -> None:
        token = enter(RunTicket(order, priority))
        granted = False
        try:
            with anyio.move_on_after(cancel_at) as scope:
                if not sched.try_admit(estimate):
                    await sched.admit(estimate)
                granted = True
                served["requests"] += 1
                served["tokens"] += estimate
                assert sched.free >= 0
                try:
                    await anyio.sleep(hold)
                finally:
                    sched.release(0.0)
            if scope.cancelled_caught:
                outcomes["cancelled"] += 1
            elif granted:
                outcomes["served"] += 1
        except Overloaded:
            outcomes["refused"] += 1
        finally:
            leave(token)

    async with anyio.create_task_group() as tg:
        for i in range(1500):
            # Many requests arrive, and many are cancelled, at the same instants: grants and cancellations collide.
            cancel_at = rng.choice([0.0, 0.5, 1.0, 2.0, rng.uniform(0, 5), 1e9])
            tg.start_soon(one, rng.randint(1, 300), rng.choice([0, 0, 1, 2]), rng.randint(1, 50), cancel_at,
                          rng.choice([0.0, 0.5, 1.0]))
            if i % 7 == 0:
                await anyio.sleep(rng.choice([0.0, 0.5, 1.0]))
    assert sum(outcomes.values()) == 1500
    assert min(outcomes.values()) > 0, outcomes
    assert sched.free == sched.slots
    assert sched.waiting == 0
    assert not sched._queues and not sched._classes and not sched._skipped
    assert sched._queued_tokens == 0
    assert sched._timer is None
    # Exactly once: what was taken and not given back is what the requests that went kept, to the unit.
    assert requests.taken - requests.given == served["requests"]
    assert tokens.taken - tokens.given == served["tokens"]


async def test_a_request_the_breaker_never_sent_gives_its_request_and_tokens_back() -> None:
    async def refuse(req: LLMRequest) -> str:
        raise CircuitOpenError("breaker open", provider="p")

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(refuse), requests_per_minute=2, tokens_per_minute=100)
        start = anyio.current_time()
        for _ in range(6):
            with pytest.raises(CircuitOpenError):
                await ref.ask(Complete(request("x" * 200)))  # ~51 tokens each: two would drain the bucket
        # Nothing was sent: no budget was spent, so nobody waited for one.
        assert anyio.current_time() == start


async def test_a_request_larger_than_the_token_budget_is_not_refused_by_an_uncapped_wait_estimate() -> None:
    """The budget lets a request larger than the bucket go on a full bucket; the arrival estimate must agree."""
    release = anyio.Event()

    async def vendor(req: LLMRequest) -> str:
        if req.messages[0].content == "first":
            await release.wait()
        return "ok"

    out: list[Any] = []
    async with Runtime() as rt:
        ref = ProviderActor.shared(
            rt, ScriptedProvider(vendor), max_concurrency=1, tokens_per_minute=1000, max_wait=60.0
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Complete(request("first")))
            await anyio.sleep(0.1)

            async def big() -> None:
                try:
                    out.append((await ref.ask(Complete(request("x" * 8000)))).content)  # ~2001 tokens > 1000
                except Overloaded as exc:
                    out.append(exc)

            tg.start_soon(big)
            await anyio.sleep(0.1)
            release.set()
    assert out == ["ok"]


async def test_a_vendors_429_with_retry_after_holds_the_budget_for_that_long() -> None:
    """The vendor's own word that its rate limit is spent feeds the actor's budget: the next request waits for it."""
    calls: list[float] = []

    async def vendor(req: LLMRequest) -> str:
        calls.append(anyio.current_time())
        if len(calls) == 1:
            raise ProviderError("rate limited", provider="p", kind=ErrorKind.transient, status=429, retry_after=10.0)
        return "ok"

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), requests_per_minute=600, tokens_per_minute=60_000)
        start = anyio.current_time()
        with pytest.raises(ProviderError):
            await ref.ask(Complete(request()))
        assert (await ref.ask(Complete(request()))).content == "ok"
    assert calls[1] - start == pytest.approx(10.0, abs=0.01)


@pytest.mark.parametrize("retry_after", [math.inf, math.nan, 1e12, 0.0])
async def test_a_vendors_retry_after_beyond_a_minute_or_not_a_number_holds_at_most_a_minute(
    retry_after: float
) -> None:
    calls: list[float] = []

    async def vendor(req: LLMRequest) -> str:
        calls.append(anyio.current_time())
        if len(calls) == 1:
            raise ProviderError("rate limited", provider="p", kind=ErrorKind.transient, status=429,
                                retry_after=retry_after)
        return "ok"

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), requests_per_minute=600)
        start = anyio.current_time()
        with pytest.raises(ProviderError):
            await ref.ask(Complete(request()))
        assert (await ref.ask(Complete(request()))).content == "ok"
    held = 0.0 if retry_after != retry_after or retry_after == 0 else 60.0
    assert calls[1] - start == pytest.approx(held, abs=0.01)
