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

from typing import Any, Final

from ..actors.runtime import Runtime
from ..gateway.cost_budget import CostBudget, check_cost_limit
from ..loop.result import RunResult
from ..settings import ModelSettings

__all__ = ["Charged", "session_budget"]

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


class Charged:
    """A session's agent whose turns run under ``budgets`` (the session's, and a turn's own).

    It is what the session actor runs (a :class:`~agentactors.sessions.actor.SessionAgent`): ``run`` and
    ``resume`` go to ``agent`` inside the budgets' blocks, so the run they start — and the runs its
    tools start — charge them.
    """

    __slots__ = ("agent", "budgets")

    def __init__(self, agent: Any, budgets: tuple[CostBudget, ...]) -> None:
        self.agent = agent
        self.budgets = budgets

    @classmethod
    def turn(cls, agent: Any, session: CostBudget, cost_limit: Any) -> Charged:
        """``agent``'s turn under the ``session``'s budget and, with a ``cost_limit``, a budget of its own.

        :raises ValueError: a ``cost_limit`` that is neither a non-negative number nor a budget.
        """
        checked = check_cost_limit(cost_limit)
        if checked is None:
            return cls(agent, (session,))
        own = checked if isinstance(checked, CostBudget) else CostBudget(checked, name="turn")
        return cls(agent, (session, own))

    @property
    def name(self) -> str | None:
        name: str | None = self.agent.name
        return name

    async def run(
        self,
        prompt: Any,
        *,
        runtime: Runtime | None = None,
        deps: Any = None,
        settings: ModelSettings | None = None,
        deadline: float | None = None,
        priority: int | None = None,
    ) -> RunResult[Any]:
        with _Entered(self.budgets):
            result: RunResult[Any] = await self.agent.run(
                prompt, runtime=runtime, deps=deps, settings=settings, deadline=deadline, priority=priority
            )
        return result

    async def resume(
        self, state: Any, decisions: Any, *, runtime: Runtime | None = None, deps: Any = None
    ) -> RunResult[Any]:
        with _Entered(self.budgets):
            result: RunResult[Any] = await self.agent.resume(state, decisions, runtime=runtime, deps=deps)
        return result


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
