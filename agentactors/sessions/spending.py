"""What a session's turns cost, counted per runtime, and the limits they spend under.

Each session has a :class:`~agentactors.gateway.cost_budget.CostBudget` in the runtime that runs its turns
(``session.budget``; ``session.cost`` is its total): every turn runs under it — the turn's run, the runs
its tools start — so what the session spent is counted and, with ``cost_limit=``, capped.  The budget
is the runtime's, not the handle's (any handle of the session reaches it) nor the store's: it lives as
long as the runtime, the session's deactivations included, and a restart (or another process) counts
from zero.  A budget of your own — persisted, shared by a user's sessions — is ``cost_limit=CostBudget(...)``.

A turn's own limit (``session.send(..., cost_limit=...)``) is a budget of that turn alone, entered
around it like the session's: its scope is ``"turn"``.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Final

from ..actors.runtime import Runtime
from ..gateway.cost_budget import CostBudget, check_cost_limit
from ..loop.result import RunResult
from .actor import SessionAgent
from .turns import TurnAgent, TurnCall

__all__ = ["charged", "session_budget"]

# The runtime service holding every session's budget: {(id of the store, key): CostBudget}.
_LEDGER: Final = ("agentactors.sessions.spending", "budgets")


def session_budget(rt: Runtime, slot: tuple[int, str], key: str, cost_limit: Any) -> CostBudget:
    """The budget of the session at ``slot`` in ``rt``, made on first use; ``cost_limit`` sets its limit.

    A number becomes the limit of the session's budget (a later handle given another number changes
    it; one given none keeps it); a :class:`CostBudget` becomes the session's budget from now on.

    :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget.
    """
    checked = check_cost_limit(cost_limit)
    ledger: dict[tuple[int, str], CostBudget] = rt.service(_LEDGER, dict)
    if isinstance(checked, CostBudget):
        ledger[slot] = checked
        return checked
    budget = ledger.get(slot)
    if budget is None:
        budget = ledger[slot] = CostBudget(checked, name=f"session {key!r}")
    elif checked is not None:
        budget.limit = checked
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
