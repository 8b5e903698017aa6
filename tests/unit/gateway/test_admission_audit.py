"""Admission and budgets at the ProviderActor, audited: what a wait in the queue may not bypass, what a rejection
gives back, what a refusal promises.

* A run's cost budgets are checked before its call is asked — and again when that call waited for admission:
  runs queued behind a shared ``CostBudget`` do not send their calls once another run spent it
  (``docs/costs.md``, "Concurrent runs").
* A prompt the vendor rejects before generating anything (too long for the model: ``context``; an account that
  may not: ``account``; a malformed request: ``request``) gives its estimated tokens back to the shared
  tokens-per-minute budget.
* ``Overloaded.retry_after`` is never zero: calls that were not served (an open breaker's refusals, request
  faults, cancellations) are no service-time samples, and a service time of zero is no estimate.

Every test runs on virtual time, on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentactors import Agent, CostBudget, LLMResponse, Overloaded, ProviderActor, Runtime, ScriptedProvider, Usage
from agentactors.errors import CostLimitExceededError, ErrorKind, ProviderError
from agentactors.gateway import Complete, Stream
from agentactors.gateway import ticket as run_ticket
from agentactors.loop.cost import RunCost
from agentactors.messages import LLMRequest, Message, StreamEnd, TextDelta
from agentactors.pricing import Cost, Price, clear_prices, set_price

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


@pytest.fixture(autouse=True)
def _dollar_a_token() -> Iterator[None]:
    """``vend``/``m1`` at $1 a token: a call of one input token costs $1."""
    clear_prices()
    set_price("vend", "m1", Price(input=1_000_000.0, output=0.0))
    yield
    clear_prices()


def request(text: str = "hi") -> LLMRequest:
    return LLMRequest([Message.user(text)])


# -- 1. a shared cost budget is checked again after a wait in the queue -----------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
async def test_runs_queued_behind_a_spent_shared_budget_do_not_send_their_calls(streamed: bool) -> None:
    """20 runs share CostBudget(2.0) on one slot, each call $1: every run checked the budget (nothing spent) before
    it queued; once it is past its limit, the runs still waiting stop with CostLimitExceededError and send nothing.
    Kept, all 20 calls went out ($20 on a $2 budget)."""
    sent: list[float] = []

    async def model(req: LLMRequest) -> LLMResponse:
        sent.append(anyio.current_time())
        await anyio.sleep(1.0)
        return LLMResponse(content="ok", usage=Usage(1, 0), model="m1", provider="vend")

    budget = CostBudget(2.0, name="shared")
    results: list[Any] = []
    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(model, name="vend", model="m1"), max_concurrency=1)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        agent = Agent(ref)
        on_token = (lambda _text: None) if streamed else None

        async def one(i: int) -> None:
            results.append(await agent.run(f"q{i}", cost_limit=budget, on_token=on_token))

        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(one, i)
        sched = actor._sched
        assert sched is not None and sched.free == sched.slots and sched.waiting == 0
    # Two calls reach the limit ($2, not past it: the third goes); the third, in flight then, is the whole
    # overspend (docs/costs.md, "Concurrent runs"); its run stops after it, every other before sending.
    assert len(sent) == 3 and budget.spent == 3.0
    assert sum(r.ok for r in results) == 2
    stopped = [r for r in results if r.error is not None]
    assert len(stopped) == 18
    for result in stopped:
        assert type(result.error) is CostLimitExceededError
        assert result.error.scope == "run" and result.error.limit == 2.0  # (the budget given as cost_limit)
        assert not result.generation_failed  # the run's budget ended it: no provider failure
        assert result.content == ""
    assert sum(r.cost is not None and r.cost.total == 0 for r in stopped) == 17


def test_the_check_after_a_wait_applies_the_calls_estimate_too() -> None:
    """The estimate the run made before it asked is checked again against what was spent meanwhile."""
    budget = CostBudget(10.0, name="shared")
    cost = RunCost()
    cost.open(budget)
    cost.charge(LLMResponse(content="ok", usage=Usage(1, 0), model="m1", provider="vend"))  # $1, 1 prompt token
    conversation = [Message.user("q"), Message.assistant("ok"), Message.user("more")]
    assert cost.before(conversation, None) is None  # estimated at $1 + the new messages: within $10
    assert cost.recheck() is None
    budget.charge(Cost(7.5))  # other runs spent meanwhile: $8.5 spent, the estimate ($3) would pass $10
    error = cost.recheck()
    assert error is not None and error.estimate == pytest.approx(3.0) and error.scope == "run"
    budget.charge(Cost(2.0))  # past the limit: the plain "spent" error, without an estimate
    error = cost.recheck()
    assert error is not None and error.estimate is None


async def test_a_call_admitted_at_once_is_not_checked_again() -> None:
    """The common case — a slot free, nobody waiting — asks nothing of the run's budgets at the actor."""
    calls = 0

    class Check:
        def recheck(self) -> Exception | None:
            nonlocal calls
            calls += 1
            return CostLimitExceededError("spent")

    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(["a", "b"]), max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        previous = run_ticket.enter_check(Check())
        try:
            assert (await ref.ask(Complete(request()))).content == "a"
        finally:
            run_ticket.leave_check(previous)
    assert calls == 0


@pytest.mark.parametrize("pull", [False, True])
async def test_a_request_refused_by_its_budget_after_its_wait_gives_its_slot_and_budgets_back(pull: bool) -> None:
    """Streams too (fed and pulled): after the wait, a spent budget refuses the request — nothing sent, its slot,
    request and tokens given back to the next waiter."""
    opened: list[str] = []

    async def model(req: LLMRequest) -> Any:
        opened.append(req.messages[-1].content)
        await anyio.sleep(1.0)
        return "ok"

    class Spent:
        def recheck(self) -> Exception | None:
            return CostLimitExceededError("spent", limit=1.0, spent=2.0, scope="run")

    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(model), max_concurrency=1, requests_per_minute=600,
                              tokens_per_minute=60_000)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Complete(request("first")))
            await anyio.sleep(0.1)
            previous = run_ticket.enter_check(Spent())
            try:
                with pytest.raises(CostLimitExceededError):
                    await ref.ask(Stream(request("second"), pull=pull))
            finally:
                run_ticket.leave_check(previous)
        sched = actor._sched
        assert sched is not None and sched.requests is not None and sched.tokens is not None
        assert opened == ["first"]
        assert sched.free == 1 and sched.waiting == 0
        # Only the first request is charged: the second's request and tokens came back.
        now = anyio.current_time()
        sched.requests.refill(now)
        sched.tokens.refill(now)
        assert sched.requests.level == pytest.approx(sched.requests.capacity)
        assert sched.tokens.level == pytest.approx(sched.tokens.capacity)


# -- 2. a prompt rejected before any generation gives its tokens back -------------------------------------------


@pytest.mark.parametrize("kind", [ErrorKind.context, ErrorKind.account, ErrorKind.request])
async def test_a_prompt_rejected_before_generation_gives_its_tokens_back(kind: ErrorKind) -> None:
    """A 400 context_length_exceeded left its whole estimate (500,000 tokens) charged to a 100,000-a-minute
    bucket: every other agent waited four minutes.  A rejection before generation refunds it."""

    async def vendor(req: LLMRequest) -> str:
        if len(req.messages[-1].content) > 100_000:
            raise ProviderError("maximum context length exceeded", provider="scripted", kind=kind, status=400)
        return "ok"

    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(vendor), tokens_per_minute=100_000)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with pytest.raises(ProviderError):
            await ref.ask(Complete(request("x" * 2_000_000)))
        start = anyio.current_time()
        assert (await ref.ask(Complete(request("small")))).content == "ok"
        assert anyio.current_time() - start == pytest.approx(0.0)


async def test_a_content_policy_rejection_keeps_its_tokens_charged() -> None:
    """A content filter may stop a call after the model generated (an output filter): its tokens stay charged."""

    async def vendor(req: LLMRequest) -> str:
        raise ProviderError("filtered", provider="scripted", kind=ErrorKind.content_policy, status=400)

    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(vendor), tokens_per_minute=100_000)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with pytest.raises(ProviderError):
            await ref.ask(Complete(request("x" * 40_000)))
        sched = actor._sched
        assert sched is not None and sched.tokens is not None
        assert sched.tokens.level < sched.tokens.capacity - 9_000


# -- 3. retry_after is never zero ---------------------------------------------------------------------------------


class Breaker:
    """What an open circuit breaker does inside the actor: refuse at once, nothing sent; then a slow vendor."""

    name = "p"

    def __init__(self, failure: ErrorKind = ErrorKind.circuit_open, status: int | None = None) -> None:
        self.failing = True
        self.failure = failure
        self.status = status

    async def complete(self, req: LLMRequest) -> LLMResponse:
        if self.failing:
            raise ProviderError("refused", provider="p", kind=self.failure, status=self.status)
        await anyio.sleep(30)
        return LLMResponse(content="ok", usage=Usage(1, 1))

    def stream(self, req: LLMRequest) -> Any:
        owner = self

        class Opened:
            async def __aenter__(self) -> Any:
                if owner.failing:
                    raise ProviderError("refused", provider="p", kind=owner.failure, status=owner.status)

                async def events() -> Any:
                    await anyio.sleep(30)
                    yield TextDelta("ok")
                    yield StreamEnd(LLMResponse(content="ok", usage=Usage(1, 1)))

                return events()

            async def __aexit__(self, *exc: object) -> None:
                return None

        return Opened()


async def refused_behind_six(ref: Any) -> Overloaded:
    """Six calls sent to a one-slot actor with ``max_waiting=5``, then, a second later, the seventh: its refusal."""
    async with anyio.create_task_group() as tg:
        for _ in range(6):
            tg.start_soon(ref.ask, Complete(request()))
        await anyio.sleep(1)
        with pytest.raises(Overloaded) as info:
            await ref.ask(Complete(request()))
        tg.cancel_scope.cancel()
    return info.value


@pytest.mark.parametrize(("failure", "status"), [
    (ErrorKind.circuit_open, None), (ErrorKind.request, 400), (ErrorKind.context, 400), (ErrorKind.account, 401),
])
async def test_calls_not_served_are_no_service_time_samples(failure: ErrorKind, status: int | None) -> None:
    """20 instant refusals averaged a service time of 0.0: retry_after then said 0 with 5 waiting behind a 30 s
    call.  Unserved calls are not sampled; the refusal says a wait."""
    provider = Breaker(failure, status)
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_waiting=5)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        for _ in range(20):
            with pytest.raises(ProviderError):
                await ref.ask(Complete(request()))
        sched = actor._sched
        assert sched is not None and sched._service is None
        await anyio.sleep(100)
        provider.failing = False
        refused = await refused_behind_six(ref)
    # Six calls before it, one slot, none answered yet: a second each at least (the oldest is 1 s old).
    assert refused.retry_after == pytest.approx(6.0)


async def test_a_pulled_stream_refused_by_an_open_breaker_is_no_sample() -> None:
    provider = Breaker()
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_waiting=5)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        for _ in range(5):
            stream = await ref.ask(Stream(request(), pull=True))
            with pytest.raises(ProviderError):
                async with stream:
                    async for _event in stream:
                        pass
        sched = actor._sched
        assert sched is not None and sched._service is None and sched.free == 1


async def test_cancelled_calls_are_no_service_time_samples() -> None:
    provider = Breaker()
    provider.failing = False
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_waiting=5)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        for _ in range(5):
            with anyio.move_on_after(0.001):
                await ref.ask(Complete(request()))
        sched = actor._sched
        assert sched is not None and sched._service is None


async def test_instant_vendor_failures_say_nothing_of_the_service_time() -> None:
    """A 503 answered at once is a served call that failed: its time is no sample (it said nothing of how long an
    answer takes; averaged in, instant 503s made the estimate 0), and a refusal then still says a wait."""
    provider = Breaker(ErrorKind.transient, 503)
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_waiting=5)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        for _ in range(5):
            with pytest.raises(ProviderError):
                await ref.ask(Complete(request()))
        sched = actor._sched
        assert sched is not None and sched._service is None
        provider.failing = False
        refused = await refused_behind_six(ref)
    assert refused.retry_after is not None and refused.retry_after > 0


@pytest.mark.parametrize("streamed", [False, True])
async def test_a_burst_of_instant_5xx_does_not_shrink_a_slow_vendors_estimate(streamed: bool) -> None:
    """One answer took 30 s; then the vendor answered twenty 503s at once.  Averaged in, they made the estimate
    about 2 s: a request behind six others was told to come back in seconds, not minutes.  A failure is a sample
    only when it took longer than the estimate."""
    provider = Breaker(ErrorKind.transient, 503)
    provider.failing = False
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_waiting=5)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        await ref.ask(Complete(request()))  # 30 s: the estimate
        provider.failing = True
        for _ in range(20):
            with pytest.raises(ProviderError):
                if streamed:
                    async with await ref.ask(Stream(request())) as events:
                        async for _event in events:
                            pass
                else:
                    await ref.ask(Complete(request()))
        sched = actor._sched
        assert sched is not None and sched._service == pytest.approx(30.0)
        provider.failing = False
        refused = await refused_behind_six(ref)
    assert refused.retry_after is not None and refused.retry_after > 100


async def test_max_wait_refuses_on_arrival_after_a_burst_of_refusals() -> None:
    """Instant refusals averaged into the service time made a 30 s call look like 6 s: a request that would wait
    30 s was admitted against max_wait=20 and refused 20 s later instead of at once."""
    provider = Breaker()
    async with Runtime() as rt:
        actor = ProviderActor(provider, max_concurrency=1, max_wait=20.0)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        for _ in range(20):
            with pytest.raises(ProviderError):
                await ref.ask(Complete(request()))
        provider.failing = False
        await ref.ask(Complete(request()))  # one served call: 30 s
        async with anyio.create_task_group() as tg:
            tg.start_soon(ref.ask, Complete(request()))
            await anyio.sleep(1)
            start = anyio.current_time()
            with pytest.raises(Overloaded) as info:
                await ref.ask(Complete(request()))
            assert anyio.current_time() - start == pytest.approx(0.0)
            tg.cancel_scope.cancel()
    assert info.value.reason == "max_wait"


async def test_a_run_with_budgets_leaves_no_budget_check_behind() -> None:
    """The run's check is current while it runs, in its task, and the one before it is current again after."""
    seen: list[object] = []

    async def model(req: LLMRequest) -> LLMResponse:
        seen.append(run_ticket.current_check())
        return LLMResponse(content="ok", usage=Usage(1, 0), model="m1", provider="vend")

    async with Runtime() as rt:
        agent = Agent(ProviderActor.shared(rt, ScriptedProvider(model, name="vend", model="m1")))
        assert (await agent.run("q", cost_limit=5.0)).ok
        assert (await agent.run("q")).ok
    assert isinstance(seen[0], RunCost) and seen[1] is None
    assert run_ticket.current_check() is None
