"""Property: generated loads against a real ProviderActor keep every promise its docs make.

A ProviderActor with drawn limits (slots, request and token budgets, policy, ``max_waiting``, ``max_wait``,
``max_overtakes``) serves 5-60 callers that arrive at drawn (virtual) times, from drawn runs with drawn
priority classes, and ask for a complete answer, a fed stream or a pulled stream.  The vendor takes drawn
virtual times and answers, fails (a transient ``ProviderError``), or says 429 with a ``retry_after``; some
callers are cancelled while they wait or while in flight, some streams are abandoned part-way.  Checked
(``docs/actors.md``, ProviderActor; ``docs/reliability.md``, the bounds table):

* the vendor never has more than ``max_concurrency`` requests in flight;
* the requests sent in any window fit the request budget (a bucket of one minute's worth, refilled
  continuously), and their tokens the token budget (each charged its estimate, corrected by the usage its
  answer reports; a request larger than the bucket goes on a full one);
* every request ends: answered, the vendor's own error, ``Overloaded`` (with ``retry_after`` set, > 0), or
  its own cancellation — never a hang; none waits past ``max_wait``; none is sent after it was cancelled;
* no slot is lost: once all ended and the budgets refilled, ``max_concurrency`` new requests all go at once;
* while a lower class waits, at most ``max_overtakes`` higher-class requests are granted before it is;
* with a vendor that reports its own request limit (``rate_limit``, as an HTTPProvider keeps it), no request
  meets that limit's 429 once the vendor has reported: the actor holds it until the vendor has room.

On both backends, on virtual time (trio also shuffles the order in which ready tasks run).
"""

from __future__ import annotations

import math
from typing import Any

import anyio
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agentactors import Complete, LLMRequest, LLMResponse, Message, Overloaded, ProviderActor, Runtime, Usage
from agentactors.errors import ErrorKind, ProviderError
from agentactors.gateway import scheduling
from agentactors.gateway.provider import Stream, estimate_tokens
from agentactors.gateway.ticket import RunTicket, enter, leave, next_order
from agentactors.messages import StreamEnd, TextDelta
from agentactors.providers.http.ratelimits import Budget, RateLimitState
from agentactors.testing import virtual_backends

EPS = 1e-6

# One caller: (gap before it arrives, run index, priority, kind, vendor time, outcome, cancel after, abandon after
# k events, max_tokens, share of the estimate its answer reports as used).
caller = st.tuples(
    st.sampled_from([0.0, 0.0, 0.0, 0.01, 0.3, 1.0, 5.0]),
    st.integers(0, 3),
    st.integers(0, 2),
    st.sampled_from(["complete", "complete", "stream", "pull"]),
    st.sampled_from([0.0, 0.1, 0.5, 2.0, 10.0]),
    st.sampled_from(["ok", "ok", "ok", "fail", "429"]),
    st.one_of(st.none(), st.none(), st.sampled_from([0.0, 0.05, 0.5, 3.0, 20.0])),
    st.one_of(st.none(), st.none(), st.integers(0, 3)),
    st.one_of(st.none(), st.sampled_from([10, 200, 5_000])),
    st.sampled_from([0.0, 0.5, 1.0]),
)

Plan = tuple[float, int, int, str, float, str, float | None, int | None, int | None, float]


class Vendor:
    """The fake vendor: counts what is in flight, records each request it receives, answers as its plan says."""

    name = "vendor"

    def __init__(self, plans: dict[str, Plan], slots: int, capacity: float | None) -> None:
        self.plans = plans
        self.slots = slots
        self.capacity = capacity
        self.in_flight = 0
        self.most = 0
        self.violations: list[str] = []
        self.sent: dict[str, float] = {}  # label: when it reached the vendor
        self.answered: dict[str, int] = {}  # label: the usage its complete answer reported (it was delivered)
        self.answered_at: dict[str, float] = {}

    def _enter(self, label: str) -> None:
        if label in self.sent:
            self.violations.append(f"{label} sent twice")
        self.sent[label] = anyio.current_time()
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        if self.in_flight > self.slots:
            self.violations.append(f"{self.in_flight} in flight > max_concurrency={self.slots} at {label}")

    def _plan(self, label: str) -> tuple[float, str, int]:
        plan = self.plans.get(label)
        if plan is None:  # the after-checks' requests
            return 1.0, "ok", 0
        estimate = estimate_tokens(LLMRequest([Message.user(label)], max_tokens=plan[8]),
                                   max_output=int(self.capacity) if self.capacity is not None else None)
        return plan[4], plan[5], int(estimate * plan[9])

    @staticmethod
    def _error(outcome: str) -> ProviderError:
        if outcome == "429":
            return ProviderError("rate limited", provider="vendor", kind=ErrorKind.transient, status=429,
                                 retry_after=1.5)
        return ProviderError("vendor down", provider="vendor", kind=ErrorKind.transient, status=503)

    def _response(self, label: str, used: int) -> LLMResponse:
        half = used // 2
        return LLMResponse(content=label, usage=Usage(input_tokens=half, output_tokens=used - half))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        label = request.messages[0].content
        hold, outcome, used = self._plan(label)
        self._enter(label)
        try:
            await anyio.sleep(hold)
        finally:
            self.in_flight -= 1
        if outcome != "ok":
            raise self._error(outcome)
        self.answered[label] = used
        self.answered_at[label] = anyio.current_time()
        return self._response(label, used)

    def stream(self, request: LLMRequest) -> VendorStream:
        return VendorStream(self, request.messages[0].content)


class ReportingVendor(Vendor):
    """A vendor with a request limit of its own (a bucket of ``limit`` a minute) that it reports on every answer
    and every 429 (``rate_limit``, as an HTTPProvider keeps it from the headers); past it, a 429 with
    ``retry_after``."""

    def __init__(self, plans: dict[str, Plan], slots: int, capacity: float | None, limit: int) -> None:
        super().__init__(plans, slots, capacity)
        self.limit = limit
        self.level = float(limit)
        self.stamp = 0.0
        self.rate_limit: RateLimitState | None = None
        self.refused = 0
        self.late: list[str] = []

    def _report(self, retry_after: float | None = None) -> None:
        now = anyio.current_time()
        left = max(0, int(self.level + EPS))
        reset = now + (self.limit - self.level) * 60 / self.limit
        self.rate_limit = RateLimitState(
            budgets=(Budget("requests", limit=self.limit, remaining=left, reset=reset),),
            retry_after_until=now + retry_after if retry_after is not None else None,
            observed=now,
        )

    def _enter(self, label: str) -> None:
        super()._enter(label)
        now = anyio.current_time()
        self.level = min(self.limit, self.level + (now - self.stamp) * self.limit / 60)
        self.stamp = now
        if self.level < 1 - EPS:
            self.in_flight -= 1
            self.refused += 1
            if self.rate_limit is not None:
                self.late.append(f"{label} met the vendor's 429 at {now:g} after its report {self.rate_limit}")
            retry_after = (1 - self.level) * 60 / self.limit
            self._report(retry_after)
            raise ProviderError("vendor limit", provider="vendor", kind=ErrorKind.transient, status=429,
                                retry_after=retry_after)
        self.level -= 1

    def _response(self, label: str, used: int) -> LLMResponse:
        self._report()
        return super()._response(label, used)


class VendorStream:
    def __init__(self, vendor: Vendor, label: str) -> None:
        self.vendor = vendor
        self.label = label

    async def __aenter__(self) -> Any:
        self.vendor._enter(self.label)
        return self.events()

    async def __aexit__(self, *exc: object) -> None:
        self.vendor.in_flight -= 1

    async def events(self) -> Any:
        vendor, label = self.vendor, self.label
        hold, outcome, used = vendor._plan(label)
        for n in range(4):
            await anyio.sleep(hold / 4)
            if n == 2 and outcome != "ok":
                raise vendor._error(outcome)
            yield TextDelta(f"{label}-{n} ")
        vendor.answered[label] = used
        vendor.answered_at[label] = anyio.current_time()
        yield StreamEnd(vendor._response(label, used))


class Grants:
    """Watches the scheduler's grants (``Scheduler._served``, patched for the example): per waiting request, the
    higher-class grants since it arrived or its class was last granted (whichever is later)."""

    def __init__(self, bound: int | None) -> None:
        self.bound = bound
        self.violations: list[str] = []
        # Each waiter (held: an id could be reused by the next one): higher-class grants it watched in a row.
        self.overtaken: dict[Any, int] = {}
        self.most = 0

    def served(self, sched: Any, priority: int) -> None:
        waiting = {entry[2]: entry[2].priority for queue in sched._queues.values() for entry in queue}
        self.overtaken = {key: count for key, count in self.overtaken.items() if key in waiting}
        for key, cls in waiting.items():
            if cls < priority:
                count = self.overtaken[key] = self.overtaken.get(key, 0) + 1
                self.most = max(self.most, count)
                if self.bound is not None and count > self.bound:
                    self.violations.append(f"a class {cls} waiter overtaken {count} times (bound {self.bound})")
            elif cls == priority:
                self.overtaken[key] = 0


def run(
    plans: list[Plan], limits: dict[str, Any], backend: str, vendor_limit: int | None = None
) -> tuple[list[str], dict[str, int]]:
    slots = limits["max_concurrency"]
    tpm = limits["tokens_per_minute"]
    labels = {f"c{i}": plan for i, plan in enumerate(plans)}
    vendor = Vendor(labels, slots, tpm) if vendor_limit is None else ReportingVendor(labels, slots, tpm, vendor_limit)
    grants = Grants(limits["max_overtakes"])
    violations: list[str] = []
    outcomes: dict[str, int] = {}
    arrived: dict[str, float] = {}
    ended: dict[str, float] = {}
    cancelled_at: dict[str, float] = {}
    orders = [next_order() for _ in range(4)]

    def note(kind: str) -> None:
        outcomes[kind] = outcomes.get(kind, 0) + 1

    async def one(ref: Any, label: str, plan: Plan) -> None:
        _, run_index, priority, kind, _, _, cancel_after, abandon, max_tokens, _ = plan
        token = enter(RunTicket(orders[run_index], priority))
        request = LLMRequest([Message.user(label)], max_tokens=max_tokens)
        arrived[label] = anyio.current_time()
        try:
            with anyio.CancelScope() as scope:
                if cancel_after is not None:
                    scope.deadline = anyio.current_time() + cancel_after
                try:
                    if kind == "complete":
                        response = await ref.ask(Complete(request))
                        if response.content != label:
                            violations.append(f"{label} answered {response.content!r}")
                    else:
                        stream = await ref.ask(Stream(request, pull=kind == "pull"))
                        async with stream:
                            seen = 0
                            async for item in stream:
                                if isinstance(item, StreamEnd):
                                    break
                                seen += 1
                                if abandon is not None and seen > abandon:
                                    note("abandoned")
                                    break
                    note("served")
                except Overloaded as exc:
                    note(f"overloaded:{exc.reason}")
                    if not (exc.retry_after is not None and 0 < exc.retry_after < math.inf):
                        violations.append(f"{label} refused with retry_after={exc.retry_after!r}")
                    if label in vendor.sent:
                        violations.append(f"{label} refused and sent")
                except ProviderError as exc:
                    if exc.provider != "vendor" or exc.status not in (429, 503):
                        violations.append(f"{label} raised {exc!r}")
                    note("failed")
            if scope.cancelled_caught:
                note("cancelled")
                cancelled_at[label] = anyio.current_time()
        except BaseException as exc:  # anything else is a broken promise: recorded
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            violations.append(f"{label} raised {type(exc).__name__}: {exc}")
        finally:
            leave(token)
            ended[label] = anyio.current_time()

    async def scenario() -> None:
        served = scheduling.Scheduler._served

        def watched(self: Any, priority: int) -> None:
            grants.served(self, priority)
            served(self, priority)

        scheduling.Scheduler._served = watched  # type: ignore[method-assign]
        try:
            async with Runtime() as rt:
                ref = ProviderActor.shared(rt, vendor, **limits)
                with anyio.fail_after(4 * 3600):  # a hang is a failure, not a stuck test
                    async with anyio.create_task_group() as tg:
                        for label, plan in labels.items():
                            await anyio.sleep(plan[0])
                            tg.start_soon(one, ref, label, plan)
                    # Every request has ended.  Let the budgets refill, then every slot must be there at once.
                    await anyio.sleep(130)
                    if vendor.in_flight:
                        violations.append(f"{vendor.in_flight} still in flight after every request ended")
                    start = anyio.current_time()
                    async with anyio.create_task_group() as tg:
                        for n in range(slots):
                            tg.start_soon(ref.ask, Complete(LLMRequest([Message.user(f"after{n}")])))
                    late = [f"after{n}" for n in range(slots) if vendor.sent.get(f"after{n}", math.inf) > start + EPS]
                    if late:
                        violations.append(f"slots lost: {late} waited (sent {vendor.sent})")
        finally:
            scheduling.Scheduler._served = served  # type: ignore[method-assign]

    name, options = dict(enumerate(virtual_backends()))[0 if backend == "asyncio" else 1]
    anyio.run(scenario, backend=name, backend_options=options)

    violations += vendor.violations + grants.violations + getattr(vendor, "late", [])
    if missing := set(labels) - set(ended):
        violations.append(f"never ended: {sorted(missing)}")
    max_wait = limits["max_wait"]
    for label, when in cancelled_at.items():
        reached = vendor.sent.get(label)
        if reached is not None and reached > when + EPS:
            violations.append(f"{label} sent at {reached} after it was cancelled at {when}")
    if max_wait is not None:
        for label, when in arrived.items():
            # Served or refused within max_wait of its arrival (a cancelled one may have left first).
            decided = vendor.sent.get(label, ended[label] if label not in cancelled_at else when)
            if decided - when > max_wait + EPS:
                violations.append(f"{label} waited {decided - when:g}s > max_wait={max_wait}")
    sent = sorted((when, label) for label, when in vendor.sent.items() if label in labels)
    rpm = limits["requests_per_minute"]
    if rpm is not None:
        for i in range(len(sent)):
            for j in range(i, len(sent)):
                allowed = rpm + rpm / 60 * (sent[j][0] - sent[i][0]) + EPS
                if j - i + 1 > allowed:
                    violations.append(f"{j - i + 1} requests sent in [{sent[i][0]:g}, {sent[j][0]:g}] > {allowed:g}")
                    break
    if tpm is not None:
        # The bucket's ledger: the estimates taken by the requests sent in a window fit one minute's budget, the
        # flow, the corrections that gave tokens back in it (an answer reporting less than its estimate: the
        # vendor's answer is the instant), and one request's excess over a full bucket (it goes on a full one).
        cap = int(tpm)

        def estimate(label: str) -> int:
            return estimate_tokens(LLMRequest([Message.user(label)], max_tokens=labels[label][8]), max_output=cap)

        refunds = sorted((vendor.answered_at[lb], estimate(lb) - used)
                         for lb, used in vendor.answered.items() if lb in labels and used)
        over = max((max(0, estimate(lb) - cap) for lb in labels), default=0)
        for i in range(len(sent)):
            total = 0
            for j in range(i, len(sent)):
                total += estimate(sent[j][1])
                start, end = sent[i][0], sent[j][0]
                back = sum(amount for when, amount in refunds if start - EPS <= when <= end + EPS)
                allowed = tpm + tpm / 60 * (end - start) + back + over + EPS
                if total > allowed:
                    violations.append(f"{total} tokens sent in [{start:g}, {end:g}] > {allowed:g}")
                    break
    outcomes["most_in_flight"] = vendor.most
    outcomes["most_overtaken"] = grants.most
    return violations, outcomes


limits_strategy = st.fixed_dictionaries({
    "max_concurrency": st.integers(1, 4),
    "requests_per_minute": st.sampled_from([None, None, 20, 60, 600]),
    "tokens_per_minute": st.sampled_from([None, None, 1_000, 20_000]),
    "scheduling": st.sampled_from(["oldest_run", "fifo"]),
    "max_waiting": st.sampled_from([None, None, 0, 2, 10]),
    "max_wait": st.sampled_from([None, None, 0.5, 5.0, 60.0]),
    "max_overtakes": st.sampled_from([None, 1, 2, 16]),
})


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    plans=st.lists(caller, min_size=5, max_size=60),
    limits=limits_strategy,
    backend=st.sampled_from(["asyncio", "trio"]),
    vendor_limit=st.sampled_from([None, None, 10, 40]),
)
def test_a_provider_actor_under_generated_load_keeps_its_promises(
    plans: list[Plan], limits: dict[str, Any], backend: str, vendor_limit: int | None
) -> None:
    violations, outcomes = run(plans, limits, backend, vendor_limit)
    for kind in outcomes:
        if not kind.startswith("most"):
            event(kind)
    assert violations == []
