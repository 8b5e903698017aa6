"""The ProviderActor's scheduler: who waits, who goes next, who is refused — on virtual time, both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentactors import (
    Agent,
    Complete,
    LLMRequest,
    LLMResponse,
    Message,
    Overloaded,
    ProviderActor,
    Runtime,
    ToolCall,
    Usage,
)
from agentactors.events import InMemoryRecorder
from agentactors.gateway.scheduling import BUDGET_WAIT_BOUND, DEFAULT_SERVICE_ESTIMATE
from agentactors.gateway.ticket import RunTicket, enter, leave, next_order
from agentactors.providers.scripted import ScriptedProvider

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


def request(label: str) -> LLMRequest:
    return LLMRequest([Message.user(label)])


class Vendor:
    """A script callable: ``first`` holds until released, every other request takes ``hold`` seconds."""

    def __init__(self, hold: float = 1.0) -> None:
        self.release = anyio.Event()
        self.hold = hold
        self.served: list[str] = []
        self.times: list[float] = []

    async def __call__(self, req: LLMRequest) -> str:
        label = req.messages[0].content
        self.served.append(label)
        self.times.append(anyio.current_time())
        if label == "first":
            await self.release.wait()
        else:
            await anyio.sleep(self.hold)
        return label


async def ask_as(
    ref: Any, label: str, order: int | None = None, priority: int = 0, out: list[Any] | None = None
) -> None:
    """Ask from a run with this age and class (no ticket: a lone request, ordered by arrival)."""
    token = enter(RunTicket(order, priority)) if order is not None else None
    try:
        response = await ref.ask(Complete(request(label)))
        if out is not None:
            out.append(response.content)
    except Overloaded as exc:
        if out is None:
            raise
        out.append(exc)
    finally:
        if token is not None:
            leave(token)


async def queue_up(
    ref: Any, tg: Any, asks: Sequence[tuple[str, int | None, int]], out: list[Any] | None = None
) -> None:
    """Start the asks one after another (each arrives after the one before), then let them settle."""
    for label, order, priority in asks:
        tg.start_soon(ask_as, ref, label, order, priority, out)
        await anyio.sleep(0.001)


async def test_fifo_serves_waiters_in_arrival_order() -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, scheduling="fifo")
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            await queue_up(ref, tg, [("run5", 5, 0), ("run3", 3, 0), ("run9", 9, 0), ("run1", 1, 0)])
            vendor.release.set()
    assert vendor.served == ["first", "run5", "run3", "run9", "run1"]


async def test_oldest_run_serves_the_run_that_started_first() -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1)  # the default policy
        age = [next_order() for _ in range(10)]  # ten runs started, oldest first
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            await queue_up(ref, tg, [("run5", age[5], 0), ("run3", age[3], 0), ("lone-a", None, 0),
                                     ("run9", age[9], 0), ("run1", age[1], 0), ("lone-b", None, 0)])
            vendor.release.set()
    # Lone requests count as runs that start when they arrive: after every run older than them.
    assert vendor.served == ["first", "run1", "run3", "run5", "run9", "lone-a", "lone-b"]


async def test_lone_requests_are_served_in_arrival_order_under_either_policy() -> None:
    for policy in ("oldest_run", "fifo"):
        vendor = Vendor()
        async with Runtime() as rt:
            ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, scheduling=policy)
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask_as, ref, "first")
                await anyio.sleep(0.001)
                await queue_up(ref, tg, [(f"lone{i}", None, 0) for i in range(5)])
                vendor.release.set()
        assert vendor.served == ["first"] + [f"lone{i}" for i in range(5)], policy


async def test_a_higher_class_goes_first_and_a_lower_one_waits_for_at_most_max_overtakes() -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_overtakes=3)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            # The batch requests arrive first, and belong to older runs: class still decides.
            asks = [(f"batch{i}", i, 0) for i in range(3)] + [(f"live{i}", 100 + i, 1) for i in range(10)]
            await queue_up(ref, tg, asks)
            vendor.release.set()
    served = vendor.served[1:]
    assert served == [
        "live0", "live1", "live2", "batch0",
        "live3", "live4", "live5", "batch1",
        "live6", "live7", "live8", "batch2",
        "live9",
    ]
    # The bound, stated: while a lower class waits, never more than max_overtakes higher ones in a row.
    run = 0
    for label in served[: served.index("batch2") + 1]:
        run = run + 1 if label.startswith("live") else 0
        assert run <= 3


async def test_without_a_bound_priority_is_strict() -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_overtakes=None)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            await queue_up(ref, tg, [("batch", 1, -1)] + [(f"live{i}", 10 + i, 0) for i in range(6)])
            vendor.release.set()
    assert vendor.served[1:] == [f"live{i}" for i in range(6)] + ["batch"]


async def test_every_wait_is_recorded_per_request() -> None:
    rec = InMemoryRecorder()
    vendor = Vendor(hold=1.0)
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1)
        async with anyio.create_task_group() as tg:
            for i in range(4):
                tg.start_soon(ask_as, ref, f"r{i}")
    waited = rec.of_type("provider.waited")
    # The first goes at once (no event); each later one waited a second more than the one before.
    assert [e.wait for e in waited] == pytest.approx([1.0, 2.0, 3.0], abs=0.01)
    assert [e.ahead for e in waited] == [0, 1, 2]
    assert all(e.scheduling == "oldest_run" and e.priority == 0 for e in waited)


async def test_max_waiting_refuses_at_once_and_an_older_run_displaces_the_youngest_waiter() -> None:
    rec = InMemoryRecorder()
    vendor = Vendor()
    out: list[Any] = []
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_waiting=2)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            await queue_up(ref, tg, [("run10", 10, 0), ("run11", 11, 0)], out)
            refused_at = anyio.current_time()
            with pytest.raises(Overloaded) as info:
                await ask_as(ref, "run12", 12)  # younger than both: refused, at once
            assert anyio.current_time() == refused_at
            assert info.value.reason == "max_waiting" and info.value.retryable
            assert info.value.kind.value == "transient"
            await queue_up(ref, tg, [("run1", 1, 0)], out)  # older than both: the youngest waiter makes room
            vendor.release.set()
    assert vendor.served == ["first", "run1", "run10"]
    [displaced] = [o for o in out if isinstance(o, Overloaded)]
    assert displaced.reason == "max_waiting"
    assert sorted(o for o in out if isinstance(o, str)) == ["run1", "run10"]
    reasons = [e.reason for e in rec.of_type("provider.overloaded")]
    assert reasons == ["max_waiting", "max_waiting"]


async def test_a_refusal_before_the_first_answer_still_says_when_to_come_back() -> None:
    rec = InMemoryRecorder()
    release = anyio.Event()

    async def held(req: LLMRequest) -> str:
        await release.wait()
        return "ok"

    out: list[Any] = []
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(held), max_concurrency=2, max_waiting=1)
        async with anyio.create_task_group() as tg:
            await queue_up(ref, tg, [("a", None, 0), ("b", None, 0), ("c", None, 0)], out)  # a, b in flight; c waits
            with pytest.raises(Overloaded) as early:
                await ask_as(ref, "d")
            # No service time observed: two requests ahead of a slot (c, then d's own turn) over two slots,
            # at DEFAULT_SERVICE_ESTIMATE each.
            assert early.value.reason == "max_waiting"
            assert early.value.retry_after == pytest.approx(2 * DEFAULT_SERVICE_ESTIMATE / 2)
            assert "retry in about" in str(early.value)
            await anyio.sleep(5.0)
            with pytest.raises(Overloaded) as later:
                await ask_as(ref, "e")
            # Still no answer, and the oldest request in flight is 5 s old: each takes at least that long.
            assert later.value.retry_after == pytest.approx(2 * 5.0 / 2, abs=0.01)
            release.set()
    assert out == ["ok", "ok", "ok"]
    events = rec.of_type("provider.overloaded")
    assert [e.retry_after for e in events] == [early.value.retry_after, later.value.retry_after]


async def test_max_wait_refuses_on_arrival_when_the_estimated_wait_is_too_long() -> None:
    vendor = Vendor(hold=1.0)
    out: list[Any] = []
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_wait=3.0)
        await ask_as(ref, "warm-up")  # one service time observed: 1 s
        start = anyio.current_time()
        times: dict[str, float] = {}

        async def timed(label: str) -> None:
            await ask_as(ref, label, out=out)
            times[label] = anyio.current_time() - start

        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(timed, f"r{i}")
                await anyio.lowlevel.checkpoint()
    served = [o for o in out if isinstance(o, str)]
    refused = [o for o in out if isinstance(o, Overloaded)]
    # 0, 1 and 2 s of waiting expected; 3 s is beyond the 80 % of max_wait a request is admitted within.
    assert sorted(served) == ["r0", "r1", "r2"]
    assert len(refused) == 2 and all(e.reason == "max_wait" for e in refused)
    assert all(e.retry_after is not None and e.retry_after >= 3.0 for e in refused)
    assert times["r3"] == times["r4"] == pytest.approx(0.0, abs=0.01)  # refused on arrival
    assert max(times[s] for s in served) <= 3.0 + 1.0 + 0.01  # admitted ones waited at most max_wait


async def test_max_wait_refuses_a_request_still_waiting_when_it_is_reached() -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_wait=2.0)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")  # holds the slot; no service time known yet
            await anyio.sleep(0.001)
            start = anyio.current_time()
            with pytest.raises(Overloaded) as info:
                await ask_as(ref, "second")
            assert anyio.current_time() - start == pytest.approx(2.0)
            assert info.value.reason == "max_wait"
            # No answer yet, but "first" has held the slot for 2 s: at least that long is the estimate.
            assert info.value.retry_after == pytest.approx(2.0, abs=0.01)
            vendor.release.set()
        assert vendor.served == ["first"]
        assert (await ref.ask(Complete(request("after")), timeout=5)).content == "after"  # the place was freed


async def test_a_cancelled_waiter_gives_its_place_up() -> None:
    vendor = Vendor(hold=1.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_as, ref, "first")
            await anyio.sleep(0.001)
            with anyio.move_on_after(0.5):
                await ask_as(ref, "gave-up")
            tg.start_soon(ask_as, ref, "next")
            await anyio.sleep(0.001)
            vendor.release.set()
        started = anyio.current_time()
        await ref.ask(Complete(request("alone")))
        assert anyio.current_time() - started == pytest.approx(1.0)  # a free slot: no wait
    assert vendor.served == ["first", "next", "alone"]


# --- budgets ---------------------------------------------------------------------------------------


async def test_an_implausible_usage_report_is_bounded_and_recorded() -> None:
    rec = InMemoryRecorder()
    reports = iter([Usage(output_tokens=10**12), Usage(input_tokens=1, output_tokens=1)])
    times: list[float] = []

    async def answer(req: LLMRequest) -> LLMResponse:
        times.append(anyio.current_time())
        return LLMResponse("ok", usage=next(reports))

    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(answer), tokens_per_minute=6000)
        await ref.ask(Complete(request("a")))  # 1 token estimated, 10**12 reported
        await ref.ask(Complete(request("b")))
    [event] = rec.of_type("provider.usage_implausible")
    assert event.reported == 10**12
    assert event.charged == 6000  # at most a minute's budget beyond the estimate
    # Charged the capacity, the bucket is empty: the next request waits for its one token, not 19 years.
    assert times[1] - times[0] <= 60.0
    assert times[1] - times[0] == pytest.approx(1 / 100, abs=1e-3)


async def test_plausible_usage_is_charged_as_reported() -> None:
    rec = InMemoryRecorder()

    async def answer(req: LLMRequest) -> LLMResponse:
        return LLMResponse("ok", usage=Usage(input_tokens=300, output_tokens=200))

    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(answer), tokens_per_minute=1000)
        await ref.ask(Complete(request("a")))
        start = anyio.current_time()
        await ref.ask(Complete(request("b")))
        await ref.ask(Complete(request("c")))
        # 1000 - 500 - 500 = 0 left after two; the third waits for its one token.
        assert anyio.current_time() - start == pytest.approx(1 / (1000 / 60), abs=1e-3)
    assert rec.of_type("provider.usage_implausible") == []


async def test_a_budget_wait_beyond_the_sane_bound_is_refused_not_waited() -> None:
    rec = InMemoryRecorder()
    async with Runtime(recorders=[rec]) as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(lambda r: "ok"), tokens_per_minute=1)
        await ref.ask(Complete(request("x" * 400)))  # ~101 tokens > 1: goes on a full bucket, deep in debt
        start = anyio.current_time()
        with pytest.raises(Overloaded) as info:
            await ref.ask(Complete(request("y")))
        assert anyio.current_time() == start  # never a hang
    assert info.value.reason == "budget"
    assert info.value.retry_after is not None and info.value.retry_after > BUDGET_WAIT_BOUND
    assert [e.reason for e in rec.of_type("provider.overloaded")] == ["budget"]


async def test_a_budget_wait_past_max_wait_is_refused_at_once() -> None:
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(lambda r: "ok"), requests_per_minute=1, max_wait=10.0)
        await ref.ask(Complete(request("a")))
        start = anyio.current_time()
        with pytest.raises(Overloaded) as info:
            await ref.ask(Complete(request("b")))  # the next request is 60 s away
        assert anyio.current_time() == start
    assert info.value.reason == "max_wait"
    assert info.value.retry_after == pytest.approx(60.0)


async def test_arguments_are_validated() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(ValueError, match="scheduling"):
        ProviderActor(provider, scheduling="lifo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_waiting"):
        ProviderActor(provider, max_waiting=-1)
    with pytest.raises(ValueError, match="max_wait"):
        ProviderActor(provider, max_wait=-0.5)
    with pytest.raises(ValueError, match="max_overtakes"):
        ProviderActor(provider, max_overtakes=0)


# --- runs ------------------------------------------------------------------------------------------


async def step(n: int) -> int:
    """One tool step of a run."""
    return n + 1


async def finish_times(policy: str, runs: int = 20) -> list[float]:
    """20 runs of 3 model calls each (model → tool → model → tool → model) through 2 slots, 1 s a call.

    Returns when each run finished, in start order.
    """
    calls = 0

    async def model(req: LLMRequest) -> Any:
        nonlocal calls
        calls += 1
        await anyio.sleep(1.0)
        results = sum(m.role == "tool" for m in req.messages)
        return "done" if results == 2 else ToolCall(f"c{results}", "step", {"n": results})

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(model), max_concurrency=2, scheduling=policy)
        agent = Agent(ref, tools=[step], nudges=False)
        done: dict[int, float] = {}
        start = anyio.current_time()

        async def one(i: int) -> None:
            result = await agent.run(f"task {i}")
            assert result.ok and result.steps == 3
            done[i] = anyio.current_time() - start

        async with anyio.create_task_group() as tg:
            for i in range(runs):
                tg.start_soon(one, i)
    assert calls == 3 * runs
    return [done[i] for i in range(runs)]


async def test_under_oldest_run_runs_finish_steadily_not_all_at_the_end() -> None:
    fifo = sorted(await finish_times("fifo", 60))
    oldest = sorted(await finish_times("oldest_run", 60))
    # The same throughput: 180 calls, 2 at a time (the last run's steps may leave one slot idle for a call).
    assert fifo[-1] == pytest.approx(90.0)
    assert 90.0 <= oldest[-1] <= 91.0
    # FIFO: every run's next call queues behind every other run's current one — all finish near the end.
    assert fifo[0] >= 60.0  # not one run finished in the first two thirds of the wall time
    # Oldest run first: the first runs finish after their own three calls (and one wait: a freed slot
    # goes to a waiting request before the run that freed it is back from its tool step), the rest steadily.
    assert oldest[0] <= 4.0
    assert oldest[len(oldest) // 2] <= 0.65 * fifo[len(fifo) // 2]


async def overload(policy: str) -> dict[str, Any]:
    """Runs of three 1 s calls offered at 3× what 2 slots serve, for 60 s, with max_wait=5."""
    outcomes: list[tuple[float, Any]] = []

    async def model(req: LLMRequest) -> Any:
        await anyio.sleep(1.0)
        results = sum(m.role == "tool" for m in req.messages)
        return "done" if results == 2 else ToolCall(f"c{results}", "step", {"n": results})

    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(model), max_concurrency=2, max_wait=5.0,
                                   scheduling=policy)
        agent = Agent(ref, tools=[step], nudges=False)

        async def one() -> None:
            start = anyio.current_time()
            result = await agent.run("go")
            outcomes.append((anyio.current_time() - start, result))

        async with anyio.create_task_group() as tg:
            for _ in range(120):  # 2 runs a second; the actor serves 2/3 of a run a second
                tg.start_soon(one)
                await anyio.sleep(0.5)
    ok = [t for t, r in outcomes if r.ok]
    refused = [(t, r) for t, r in outcomes if isinstance(r.error, Overloaded)]
    return {
        "ok": len(ok),
        "worst_ok": max(ok),
        "refused_late": sum(t > 0 for t, _ in refused),
        "refused_mid_run": sum(r.steps > 1 for _, r in refused),
    }


async def test_under_overload_oldest_run_sheds_new_runs_at_once_and_keeps_the_ones_in_progress() -> None:
    oldest = await overload("oldest_run")
    fifo = await overload("fifo")
    assert oldest["refused_mid_run"] == 0  # no run's work was wasted: only new runs were turned away
    assert oldest["refused_late"] == 0  # every refusal is made on arrival
    assert oldest["worst_ok"] <= 3.0 + 5.0  # its three calls, and at most one max_wait of waiting
    assert fifo["worst_ok"] > 10.0  # in arrival order every call of a run waits its turn again
    assert oldest["ok"] >= 0.9 * fifo["ok"]  # the same goodput


async def test_a_refused_run_says_so_and_when_to_come_back_and_with_retry_acts_on_it() -> None:
    from agentactors import with_retry

    vendor = Vendor(hold=1.0)
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, ScriptedProvider(vendor), max_concurrency=1, max_waiting=0)
        agent = Agent(ref)
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.run, "one")  # holds the only slot for a second
            await anyio.sleep(0.001)
            result = await agent.run("two")  # nobody may wait: refused at once
    assert result.generation_failed and isinstance(result.error, Overloaded)
    assert result.error.retryable and result.error.kind.value == "transient"
    # Overloaded is transient with a retry_after: a retry honours it like a vendor's 429.
    refused = Overloaded("refused", provider="actor", retry_after=2.5)
    retried = with_retry(ScriptedProvider([refused, "served"]))
    start = anyio.current_time()
    assert (await retried.complete(request("x"))).content == "served"
    assert anyio.current_time() - start == pytest.approx(2.5)


@pytest.mark.parametrize("limit", [{"max_waiting": 0}, {"max_wait": 0.5}])
async def test_a_provider_actor_spawned_the_plain_way_applies_its_waiting_limits(limit: dict[str, Any]) -> None:
    """``rt.spawn(ProviderActor(p, max_concurrency=1, max_waiting=0))`` without ``concurrency=``: the runtime's
    default of 1 handler let only one ask into the actor — the rest queued in the mailbox, unseen by its scheduler,
    and were served one by one, never refused.  ``spawn`` now takes the actor's own ``spawn_concurrency``."""
    vendor = Vendor(hold=2.0)
    out: list[Any] = []
    async with Runtime() as rt:
        actor = ProviderActor(ScriptedProvider(vendor), max_concurrency=1, **limit)
        ref = rt.spawn(actor)
        async with anyio.create_task_group() as tg:
            await queue_up(ref, tg, [("a", None, 0), ("b", None, 0), ("c", None, 0)], out)
    assert out[:1] == ["a"] or out[-1:] == ["a"]
    assert sum(isinstance(o, Overloaded) for o in out) == 2, out
    # A 1 the caller wrote is kept: one handler, the asks wait in the mailbox (the documented difference).
    served: list[Any] = []
    async with Runtime() as rt:
        ref = rt.spawn(ProviderActor(ScriptedProvider(Vendor(hold=2.0)), max_concurrency=1, **limit), concurrency=1)
        async with anyio.create_task_group() as tg:
            await queue_up(ref, tg, [("a", None, 0), ("b", None, 0), ("c", None, 0)], served)
    assert served == ["a", "b", "c"]


async def test_spawn_takes_an_actors_declared_concurrency_and_checks_it() -> None:
    class Declares:
        spawn_concurrency = 3

        def __init__(self) -> None:
            self.inside = 0
            self.most = 0

        async def receive(self, message: object) -> None:
            self.inside += 1
            self.most = max(self.most, self.inside)
            await anyio.sleep(1)
            self.inside -= 1

    class Wrong(Declares):
        spawn_concurrency = 0

    async with Runtime() as rt:
        actor = Declares()
        ref = rt.spawn(actor)
        async with anyio.create_task_group() as tg:
            for _ in range(5):
                tg.start_soon(ref.ask, "x")
        assert actor.most == 3
        built = Declares()
        rt.spawn(lambda: built)  # a factory's actor is asked too
        with pytest.raises(ValueError, match=r"Wrong.spawn_concurrency must be >= 1, not 0"):
            rt.spawn(Wrong())

        class AnswersEverything:  # a mock, a proxy: its spawn_concurrency is no int, so it declares nothing
            def __getattr__(self, name: str) -> object:
                if name.startswith("on_"):  # (its hooks it does not have)
                    raise AttributeError(name)
                return object()

            async def receive(self, message: object) -> str:
                return "ok"

        assert await rt.spawn(AnswersEverything()).ask("x") == "ok"

        made: list[object] = []

        def factory() -> Declares:
            made.append(1)
            return Declares()

        with pytest.raises(ValueError, match="on_failure must be one of"):
            rt.spawn(factory, on_failure="retsart")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="mailbox_size must be >= 1"):
            rt.spawn(factory, mailbox_size=0)
        assert made == [], "settings refused before the factory builds an actor"
