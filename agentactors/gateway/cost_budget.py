"""Spending budgets in money: what runs may spend together — a run's, a session's, a runtime's, or yours.

A :class:`CostBudget` counts what the model calls charged to it cost (:mod:`agentactors.pricing`) and
holds an optional limit.  Every run charges the budgets it runs under, after each model call:

* its own ``cost_limit`` (``agent.run(..., cost_limit=0.5)``: a budget of the run alone, or a
  ``CostBudget`` you pass, then shared with every run you pass it to);
* its parent's, for a delegated run (``agent.as_tool()``): a child spends its parent's money;
* the budgets entered around it (``with budget: await agent.run_many(...)``): every run started in
  the block, in its task or in tasks started from it — a session's turns run under the session's;
* its runtime's (``Runtime(cost_limit=...)``).

A run stops when one of them is past its limit (``docs/costs.md``: right after the call that passed it,
or before a call its estimate says would pass it — an estimate that is not a finite, non-negative number
is none: :meth:`CostBudget.would_pass`).

**Atomic, and the bound on overspending.**  A charge is one locked addition, so budgets may be shared
by runs of any task or thread.  Runs do not reserve before they send: runs that start calls
concurrently all see the budget as it is (an estimate is checked against what was spent, not against
the other calls in flight), so a shared budget may end past its limit by at most the cost of the calls
in flight when it was reached — each of those runs then stops right after its call, and none sends
another (a call that waited in a ProviderActor's queue is checked again when it is granted:
:meth:`~agentactors.loop.cost.RunCost.recheck`).  A run alone overspends by at most its last call (with
estimates on, by what that call cost beyond its estimate).  A budget is charged from the responses runs
receive, and for calls that were sent and then cut short — a hedge's losing copy, a run cancelled mid-call,
a batch call that left its batch — at a conservative estimate (their prompt at the input rate, the output
already received), which the vendor bills though no answer came: :attr:`CostBudget.estimated` is that part
of :attr:`CostBudget.spent` (``docs/costs.md``, "Calls cut short").

A budget counts what is priced: a call of a model without a price (or priced in another currency) is
counted in :attr:`CostBudget.unpriced`, and makes :attr:`CostBudget.cost` ``None`` — never a silent
zero — while :attr:`CostBudget.spent` (what the limit compares) is the priced part, spent for sure.
"""

from __future__ import annotations

import contextvars
import math
import threading
from typing import Any, Final

from ..pricing import Cost

__all__ = ["CostBudget", "check_cost_limit", "entered", "runtime_budget"]

_ZERO: Final = Cost()
# The budgets entered around the current task (``with budget:``), innermost last.
_ENTERED: contextvars.ContextVar[tuple[CostBudget, ...]] = contextvars.ContextVar(
    "agentactors_cost_budgets", default=()
)
# The key of a runtime's own budget among its services (made from Runtime(cost_limit=<number>)).
_RUNTIME_KEY: Final = ("agentactors.gateway.cost_budget", "runtime")


def _limit(value: object, what: str = "cost_limit") -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        # (An infinite limit would be a budget that never stops a run: None says that, and reads as what it is.)
        raise ValueError(
            f"{what} must be a finite, non-negative number (in the price's currency) or None (no limit), not {value!r}"
        )
    return float(value)


class CostBudget:
    """What runs may spend together, in ``currency``: ``limit`` (``None``: count only), and what they spent.

    :param limit: the most the runs under it may spend (``None``: no limit, the budget only counts).
    :param estimate: stop a run *before* a model call its estimate says would pass the limit
        (``docs/costs.md``, "Estimates"); ``False``: only right after the call that passed it.
    :param currency: the currency of the limit (``None``: the first priced call's), a code in any case
        (``"usd"`` is ``"USD"``, as :class:`~agentactors.pricing.Cost` writes it); costs in another one are
        counted as :attr:`unpriced`.
    :param name: how a :class:`~agentactors.errors.CostLimitExceededError` names the budget
        (its ``scope``).
    :raises ValueError: a negative, NaN or infinite ``limit`` (``None`` is no limit).
    :raises TypeError: an ``estimate`` that is not a bool, a ``currency`` or ``name`` that is not a non-empty str
        (``estimate="no"`` was true; ``currency=978`` made every priced call's currency, a ``str``, another one,
        and so every call unpriced).

    ``with budget:`` puts the runs started in the block (in this task and the tasks started from it:
    ``run_many``'s) under it.  The counters are read at any time; :attr:`limit` may be changed.
    """

    # __weakref__: a session's budget that only counts is found by its handles through a weak mapping, so that a
    # deactivated session leaves none behind (agentactors.sessions.spending).
    __slots__ = ("__weakref__", "_lock", "_max", "_spent", "calls", "currency", "estimate", "name", "unpriced")

    def __init__(
        self, limit: float | None = None, *, estimate: bool = True, currency: str | None = None, name: str = "budget"
    ) -> None:
        self.limit = _limit(limit, "CostBudget.limit")
        if not isinstance(estimate, bool):
            raise TypeError(f"CostBudget.estimate must be a bool, not {estimate!r}")
        if currency is not None and (not isinstance(currency, str) or not currency):
            raise TypeError(f"CostBudget.currency must be a currency code (a non-empty str) or None, not {currency!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"CostBudget.name must be a non-empty str, not {name!r}")
        self.estimate = estimate
        self.currency = currency.upper() if currency is not None else None  # as Cost and Price write it
        self.name = name
        #: Model calls charged (priced or not).
        self.calls = 0
        #: Model calls charged without a price (in this budget's currency).
        self.unpriced = 0
        self._spent = Cost(currency=self.currency or "USD")
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        limit = "none" if self.limit is None else f"{self.limit:g}"
        currency = f" {self.currency}" if self.currency else ""
        return (
            f"CostBudget({self.name!r}, spent={self.spent:.6g}{currency}, limit={limit}, "
            f"calls={self.calls}, unpriced={self.unpriced})"
        )

    @property
    def limit(self) -> float | None:
        """The most the runs under it may spend (``None``: count only); may be changed while runs run."""
        return self._max

    @limit.setter
    def limit(self, value: float | None) -> None:
        # Checked here too, not only by __init__: a NaN limit set later would make every comparison false,
        # and the budget would never stop a run again.
        self._max = _limit(value, "CostBudget.limit")

    # -- what was spent ------------------------------------------------------------------------------

    @property
    def spent(self) -> float:
        """What the priced calls charged here cost (what the limit is compared with)."""
        return self._spent.total

    @property
    def estimated(self) -> float:
        """How much of :attr:`spent` is an estimate: the conservative charges of calls cut short after they were
        sent (a hedge's losing copy, a run cancelled mid-call: ``docs/costs.md``), not a vendor's usage."""
        return self._spent.estimated

    @property
    def cost(self) -> Cost | None:
        """What the calls charged here cost, or ``None`` when one of them had no price (never a smaller sum)."""
        return None if self.unpriced else self._spent

    @property
    def remaining(self) -> float | None:
        """What may still be spent (``0.0`` once past the limit), or ``None`` without a limit."""
        limit = self.limit
        return None if limit is None else max(0.0, limit - self._spent.total)

    @property
    def passed(self) -> bool:
        """Whether what was spent is past the limit."""
        limit = self.limit
        return limit is not None and self._spent.total > limit

    def would_pass(self, amount: float) -> bool:
        """Whether spending ``amount`` more would take it past the limit.

        An ``amount`` that is not a finite, non-negative number (a NaN, an infinity, a negative estimate: a bad
        price or usage from somewhere) is no estimate, and counts as nothing — as :meth:`charge` counts such a
        cost (unpriced, never added): the answer is then whether the budget is past its limit already
        (:attr:`passed`).  Taken as it is, a NaN would answer "no" even past the limit, an infinity "yes" for
        good (every run under the budget stopped before every call), a negative amount would refund what was
        spent for the comparison.
        """
        limit = self.limit
        if limit is None:
            return False
        if not (math.isfinite(amount) and amount >= 0):
            amount = 0.0
        return self._spent.total + amount > limit

    # -- charging -------------------------------------------------------------------------------------

    def charge(self, cost: Cost | None) -> None:
        """Count one model call that cost ``cost`` (``None``: its model has no price).  Atomic.

        A cost that is not a finite, non-negative number (a NaN, an infinity, a negative amount: a bad
        price or usage from somewhere) is counted as :attr:`unpriced`, never added: a NaN sum would make
        every comparison with the limit false (the budget would stop nothing again), a negative one
        would refund it, an infinite one would stop every run under it for good.
        """
        if cost is not None and not isinstance(cost, Cost):
            raise TypeError(f"a charge is a Cost or None (unpriced), not {type(cost).__name__}")
        with self._lock:
            self.calls += 1
            if cost is None or not _sound(cost):
                self.unpriced += 1
            elif self.currency is None:  # the first priced call says the currency
                self.currency = cost.currency
                self._spent = cost
            elif cost.currency != self.currency:
                self.unpriced += 1
            else:
                self._spent = self._spent + cost

    # -- a scope ---------------------------------------------------------------------------------------

    def __enter__(self) -> CostBudget:
        _ENTERED.set((*_ENTERED.get(), self))
        return self

    def __exit__(self, *exc: object) -> None:
        entered = _ENTERED.get()
        for i in range(len(entered) - 1, -1, -1):  # the innermost entry of this budget: nested blocks nest
            if entered[i] is self:
                _ENTERED.set(entered[:i] + entered[i + 1 :])
                return


def _sound(cost: Cost) -> bool:
    """Whether every amount of ``cost`` is a finite, non-negative number (its estimated part too: added, a NaN one
    would make :attr:`CostBudget.estimated` NaN for good)."""
    return all(math.isfinite(v) and v >= 0 for v in (cost.input, cost.output, cost.total, cost.estimated))


def entered() -> tuple[CostBudget, ...]:
    """The budgets entered (``with budget:``) around the current task, outermost first."""
    return _ENTERED.get()


def check_cost_limit(limit: object) -> float | CostBudget | None:
    """A run's ``cost_limit`` checked: a number as a float, a :class:`CostBudget` as is, or ``None``.

    :raises ValueError: a negative or NaN number, or something that is neither.
    """
    if isinstance(limit, CostBudget):
        return limit
    return _limit(limit)


def runtime_budget(rt: Any) -> CostBudget | None:
    """The budget of runtime ``rt`` (``Runtime(cost_limit=...)``), or ``None`` when it has none.

    A number given to the runtime becomes one budget, made on first use and shared by every run of
    the runtime (named ``"runtime"``); a :class:`CostBudget` given is that budget.
    """
    value = getattr(rt, "cost_limit", None)
    if value is None or isinstance(value, CostBudget):
        return value
    limit = _limit(value)
    budget: CostBudget = rt.service(_RUNTIME_KEY, lambda: CostBudget(limit, name="runtime"))
    return budget
