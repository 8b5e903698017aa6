"""What a session's turns cost, counted per runtime, and the limits they spend under.

Each session has a :class:`~agentactors.gateway.cost_budget.CostBudget` in the runtime that runs its turns
(``session.budget``; ``session.cost`` is its total): every turn runs under it — the turn's run, the runs
its tools start — so what the session spent is counted and, with ``cost_limit=``, capped.  The budget
is the runtime's, not the handle's (any handle of the session reaches it — through any store object of the
session's address: a store made per request finds the budget, and the limit, of the requests before) nor the
store's: a restart (or another process) counts from zero.  A budget of your own — persisted, shared by a
user's sessions — is ``cost_limit=CostBudget(...)``.

**How long the runtime keeps it** (the :class:`Ledger`).  A budget with a limit — ``cost_limit=`` on any
handle, or a limit set on ``session.budget`` while the session is active — and a budget of your own are kept
for the runtime's life, through the session's deactivations: the limit must hold at the next activation
(about 0.5 KB a session).  A budget that only counts is held by what uses it: the session's registry entry
while it is active, and the handles that reach it; once the session deactivated and no handle is left, it
goes — a deactivated session leaves nothing in memory (the promise of :mod:`agentactors.sessions.registry`,
benchmark W11), and its next activation counts from zero, as a restart would.

A turn's own limit (``session.send(..., cost_limit=...)``) is a budget of that turn alone, entered
around it like the session's: its scope is ``"turn"``.
"""

from __future__ import annotations

from collections.abc import Hashable
from contextlib import AbstractContextManager
from typing import Any, Final
from weakref import WeakValueDictionary

from ..actors.runtime import Runtime
from ..gateway.cost_budget import CostBudget, check_cost_limit
from .store import StoreIdentity

__all__ = ["Ledger", "ledger", "session_budget", "spending_under", "turn_budgets"]

# The runtime service holding the sessions' budgets (a Ledger).
_LEDGER: Final = ("agentactors.sessions.spending", "budgets")

Slot = tuple[Hashable, str]  # (the store's address, key): a session's address within one runtime (store_address)


class Ledger:
    """The session budgets of one runtime, each held no longer than it is needed (the module docstring).

    ``kept`` holds the budgets that must outlive their session's deactivations (a limit, or a budget of the
    user's); ``alive`` finds every session budget something still holds — a handle, an active session's
    registry entry, ``kept`` — so that every handle of a session reaches the same one.  A weak mapping: a
    budget that only counts is not kept alive by the ledger, or every session ever activated would leave one.
    """

    __slots__ = ("alive", "kept", "pinned", "yours")

    def __init__(self) -> None:
        self.kept: dict[Slot, CostBudget] = {}
        self.alive: WeakValueDictionary[Slot, CostBudget] = WeakValueDictionary()
        #: The sessions whose budget is one of the user's (``cost_limit=CostBudget(...)``): a number given on a
        #: later handle must not change its limit (it may be shared by other sessions).  Kept as ``kept`` is.
        self.yours: set[Slot] = set()
        #: The store of each kept budget whose slot names its store by identity (a store without an ``address``:
        #: :class:`~agentactors.sessions.store.StoreIdentity`, its ``id()``): a store the runtime let go (the
        #: registry does once none of its sessions is active) could be collected and its id reused by another
        #: store — whose session of the same key would then find this one's budget.  The object only (closed).
        #: A store with an address needs none: its address names its records, whichever object reaches them.
        self.pinned: dict[Hashable, object] = {}

    def keep(self, slot: Slot, budget: CostBudget, store: object) -> None:
        """Keep ``budget``, the session at ``slot``'s (in ``store``), for the runtime's life.  Never awaits."""
        self.kept[slot] = budget
        if isinstance(slot[0], StoreIdentity):
            self.pinned.setdefault(slot[0], store)

    def keep_limited(self, slot: Slot, budget: CostBudget, store: object) -> None:
        """The session at ``slot`` deactivated, its entry holding ``budget``: keep it if it has a limit by now.

        A limit may be set on ``session.budget`` itself (``CostBudget.limit`` may be changed) after the handle
        that made the budget: the limit must still hold when the session activates again, whoever holds the
        budget then.  Never awaits.
        """
        if budget.limit is not None and self.alive.get(slot) is budget:  # not one a cost_limit=CostBudget replaced
            self.keep(slot, budget, store)

    def shrink(self) -> None:
        """Rebuild ``alive``, which a sweep of many sessions left mostly empty: a dict keeps its largest table
        until rebuilt (~50 bytes a session at the peak).  The registry calls it when it rebuilds its own."""
        self.alive = WeakValueDictionary(self.alive)


def ledger(rt: Runtime) -> Ledger:
    """The session budgets of ``rt``, made on first use.  :raises RuntimeError: the runtime is not running."""
    found: Ledger = rt.service(_LEDGER, Ledger)
    return found


def session_budget(rt: Runtime, slot: Slot, key: str, cost_limit: Any, store: object) -> CostBudget:
    """The budget of the session at ``slot`` (``key`` in ``store``) in ``rt``, made on first use; ``cost_limit``
    sets its limit.

    A number becomes the limit of the session's budget when it has none yet; a later handle may give the same
    number, or none, but not another one: the limit is the session's, which other handles rely on — and, for a
    budget of the user's, other sessions too (a user's allowance) — so one handle's argument does not silently
    rewrite it (``session.budget.limit = x`` changes it on purpose).  A :class:`CostBudget` becomes the session's
    budget from now on.  Either is kept for the runtime's life; a budget made here without a limit lives as long
    as the handles and the active session that hold it (:class:`Ledger`).

    :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget; a number other than
        the limit of the session's budget, when that budget has a limit or is one of the user's (nothing changed).
    """
    checked = check_cost_limit(cost_limit)
    books = ledger(rt)
    if isinstance(checked, CostBudget):
        books.alive[slot] = checked
        books.keep(slot, checked, store)
        books.yours.add(slot)
        return checked
    budget = books.alive.get(slot)
    if budget is None:
        books.yours.discard(slot)  # (a budget of the user's that nothing holds any more: gone with it)
        budget = books.alive[slot] = CostBudget(checked, name=f"session {key!r}")
    elif checked is not None and checked != budget.limit:
        if slot in books.yours:
            raise ValueError(
                f"session {key!r} spends from a budget of your own ({budget.name!r}, limit {budget.limit!r}): "
                f"cost_limit={checked!r} on another handle would change it for every session sharing it; set "
                "its limit on the budget itself"
            )
        if budget.limit is not None:
            raise ValueError(
                f"session {key!r} already has a limit of {budget.limit!r}: cost_limit={checked!r} on another "
                "handle would rewrite the limit its other handles rely on; set session.budget.limit to change it"
            )
        budget.limit = checked
    if budget.limit is not None:
        books.keep(slot, budget, store)
    return budget


def turn_budgets(session: CostBudget, cost_limit: Any = None) -> tuple[CostBudget, ...]:
    """What a turn's runs and resumes spend under, outermost first: the ``session``'s budget and, with a
    ``cost_limit``, a budget of the turn's own (scope ``"turn"``).  The session's actor enters them around the
    turn's run (:func:`spending_under`), so the run it starts — and the runs its tools start — charge them.

    :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget.
    """
    if cost_limit is None:
        return (session,)
    checked = check_cost_limit(cost_limit)
    if checked is None:
        return (session,)
    return (session, checked if isinstance(checked, CostBudget) else CostBudget(checked, name="turn"))


def spending_under(budgets: tuple[CostBudget, ...]) -> AbstractContextManager[object]:
    """Every budget of ``budgets`` entered, outermost first, for one block (:func:`turn_budgets`).  A lone budget
    is its own block (``with budget:``), as it is on most turns: nothing is built for it."""
    if len(budgets) == 1:
        return budgets[0]
    return _Entered(budgets)


class _Entered:
    """Every budget of a tuple entered, for one block."""

    __slots__ = ("budgets",)

    def __init__(self, budgets: tuple[CostBudget, ...]) -> None:
        self.budgets = budgets

    def __enter__(self) -> None:
        for budget in self.budgets:
            budget.__enter__()

    def __exit__(self, *exc: object) -> None:
        for budget in reversed(self.budgets):
            budget.__exit__()
