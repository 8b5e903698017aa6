"""A ``ProviderActor`` admits a hedge's extra copy, counted in its limits, or no hedge; virtual time, both backends.

Found by an audit: ``ProviderActor.shared(rt, with_hedge(p, after=1, max_extra=1), max_concurrency=1,
requests_per_minute=2)`` with two concurrent runs — the vendor saw 2 requests at once and 4 within 10 s.  The actor
admitted one request and the hedge sent its copy straight to the vendor, uncounted against ``max_concurrency``,
``requests_per_minute`` and ``tokens_per_minute``.

Now the copy asks the actor for one extra admission, without waiting (a hedge that waits for a slot is no hedge):
granted, it is sent and counted — its slot held until the copy ends, whichever way (the loser's cancellation gives
it back), its request in the request budget, its token estimate in the token budget, refunded on the paths a
request's is; refused, no hedge for this call (the first copy goes on) and ``hedge.skipped(reason="admission")``
says so.  An actor whose provider holds no hedge calls it as before, and a hedge with no actor around it sends its
copy as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest

from agentactors import InMemoryRecorder, LLMRequest, Message, ProviderActor, Runtime, ScriptedProvider
from agentactors.errors import ErrorKind, ProviderError
from agentactors.events import EventSink, FanOut, use_sink
from agentactors.gateway import Complete, Stream
from agentactors.gateway.provider import estimate_tokens
from agentactors.messages import StreamEnd
from agentactors.resilience import resilient_chain, with_fallback, with_hedge, with_pool, with_retry

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

REQUEST = LLMRequest([Message.user("hi")], max_tokens=100)


class Vendor:
    """A script callable: the n-th request sent takes ``delays[n]`` seconds (the last one repeats), then answers or
    raises ``fail[n]``; it records when each was sent, how many were in flight at once, and how each ended."""

    def __init__(self, delays: list[float], fail: dict[int, BaseException] | None = None) -> None:
        self.delays = delays
        self.fail = fail or {}
        self.sent: list[float] = []
        self.in_flight = 0
        self.most = 0
        self.cancelled = 0
        self.answered = 0

    def __call__(self, request: LLMRequest) -> Any:
        n = len(self.sent)
        self.sent.append(anyio.current_time())
        delay = self.delays[min(n, len(self.delays) - 1)]

        async def answer() -> str:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            try:
                await anyio.sleep(delay)
                if n in self.fail:
                    raise self.fail[n]
            except anyio.get_cancelled_exc_class():
                self.cancelled += 1
                raise
            finally:
                self.in_flight -= 1
            self.answered += 1
            return f"answer {n}"

        return answer()


@contextmanager
def recorded() -> Iterator[InMemoryRecorder]:
    recorder = InMemoryRecorder()
    with use_sink(EventSink(FanOut([recorder]), run_id="r")):
        yield recorder


def sched_of(actor: ProviderActor) -> Any:
    sched = actor._sched
    assert sched is not None
    return sched


async def ask(ref: Any, request: LLMRequest = REQUEST, *, stream: bool = False, pull: bool = False) -> str:
    if not stream:
        response = await ref.ask(Complete(request))
        return str(response.content)
    text = ""
    async with await ref.ask(Stream(request, pull=pull)) as events:
        async for event in events:
            if isinstance(event, StreamEnd):
                text = str(event.response.content)
    return text


# -- the audit's case: refused, no hedge -------------------------------------------------------------------------


async def test_a_hedge_under_a_full_actor_sends_no_extra_copy_and_says_so() -> None:
    """The audit's repro: one slot, 2 requests a minute, two concurrent calls of 5 s, hedged after 1 s.  The vendor
    saw 2 at once and 4 within 10 s; now one at a time, and 2 in the first minute (the request budget)."""
    vendor = Vendor([5.0])
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0),
                                   max_concurrency=1, requests_per_minute=2)
        with recorded() as recorder:
            async with anyio.create_task_group() as tg:
                for _ in range(2):
                    tg.start_soon(ask, ref)
    assert vendor.most == 1
    assert len([t for t in vendor.sent if t < 10.0]) == 2
    skipped = recorder.of_type("hedge.skipped")
    assert skipped and all(e.data["reason"] == "admission" for e in skipped)
    assert not recorder.of_type("hedge.sent")


async def test_a_refused_hedge_leaves_the_first_copy_to_answer_and_spends_no_extra_share() -> None:
    vendor = Vendor([5.0, 1.0])
    hedge = with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0)
    async with Runtime() as rt:
        actor = ProviderActor(hedge, max_concurrency=1)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        start = anyio.current_time()
        assert await ask(ref) == "answer 0"
        assert anyio.current_time() - start == pytest.approx(5.0)
        assert sched_of(actor).free == 1
    assert hedge.hedged == 0 and len(vendor.sent) == 1


# -- granted: counted, and given back ----------------------------------------------------------------------------


async def test_a_granted_copy_holds_a_slot_until_it_ends_and_the_losers_is_given_back() -> None:
    vendor = Vendor([30.0, 1.0])
    seen: list[int] = []
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)

        async def probe() -> None:
            await anyio.sleep(1.5)
            seen.append(sched_of(actor).free)

        with recorded() as recorder:
            async with anyio.create_task_group() as tg:
                tg.start_soon(probe)
                assert await ask(ref) == "answer 1"
        assert seen == [0]  # both copies in flight: both slots taken
        sched = sched_of(actor)
        assert sched.free == 2 and sched.waiting == 0  # the loser's cancellation gave its slot back
    assert vendor.cancelled == 1
    assert len(recorder.of_type("hedge.sent")) == 1 and not recorder.of_type("hedge.skipped")


async def test_the_copy_counts_in_the_request_budget() -> None:
    """2 requests a minute, two slots: the copy takes the second request, so a call asked at 2 s waits ~30 s for the
    budget to refill (before, it went at once: 3 requests in 2 s)."""
    vendor = Vendor([30.0, 1.0, 1.0])
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2,
                              requests_per_minute=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)

        async def later() -> None:
            await anyio.sleep(2.0)
            await ask(ref)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, ref)
            tg.start_soon(later)
    assert vendor.sent[:2] == [pytest.approx(0.0), pytest.approx(1.0)]
    assert vendor.sent[2] == pytest.approx(30.0)  # its request refilled (2 a minute: the copy took the second)


async def test_the_copy_counts_in_the_token_budget_and_a_refusal_refunds_it() -> None:
    """600 tokens a minute (10 a second): the copy takes its estimate when sent; refused by its vendor with a
    request fault (``to``), the estimate comes back, as a request's would."""
    refused = ProviderError("no", kind=ErrorKind.request, provider="other")
    first = Vendor([5.0])
    other = Vendor([0.0], fail={0: refused})
    levels: list[float] = []
    async with Runtime() as rt:
        hedge = with_hedge(ScriptedProvider(first), after=1.0, max_extra=1.0, to=ScriptedProvider(other))
        actor = ProviderActor(hedge, max_concurrency=2, tokens_per_minute=600)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        estimate = estimate_tokens(REQUEST, max_output=600)

        def level() -> float:
            tokens = sched_of(actor).tokens
            tokens.refill(anyio.current_time())
            return float(tokens.level)

        async def probe() -> None:
            await anyio.sleep(0.5)
            levels.append(level())  # the first copy's estimate taken
            await anyio.sleep(0.5)
            # (the copy is refused at once, at 1 s: a checkpoint later its estimate is back)
            await anyio.sleep(0.5)
            levels.append(level())

        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            assert await ask(ref) == "answer 0"
    assert levels[0] == pytest.approx(600 - estimate + 5)
    assert levels[1] == pytest.approx(600 - estimate + 15)  # the copy's estimate given back
    assert len(other.sent) == 1


async def test_the_copy_keeps_its_token_estimate_when_it_was_sent() -> None:
    vendor = Vendor([30.0, 1.0])
    levels: list[float] = []
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2,
                              tokens_per_minute=600)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        estimate = estimate_tokens(REQUEST, max_output=600)

        async def probe() -> None:
            await anyio.sleep(1.5)
            tokens = sched_of(actor).tokens
            tokens.refill(anyio.current_time())
            levels.append(float(tokens.level))

        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            await ask(ref)
    assert levels == [pytest.approx(600 - 2 * estimate + 15)]


async def test_a_token_budget_without_room_for_the_copy_refuses_it() -> None:
    """The copy's estimate is not there: no hedge (the token budget is not run into debt by a copy)."""
    vendor = Vendor([5.0])
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2,
                              tokens_per_minute=150)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with recorded() as recorder:
            await ask(ref)
    assert len(vendor.sent) == 1
    assert [e.data["reason"] for e in recorder.of_type("hedge.skipped")] == ["admission"]


async def test_a_call_cancelled_with_both_copies_in_flight_gives_both_slots_back() -> None:
    vendor = Vendor([30.0])
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with anyio.move_on_after(2.0):
            await ask(ref)
        await anyio.sleep(0.1)
        assert sched_of(actor).free == 2
    assert len(vendor.sent) == 2 and vendor.cancelled == 2


async def test_each_attempt_of_a_retry_around_the_hedge_asks_for_its_own_copy() -> None:
    """``with_retry(with_hedge(p))``: the retried attempt runs under the one admission of the call; its copy asks
    for one more, and gets it once the first attempt's copy gave its slot back (it failed)."""
    transient = ProviderError("busy", kind=ErrorKind.transient, provider="scripted")
    vendor = Vendor([1.5, 1.5, 5.0, 1.0], fail={0: transient, 1: transient})
    async with Runtime() as rt:
        provider = with_retry(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_attempts=2,
                              base_delay=0.0, jitter=(1.0, 1.0))
        actor = ProviderActor(provider, max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with recorded() as recorder:
            assert await ask(ref) == "answer 3"
        assert sched_of(actor).free == 2
    assert vendor.most == 2
    assert len(recorder.of_type("hedge.sent")) == 2 and not recorder.of_type("hedge.skipped")


# -- streams, fed and pulled -------------------------------------------------------------------------------------


@pytest.mark.parametrize("pull", [False, True])
async def test_a_stream_under_a_full_actor_is_not_hedged(pull: bool) -> None:
    vendor = Vendor([5.0])
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=1)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        with recorded() as recorder:
            assert await ask(ref, stream=True, pull=pull) == "answer 0"
        await anyio.sleep(0.1)  # (a fed stream's feeder gives its slot back once it has left)
        assert sched_of(actor).free == 1
    assert len(vendor.sent) == 1
    assert [e.data["reason"] for e in recorder.of_type("hedge.skipped")] == ["admission"]


@pytest.mark.parametrize("pull", [False, True])
async def test_a_hedged_streams_copy_holds_its_slot_until_it_ends(pull: bool) -> None:
    vendor = Vendor([30.0, 1.0])
    seen: list[int] = []
    async with Runtime() as rt:
        actor = ProviderActor(with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0), max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)

        async def probe() -> None:
            await anyio.sleep(1.5)
            seen.append(sched_of(actor).free)

        async with anyio.create_task_group() as tg:
            tg.start_soon(probe)
            assert await ask(ref, stream=True, pull=pull) == "answer 1"
        await anyio.sleep(0.1)  # (a fed stream's feeder gives its slot back once it has left)
        assert seen == [0]
        assert sched_of(actor).free == 2
    assert vendor.cancelled == 1


# -- nothing changes where there is nothing to admit -------------------------------------------------------------


async def test_an_actor_without_a_hedge_calls_its_provider_itself() -> None:
    provider = with_retry(ScriptedProvider("ok"))
    actor = ProviderActor(provider)
    assert actor._call is provider


async def test_a_hedge_anywhere_in_the_chain_is_seen() -> None:
    """Below decorators, in a fallback chain's member, in a pool's, in ``resilient_chain(hedge_after=)``."""
    a, b = ScriptedProvider("a", name="a"), ScriptedProvider("b", name="b")
    for provider in (
        with_retry(with_hedge(a)),
        with_fallback(b, with_retry(with_hedge(a))),
        with_pool(a, with_hedge(b)),
        resilient_chain(a, b, hedge_after=1.0),
    ):
        assert ProviderActor(provider)._call is not provider, provider
        assert ProviderActor(provider)._call.inner is provider


async def test_a_hedge_the_actor_cannot_see_sends_its_copy_as_before() -> None:
    """A wrapper that hides its inner provider (no ``inner``, no ``members``): the actor cannot tell a hedge is
    inside, and the hedge sends its copy unadmitted — as before (documented)."""
    vendor = Vendor([30.0, 1.0])
    hedge = with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0)

    class Opaque:
        name = "opaque"
        default_model = None

        async def complete(self, request: LLMRequest) -> Any:
            return await hedge.complete(request)

    async with Runtime() as rt:
        actor = ProviderActor(Opaque(), max_concurrency=1)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        assert await ask(ref) == "answer 1"
    assert vendor.most == 2


async def test_a_hedge_outside_any_actor_sends_its_copy() -> None:
    vendor = Vendor([30.0, 1.0])
    hedge = with_hedge(ScriptedProvider(vendor), after=1.0, max_extra=1.0)
    assert (await hedge.complete(REQUEST)).content == "answer 1"
    assert vendor.most == 2
