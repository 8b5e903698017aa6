"""The vendor's own rate-limit report steers a ProviderActor: requests wait for what it says instead of meeting 429s.

On virtual time, both backends: the vendor is a :class:`ScriptedProvider` that keeps a limit and reports it the
way :class:`~agentactors.providers.http.HTTPProvider` does — a
:class:`~agentactors.providers.http.ratelimits.RateLimitState` in its ``rate_limit`` attribute, computed when the
request was admitted and published when its answer comes (headers travel with the answer), a 429 past the limit.
:class:`BucketVendor` refills continuously, as OpenAI and Anthropic do (the reset they report is when the budget
is full again): requests go at its refill pace.  :class:`LimitedVendor` keeps a fixed window and does not say
its limit: requests wait for its reset.  The same over real HTTP on 127.0.0.1 is ``test_vendor_limits_http.py``.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import anyio
import pytest

from agentactors import (
    Complete,
    LLMRequest,
    Message,
    Overloaded,
    ProviderActor,
    Runtime,
    ScriptedProvider,
    Stream,
    with_fallback,
    with_retry,
    with_timeout,
)
from agentactors.errors import ErrorKind, ProviderError
from agentactors.events import InMemoryRecorder
from agentactors.gateway.scheduling import VENDOR_HOLD_BOUND, Scheduler
from agentactors.providers.http.ratelimits import Budget, RateLimitState

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def request(text: str = "hello") -> LLMRequest:
    return LLMRequest([Message.user(text)])


class LimitedVendor(ScriptedProvider):
    """A vendor allowing ``limit`` requests per fixed ``window`` seconds, each answered after ``hold`` seconds.

    Like a real one, it reports what was left when it admitted a request, with that request's answer (so a report
    can be older than requests already in flight), and refuses past the limit with a 429 at once.  It does not
    report the limit itself: a limit said is read as a budget refilling until its reset (a token bucket, as the
    big vendors keep), which a fixed window is not — without it, what is left holds until the reset.
    """

    def __init__(self, limit: int, window: float, hold: float = 0.5, *, name: str = "limited") -> None:
        super().__init__(self._answer, name=name)
        self.limit = limit
        self.window = window
        self.hold = hold
        self.rate_limit: RateLimitState | None = None
        self.start = -math.inf
        self.count = 0
        self.sent: list[float] = []
        self.refused = 0

    async def _answer(self, req: LLMRequest) -> str:
        now = anyio.current_time()
        if now >= self.start + self.window:
            self.start, self.count = now, 0
        self.count += 1
        self.sent.append(now)
        reset = self.start + self.window
        state = RateLimitState((Budget("requests", None, max(0, self.limit - self.count), reset),), observed=now)
        if self.count > self.limit:
            self.refused += 1
            self.rate_limit = state
            raise ProviderError("rate limited", provider=self.name, kind=ErrorKind.transient, status=429)
        await anyio.sleep(self.hold)
        self.rate_limit = state
        return "ok"


async def ask_all(ref: Any, n: int, spacing: float = 0.0) -> list[Any]:
    """``n`` asks started ``spacing`` apart; each one's answer or error, in start order."""
    out: list[Any] = [None] * n

    async def one(i: int) -> None:
        try:
            out[i] = (await ref.ask(Complete(request(str(i))))).content
        except ProviderError as exc:
            out[i] = exc

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)
            if spacing:
                await anyio.sleep(spacing)
    return out


async def test_requests_wait_for_the_vendors_reset_instead_of_meeting_429s() -> None:
    vendor = LimitedVendor(limit=3, window=10.0, hold=0.5)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=1)
        start = anyio.current_time()
        out = await ask_all(ref, 7)
    assert out == ["ok"] * 7
    assert vendor.refused == 0
    sent = [t - start for t in vendor.sent]
    # Three in the first window, three in the second (from its reset at 10 s), the last in the third.
    assert sent[:3] == pytest.approx([0.0, 0.5, 1.0], abs=0.01)
    assert sent[3:6] == pytest.approx([10.0, 10.5, 11.0], abs=0.01)
    assert sent[6] == pytest.approx(20.0, abs=0.01)


async def test_the_requests_in_flight_count_against_what_the_vendor_reported() -> None:
    """A report older than the requests in flight (they were sent after it was made) does not let more through."""
    vendor = LimitedVendor(limit=4, window=10.0)
    holds = iter([0.5, 5.0, 5.0, 0.5, 0.5, 0.5])

    async def answer(req: LLMRequest) -> str:
        vendor.hold = next(holds)
        return await LimitedVendor._answer(vendor, req)

    vendor._callable = answer
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=3)
        start = anyio.current_time()
        out = await ask_all(ref, 6, spacing=0.01)
    # The first answer (at 0.5 s) reports 3 left, with 2 in flight sent after it: one more may go, not three.
    # The second answer (at 5 s) reports 2 left — made when it was admitted, before the fourth went: stale, so
    # the tighter word already in force stands, and the last two wait for the reset.
    assert out == ["ok"] * 6
    assert vendor.refused == 0
    assert [t - start for t in vendor.sent] == pytest.approx([0.0, 0.01, 0.02, 0.5, 10.0, 10.0], abs=0.01)


async def test_without_a_report_nothing_is_held() -> None:
    vendor = LimitedVendor(limit=100, window=10.0, hold=0.1)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=4)
        start = anyio.current_time()
        out = await ask_all(ref, 8)
    assert out == ["ok"] * 8
    assert max(vendor.sent) - start == pytest.approx(0.1, abs=0.01)  # two waves of four, no hold


class Reporter(ScriptedProvider):
    """A provider whose ``rate_limit`` is whatever the test sets (a property, so a broken one can raise)."""

    def __init__(self) -> None:
        super().__init__(self._answer, name="reporter")
        self.report: Any = None
        self.raises = False
        self.sent: list[float] = []

    @property
    def rate_limit(self) -> Any:
        if self.raises:
            raise RuntimeError("a broken rate_limit property")
        return self.report

    def _answer(self, req: LLMRequest) -> str:
        self.sent.append(anyio.current_time())
        return "ok"


def requests_left(remaining: int, reset: float | None, now: float, limit: int | None = None) -> RateLimitState:
    """A report of requests left; without a ``limit`` (unknown), it holds until the reset."""
    return RateLimitState((Budget("requests", limit, remaining, reset),), observed=now)


async def sent_after(reporter: Reporter, report: Any, **budgets: Any) -> float:
    """Seconds the request after ``report`` waited before it was sent."""
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, **budgets)
        await ref.ask(Complete(request()))
        reporter.report = report(anyio.current_time()) if callable(report) else report
        start = anyio.current_time()
        await ref.ask(Complete(request()))
    return reporter.sent[-1] - start


async def test_a_spent_budget_holds_requests_until_its_reset() -> None:
    assert await sent_after(Reporter(), lambda now: requests_left(0, now + 12.0, now)) == pytest.approx(12.0, abs=0.01)


async def test_a_spent_token_budget_holds_requests_until_its_reset() -> None:
    def spent(now: float) -> RateLimitState:
        return RateLimitState((Budget("requests", 100, 99, now + 1.0), Budget("tokens", 10_000, 0, now + 7.0)))

    assert await sent_after(Reporter(), spent) == pytest.approx(7.0, abs=0.01)


@pytest.mark.parametrize("name", ["input_tokens", "output_tokens"])
async def test_a_spent_input_or_output_token_budget_holds_too(name: str) -> None:
    def spent(now: float) -> RateLimitState:
        return RateLimitState((Budget(name, 10_000, 0, now + 4.0),))

    assert await sent_after(Reporter(), spent) == pytest.approx(4.0, abs=0.01)


@pytest.mark.parametrize(("limit", "wait"), [(None, 3.0), (10_000, (501 - 89) * 3.0 / 9_900)])
async def test_with_a_token_budget_a_request_larger_than_the_tokens_left_waits_for_them(
    limit: int | None, wait: float
) -> None:
    """Its own tokens: refilled at the vendor's pace with the limit known (9,900 in 3 s), else at the reset."""

    def low(now: float) -> RateLimitState:
        return RateLimitState((Budget("tokens", limit, 100, now + 3.0),))

    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, tokens_per_minute=100_000)
        await ref.ask(Complete(request()))
        reporter.report = low(anyio.current_time())
        start = anyio.current_time()
        await ref.ask(Complete(request("x" * 40)))  # ~11 tokens: fits in what is left
        small = reporter.sent[-1] - start
        await ref.ask(Complete(request("x" * 2000)))  # ~501 tokens: more than is left
        large = reporter.sent[-1] - start
    assert small == pytest.approx(0.0, abs=0.01)
    assert large == pytest.approx(wait, abs=0.01)


async def test_a_retry_after_holds_requests_even_without_budgets() -> None:
    def told(now: float) -> RateLimitState:
        return RateLimitState((), retry_after_until=now + 5.0)

    assert await sent_after(Reporter(), told) == pytest.approx(5.0, abs=0.01)


@pytest.mark.parametrize(
    ("report", "held"),
    [
        (lambda now: requests_left(0, now - 1.0, now), 0.0),  # a reset in the past: refilled since
        (lambda now: requests_left(0, now + 1e9, now), VENDOR_HOLD_BOUND),  # far away: at most a minute
        (lambda now: requests_left(0, math.inf, now), 0.0),  # not a time
        (lambda now: requests_left(0, math.nan, now), 0.0),
        (lambda now: requests_left(-5, now + 10.0, now), 0.0),  # not a count
        (lambda now: requests_left(0, None, now), 0.0),  # no reset said: cannot be bounded
        (lambda now: RateLimitState((), retry_after_until=now + 1e12), VENDOR_HOLD_BOUND),
        (lambda now: RateLimitState((), retry_after_until=math.nan), 0.0),
        (lambda now: RateLimitState((Budget("minutes", 1, 0, now + 10.0),)), 0.0),  # a budget nobody knows
        (lambda now: "0 requests left", 0.0),  # not a RateLimitState
    ],
)
async def test_absurd_or_stale_reports_are_ignored_or_bounded(report: Any, held: float) -> None:
    assert await sent_after(Reporter(), report) == pytest.approx(held, abs=0.01)


async def test_a_rate_limit_property_that_raises_changes_nothing() -> None:
    reporter = Reporter()
    reporter.raises = True
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, max_concurrency=2)
        assert await ask_all(ref, 5) == ["ok"] * 5


async def test_the_same_report_read_again_does_not_hold_again() -> None:
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(1, now + 10.0, now)
        await ref.ask(Complete(request()))  # the one request left
        await ref.ask(Complete(request()))  # waits for the reset
        assert reporter.sent[-1] - now == pytest.approx(10.0, abs=0.01)
        await ref.ask(Complete(request()))  # the report is past: no second hold
        assert reporter.sent[-1] - now == pytest.approx(10.0, abs=0.01)


async def test_decorators_are_seen_through_to_the_vendors_report() -> None:
    reporter = Reporter()
    chain = with_retry(with_timeout(reporter, attempt=30.0), max_attempts=2)
    assert await sent_after_chain(reporter, chain) == pytest.approx(12.0, abs=0.01)


async def test_a_fallback_chain_is_not_steered_by_one_members_report() -> None:
    """Its members are different vendors with different limits: the primary's spent budget does not hold the chain."""
    reporter = Reporter()
    chain = with_fallback(reporter, ScriptedProvider("backup"))
    assert await sent_after_chain(reporter, chain) == pytest.approx(0.0, abs=0.01)
    assert await sent_after_chain(reporter, with_retry(chain)) == pytest.approx(0.0, abs=0.01)


async def sent_after_chain(reporter: Reporter, chain: Any) -> float:
    reporter.report = None
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, chain)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 12.0, now)
        await ref.ask(Complete(request()))
    return reporter.sent[-1] - now


async def test_a_held_request_cancelled_gives_its_place_back() -> None:
    reporter = Reporter()
    async with Runtime() as rt:
        actor = ProviderActor(reporter, max_concurrency=2)
        ref = rt.spawn(actor, concurrency=actor.spawn_concurrency)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 10.0, now)
        with anyio.move_on_after(3.0) as scope:
            await ref.ask(Complete(request()))
        assert scope.cancelled_caught
        sched = actor._sched
        assert sched is not None and sched.waiting == 0 and sched.free == 2
        await ref.ask(Complete(request()))
        assert reporter.sent[-1] - now == pytest.approx(10.0, abs=0.01)
        assert len(reporter.sent) == 2


async def test_a_hold_longer_than_max_wait_is_refused_at_once() -> None:
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, max_wait=10.0)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 30.0, now)
        with pytest.raises(Overloaded) as info:
            await ref.ask(Complete(request()))
        assert anyio.current_time() == pytest.approx(now, abs=0.01)
        assert info.value.retry_after == pytest.approx(30.0, abs=0.01)
    assert len(reporter.sent) == 1


async def test_a_vendor_hold_is_recorded_as_throttled() -> None:
    reporter = Reporter()
    recorder = InMemoryRecorder()
    async with Runtime(recorders=[recorder]) as rt:
        ref = ProviderActor.shared(rt, reporter)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 6.0, now)
        await ref.ask(Complete(request()))
    throttled = [e for e in recorder.events if e.type == "provider.throttled"]
    assert [(e.budget, round(e.wait, 3)) for e in throttled] == [("vendor", 6.0)]


class StreamingVendor(ScriptedProvider):
    """Reports 0 requests left when a stream opens (its headers), as a vendor answering a streamed request does."""

    def __init__(self) -> None:
        super().__init__(self._answer, name="streaming")
        self.rate_limit: RateLimitState | None = None
        self.sent: list[float] = []

    def _answer(self, req: LLMRequest) -> str:
        now = anyio.current_time()
        self.sent.append(now)
        self.rate_limit = requests_left(0, now + 8.0, now)
        return "streamed answer"


@pytest.mark.parametrize("pull", [False, True])
async def test_a_streams_report_holds_the_next_request_while_the_stream_is_still_open(pull: bool) -> None:
    vendor = StreamingVendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=4)
        start = anyio.current_time()
        async with await ref.ask(Stream(request(), pull=pull)) as stream:
            await stream.receive()  # opened: the vendor's headers are in
            await ref.ask(Complete(request()))  # sent at the reset, the stream still open
            assert [e async for e in stream]
    assert [t - start for t in vendor.sent] == pytest.approx([0.0, 8.0], abs=0.01)


async def test_the_scheduler_without_a_vendor_reads_nothing() -> None:
    sched = Scheduler("p", slots=2)
    assert sched.vendor is None
    assert sched.try_admit(0)
    sched.release(0.0)
    assert sched.free == 2


class Stub:
    """A vendor's provider reduced to its report."""

    def __init__(self) -> None:
        self.rate_limit: RateLimitState | None = None


async def test_a_request_never_sent_gives_its_place_in_the_vendors_window_back() -> None:
    """A breaker's refusal (nothing left this process) must not spend what the vendor said was left."""
    stub = Stub()
    sched = Scheduler("p", slots=4, vendor=stub)
    now = anyio.current_time()
    stub.rate_limit = requests_left(1, now + 30.0, now)
    assert sched.try_admit(0)
    assert not sched.try_admit(0)  # the one left is taken
    sched.release(now)
    sched.refund(0, unsent=True)
    assert sched.try_admit(0)  # given back: it may go now, not in 30 s
    sched.release(now)
    assert not sched.try_admit(0)


# -- a budget that refills continuously (OpenAI's and Anthropic's): paced at its refill, not held until full ---------


class BucketVendor(ScriptedProvider):
    """A vendor whose limit is a token bucket of ``capacity`` requests refilled at ``per_second``, as OpenAI and
    Anthropic keep theirs: each answer reports the requests left (whole ones) and the time until the bucket is full
    again, as they do; with less than one left it refuses with a 429 at once.  Answers take ``hold`` seconds."""

    def __init__(self, capacity: int, per_second: float, hold: float = 0.5) -> None:
        super().__init__(self._answer, name="bucket")
        self.capacity = capacity
        self.per_second = per_second
        self.hold = hold
        self.level = float(capacity)
        self.last: float | None = None
        self.rate_limit: RateLimitState | None = None
        self.sent: list[float] = []
        self.refused = 0

    def _report(self, now: float) -> RateLimitState:
        full = now + (self.capacity - self.level) / self.per_second
        return RateLimitState((Budget("requests", self.capacity, math.floor(self.level), full),), observed=now)

    async def _answer(self, req: LLMRequest) -> str:
        now = anyio.current_time()
        if self.last is not None:
            self.level = min(self.capacity, self.level + (now - self.last) * self.per_second)
        self.last = now
        if self.level < 1.0 - 1e-9:
            self.refused += 1
            self.rate_limit = self._report(now)
            raise ProviderError("rate limited", provider=self.name, kind=ErrorKind.transient, status=429)
        self.level -= 1.0
        self.sent.append(now)
        state = self._report(now)
        await anyio.sleep(self.hold)
        self.rate_limit = state
        return "ok"


@pytest.mark.parametrize("concurrency", [1, 4])
async def test_at_none_left_of_a_known_limit_requests_go_at_the_vendors_refill_pace(concurrency: int) -> None:
    """0 of 60 left, full again in 60 s: the vendor takes one a second from now on — not none until the reset."""
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, max_concurrency=concurrency)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 60.0, now, limit=60)
        out = await ask_all(ref, 5)
    assert out == ["ok"] * 5
    assert [t - now for t in reporter.sent[1:]] == pytest.approx([1.0, 2.0, 3.0, 4.0, 5.0], abs=0.01)


@pytest.mark.parametrize(("limit", "remaining"), [(None, 0), (0, 0), (5, 7)])
async def test_a_limit_unknown_or_not_above_what_is_left_still_holds_until_the_reset(
    limit: int | None, remaining: int
) -> None:
    """Nothing tells how fast it refills: what is left holds until the reset, as with a fixed window."""
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, max_concurrency=4)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(remaining, now + 12.0, now, limit=limit)
        out = await ask_all(ref, remaining + 1)
    assert out == ["ok"] * (remaining + 1)
    assert reporter.sent[-1] - now == pytest.approx(12.0, abs=0.01)
    assert all(t - now == pytest.approx(0.0, abs=0.01) for t in reporter.sent[1:-1])


@pytest.mark.parametrize("limit", [math.inf, math.nan, -60, True, "60"])
async def test_a_limit_that_is_not_a_count_gives_no_refill(limit: Any) -> None:
    """Not a finite number >= 0: nothing tells the pace — held until the reset, never let through at once."""

    def report(now: float) -> RateLimitState:
        return RateLimitState((Budget("requests", limit, 0, now + 10.0),))

    assert await sent_after(Reporter(), report) == pytest.approx(10.0, abs=0.01)


async def test_a_token_bucket_vendor_is_paced_at_its_refill_and_never_meets_a_429() -> None:
    vendor = BucketVendor(capacity=5, per_second=1.0, hold=0.2)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=3)
        start = anyio.current_time()
        out = await ask_all(ref, 15, spacing=0.01)
    assert out == ["ok"] * 15
    assert vendor.refused == 0
    # Five at once (the bucket is full), then ten more at one a second: ten seconds at the vendor's own pace.  (A
    # report is read when its answer comes, as made then — the refill during its request is not counted: the safe
    # side, a little slower.)  Held until each "full again" instead, the last went at 10 s at best and met 429s.
    elapsed = vendor.sent[-1] - start
    assert 10.0 - 0.05 <= elapsed <= 10.0 * 1.5
    gaps = [b - a for a, b in itertools.pairwise(vendor.sent[5:])]
    assert max(gaps) < 2.0


async def test_reports_are_compared_by_what_each_leaves_now_refill_included() -> None:
    """Out of order: a report is kept when it leaves less *now* than the window in force projects, refill counted."""
    stub = Stub()
    sched = Scheduler("p", slots=100, vendor=stub)
    start = anyio.current_time()
    stub.rate_limit = requests_left(0, start + 60.0, start, limit=60)  # one a second refills
    assert not sched.try_admit(0)
    await anyio.sleep(30.0)
    now = anyio.current_time()
    # An older report arriving late: 40 left, full in 20 s.  The window projects 30 now: it stays.
    stub.rate_limit = requests_left(40, now + 20.0, now, limit=60)
    assert admitted(sched) == 30
    await anyio.sleep(5.0)
    now = anyio.current_time()
    # A fresher one (another client of the key spent some): 2 left now, where the window projects 5.
    stub.rate_limit = requests_left(2, now + 58.0, now, limit=60)
    assert admitted(sched) == 2
    await anyio.sleep(1.0)
    assert admitted(sched) == 1  # 58 refilled in 58 s: one a second


def admitted(sched: Scheduler) -> int:
    """How many requests the scheduler lets go at once (each released at once: only the vendor's window counts)."""
    n = 0
    while sched.try_admit(0):
        sched.release(0.0)
        n += 1
        assert n < 1000
    return n


async def test_a_spent_token_budget_refills_at_the_vendors_pace() -> None:
    """Tokens as requests: with an estimate (a token budget) each waits until its own tokens have refilled."""
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, tokens_per_minute=100_000)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = RateLimitState((Budget("tokens", 10_000, 0, now + 10.0),))  # 1,000 a second
        for _ in range(3):
            await ref.ask(Complete(request("x" * 2000)))  # ~501 tokens
    assert [t - now for t in reporter.sent[1:]] == pytest.approx([0.501, 1.002, 1.503], abs=0.01)


@pytest.mark.parametrize("name", ["input_tokens", "output_tokens"])
async def test_a_spent_input_or_output_token_budget_refills_at_the_vendors_pace_with_an_estimate(name: str) -> None:
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, tokens_per_minute=100_000)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = RateLimitState((Budget(name, 10_000, 0, now + 10.0),))
        for _ in range(2):
            await ref.ask(Complete(request("x" * 2000)))  # ~501 tokens: more than either part
    assert [t - now for t in reporter.sent[1:]] == pytest.approx([0.501, 1.002], abs=0.01)


async def test_a_retry_after_holds_everything_until_it_ends_refill_or_not() -> None:
    def told(now: float) -> RateLimitState:
        return RateLimitState((Budget("requests", 60, 0, now + 60.0),), retry_after_until=now + 5.0)

    assert await sent_after(Reporter(), told) == pytest.approx(5.0, abs=0.01)


async def test_a_refill_within_max_wait_is_waited_for_not_refused() -> None:
    """Full in 30 s, but one request's worth is back in 3 s: within ``max_wait=10``, the request waits."""
    reporter = Reporter()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, reporter, max_wait=10.0)
        await ref.ask(Complete(request()))
        now = anyio.current_time()
        reporter.report = requests_left(0, now + 30.0, now, limit=10)
        await ref.ask(Complete(request()))
    assert reporter.sent[-1] - now == pytest.approx(3.0, abs=0.01)


async def test_a_refill_slower_than_the_hold_bound_is_still_bounded() -> None:
    """A known limit, a reset a day away: one request's refill would take hours — held at most the bound."""
    held = await sent_after(Reporter(), lambda now: requests_left(0, now + 86_400.0, now, limit=10))
    assert held == pytest.approx(VENDOR_HOLD_BOUND, abs=0.01)
