"""The budget ledger's books when a worker gave up on a call the ledger still runs (as through Ray it does).

Through Ray, a worker that stops waiting for a ledger call (its maintainer was cancelled, or Ray said the
ledger was unreachable for a moment) does not stop the call: an ``acquire`` keeps waiting at the ledger, up to
``refresh`` seconds, for a slot to come back.  The worker registers again (or closes, which registers what it
still uses); a grant that waiting ``acquire`` made after that registration would be booked for a worker that
never hears of it.  Plain classes on a virtual clock (no Ray).
"""

from __future__ import annotations

import anyio
import pytest

from agentactors.ray import SharedBudget
from agentactors.ray.ledger import BudgetLedger, LedgerService, Roster, SlotReply

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

ROSTER = Roster(1, frozenset({"w0", "w1"}))


async def test_a_registration_supersedes_the_workers_acquire_still_waiting_at_the_ledger() -> None:
    service = LedgerService(BudgetLedger(SharedBudget(max_concurrency=2)))
    ledger = service.ledger
    epoch = (await service.register("w0", 0, ROSTER)).epoch
    await service.register("w1", 0, ROSTER)
    assert (await service.acquire("w1", epoch, 2, 0.0)).granted == 2  # w1 holds every slot
    replies: list[SlotReply] = []

    async def abandoned_acquire() -> None:  # w0's maintainer asked, then stopped listening
        replies.append(await service.acquire("w0", epoch, 1, 10.0))

    async with anyio.create_task_group() as tg:
        tg.start_soon(abandoned_acquire)
        await anyio.sleep(0.1)
        await service.register("w0", 0, None)  # w0 says again what it holds: nothing (it closed, or re-registers)
        await service.release("w1", epoch, 2, 0)  # a slot is free: the waiting acquire wakes
    assert replies[0].granted == 0
    assert ledger.held == {}, "a grant nobody will hear of is booked"
    assert ledger.wanting == {}, "the abandoned acquire's demand still lowers the others' shares"
    # A new acquire of w0 is granted as usual.
    assert (await service.acquire("w0", epoch, 1, 0.0)).granted == 1


async def test_an_acquire_waiting_when_nobody_registered_again_is_granted() -> None:
    service = LedgerService(BudgetLedger(SharedBudget(max_concurrency=1)))
    epoch = (await service.register("w0", 0, ROSTER)).epoch
    await service.register("w1", 0, ROSTER)
    assert (await service.acquire("w1", epoch, 1, 0.0)).granted == 1
    replies: list[SlotReply] = []

    async def waiting() -> None:
        replies.append(await service.acquire("w0", epoch, 1, 10.0))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiting)
        await anyio.sleep(0.1)
        await service.register("w1", 1, None)  # another worker's registration changes nothing for w0
        await service.release("w1", epoch, 1, 0)
    assert replies[0].granted == 1
    assert service.ledger.held == {"w0": 1}
