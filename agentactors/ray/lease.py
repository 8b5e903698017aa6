"""A worker's side of a shared budget: a local pool of leased slots and rate units.

Requests take a slot and their rate units from the local pool; the pool is
filled and emptied in batches by one maintenance task per budget (:meth:`LeaseClient.maintain`,
run in the worker's runtime), which is the only code that talks to the ledger.
So a request pays a Ray call only when the pool runs dry, and a request's own
cancellation can never lose a grant in flight: grants land in the pool, never
in a request.

- **Slots**: a request that finds no free slot queues (first come, first
  served) and wakes the maintainer, which leases ``max(missing, lease)`` slots.
  A slot a request gives back goes to the next queued request; with nobody
  queued it stays in the pool for ``linger`` seconds and then goes back to the
  ledger.  When the ledger says this worker holds more than its fair share, a
  freed slot goes back at once instead.  While it holds slots the maintainer
  checks in every ``refresh`` seconds (that is how it learns its share).
- **Rate units** (``"requests"``, ``"tokens"``): leased in lots of about a
  second's rate; a lot nobody has used for ``token_ttl`` seconds goes back.
  Token estimates are corrected by the usage a response reports
  (:meth:`LeaseClient.settle`): an overestimate returns to the pool, an
  underestimate is a debt paid from the next lease.
- **The ledger restarted** (its replies carry a new epoch, or it cannot be
  reached for a while): the maintainer re-registers what this worker holds —
  requests in flight keep their slots throughout — and waits, with backoff,
  until the ledger grants again.
- **The worker exits**: :meth:`LeaseClient.close` stops the maintainer and
  gives back what requests no longer use (idle slots, slots queued to return,
  unspent units) with one registration of the slots still in use.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final

import anyio
import anyio.lowlevel
import attrs

from .budget import SharedBudget
from .ledger import LedgerPort, LedgerUnavailable, Roster, SlotReply

__all__ = ["LeaseClient", "LeaseStats"]

log = logging.getLogger("agentactors.ray")

_BACKOFF_MIN: Final = 0.02
_BACKOFF_MAX: Final = 1.0
# Seconds of float noise: a deadline computed as ``t + linger`` may compare as a hair short of
# ``linger`` once reached, and a loop that slept "until then" must not spin on it.
_EPSILON: Final = 1e-6
_IDLE_CHECK_IN: Final = 4  # an idle worker checks in every 4 refreshes (1 s by default)
_CLOSE_TIMEOUT: Final = 1.0  # seconds a close waits for the ledger, in all


@attrs.define(slots=True)
class LeaseStats:
    """What a lease client did: requests served and the ledger calls it took."""

    permits: int = 0
    ledger_calls: int = 0
    slots_leased: int = 0
    slots_returned: int = 0


class _Waiter:
    __slots__ = ("event", "granted", "units")

    def __init__(self, event: anyio.Event, units: float = 1.0) -> None:
        self.event = event
        self.units = units
        self.granted = False


@attrs.define(slots=True)
class _Lot:
    """Units leased together: how many are left, when, from which ledger incarnation."""

    units: float
    leased_at: float
    epoch: str | None


class _RatePool:
    """Leased units of one kind: lots, oldest first, and a debt (usage above the estimates)."""

    __slots__ = ("debt", "kind", "lots", "waiters")

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.lots: deque[_Lot] = deque()
        self.waiters: deque[_Waiter] = deque()
        self.debt = 0.0

    @property
    def available(self) -> float:
        return sum(lot.units for lot in self.lots) - self.debt

    def spend(self, units: float) -> None:
        """Take ``units`` from the oldest lots (the caller checked they are there)."""
        if self.debt:
            units += self.debt
            self.debt = 0.0
        while units > 0 and self.lots:
            lot = self.lots[0]
            have = lot.units
            if have > units:
                lot.units = have - units
                return
            units -= have
            self.lots.popleft()
        if units > 0:
            self.debt += units

    def serve(self) -> bool:
        """Grant queued waiters in order while the pool covers them; whether any was served."""
        served = False
        while self.waiters and self.available >= self.waiters[0].units:
            waiter = self.waiters.popleft()
            self.spend(waiter.units)
            waiter.granted = True
            waiter.event.set()
            served = True
        return served


class LeaseClient:
    """One worker's leases of one shared budget (see the module docstring).

    :param worker: this worker's id in the cluster's roster.
    :param budget: the budget's configuration.
    :param port: the way to the ledger.
    :param clock: seconds (default ``anyio.current_time``, virtual under a mock clock).
    """

    def __init__(
        self,
        worker: str,
        budget: SharedBudget,
        port: LedgerPort,
        *,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self.worker = worker
        self.budget = budget
        self.stats = LeaseStats()
        self._port = port
        self._clock = clock
        self._epoch: str | None = None
        self._roster: Roster | None = None
        # slots
        self._limited = budget.max_concurrency is not None
        self._held = 0
        self._busy = 0
        self._share = budget.max_concurrency or 0
        self._to_return = 0
        self._releasing = 0
        self._idle_since: float | None = None
        self._last_contact = -math.inf
        self._registered_at = -math.inf
        self._waiters: deque[_Waiter] = deque()
        # rates
        self._pools = {kind: _RatePool(kind) for kind in budget.kinds}
        self._wake = anyio.Event()
        self._return_wake = anyio.Event()
        self._rate_wake = {kind: anyio.Event() for kind in budget.kinds}
        self._rate_epochs: dict[str, str | None] = {}
        self._maintainer: anyio.CancelScope | None = None
        self._maintainer_stopped = anyio.Event()

    # -- what a worker tells it --------------------------------------------------------------------

    def set_roster(self, roster: Roster) -> None:
        """The cluster's roster as the driver last said; sent with a re-registration after a restart."""
        if self._roster is None or roster.version > self._roster.version:
            self._roster = roster

    @property
    def held(self) -> int:
        """Slots leased from the ledger now (in use or idle)."""
        return self._held

    @property
    def busy(self) -> int:
        """Slots in use by requests now."""
        return self._busy

    # -- the hot path ------------------------------------------------------------------------------

    @asynccontextmanager
    async def permit(self, tokens: int = 0) -> AsyncIterator[None]:
        """Hold a slot and the request's rate units for the body (a request in flight).

        ``tokens``: the request's token estimate (for a ``tokens_per_minute`` budget).

        Cancellation: a request cancelled while it waits takes nothing; one cancelled in the body
        gives its slot back like one that finished.
        """
        await self._acquire_slot()
        try:
            if "requests" in self._pools:
                await self._take("requests", 1.0)
            if "tokens" in self._pools and tokens > 0:
                await self._take("tokens", float(tokens))
            self.stats.permits += 1
            yield
        finally:
            self._release_slot()

    def least_wait(self, kind: str, units: float) -> float:
        """The fewest seconds a request needing ``units`` of ``kind`` must wait for them (0 when the pool has them).

        A lower bound: what this worker's pool holds (less its debt) and what its requests ahead of this one
        wait for count; the cluster's bucket gives at most its capacity at once, then its rate.  The other
        workers' demand is not known here, so the real wait may be longer, never shorter.  The caller
        refuses a request whose wait this says is beyond any sane bound, as a ProviderActor does.
        """
        pool = self._pools.get(kind)
        if pool is None or (not pool.waiters and pool.available >= units):
            return 0.0
        ahead = sum(waiter.units for waiter in pool.waiters)
        short = ahead + units - pool.available - self.budget.capacity(kind)
        return short / self.budget.rate(kind) if short > 0 else 0.0

    def settle(self, estimate: int, actual: int) -> None:
        """Correct a request's token estimate by the usage reported (no-op without a token budget)."""
        pool = self._pools.get("tokens")
        if pool is None or actual <= 0 or actual == estimate:
            return
        if actual < estimate:
            pool.lots.append(_Lot(float(estimate - actual), self._clock(), self._rate_epochs.get("tokens")))
            pool.serve()
        else:
            pool.debt += actual - estimate

    async def _acquire_slot(self) -> None:
        if not self._limited:
            return
        if self._held - self._busy > 0 and not self._waiters:
            self._busy += 1
            self._idle_since = None
            return
        waiter = _Waiter(anyio.Event())
        self._waiters.append(waiter)
        self._wake.set()
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                self._release_slot()  # handed a slot as it was cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    def _release_slot(self) -> None:
        if not self._limited:
            return
        self._busy -= 1
        if self._held > self._share:
            self._held -= 1
            self._to_return += 1  # over our fair share: back to the ledger, not to our own queue
            self._return_wake.set()
            return
        if self._waiters:
            self._hand_out()
            return
        self._idle_since = self._clock()
        self._return_wake.set()

    def _hand_out(self) -> None:
        while self._waiters and self._held - self._busy > 0:
            waiter = self._waiters.popleft()
            self._busy += 1
            waiter.granted = True
            waiter.event.set()

    async def _take(self, kind: str, units: float) -> None:
        pool = self._pools[kind]
        if not pool.waiters and pool.available >= units:
            pool.spend(units)
            return
        waiter = _Waiter(anyio.Event(), units)
        pool.waiters.append(waiter)
        self._rate_wake[kind].set()
        try:
            await waiter.event.wait()
        except BaseException:
            if waiter.granted:
                pool.lots.appendleft(_Lot(units, self._clock(), self._rate_epochs.get(kind)))  # not spent after all
            else:
                pool.waiters.remove(waiter)
            raise

    # -- the maintainer -------------------------------------------------------------------------

    async def maintain(self) -> None:
        """Keep the pool filled and emptied (runs until cancelled, or until :meth:`close`; start it in the worker's
        runtime).

        Cancellation: the loops stop; what is held stays held (:meth:`close` returns it).  A release cut short is
        queued to return again.
        """
        stopped = self._maintainer_stopped = anyio.Event()
        try:
            async with anyio.create_task_group() as tg:
                self._maintainer = tg.cancel_scope
                if self._limited:
                    tg.start_soon(self._slot_loop)
                    tg.start_soon(self._return_loop)
                for kind in self._pools:
                    tg.start_soon(self._rate_loop, kind)
        finally:
            self._maintainer = None
            stopped.set()

    async def close(self) -> None:
        """Give back what this worker holds and does not use: idle slots, slots queued to return (a release the
        stopped maintainer had in flight), and unspent units (best effort, at the worker's exit).

        It stops the maintainer first if it still runs (and waits for it to stop).  Then one registration tells the
        ledger how many slots this worker still uses (requests in flight keep theirs), whatever the ledger knew: it
        also frees a grant the ledger made to a request of the maintainer that no reply brought back, and works
        after the ledger was unreachable (this client no longer knows its epoch) or restarted.  Slots in use at the
        close stay booked until the roster drops the worker.  A closed client leases nothing more: a request that
        has to wait for a slot then waits until it is cancelled (the worker's runtime cancels its runs as it exits).

        Cancellation: shielded and bounded (a second in all): a caller cancelled before or during the close still
        closes, and gets its cancellation after.  Past the bound — the ledger does not answer — the close gives up:
        the slots no reply confirmed stay counted as to return (the ledger frees them when the roster drops the
        worker), and units not given back are lost to the bucket until it refills.
        """
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            maintainer = self._maintainer
            if maintainer is not None:
                maintainer.cancel()
                await self._maintainer_stopped.wait()
            if self._limited:
                try:
                    await self._close_slots()
                except LedgerUnavailable:
                    pass
            for kind, pool in self._pools.items():
                epoch = self._rate_epochs.get(kind)
                units = sum(lot.units for lot in pool.lots if lot.epoch == epoch)
                pool.lots.clear()
                if units > 0 and epoch is not None:
                    try:
                        self.stats.ledger_calls += 1
                        await self._port.give_back(epoch, kind, units)
                    except LedgerUnavailable:
                        pass
        await anyio.lowlevel.checkpoint_if_cancelled()  # the caller's cancellation, now that the close is done

    async def _close_slots(self) -> None:
        idle = self._held - self._busy
        count = idle + self._to_return
        self._held -= idle
        self._to_return = 0
        self._idle_since = None
        self.stats.ledger_calls += 1
        try:
            # What is booked for us from now on: the slots in use (the maintainer stopped: nothing is on its way
            # back).  A count, not a difference: a release cut short that the ledger applied all the same, or a
            # grant no reply brought back, made before this call, is overwritten.
            reply = await self._port.register(self.worker, self._held + self._releasing, self._roster)
        except BaseException:
            self._to_return += count  # unconfirmed: still ours to return
            raise
        self._epoch = reply.epoch
        self._last_contact = self._clock()
        self.stats.slots_returned += count

    async def _slot_loop(self) -> None:
        backoff = _BACKOFF_MIN
        while True:
            try:
                await self._slot_step()
                backoff = _BACKOFF_MIN
            except LedgerUnavailable:
                self._epoch = None  # whoever answers next may be a new incarnation
                await anyio.sleep(backoff)
                backoff = min(_BACKOFF_MAX, backoff * 2)

    def _missing(self) -> int:
        return max(0, len(self._waiters) - (self._held - self._busy))

    async def _slot_step(self) -> None:
        """Register, lease what queued requests miss, or check in; else sleep until woken."""
        budget = self.budget
        now = self._clock()
        if self._epoch is None:
            await self._register()
            self._return_wake.set()  # returns waited for the registration
            return
        missing = self._missing()
        if missing:
            self.stats.ledger_calls += 1
            reply = await self._port.acquire(self.worker, self._epoch, max(missing, budget.slot_lease), budget.refresh)
            if self._adopt(reply) and reply.granted:
                self._held += reply.granted
                self.stats.slots_leased += reply.granted
                self._hand_out()
                self._idle_if_spare()
            return
        if now - self._last_contact >= self._check_in_every() - _EPSILON:
            self.stats.ledger_calls += 1
            self._adopt(await self._port.check_in(self.worker, self._epoch, self._missing()))
            self._give_back_surplus()
            return
        wake = self._wake
        deadline = self._last_contact + self._check_in_every()
        with anyio.move_on_after(max(0.0, deadline - now)):
            await wake.wait()
        if wake is self._wake:
            self._wake = anyio.Event()

    async def _return_loop(self) -> None:
        """Give back surplus slots at once and idle ones after the linger (a task of its own, so a
        long-polling acquire never holds a return back)."""
        budget = self.budget
        while True:
            now = self._clock()
            idle = self._held - self._busy
            lingered = idle > 0 and self._idle_since is not None and now - self._idle_since >= budget.linger - _EPSILON
            if self._epoch is not None and (self._to_return or lingered):
                if lingered and not self._waiters:
                    self._held -= idle
                    self._to_return += idle
                    self._idle_since = None
                count, self._to_return = self._to_return, 0
                try:
                    await self._call_release(count, returned=True)
                except LedgerUnavailable:
                    self._epoch = None  # the registration reports what we hold now
                continue
            wake = self._return_wake
            deadline = self._idle_since + budget.linger if idle > 0 and self._idle_since is not None else math.inf
            if self._epoch is None:
                deadline = math.inf  # nothing can go back before the registration (which wakes us)
            with anyio.move_on_after(max(0.0, deadline - now)):
                await wake.wait()
            if wake is self._return_wake:
                self._return_wake = anyio.Event()

    def _check_in_every(self) -> float:
        # A holding worker checks in every refresh (to learn its share).  An idle one checks in
        # too, less often: a restarted ledger waits for every worker of the roster to register,
        # and a worker that never calls would keep it recovering — starving the others.
        return self.budget.refresh if self._held > 0 else self.budget.refresh * _IDLE_CHECK_IN

    def _idle_if_spare(self) -> None:
        # A long-polled grant may outlive the demand it was for: those slots linger, then go back.
        if self._held - self._busy > 0 and self._idle_since is None:
            self._idle_since = self._clock()
            self._return_wake.set()

    def _give_back_surplus(self) -> None:
        surplus = min(self._held - self._busy, self._held - self._share)
        if surplus > 0:
            self._held -= surplus
            self._to_return += surplus
            self._return_wake.set()

    async def _register(self) -> None:
        now = self._clock()
        if now - self._registered_at < self.budget.refresh:
            # Asked to register again at once (a ledger that does not count us): don't spin.
            await anyio.sleep(self.budget.refresh)
        self._registered_at = now
        self.stats.ledger_calls += 1
        # Slots on their way back count as held until an incarnation confirms it has them back: a
        # registration that left them out, followed by their release, would make the ledger think
        # we hold fewer than we do — and grant them twice.
        reply = await self._port.register(self.worker, self._held + self._to_return + self._releasing, self._roster)
        self._epoch = reply.epoch
        self._last_contact = self._clock()
        if reply.share:
            self._share = reply.share
        if reply.recovering:
            await anyio.sleep(min(self.budget.refresh, 0.05))

    async def _call_release(self, count: int, *, returned: bool = False) -> None:
        """Give ``count`` slots back; a release no incarnation confirmed is queued again (for the next one)."""
        self.stats.ledger_calls += 1
        epoch = self._epoch
        self._releasing += count
        try:
            reply = await self._port.release(self.worker, epoch, count, self._missing())
        except BaseException:
            self._releasing -= count
            self._to_return += count
            raise
        self._releasing -= count
        if reply.register or reply.epoch != epoch:
            self._to_return += count
        elif returned:
            self.stats.slots_returned += count
        self._adopt(reply)

    def _adopt(self, reply: SlotReply) -> bool:
        """Take in a reply; ``False`` when the ledger asks us to register (a new incarnation)."""
        self._last_contact = self._clock()
        if reply.register:
            self._epoch = None
            return False
        if reply.share:
            self._share = reply.share
        return True

    async def _rate_loop(self, kind: str) -> None:
        pool = self._pools[kind]
        budget = self.budget
        lease = budget.request_lease if kind == "requests" else budget.token_lease
        backoff = _BACKOFF_MIN
        while True:
            now = self._clock()
            if not pool.waiters:
                # Lots nobody used for token_ttl go back (to the incarnation that granted them).
                while pool.lots and now - pool.lots[0].leased_at >= budget.token_ttl - _EPSILON:
                    lot = pool.lots.popleft()
                    if lot.epoch is not None and lot.epoch == self._rate_epochs.get(kind) and lot.units > 0:
                        try:
                            self.stats.ledger_calls += 1
                            await self._port.give_back(lot.epoch, kind, lot.units)
                        except LedgerUnavailable:
                            pass
            missing = sum(w.units for w in pool.waiters) - pool.available
            if missing > 0:
                try:
                    self.stats.ledger_calls += 1
                    reply = await self._port.take(kind, max(missing, float(lease)))
                except LedgerUnavailable:
                    await anyio.sleep(backoff)
                    backoff = min(_BACKOFF_MAX, backoff * 2)
                    continue
                backoff = _BACKOFF_MIN
                self._rate_epochs[kind] = reply.epoch
                if reply.granted > 0:
                    pool.lots.append(_Lot(reply.granted, self._clock(), reply.epoch))
                    pool.serve()
                    continue
                wait = reply.retry_after
            else:
                wait = (pool.lots[0].leased_at + budget.token_ttl - now) if pool.lots else math.inf
            wake = self._rate_wake[kind]
            with anyio.move_on_after(max(0.0, wait)):
                await wake.wait()
            if wake is self._rate_wake[kind]:
                self._rate_wake[kind] = anyio.Event()
