"""The budget's books: who holds which slots, the rate buckets, and recovery after a restart.

:class:`BudgetLedger` is plain, synchronous bookkeeping on a clock it is given;
:class:`LedgerService` adds the one thing that needs an event loop (an acquire
that waits a little for a slot to come back).  The Ray actor of a budget
(:mod:`agentactors.ray._budget_actor`) is a thin shell around a
``LedgerService``; the tests drive both on a virtual clock without Ray.

**Slots.**  ``acquire(worker, want)`` grants at most what is free.  While
another worker has unmet demand, a worker gets no more than its fair share
(``ceil(capacity / active workers)``; a worker is active while it holds slots
or wants some), and each reply tells the worker its share, so one holding more
hands the surplus back as its requests end.  The sum of what is held never
exceeds the capacity: the concurrency bound is exact.  (A release applied here
whose reply was lost is counted again by the worker's next registration, until
it releases those slots again: an over-count, which grants less, never more.)

**Rates.**  A token bucket per kind (``"requests"``, ``"tokens"``), holding
``burst`` minutes of budget, refilled continuously.  ``take`` grants what the
bucket has (partially, when it has less than asked) or says how long until it
has one unit; ``give_back`` returns unspent units (never above the bucket's
size, and only to the incarnation that granted them).

**Restarts.**  Every incarnation has its own ``epoch``.  A ledger that was
restarted (its Ray actor died and came back) knows nothing of what the workers
hold, so it grants nothing until every worker of the current roster has
re-registered what it holds, and its buckets start empty: a restart never
silently doubles a limit.  The roster (which workers exist, with a version that
only grows) comes from the driver (:meth:`BudgetLedger.set_roster`) and, after
a restart, from the workers themselves (each registers with the roster it was
last told).  A worker that died is dropped from the roster by the driver; its
slots are free again.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Protocol

import anyio
import attrs

from ..errors import AgentActorsError
from .budget import SharedBudget

__all__ = ["BudgetLedger", "LedgerPort", "LedgerService", "RateReply", "Roster", "SlotReply"]


@attrs.frozen(slots=True)
class Roster:
    """The workers of a cluster, as the driver last said (``version`` only grows)."""

    version: int
    workers: frozenset[str]


@attrs.frozen(slots=True)
class SlotReply:
    """A ledger's answer about slots: its ``epoch``, slots ``granted``, the worker's fair ``share``.

    ``register=True``: the worker's epoch is not the ledger's (it restarted, or the worker is
    new to it): nothing was done, and the worker must :meth:`~BudgetLedger.register` first.
    ``recovering=True``: the ledger restarted and waits for the roster's workers to register.
    """

    epoch: str
    granted: int = 0
    share: int = 0
    register: bool = False
    recovering: bool = False


@attrs.frozen(slots=True)
class RateReply:
    """A ledger's answer to ``take``: units ``granted`` and, when none, seconds until one is there."""

    epoch: str
    granted: float = 0.0
    retry_after: float = 0.0


class _Bucket:
    """A token bucket on a given clock; ``level`` may be fractional."""

    __slots__ = ("capacity", "last", "level", "rate")

    def __init__(self, capacity: float, rate: float, *, full: bool) -> None:
        self.capacity = capacity
        self.rate = rate
        self.level = capacity if full else 0.0
        self.last: float | None = None

    def refill(self, now: float) -> None:
        if self.last is not None and now > self.last:
            self.level = min(self.capacity, self.level + (now - self.last) * self.rate)
        if self.last is None or now > self.last:
            self.last = now


class BudgetLedger:
    """The books of one :class:`~agentactors.ray.budget.SharedBudget` (see the module docstring).

    :param budget: the budget.
    :param restarted: this incarnation replaces one that died: recover before granting.
    :param epoch: the incarnation's id (default: random).
    """

    def __init__(self, budget: SharedBudget, *, restarted: bool = False, epoch: str | None = None) -> None:
        self.budget = budget
        self.epoch = epoch if epoch is not None else os.urandom(6).hex()
        self.capacity = budget.max_concurrency
        self.held: dict[str, int] = {}
        self.wanting: dict[str, int] = {}
        self.registered: set[str] = set()
        self.roster: Roster | None = None
        # Only slots need recovering: a restarted ledger's buckets simply start empty.
        self.recovering = restarted and self.capacity is not None
        self.buckets = {kind: _Bucket(budget.capacity(kind), budget.rate(kind), full=not restarted)
                        for kind in budget.kinds}

    # -- the roster and registration -------------------------------------------------------------

    def set_roster(self, roster: Roster) -> None:
        """Adopt ``roster`` if it is newer; workers no longer in it are forgotten (their slots free)."""
        if self.roster is not None and roster.version <= self.roster.version:
            return
        self.roster = roster
        for worker in [w for w in (*self.held, *self.wanting, *self.registered) if w not in roster.workers]:
            self.held.pop(worker, None)
            self.wanting.pop(worker, None)
            self.registered.discard(worker)
        self._check_recovered()

    def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        """A worker says what it holds (after a restart, on first contact, or at its close); returns the epoch.

        What it held before is forgotten, and so is its demand (its next acquire or check-in says it again).
        """
        if roster is not None:
            self.set_roster(roster)
        if self.roster is not None and worker not in self.roster.workers:
            # A worker the driver already declared dead: it must not hold anything here.
            return SlotReply(self.epoch, share=0, recovering=self.recovering)
        self.registered.add(worker)
        self.wanting.pop(worker, None)  # its demand, if any, comes again with its next acquire or check-in
        if held > 0:
            self.held[worker] = held
        else:
            self.held.pop(worker, None)
        self._check_recovered()
        return SlotReply(self.epoch, share=self._share(worker), recovering=self.recovering)

    def _check_recovered(self) -> None:
        if self.recovering and self.roster is not None and self.roster.workers <= self.registered:
            self.recovering = False

    def _stale(self, worker: str, epoch: str | None) -> bool:
        return epoch != self.epoch or worker not in self.registered

    # -- slots -------------------------------------------------------------------------------------

    def _share(self, worker: str) -> int:
        if self.capacity is None:
            return 0
        active = {w for w, n in self.held.items() if n > 0} | {w for w, n in self.wanting.items() if n > 0}
        active.add(worker)
        return math.ceil(self.capacity / len(active))

    def acquire(self, worker: str, epoch: str | None, want: int) -> SlotReply:
        """Grant up to ``want`` slots (see the module docstring); what is not granted is recorded as demand."""
        if self._stale(worker, epoch):
            return SlotReply(self.epoch, register=True, recovering=self.recovering)
        if self.capacity is None:
            return SlotReply(self.epoch, granted=want, share=want)
        if self.recovering:
            self.wanting[worker] = want
            return SlotReply(self.epoch, share=self._share(worker), recovering=True)
        held = self.held.get(worker, 0)
        free = self.capacity - sum(self.held.values())
        share = self._share(worker)
        granted = min(want, free)
        if any(n > 0 for w, n in self.wanting.items() if w != worker):
            granted = min(granted, max(0, share - held))
        granted = max(0, granted)
        if granted:
            self.held[worker] = held + granted
        if want > granted:
            self.wanting[worker] = want - granted
        else:
            self.wanting.pop(worker, None)
        return SlotReply(self.epoch, granted=granted, share=share)

    def release(self, worker: str, epoch: str | None, count: int, *, wanting: int = 0) -> SlotReply:
        """``count`` slots come back; ``wanting`` is the worker's demand still unmet."""
        if self._stale(worker, epoch):
            return SlotReply(self.epoch, register=True, recovering=self.recovering)
        held = self.held.get(worker, 0) - max(0, count)
        if held > 0:
            self.held[worker] = held
        else:
            self.held.pop(worker, None)
        self._set_wanting(worker, wanting)
        return SlotReply(self.epoch, share=self._share(worker), recovering=self.recovering)

    def check_in(self, worker: str, epoch: str | None, *, wanting: int = 0) -> SlotReply:
        """A holding worker's periodic check-in: records its demand, tells it its share."""
        if self._stale(worker, epoch):
            return SlotReply(self.epoch, register=True, recovering=self.recovering)
        self._set_wanting(worker, wanting)
        return SlotReply(self.epoch, share=self._share(worker), recovering=self.recovering)

    def _set_wanting(self, worker: str, wanting: int) -> None:
        if wanting > 0:
            self.wanting[worker] = wanting
        else:
            self.wanting.pop(worker, None)

    @property
    def in_use(self) -> int:
        """Slots held by workers, in total."""
        return sum(self.held.values())

    # -- rates -------------------------------------------------------------------------------------

    def take(self, kind: str, want: float, now: float) -> RateReply:
        """Up to ``want`` units of ``kind`` from its bucket, or how long until one unit is there."""
        bucket = self.buckets[kind]
        if self.recovering:
            return RateReply(self.epoch, retry_after=self.budget.refresh)
        bucket.refill(now)
        granted = min(want, math.floor(bucket.level))
        if granted >= 1:
            bucket.level -= granted
            return RateReply(self.epoch, granted=float(granted))
        return RateReply(self.epoch, retry_after=max(1e-3, (1.0 - bucket.level) / bucket.rate))

    def give_back(self, epoch: str | None, kind: str, units: float, now: float) -> None:
        """Unspent units come back — to the incarnation that granted them only, never above capacity."""
        if epoch != self.epoch or units <= 0:
            return
        bucket = self.buckets[kind]
        bucket.refill(now)
        bucket.level = min(bucket.capacity, bucket.level + units)


class LedgerPort(Protocol):
    """How a worker's :class:`~agentactors.ray.lease.LeaseClient` reaches its ledger (a Ray actor, or a test's).

    Each call may raise :class:`LedgerUnavailable` (the ledger's actor is dead or restarting).

    Cancellation: a cancelled caller leaves its wait at once, but the ledger's call is not cancelled: through
    Ray it runs in the ledger's actor all the same, so its effect (a grant, a release) may land unheard.  The
    next registration says again what the worker holds, and the ledger frees what a worker the roster
    dropped held.
    """

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        """Say what ``worker`` holds (first contact, or to a new incarnation); the reply carries the epoch.

        Cancellation: the registration may still be applied (see the class); the next one corrects it.
        """
        ...

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        """Lease up to ``want`` slots, waiting up to ``wait`` seconds when none is free.

        Cancellation: a grant made after the caller left is counted as held by ``worker``, which never heard
        of it, until its next registration (or the roster drops it).  A registration made while the call still
        waits at the ledger ends it, granting nothing (:meth:`LedgerService.acquire`).
        """
        ...

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        """Give ``count`` slots back; ``wanting`` is the worker's demand still unmet.

        Cancellation: the release may still be applied (see the class); the lease client counts the slots as
        still to return.
        """
        ...

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        """A holding worker's periodic check-in: its demand in, its share out.

        Cancellation: the check-in may still be applied (see the class); it changes no holding.
        """
        ...

    async def take(self, kind: str, want: float) -> RateReply:
        """Up to ``want`` units of the ``kind`` rate (``"requests"``, ``"tokens"``), or when to ask again.

        Cancellation: units granted after the caller left are spent unused (the bucket refills at its rate).
        """
        ...

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        """Unspent ``units`` of ``kind`` come back to the incarnation ``epoch`` that granted them.

        Cancellation: the give-back may still be applied (see the class); units it did not give back are lost
        to the bucket until it refills.
        """
        ...


class LedgerUnavailableError(AgentActorsError):
    """The ledger could not be reached (its actor died or is restarting); the lease client backs off.

    Raised by a :class:`LedgerPort` and caught by the lease client: it never reaches a run.
    """


LedgerUnavailable = LedgerUnavailableError  # its old name (the same class)


class LedgerService:
    """A :class:`BudgetLedger` served on an event loop: a short-starved ``acquire`` waits for a change.

    Implements :class:`LedgerPort` in-process (what the tests use; the Ray actor delegates to one).
    Clock: ``anyio.current_time()``.
    """

    def __init__(self, ledger: BudgetLedger) -> None:
        self.ledger = ledger
        self._changed: anyio.Event | None = None  # made in the loop (a Ray actor is built outside it)
        self._registrations: dict[str, int] = {}  # registrations per worker: a newer one supersedes its acquires
        self.calls = 0

    def _notify(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    async def register(self, worker: str, held: int, roster: Roster | None) -> SlotReply:
        """:meth:`BudgetLedger.register`, waking the waiting ``acquire`` calls.

        It supersedes the worker's ``acquire`` calls still waiting here: the worker gave up on them (that is
        why it registers), and says what it holds; they return granting nothing.

        Cancellation: not a cancellation point (it awaits nothing): a call made is applied.
        """
        self.calls += 1
        self._registrations[worker] = self._registrations.get(worker, 0) + 1
        reply = self.ledger.register(worker, held, roster)
        self._notify()
        return reply

    def set_roster(self, roster: Roster) -> None:
        self.calls += 1
        self.ledger.set_roster(roster)
        self._notify()

    async def acquire(self, worker: str, epoch: str | None, want: int, wait: float) -> SlotReply:
        """Grant what can be granted; when nothing can, wait up to ``wait`` seconds for a release.

        A registration of ``worker`` during the wait ends it, granting nothing: the worker no longer
        listens (through Ray a caller that stops waiting does not stop the call), and a grant made
        after it said what it holds would be booked for a worker that never hears of it.

        Cancellation: a cancelled wait grants nothing (grants are made only by the ledger call
        that returns them).
        """
        self.calls += 1
        deadline = anyio.current_time() + wait
        registration = self._registrations.get(worker, 0)
        while True:
            if self._registrations.get(worker, 0) != registration:
                return SlotReply(self.ledger.epoch, recovering=self.ledger.recovering)
            changed = self._changed
            if changed is None:
                changed = self._changed = anyio.Event()
            reply = self.ledger.acquire(worker, epoch, want)
            remaining = deadline - anyio.current_time()
            if reply.granted or reply.register or remaining <= 0:
                return reply
            with anyio.move_on_after(remaining):
                await changed.wait()

    async def release(self, worker: str, epoch: str | None, count: int, wanting: int) -> SlotReply:
        """:meth:`BudgetLedger.release`, waking the waiting ``acquire`` calls.

        Cancellation: not a cancellation point (it awaits nothing): a call made is applied.
        """
        self.calls += 1
        reply = self.ledger.release(worker, epoch, count, wanting=wanting)
        self._notify()
        return reply

    async def check_in(self, worker: str, epoch: str | None, wanting: int) -> SlotReply:
        """:meth:`BudgetLedger.check_in`, waking the waiting ``acquire`` calls (a new demand may lower shares).

        Cancellation: not a cancellation point (it awaits nothing): a call made is applied.
        """
        self.calls += 1
        reply = self.ledger.check_in(worker, epoch, wanting=wanting)
        self._notify()  # a new demand may lower others' shares
        return reply

    async def take(self, kind: str, want: float) -> RateReply:
        """:meth:`BudgetLedger.take`, now.

        Cancellation: not a cancellation point (it awaits nothing): a call made is applied.
        """
        self.calls += 1
        return self.ledger.take(kind, want, anyio.current_time())

    async def give_back(self, epoch: str | None, kind: str, units: float) -> None:
        """:meth:`BudgetLedger.give_back`, now.

        Cancellation: not a cancellation point (it awaits nothing): a call made is applied.
        """
        self.calls += 1
        self.ledger.give_back(epoch, kind, units, anyio.current_time())

    def stats(self) -> dict[str, object]:
        """The books at a glance (for tests and diagnostics)."""
        ledger = self.ledger
        return {
            "epoch": ledger.epoch,
            "in_use": ledger.in_use,
            "held": dict(ledger.held),
            "recovering": ledger.recovering,
            "calls": self.calls,
        }


def roster_of(version: int, workers: Iterable[str]) -> Roster:
    """A :class:`Roster` from any iterable of worker ids."""
    return Roster(version, frozenset(workers))
