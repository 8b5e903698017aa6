"""``LeaseClient.close()`` gives back what the worker holds, whatever state its maintainer was stopped in.

A worker stops its lease maintainers (cancels :meth:`LeaseClient.maintain`) and then closes its lease clients.
The maintainer may be stopped with a release on its way to the ledger (the slots are queued to return again),
with a surplus queued and not yet sent, or after the ledger could not be reached (the client no longer knows
the ledger's epoch).  In each case ``close()`` must leave nothing booked at the ledger for this worker — the
ledger otherwise counts those slots held until the driver drops the worker from the roster — and it is
shielded and bounded like the library's other closes.

Plain classes on a virtual clock (no Ray): an in-process port to a :class:`LedgerService`, with calls that can
be held at a gate or made to fail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from agentactors.ray import SharedBudget
from agentactors.ray.lease import LeaseClient
from agentactors.ray.ledger import BudgetLedger, LedgerService, LedgerUnavailable, RateReply, Roster, SlotReply

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Port:
    """An in-process LedgerPort: ``gates[method]`` holds that method's next call until set (then it runs);
    ``fail[method]`` fails its next calls with LedgerUnavailable; ``dead`` fails every call."""

    def __init__(self, budget: SharedBudget, *, latency: float = 0.001) -> None:
        self.budget = budget
        self.service = LedgerService(BudgetLedger(budget))
        self.latency = latency
        self.gates: dict[str, anyio.Event] = {}
        self.held_at_gate: dict[str, anyio.Event] = {}
        self.fail: dict[str, int] = {}
        self.dead = False
        self.calls: list[str] = []

    def gate(self, method: str) -> anyio.Event:
        """Hold ``method``'s next call; the returned event is set once a call is held there."""
        self.gates[method] = anyio.Event()
        arrived = self.held_at_gate[method] = anyio.Event()
        return arrived

    async def _enter(self, method: str) -> LedgerService:
        self.calls.append(method)
        await anyio.sleep(self.latency)
        gate = self.gates.pop(method, None)
        if gate is not None:
            self.held_at_gate[method].set()
            await gate.wait()
        if self.dead:
            raise LedgerUnavailable("dead")
        if self.fail.get(method, 0) > 0:
            self.fail[method] -= 1
            raise LedgerUnavailable("unavailable")
        return self.service

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        return await (await self._enter("register")).register(worker, held, roster)

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        return await (await self._enter("acquire")).acquire(worker, epoch, want, wait)

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        return await (await self._enter("release")).release(worker, epoch, count, wanting)

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        return await (await self._enter("check_in")).check_in(worker, epoch, wanting)

    async def take(self, kind: str, want: float) -> RateReply:
        return await (await self._enter("take")).take(kind, want)

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        await (await self._enter("give_back")).give_back(epoch, kind, units)


@asynccontextmanager
async def maintained(client: LeaseClient) -> AsyncIterator[anyio.CancelScope]:
    """Run the client's maintainer; leaving (or cancelling the scope) stops it, as a worker does."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.maintain)
        yield tg.cancel_scope
        tg.cancel_scope.cancel()


def make(budget: SharedBudget, port: Port, *workers: str) -> list[LeaseClient]:
    roster = Roster(1, frozenset(workers))
    port.service.set_roster(roster)
    made = [LeaseClient(w, budget, port) for w in workers]
    for client in made:
        client.set_roster(roster)
    return made


async def test_close_returns_the_slots_of_a_release_the_stopped_maintainer_had_in_flight() -> None:
    budget = SharedBudget(max_concurrency=4, linger=0.05, lease=2)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    async with maintained(a):
        async with a.permit():
            pass
        assert port.service.ledger.held == {"w0": 2}
        arrived = port.gate("release")  # the linger's return is held on its way to the ledger ...
        with anyio.fail_after(5):
            await arrived.wait()
        # ... when the worker stops its maintainer
    port.gates.clear()
    assert a.held == 0  # the client's books: the two slots are queued to return, not held
    await a.close()
    assert port.service.ledger.held == {}, "close() left slots booked at the ledger"


async def test_close_returns_a_surplus_whose_release_was_cut_short_and_the_idle_slots() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=4, refresh=0.1)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    ledger = port.service.ledger
    async with maintained(a) as scope, a.permit():
        assert ledger.held == {"w0": 4}
        ledger.register("w1", 0, Roster(2, frozenset({"w0", "w1"})))
        ledger.acquire("w1", ledger.epoch, 2)  # w1 wants slots: a's share drops to 2 at its next check-in
        arrived = port.gate("release")  # a's surplus goes back ... and is held on its way
        with anyio.fail_after(5):
            await arrived.wait()
        scope.cancel()  # the maintainer stops with the surplus's release in flight
        await anyio.sleep(0.1)
    # the request ended after the maintainer stopped: its slot is idle
    port.gates.clear()
    assert (a.held, a.busy) == (2, 0)
    assert ledger.held["w0"] == 4
    await a.close()
    assert ledger.held.get("w0", 0) == 0, "close() left slots booked at the ledger"


async def test_close_after_the_ledger_was_unreachable_still_returns_what_is_idle() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=3, refresh=0.1)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    async with maintained(a):
        async with a.permit():
            pass
        assert port.service.ledger.held == {"w0": 3}
        port.dead = True  # a check-in fails: the client forgets the epoch and backs off, to register again
        await anyio.sleep(0.3)
        assert "check_in" in port.calls
        # the maintainer is stopped before it could register again
    port.dead = False
    assert a.held == 3
    await a.close()
    assert port.service.ledger.held == {}, "close() left slots booked at the ledger"


async def test_close_is_shielded_a_cancelled_caller_still_returns_the_slots() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=2)
    port = Port(budget, latency=0.01)
    (a,) = make(budget, port, "w0")
    async with maintained(a):
        async with a.permit():
            pass
    with anyio.CancelScope() as scope:
        scope.cancel()  # the worker's task is being cancelled as it closes
        await a.close()
    assert scope.cancelled_caught  # the caller's cancellation is delivered, after the close
    assert port.service.ledger.held == {}


async def test_close_is_bounded_when_the_ledger_never_answers() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=2)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    async with maintained(a):
        async with a.permit():
            pass
    port.gate("release")  # never opened
    port.gate("register")
    started = anyio.current_time()
    with anyio.fail_after(30):
        await a.close()
    assert anyio.current_time() - started <= 1.0 + 1e-3
    assert port.service.ledger.held == {"w0": 2}  # unconfirmed: still booked (the roster frees it)


async def test_close_does_not_return_slots_still_in_use() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=3)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    async with maintained(a), a.permit():
        held_in_flight = a.permit()
        await held_in_flight.__aenter__()
    # one request still in flight when the worker closes: its slot stays booked, the idle ones go back
    await a.close()
    assert port.service.ledger.held == {"w0": 1}
    await held_in_flight.__aexit__(None, None, None)
    assert a.busy == 0


async def test_close_stops_a_maintainer_still_running_then_returns_the_slots() -> None:
    budget = SharedBudget(max_concurrency=4, linger=10.0, lease=2)
    port = Port(budget)
    (a,) = make(budget, port, "w0")
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(a.maintain)
            async with a.permit():
                pass
            await a.close()  # the maintainer is not cancelled first: close() stops it (and the task group ends)
    assert port.service.ledger.held == {}
