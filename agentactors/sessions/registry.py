"""A runtime's sessions: activated on demand, deactivated when idle — virtual actors, Orleans-style.

A service may hold a conversation per user, and most users are idle most of the time.  So a session is
not an actor that lives as long as the runtime: it is *virtual*.  Its address (where its store keeps it —
the store's optional ``address``, else the store object: :func:`~agentactors.sessions.store.store_address` —
and its key) always exists; an actor holds it only while it is in use.  The first turn in a runtime
**activates** it (an actor is spawned and loads the session from its store); a session with no turn for its
``idle_timeout`` **deactivates** (its actor is stopped and dropped: no task, no actor, no history in
memory — the store keeps it); the next turn activates it again.  The active sessions of an address are
served by the first store object of it that activated one (another object of the same file reaches the
same actor: one actor per stored session, so two requests' turns take turns instead of conflicting); that
store is closed, and let go, once none of its address's sessions is active (a store object made per
request must not keep a connection open for the runtime's life; one used again — one its owner closed
included — reopens, as the port says).  When the runtime exits, every session
deactivates and the stores of the active ones are closed.

**One sweeper per runtime, no timer per session.**  A timer per session would be a task per session —
the very cost deactivation exists to avoid.  Instead, idle sessions sit in an ordered dict per
distinct ``idle_timeout`` (usually one), in the order they went idle; since they share a timeout, that
is also the order of their deadlines, so the oldest is always first.  One background task
(``rt.spawn_task(..., background=True)``) sleeps until the earliest deadline of all the groups,
deactivates what has expired, and sleeps again; a session going idle costs a dict move, and wakes the
sweeper only if its deadline comes before the one the sweeper sleeps until.

**No turn is ever lost to a deactivation.**  A session is idle when no ``send`` or ``resolve`` is in
flight for it — counted by the handles, synchronously, before they ask the actor and after it answered.
Only idle sessions are in the sweeper's dicts (a busy one leaves them on its first call and returns,
last in line, when its last call ends; one whose caller left while its turn still runs — a commit is
shielded — is taken out when its deadline comes, and put back, last in line, by its actor when that turn
is over: nothing polls it meanwhile, however small its ``idle_timeout``), and the decision to deactivate —
take it out of the registry — is made without an await: a turn arriving a moment later finds no actor and
activates a new one, which loads from the store everything the old one committed.

**Memory.**  An active idle session costs its actor (a few hundred bytes, :mod:`agentactors.actors`),
its registry entry, its history and its budget; a deactivated one costs nothing here (the registry's dicts
are rebuilt after large sweeps, because a Python dict never shrinks by itself), nor in the runtime's budgets
unless it has a cost limit (:mod:`agentactors.sessions.spending`).  What its store keeps is
the store's business: :class:`~agentactors.sessions.memory.MemoryStore` keeps every history in memory,
:class:`~agentactors.sessions.sqlite.SqliteStore` in its file.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from functools import partial
from typing import Any, Final

import anyio

from .._backend import loop_clock
from ..actors.ref import ActorRef
from ..actors.runtime import Runtime
from ..errors import redact
from ..gateway.cost_budget import CostBudget
from .actor import SessionActor
from .memory import MemoryStore
from .spending import ledger
from .store import SessionStore, store_address

__all__ = ["Entry", "Sessions", "Slot"]

log = logging.getLogger("agentactors.sessions")

Slot = tuple[Hashable, str]  # (the store's address, key): a session's address within one runtime (store_address)

# Rebuild the registry's dicts once they hold fewer than this share of their peak (and the peak was large).
_SHRINK_RATIO: Final = 4
_SHRINK_MIN: Final = 1024
# The longest the sweeper waits for a store to close once its last session deactivated (shielded: the runtime's
# exit, which cancels the sweeper, waits for it at most this long).
_CLOSE_TIMEOUT: Final = 10.0


class Entry:
    """An active session: its actor and what the registry needs to know to deactivate it.

    ``budget``: the session's budget (``session.budget``), set by the handle that calls: while the session is
    active, its entry holds it, so a new handle reaches the same one even when no other handle is left.
    """

    __slots__ = ("actor", "budget", "inflight", "last", "ref", "slot", "timeout")

    def __init__(self, slot: Slot, actor: SessionActor, ref: ActorRef, timeout: float) -> None:
        self.slot = slot
        self.actor = actor
        self.ref = ref
        self.timeout = timeout
        self.last = 0.0
        self.inflight = 0
        self.budget: CostBudget | None = None


class Sessions:
    """The sessions of one runtime (a :meth:`Runtime.service <agentactors.actors.runtime.Runtime.service>`).

    :meth:`checkout` / :meth:`checkin` bracket every call a handle makes; :meth:`get` reads without
    activating.  See the module docstring for the lifecycle.
    """

    __slots__ = (
        "_clock", "_default", "_idle", "_peak", "_sweeping", "_users", "_wake", "_wake_at", "active", "live", "rt",
        "stores",
    )

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.active: dict[Slot, Entry] = {}
        #: The store serving the active sessions of each address (and how many of them each has): the first store
        #: object of the address that activated one — the actors hold it; another object of the same address
        #: reaches them.  Closed, and dropped from here, when the address's last active session deactivates; what
        #: is left is closed at the exit.
        self.stores: dict[Hashable, SessionStore] = {}
        self._users: dict[Hashable, int] = {}
        #: The sessions' running turns, ``{slot: what the turn is listed by}``: their actors list them here while
        #: their runs go on, and ``session.steer`` finds a run by it (:class:`~.actor.SessionActor`).
        self.live: dict[Slot, Any] = {}
        self._idle: dict[float, OrderedDict[Slot, Entry]] = {}
        self._default: MemoryStore | None = None
        self._sweeping = False
        self._wake: anyio.Event | None = None
        self._wake_at = math.inf
        self._peak = 0
        # anyio.current_time, read the loop's cheapest way (found on first use: the registry may be made in another
        # thread, and a session goes idle only in the runtime's loop).
        self._clock: Callable[[], float] | None = None

    @classmethod
    def of(cls, rt: Runtime) -> Sessions:
        """The runtime's registry, made on first use.  :raises RuntimeError: the runtime is not running."""
        return rt.service(Sessions, lambda: cls(rt), cleanup=Sessions.aclose)

    def default_store(self) -> MemoryStore:
        """The runtime's own :class:`MemoryStore` (what ``store=None`` means)."""
        if self._default is None:
            self._default = MemoryStore()
        return self._default

    def get(self, slot: Slot) -> Entry | None:
        return self.active.get(slot)

    def changed(self, store: SessionStore, key: str) -> None:
        """``key``'s record in ``store`` changed behind this runtime's back (``rt.recover(sessions=)`` committed a
        turn): its actor here, if it is active, loads it again before its next message.  Never awaits."""
        entry = self.active.get((store_address(store), key))
        if entry is not None:
            entry.actor.loaded = False

    def stats(self) -> dict[str, int]:
        """``active`` sessions, of which ``idle`` (waiting for the sweeper) and ``busy`` (a call in flight)."""
        idle = sum(len(group) for group in self._idle.values())
        busy = sum(1 for entry in self.active.values() if entry.inflight)
        return {"active": len(self.active), "idle": idle, "busy": busy, "stores": len(self.stores)}

    # -- a handle's call ----------------------------------------------------------------------------

    def checkout(self, store: SessionStore, slot: Slot, timeout: float) -> Entry:
        """The entry of the session at ``slot`` (``(store_address(store), key)``), activated if need be, counted
        busy until :meth:`checkin`.  Never awaits.

        A session activated here is served by the store already serving its address, if one is (``store`` may be
        another object of the same file or database: one actor, one store per address), else by ``store``.

        :raises RuntimeError: the runtime is not running (no actor can be spawned).
        """
        entry = self.active.get(slot)
        if entry is None or entry.ref.stopped:
            if entry is not None and entry.inflight == 0:  # stopped under us (the runtime is closing): replaced
                stale = self._idle.get(entry.timeout)
                if stale is not None:
                    stale.pop(slot, None)
            rt = self.rt
            address, key = slot
            served = self.stores.get(address)
            if served is None:
                served = self.stores[address] = store
            actor = SessionActor(rt, served, key, live=self.live, slot=slot)
            ref = rt.spawn(actor, name=f"session:{key}", concurrency=1)
            if entry is None:  # (a stopped entry replaced: its address counted it already)
                self._users[address] = self._users.get(address, 0) + 1
            entry = self.active[slot] = Entry(slot, actor, ref, timeout)
            if len(self.active) > self._peak:
                self._peak = len(self.active)
            if not self._sweeping:
                self._sweeping = True
                rt.spawn_task(self._sweep, name="sessions.sweeper", background=True)
        elif entry.inflight == 0:
            group = self._idle.get(entry.timeout)
            if group is not None:
                group.pop(slot, None)
        entry.timeout = timeout  # the last call's handle decides how long the session may stay idle
        entry.inflight += 1
        return entry

    def checkin(self, entry: Entry) -> None:
        """The call is over: an entry with no call left goes idle, last in its group.  Never awaits."""
        entry.inflight -= 1
        self._idle_now(entry)

    def _idle_now(self, entry: Entry) -> None:
        """``entry`` goes idle, last in its group, if no call is in flight for it (and it is still the session's).
        Never awaits."""
        if entry.inflight or self.active.get(entry.slot) is not entry or math.isinf(entry.timeout):
            return
        clock = self._clock
        if clock is None:
            clock = self._clock = loop_clock()
        entry.last = now = clock()
        group = self._idle.get(entry.timeout)
        if group is None:
            group = self._idle[entry.timeout] = OrderedDict()
        group[entry.slot] = entry
        due = now + entry.timeout
        if due < self._wake_at and self._wake is not None:
            self._wake_at = due
            self._wake.set()

    # -- the sweeper --------------------------------------------------------------------------------

    async def _sweep(self) -> None:
        """Deactivate expired idle sessions; sleep until the next deadline (see the module docstring).

        Cancellation: a runtime background task, cancelled when the runtime exits (after its drain);
        whatever is still active then is deactivated by :meth:`aclose`.
        """
        while True:
            expired = self._expire(anyio.current_time())
            if expired:
                await self._stop(expired)
                del expired  # nothing of them is held from here: their entries, the budgets only those held
                self._shrink()
            # From here to the wait, no await: a session going idle meanwhile is seen by _next_due, and
            # one going idle later wakes the sweeper if it is due sooner (checkin).
            due = self._next_due()
            wake = self._wake = anyio.Event()
            self._wake_at = due
            with anyio.CancelScope(deadline=due):
                await wake.wait()

    async def _stop(self, expired: list[Entry]) -> None:
        """Deactivate the ``expired`` sessions, in a frame of their own: once it returns, its loop variable is gone
        (in the sweeper's frame, which lives as long as the runtime, it kept the last one's entry — its actor,
        its history, its budget — until the next sweep)."""
        unused: list[tuple[Hashable, SessionStore]] = []
        for entry in expired:
            self._deactivated(entry, "idle")
            await self.rt.stop(entry.ref, drain=False)
            address = entry.slot[0]
            users = self._users.pop(address, 0) - 1
            if users > 0:
                self._users[address] = users
            elif (store := self.stores.pop(address, None)) is not None:  # its last active session: closed below
                unused.append((address, store))
        for address, store in unused:
            if self.stores.get(address) is not store:  # (not used again meanwhile: a new session of it activated)
                with anyio.move_on_after(_CLOSE_TIMEOUT, shield=True) as bound:
                    await _close(store, "once its last active session deactivated")
                if bound.cancelled_caught:
                    log.warning("a session store (%s) did not close within %g s", type(store).__name__, _CLOSE_TIMEOUT)

    def _expire(self, now: float) -> list[Entry]:
        """Take the expired idle sessions out of the registry (decided here, without an await)."""
        expired: list[Entry] = []
        for timeout, group in list(self._idle.items()):
            while group:
                slot, entry = next(iter(group.items()))
                if entry.last + timeout > now:
                    break
                del group[slot]
                if self.active.get(slot) is not entry:
                    continue
                if entry.actor.running:
                    # Its callers left, but a turn of theirs still runs (its commit shielded): not idle until it
                    # is over — deactivated now, the next turn's new actor would load the version before that
                    # commit, and conflict with it.  Out of the group until its actor says the turn is over (then
                    # idle, last in line): looked at again a timeout later instead, a tiny timeout (1e-20 s: no
                    # later than now, in floats) made the sweeper spin until the commit ended.
                    entry.actor.settled = partial(self._idle_now, entry)
                    continue
                del self.active[slot]  # idle (it is in the group), and from now on out of reach
                expired.append(entry)
            if not group:
                del self._idle[timeout]
        return expired

    def _next_due(self) -> float:
        due = math.inf
        for timeout, group in self._idle.items():
            if group:
                due = min(due, next(iter(group.values())).last + timeout)
        return due

    def _deactivated(self, entry: Entry, reason: str) -> None:
        """The session's entry left the registry: ``session.deactivated``, if it ever activated.

        An actor whose load failed every time it was asked (a damaged record, an unreachable store) never
        emitted ``session.activated``: it held nothing, so it emits no deactivation either — a tracer pairs the
        two events, and the failure already reached the turn's caller as the store's error.
        """
        actor = entry.actor
        if actor.activated:
            self.rt.emit("session.deactivated", key=actor.key, version=actor.version, reason=reason)
        if entry.budget is not None and reason == "idle":  # at the runtime's exit, nothing activates it again
            ledger(self.rt).keep_limited(entry.slot, entry.budget, entry.actor.store)

    def _shrink(self) -> None:
        """Rebuild the dicts once far below their peak: a dict keeps its largest table until rebuilt."""
        if self._peak >= _SHRINK_MIN and len(self.active) * _SHRINK_RATIO < self._peak:
            self.active = dict(self.active)
            self._idle = {t: OrderedDict(g) for t, g in self._idle.items()}
            self.stores, self._users = dict(self.stores), dict(self._users)  # (a store per request: as many)
            self._peak = len(self.active)
            ledger(self.rt).shrink()  # the sessions' budgets, by the same measure (their entries let them go)

    # -- the runtime's exit -------------------------------------------------------------------------

    async def aclose(self) -> None:
        """The runtime exits (its actors have stopped): every session deactivates; the stores used close.

        A store that fails to close is logged (a warning naming its type, the error redacted) and the others still
        close: every failure is logged, not only the first (raised to the runtime, which logs one error per
        cleanup, the others were lost).

        Cancellation: a runtime cleanup, run shielded and bounded by the runtime.
        """
        entries = list(self.active.values())
        self.active = {}
        self._idle = {}
        for entry in entries:
            self._deactivated(entry, "runtime_exit")
        stores = list(self.stores.values())
        self.stores, self._users = {}, {}
        for store in stores:
            await _close(store, "at the runtime's exit")


async def _close(store: SessionStore, when: str) -> None:
    """Close ``store``; a failure is logged (a warning naming its type, the error redacted), never raised.

    Cancellation: as the caller's scope — the sweeper shields it, bounded (:data:`_CLOSE_TIMEOUT`: a store
    finishes what is running before it closes, and a cancelled sweeper must not leave it half closed); at the
    runtime's exit the runtime bounds it, as every cleanup.
    """
    try:
        await store.aclose()
    except Exception as exc:
        log.warning(
            "a session store (%s) failed to close %s: %s", type(store).__name__, when,
            redact(f"{type(exc).__name__}: {exc}"),
        )
