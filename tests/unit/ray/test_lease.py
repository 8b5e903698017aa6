"""The shared budget's lease logic, as plain classes on a virtual clock (no Ray).

Several :class:`LeaseClient` s (the workers) lease from one :class:`LedgerService` (the budget's actor)
through an in-process port that can die and come back as a restarted incarnation.  What is checked:
the concurrency bound is exact (at every moment, across every client), the rate bound is
``burst + rate × T + workers × lease``, the hot path pays a ledger call for a small fraction of
requests, a starved worker gets its fair share, idle slots and unspent units go back, and a restarted
ledger grants nothing until the roster's workers re-registered what they hold, with empty buckets.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors.ray import SharedBudget
from agentactors.ray.lease import LeaseClient
from agentactors.ray.ledger import BudgetLedger, LedgerService, LedgerUnavailable, RateReply, Roster, SlotReply

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Port:
    """An in-process LedgerPort with a little latency, whose ledger can die and restart."""

    def __init__(self, budget: SharedBudget, *, latency: float = 0.001) -> None:
        self.budget = budget
        self.service: LedgerService | None = LedgerService(BudgetLedger(budget))
        self.latency = latency
        self.calls = 0

    def kill(self) -> None:
        self.service = None

    def restart(self) -> LedgerService:
        self.service = LedgerService(BudgetLedger(self.budget, restarted=True))
        return self.service

    async def _get(self) -> LedgerService:
        self.calls += 1
        await anyio.sleep(self.latency)
        if self.service is None:
            raise LedgerUnavailable("dead")
        return self.service

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        return await (await self._get()).register(worker, held, roster)

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        return await (await self._get()).acquire(worker, epoch, want, wait)

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        return await (await self._get()).release(worker, epoch, count, wanting)

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        return await (await self._get()).check_in(worker, epoch, wanting)

    async def take(self, kind: str, want: float) -> RateReply:
        return await (await self._get()).take(kind, want)

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        await (await self._get()).give_back(epoch, kind, units)


class Gauge:
    """Requests in flight across every client, and the most ever seen."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.sent: list[float] = []

    @asynccontextmanager
    async def inflight(self) -> AsyncIterator[None]:
        self.now += 1
        self.peak = max(self.peak, self.now)
        self.sent.append(anyio.current_time())
        try:
            yield
        finally:
            self.now -= 1


@asynccontextmanager
async def clients(port: Port, count: int) -> AsyncIterator[list[LeaseClient]]:
    roster = Roster(1, frozenset(f"w{i}" for i in range(count)))
    made = [LeaseClient(f"w{i}", port.budget, port) for i in range(count)]
    for client in made:
        client.set_roster(roster)
    async with anyio.create_task_group() as tg:
        for client in made:
            tg.start_soon(client.maintain)
        yield made
        tg.cancel_scope.cancel()


async def requests(client: LeaseClient, gauge: Gauge, n: int, duration: Callable[[], float]) -> None:
    async def one() -> None:
        async with client.permit(), gauge.inflight():
            await anyio.sleep(duration())

    async with anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one)


async def test_the_concurrency_bound_is_exact_and_leases_are_batched() -> None:
    rng = random.Random(7)
    budget = SharedBudget(max_concurrency=10)
    port = Port(budget)
    gauge = Gauge()
    async with clients(port, 3) as made:
        with anyio.fail_after(600):
            async with anyio.create_task_group() as tg:
                for client in made:
                    tg.start_soon(requests, client, gauge, 400, lambda: rng.uniform(0.01, 0.2))
        permits = sum(c.stats.permits for c in made)
        calls = sum(c.stats.ledger_calls for c in made)
    assert permits == 1200
    assert gauge.peak == 10  # reached, never exceeded
    assert calls / permits < 0.25, (calls, permits)


async def test_a_starved_worker_gets_its_fair_share_from_a_busy_one() -> None:
    budget = SharedBudget(max_concurrency=8, refresh=0.25)
    port = Port(budget)
    gauge = Gauge()
    async with clients(port, 2) as (a, b):
        async with anyio.create_task_group() as tg:
            # a keeps all 8 slots busy with a long stream of requests ...
            tg.start_soon(requests, a, gauge, 400, lambda: 0.05)
            await anyio.sleep(0.5)
            assert a.held == 8
            # ... then b arrives: within a few check-ins it holds its share, and the bound holds.
            started = anyio.current_time()
            async with b.permit():
                waited = anyio.current_time() - started
            assert waited < 1.0
            tg.start_soon(requests, b, gauge, 400, lambda: 0.05)
            await anyio.sleep(1.5)
            assert b.held == a.held == 4  # fair shares: ceil(8 / 2) each
    assert gauge.peak <= 8


async def test_idle_slots_go_back_after_the_linger() -> None:
    budget = SharedBudget(max_concurrency=6, linger=0.05)
    port = Port(budget)
    async with clients(port, 1) as (a,):
        await requests(a, Gauge(), 20, lambda: 0.01)
        assert port.service is not None
        await anyio.sleep(0.5)
        assert a.held == 0
        assert port.service.ledger.in_use == 0


async def test_the_rate_bound_is_burst_plus_rate_times_t_plus_workers_times_lease() -> None:
    budget = SharedBudget(requests_per_minute=600, burst=0.05, token_ttl=0.5)  # 10/s, a bucket of 30
    port = Port(budget)
    gauge = Gauge()
    workers = 3
    async with clients(port, workers) as made:
        with anyio.move_on_after(10.0):
            async with anyio.create_task_group() as tg:
                for client in made:
                    tg.start_soon(requests, client, gauge, 1000, lambda: 0.001)
    elapsed = 10.0
    bound = budget.capacity("requests") + budget.rate("requests") * elapsed + workers * budget.request_lease
    assert len(gauge.sent) <= bound, (len(gauge.sent), bound)
    # ... and the budget is used, not wasted (the per-request pattern reached 45 %).
    assert len(gauge.sent) >= 0.8 * budget.rate("requests") * elapsed


async def test_unspent_rate_units_go_back_after_their_ttl() -> None:
    budget = SharedBudget(requests_per_minute=600, burst=0.1, token_ttl=0.5, lease=10)
    port = Port(budget)
    async with clients(port, 1) as (a,):
        async with a.permit():
            pass
        assert port.service is not None
        bucket = port.service.ledger.buckets["requests"]
        assert bucket.level == pytest.approx(budget.capacity("requests") - 10, abs=0.01)
        await anyio.sleep(1.0)
        bucket.refill(anyio.current_time())
        assert bucket.level == pytest.approx(budget.capacity("requests"), abs=0.01)  # 9 came back (and refill)


async def test_token_estimates_are_corrected_by_the_usage_reported() -> None:
    budget = SharedBudget(tokens_per_minute=6000, burst=0.1, token_ttl=5.0)  # 100/s, bucket of 600
    port = Port(budget)
    async with clients(port, 1) as (a,):
        async with a.permit(tokens=500):
            pass
        a.settle(500, 100)  # it used 100: 400 come back to the pool, no ledger call needed
        calls = a.stats.ledger_calls
        async with a.permit(tokens=400):
            pass
        assert a.stats.ledger_calls == calls


async def test_a_request_cancelled_while_waiting_takes_nothing() -> None:
    budget = SharedBudget(max_concurrency=1)
    port = Port(budget)
    async with clients(port, 1) as (a,):
        holding = anyio.Event()
        release = anyio.Event()

        async def holder() -> None:
            async with a.permit():
                holding.set()
                await release.wait()

        async with anyio.create_task_group() as tg:
            tg.start_soon(holder)
            await holding.wait()
            with anyio.move_on_after(0.5) as scope:
                async with a.permit():
                    pytest.fail("got a slot that was taken")
            assert scope.cancelled_caught
            release.set()
        async with a.permit():
            assert a.busy == 1
        assert a.busy == 0


async def test_a_restarted_ledger_grants_nothing_until_the_roster_re_registered() -> None:
    budget = SharedBudget(max_concurrency=6, requests_per_minute=6000, burst=0.1)
    port = Port(budget)
    gauge = Gauge()
    async with clients(port, 2) as (a, b):
        async with anyio.create_task_group() as tg:
            tg.start_soon(requests, a, gauge, 300, lambda: 0.05)
            tg.start_soon(requests, b, gauge, 300, lambda: 0.05)
            await anyio.sleep(0.3)
            assert a.held + b.held == 6
            port.kill()
            await anyio.sleep(0.3)  # requests in flight keep their slots; nobody is granted more
            service = port.restart()
            ledger = service.ledger
            assert ledger.recovering
            assert ledger.buckets["requests"].level == 0  # a restart never grants a second burst
            with anyio.fail_after(30):
                while ledger.recovering:
                    # Until both re-registered, the books are what they say they hold, never less.
                    assert ledger.in_use <= a.held + b.held
                    await anyio.sleep(0.01)
    assert gauge.peak <= 6
    assert a.stats.permits == b.stats.permits == 300


async def test_a_dead_worker_in_the_roster_is_dropped_by_the_driver_and_recovery_ends() -> None:
    budget = SharedBudget(max_concurrency=4)
    port = Port(budget)
    async with clients(port, 1) as (a,):
        a.set_roster(Roster(2, frozenset({"w0", "ghost"})))
        await anyio.sleep(0.1)  # registered with the first incarnation
        port.kill()
        service = port.restart()
        await anyio.sleep(1.0)
        assert service.ledger.recovering  # waits for "ghost"
        service.set_roster(Roster(3, frozenset({"w0"})))  # the driver: ghost died
        with anyio.fail_after(5):
            async with a.permit():
                pass
        assert not service.ledger.recovering


def test_the_ledger_never_grants_beyond_its_capacity_whatever_it_is_told() -> None:
    ledger = BudgetLedger(SharedBudget(max_concurrency=5))
    replies: dict[str, Any] = {}
    for worker in ("a", "b", "c"):
        replies[worker] = ledger.register(worker, 0, None)
    epoch = ledger.epoch
    assert ledger.acquire("a", epoch, 4).granted == 4
    assert ledger.acquire("b", epoch, 4).granted == 1
    assert ledger.acquire("c", epoch, 4).granted == 0
    assert ledger.in_use == 5
    # The share now counts three active workers: a holds more than ceil(5/3) = 2 ...
    assert ledger.check_in("a", epoch, wanting=0).share == 2
    ledger.release("a", epoch, 2)
    # ... and what a gives back goes to the starved, not back to a.
    assert ledger.acquire("a", epoch, 2).granted == 0
    assert ledger.acquire("c", epoch, 2).granted == 2
    assert ledger.in_use == 5
    # A stale epoch gets nothing but a request to register.
    assert ledger.acquire("a", "old", 1).register
    assert SharedBudget(max_concurrency=5).slot_lease == 1


def test_shared_budget_validates() -> None:
    with pytest.raises(ValueError, match="bounds something"):
        SharedBudget()
    with pytest.raises(ValueError, match="max_concurrency"):
        SharedBudget(max_concurrency=0)
    with pytest.raises(ValueError, match="requests_per_minute"):
        SharedBudget(requests_per_minute=-1)
    assert SharedBudget(requests_per_minute=6000).request_lease == 16
    assert SharedBudget(requests_per_minute=30).request_lease == 1


async def test_restarts_while_slots_go_back_and_forth_never_double_grant() -> None:
    """Bursts with pauses longer than the linger, so slots keep going back and coming again, and the
    ledger killed and restarted in the middle of it, again and again: a slot on its way back when
    the ledger restarts must still count as held by the new incarnation until it is returned there."""
    rng = random.Random(3)
    budget = SharedBudget(max_concurrency=5, linger=0.02, refresh=0.05)
    port = Port(budget, latency=0.002)
    gauge = Gauge()
    violations: list[str] = []

    async def bursts(client: LeaseClient) -> None:
        for _ in range(40):
            await requests(client, gauge, rng.randint(1, 8), lambda: rng.uniform(0.001, 0.03))
            await anyio.sleep(rng.uniform(0.0, 0.06))

    async def watch() -> None:
        while True:
            service = port.service
            if service is not None and not service.ledger.recovering and service.ledger.in_use < gauge.now:
                violations.append(f"ledger counts {service.ledger.in_use}, {gauge.now} in flight")
            await anyio.sleep(0.001)

    restarts = 0
    async with clients(port, 3) as made:
        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            with anyio.fail_after(120):
                async with anyio.create_task_group() as work:
                    for client in made:
                        work.start_soon(bursts, client)
                    for _ in range(8):
                        await anyio.sleep(rng.uniform(0.05, 0.3))
                        port.kill()
                        await anyio.sleep(rng.uniform(0.0, 0.05))
                        port.restart()
                        restarts += 1
            tg.cancel_scope.cancel()
    assert restarts == 8
    assert not violations, violations[:3]
    assert gauge.peak <= 5


async def test_an_idle_worker_re_registers_so_a_restarted_ledger_recovers_for_the_busy_one() -> None:
    budget = SharedBudget(max_concurrency=4, refresh=0.1)
    port = Port(budget)
    gauge = Gauge()
    async with clients(port, 2) as (busy, idle):
        await requests(busy, gauge, 20, lambda: 0.05)
        port.kill()
        await anyio.sleep(0.2)
        service = port.restart()
        await anyio.sleep(2.0)  # busy's slots went back meanwhile; idle never had work
        assert idle.held == 0 and idle.stats.permits == 0
        assert not service.ledger.recovering  # idle checked in, so the ledger knows it holds nothing
        with anyio.fail_after(5):
            await requests(busy, gauge, 20, lambda: 0.05)  # new grants from the new incarnation
    assert gauge.peak <= 4
