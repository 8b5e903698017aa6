"""What a session's turns cost, counted per runtime, and the limits they spend under.

Each session has a :class:`~agentactors.gateway.cost_budget.CostBudget` in the runtime that runs its turns
(``session.budget``; ``session.cost`` is its total): every turn runs under it — the turn's run, the runs
its tools start — so what the session spent is counted and, with ``cost_limit=``, capped.  The budget
is the runtime's, not the handle's (any handle of the session reaches it) nor the store's: a restart (or
another process) counts from zero.  A budget of your own — persisted, shared by a user's sessions — is
``cost_limit=CostBudget(...)``.

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

from functools import partial
from typing import Any, Final
from weakref import WeakValueDictionary

from ..actors.runtime import Runtime
from ..gateway.cost_budget import CostBudget, check_cost_limit
from ..loop.result import RunResult
from .actor import SessionAgent
from .turns import TurnAgent, TurnCall

__all__ = ["Ledger", "charged", "ledger", "session_budget"]

# The runtime service holding the sessions' budgets (a Ledger).
_LEDGER: Final = ("agentactors.sessions.spending", "budgets")

Slot = tuple[int, str]  # (id of the store, key): a session's address within one runtime


class Ledger:
    """The session budgets of one runtime, each held no longer than it is needed (the module docstring).

    ``kept`` holds the budgets that must outlive their session's deactivations (a limit, or a budget of the
    user's); ``alive`` finds every session budget something still holds — a handle, an active session's
    registry entry, ``kept`` — so that every handle of a session reaches the same one.  A weak mapping: a
    budget that only counts is not kept alive by the ledger, or every session ever activated would leave one.
    """

    __slots__ = ("alive", "kept")

    def __init__(self) -> None:
        self.kept: dict[Slot, CostBudget] = {}
        self.alive: WeakValueDictionary[Slot, CostBudget] = WeakValueDictionary()

    def keep_limited(self, slot: Slot, budget: CostBudget) -> None:
        """The session at ``slot`` deactivated, its entry holding ``budget``: keep it if it has a limit by now.

        A limit may be set on ``session.budget`` itself (``CostBudget.limit`` may be changed) after the handle
        that made the budget: the limit must still hold when the session activates again, whoever holds the
        budget then.  Never awaits.
        """
        if budget.limit is not None and self.alive.get(slot) is budget:  # not one a cost_limit=CostBudget replaced
            self.kept[slot] = budget

    def shrink(self) -> None:
        """Rebuild ``alive``, which a sweep of many sessions left mostly empty: a dict keeps its largest table
        until rebuilt (~50 bytes a session at the peak).  The registry calls it when it rebuilds its own."""
        self.alive = WeakValueDictionary(self.alive)


def ledger(rt: Runtime) -> Ledger:
    """The session budgets of ``rt``, made on first use.  :raises RuntimeError: the runtime is not running."""
    found: Ledger = rt.service(_LEDGER, Ledger)
    return found


def session_budget(rt: Runtime, slot: Slot, key: str, cost_limit: Any) -> CostBudget:
    """The budget of the session at ``slot`` in ``rt``, made on first use; ``cost_limit`` sets its limit.

    A number becomes the limit of the session's budget (a later handle given another number changes
    it; one given none keeps it); a :class:`CostBudget` becomes the session's budget from now on.  Either is
    kept for the runtime's life; a budget made here without a limit lives as long as the handles and the
    active session that hold it (:class:`Ledger`).

    :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget.
    """
    checked = check_cost_limit(cost_limit)
    books = ledger(rt)
    if isinstance(checked, CostBudget):
        books.kept[slot] = books.alive[slot] = checked
        return checked
    budget = books.alive.get(slot)
    if budget is None:
        budget = books.alive[slot] = CostBudget(checked, name=f"session {key!r}")
    elif checked is not None:
        budget.limit = checked
    if budget.limit is not None:
        books.kept[slot] = budget
    return budget


def charged(agent: SessionAgent, session: CostBudget, cost_limit: Any = None) -> TurnAgent:
    """``agent`` as a session runs it: its turns' runs and resumes inside the ``session``'s budget and, with a
    ``cost_limit``, a budget of the turn's own (scope ``"turn"``), so the run they start — and the runs its
    tools start — charge them.

    :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget.
    """
    checked = check_cost_limit(cost_limit)
    if checked is None:
        budgets: tuple[CostBudget, ...] = (session,)
    else:
        budgets = (session, checked if isinstance(checked, CostBudget) else CostBudget(checked, name="turn"))
    return TurnAgent(agent, partial(_spend, budgets), resumes=True)


async def _spend(budgets: tuple[CostBudget, ...], call: TurnCall) -> RunResult[Any]:
    with _Entered(budgets):
        return await call.proceed()


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
