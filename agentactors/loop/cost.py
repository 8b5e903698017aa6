"""What one run has spent, the budgets it charges, and when it must stop spending.

A run's calls may go to several models (a fallback chain, a handoff), each at its own price, so the
cost is added up per response (:func:`agentactors.pricing.response_cost`), not from the run's summed
usage.  One response of a model without a price makes the run's cost unknown: ``RunResult.cost`` is
then ``None``, never the smaller sum of the priced part (the limits still count that part: it is
spent for sure).  The runs a run's tools start (delegation) add their cost to it, as they add their
usage.

**Budgets.**  A run charges every :class:`~agentactors.gateway.cost_budget.CostBudget` it runs under
(its own ``cost_limit``, its parent's, the ones entered around it — a session's —, its runtime's:
:mod:`agentactors.gateway.cost_budget`), after each model call.  It stops with
:class:`~agentactors.errors.CostLimitExceededError` in its result:

* right after a call when one of them is past its limit (:meth:`RunCost.passed`, through
  ``LoopState.past_cost_limit``);
* before a call (:func:`stop_before`) when one of them is past its limit already (another run spent
  it), or — with estimates on (``CostBudget(estimate=True)``, the default) — when the call's estimate
  would take one past it;
* and, when that call then waited for its ProviderActor's slot or budgets, once more as it is granted
  (:meth:`RunCost.recheck`, the run's budget check: :func:`~agentactors.gateway.ticket.current_check`):
  the runs ahead of it in the queue spend the same budgets meanwhile.  Its call is then not sent.

**The estimate** (:meth:`RunCost.estimate`) is cheap and made of what the run already knows: the input is the
previous call's prompt tokens (as the vendor reported them, cached ones included) plus the messages added
since, at ~4 characters a token (an image, a PDF page, a second of audio at the package's flat estimates); the
output is not guessed (counted as none). So the estimate is what the call's prompt alone will cost — a floor,
not a forecast: it stops a run only when the call would pass the limit whatever the model answers, and does
not stop a run that would have stayed within its limit (a guess at the output — ``max_tokens``, the previous
answer's length — would; the one exception is a prompt the vendor's cache discounts, which the floor prices at
the full input rate). It is priced at the model that answered the previous call (at its batch price when that
call went through a batch API). The first call of a run is estimated from its whole conversation when the
agent's provider names its vendor and model (a scripted or user provider does not); a model without a price is
never estimated.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..errors import CostLimitExceededError
from ..gateway import ticket as run_ticket
from ..gateway.cost_budget import CostBudget, check_cost_limit, entered, runtime_budget
from ..gateway.ticket import BudgetCheck
from ..messages import LLMRequest, LLMResponse, Message, Usage
from ..pricing import (
    CUT_SHORT,
    Cost,
    CutShort,
    cut_short_of,
    is_batch,
    price_for,
    prompt_tokens,
    response_cost,
    take_cut_short,
)
from .result import RunResult

__all__ = ["RunCost", "check_cost_limit", "message_tokens", "stop_before"]

log = logging.getLogger("agentactors.pricing")

# The (provider, model) pairs already warned of (_warn_unpriced), bounded: past it, no more warnings.
_WARNED: set[tuple[str | None, str | None]] = set()
_MOST_WARNED = 256


def _warn_unpriced(response: LLMResponse, budgets: Sequence[CostBudget]) -> None:
    """One WARNING per process and model the first time a call without a price is charged to a budget with a
    limit: the limit does not count it (a budget counts what is priced), which would otherwise overspend with no
    sign but ``CostBudget.unpriced`` (a fine-tune, a gateway's own name, a model newer than the price table)."""
    key = (response.provider, response.model)
    if key in _WARNED or len(_WARNED) >= _MOST_WARNED:
        return
    limited = [b for b in budgets if b.limit is not None]
    if not limited:
        return
    _WARNED.add(key)
    log.warning(
        "model %r (provider %r) has no price: its calls are not counted against the cost limit of %s — price it "
        "with agentactors.pricing.set_price(%r, %r, ...) (warned once per model)",
        response.model, response.provider, ", ".join(repr(b.name) for b in limited), response.provider,
        response.model,
    )

_ZERO = Cost()


def message_tokens(messages: Sequence[Message]) -> int:
    """A cheap token estimate of ``messages``: ~4 characters a token, media at their flat estimates."""
    chars = 0
    media = 0
    for message in messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(call.raw_arguments or call.arguments_json)
        for part in message.media:
            media += part.estimated_tokens
    return (chars + 3) // 4 + media


def _first_model(run_info: Any) -> tuple[str, str, bool] | None:
    """The (provider, model) an agent's first call goes to, when its ``run.started`` info names both."""
    if not run_info:
        return None
    providers, model = run_info.get("providers"), run_info.get("model")
    if not providers or not isinstance(model, str):
        return None
    name = providers[0][0]
    return (name, model, False) if isinstance(name, str) else None


def _unique(budgets: Sequence[CostBudget]) -> tuple[CostBudget, ...]:
    out: list[CostBudget] = []
    for budget in budgets:
        if all(budget is not b for b in out):
            out.append(budget)
    return tuple(out)


class _Tracking:
    """What a run with budgets keeps besides its spend: its own budget, and what its next call's estimate needs.

    Apart from :class:`RunCost` so that the usual run — no budget — holds none of it: a waiting run's
    memory is a target (ten thousand of them in flight), and these fields are 64 bytes of it.
    """

    __slots__ = ("first", "key", "outer", "own", "pending", "prev_in", "seen")

    def __init__(self, own: CostBudget | None, first: tuple[str, str, bool] | None) -> None:
        self.own = own
        #: The (provider, model, batch) the agent's first call goes to, when its run info names them.
        self.first = first
        #: Who answered the last call (batch or not): the next estimate's price.
        self.key: tuple[str | None, str | None, bool] | None = None
        #: The last call's prompt tokens, as reported.
        self.prev_in: int | None = None
        #: The conversation's length when the last call was sent.
        self.seen = 0
        #: The estimate of the call about to go (:meth:`RunCost.before`'s), for :meth:`RunCost.recheck`.
        self.pending: float | None = None
        #: The budget check that was current when the run entered its own (:meth:`RunCost.enter_check`).
        self.outer: BudgetCheck | None = None


class RunCost:
    """The run's own spend (its children's are read from their results), and the budgets it charges.

    :ivar budgets: every budget the run charges (:mod:`agentactors.gateway.cost_budget`); its children
        charge them too.
    :ivar armed: whether it charges any (the loop checks them around each call only then).
    """

    __slots__ = ("_track", "armed", "budgets", "spent", "unpriced")

    def __init__(self, limit: float | None = None) -> None:
        self.spent = _ZERO
        self.unpriced = 0  # responses of a model without a price
        self.budgets: tuple[CostBudget, ...] = ()
        #: Whether the run charges a budget: the loop then checks the budgets around each call (a budget's
        #: ``limit`` may be set while the run runs, so one without a limit is checked too).
        self.armed = False
        # The run's own budget and what the estimate needs: set by open() for a run with budgets only.
        self._track: _Tracking | None = None
        if limit is not None:
            self.open(limit)

    @property
    def limit(self) -> float | None:
        """The run's own ``cost_limit`` (``None`` without one)."""
        track = self._track
        own = track.own if track is not None else None
        return own.limit if own is not None else None

    def open(self, limit: Any, runtime: Any = None, parent: Sequence[CostBudget] = (), run_info: Any = None) -> None:
        """Set the run's budgets: its own ``limit`` (a number or a :class:`CostBudget`), its ``parent``'s,
        the ones entered around it, its ``runtime``'s.  ``run_info``: the agent's (the first call's model).

        :raises ValueError: a ``limit`` that is neither a non-negative number nor a budget.
        """
        scoped = entered()
        if limit is None and not parent and not scoped and getattr(runtime, "cost_limit", None) is None:
            return  # the usual run: nothing to charge (and nothing more to set up)
        checked = check_cost_limit(limit)
        own = checked if isinstance(checked, CostBudget) or checked is None else CostBudget(checked, name="run")
        found = [own] if own is not None else []
        found += parent
        found += scoped
        home = runtime_budget(runtime) if runtime is not None else None
        if home is not None:
            found.append(home)
        self.budgets = _unique(found)
        self.armed = True
        self._track = _Tracking(own, _first_model(run_info))

    def charge(self, response: LLMResponse) -> Cost | None:
        """Add ``response``'s cost, to the run and to its budgets; returns it (``None``: no price).

        A response that carries calls cut short on its way (``provider_data["cut_short"]``: a hedge's losing copy,
        :func:`~agentactors.pricing.with_cut_short`) has them charged too, each as the call it was (a budget's
        ``calls`` counts it); the cost returned — the ``llm.response`` event's — is then theirs and the answer's
        together (``None`` when a part is unpriced), its estimated part in :attr:`Cost.estimated`.
        """
        cost = response_cost(response)
        self._add(cost)
        budgets = self.budgets
        if budgets:
            for budget in budgets:
                budget.charge(cost)
            if cost is None:
                _warn_unpriced(response, budgets)
            track = self._track
            if track is not None:
                track.key = (response.provider, response.model, is_batch(response))
                track.prev_in = prompt_tokens(response.provider, response.usage)
        data = response.provider_data
        if data and CUT_SHORT in data:  # (most responses have no provider_data: one attribute test)
            return self._charge_cut(cut_short_of(response), cost)
        return cost

    def cut_short(self, request: LLMRequest) -> Cost | None:
        """Charge the call of ``request`` when it was cut short after it was sent; what it was charged.

        Called by the loop when the call ended without a response (cancelled, or failed): the layer that sent it
        noted it (:func:`~agentactors.pricing.note_cut_short`) as the cancellation passed through it; a call that
        was not sent — refused before sending, still waiting for a slot — was noted by nobody and costs nothing.
        Returns ``None`` when nothing was charged (or it had no price).
        """
        calls = take_cut_short(request)
        if not calls:
            return None
        return self._charge_cut(calls, _ZERO)

    def _add(self, cost: Cost | None) -> None:
        if cost is None:
            self.unpriced += 1
        else:
            self.spent = cost if self.spent is _ZERO else self.spent + cost

    def _charge_cut(self, calls: Sequence[CutShort], cost: Cost | None) -> Cost | None:
        """Charge each of ``calls`` to the run and its budgets; ``cost`` with theirs added (``None``: unpriced)."""
        total = cost
        for call in calls:
            part = call.cost()
            self._add(part)
            for budget in self.budgets:
                budget.charge(part)
            if part is None or total is None:
                total = None
            elif part.currency == total.currency:
                total = total + part
        return total

    def total(self, children: Sequence[Any] = ()) -> Cost | None:
        """The run's cost with its ``children``'s (their results), or ``None`` when a part is unpriced."""
        if self.unpriced:
            return None
        total = self.spent
        for child in children:
            cost = child.cost
            if cost is None:
                return None
            total = total + cost
        return total

    def passed(self, children: Sequence[Any] = ()) -> CostLimitExceededError | None:
        """The error that ends the run when a budget it charges is past its limit.

        ``children`` is not read: the runs a run's tools start charge its budgets as they spend.
        """
        for budget in self.budgets:
            if budget.passed:
                return self._error(budget, None)
        return None

    # -- before a call ------------------------------------------------------------------------------------

    def before(self, conversation: Sequence[Message], system: Message | None) -> CostLimitExceededError | None:
        """The error that ends the run before its next call: a budget past its limit already, or one the
        call's estimate (:meth:`estimate`) would take past it."""
        estimate: float | None = None
        estimated = False
        try:
            for budget in self.budgets:
                if budget.limit is None:
                    continue
                if budget.passed:
                    return self._error(budget, None)
                if budget.estimate:
                    if not estimated:
                        estimate, estimated = self.estimate(conversation, system), True
                    if estimate is not None and budget.would_pass(estimate):
                        return self._error(budget, estimate)
            return None
        finally:
            track = self._track
            if track is not None:
                track.seen = len(conversation)
                track.pending = estimate

    def enter_check(self) -> None:
        """Make this run's budgets the current budget check (:func:`~agentactors.gateway.ticket.enter_check`), for
        as long as the run runs, in its task: the ProviderActor asks :meth:`recheck` for a call that waited.

        Called by the loop for a run with budgets only (:attr:`armed`); :meth:`leave_check` undoes it.  What it
        replaces is kept with the run's tracking (no frame of the loop holds it: a waiting run's memory counts).
        """
        track = self._track
        if track is not None:
            track.outer = run_ticket.enter_check(self)

    def leave_check(self) -> None:
        """Undo :meth:`enter_check` (the run ends): the check it replaced is the current one again."""
        track = self._track
        if track is not None:
            run_ticket.leave_check(track.outer)
            track.outer = None

    def recheck(self) -> CostLimitExceededError | None:
        """:meth:`before` once more, for the call it let go, when that call *waited* for a ProviderActor's slot.

        The runs ahead in the queue spend the same budgets meanwhile: a budget past its limit now, or one the
        call's estimate (the one :meth:`before` made) would now take past it, ends the run — its call not sent.
        The ProviderActor asks it after the wait (:func:`~agentactors.gateway.ticket.current_check`; the loop
        makes a run with budgets the current check).  Kept, runs queued behind a shared budget sent their calls
        long after it was spent.
        """
        track = self._track
        pending = track.pending if track is not None else None
        for budget in self.budgets:
            if budget.limit is None:
                continue
            if budget.passed:
                return self._error(budget, None)
            if pending is not None and budget.estimate and budget.would_pass(pending):
                return self._error(budget, pending)
        return None

    def estimate(self, conversation: Sequence[Message], system: Message | None) -> float | None:
        """What the next call would cost, by the module docstring's estimate; ``None`` when it cannot be priced."""
        track = self._track
        if track is None:  # a run with no budget keeps nothing to estimate from
            return None
        key = track.key if track.key is not None else track.first
        if key is None:
            return None
        price = price_for(key[0], key[1], batch=key[2])
        if price is None:
            return None
        previous, seen = track.prev_in, track.seen
        if previous is not None and seen <= len(conversation):
            tokens_in = previous + message_tokens(conversation[seen:])
        else:  # the first call (or a conversation a handoff rewrote): all of it
            tokens_in = message_tokens(conversation) + (message_tokens((system,)) if system is not None else 0)
        # The floor: the output is not guessed (see the module docstring), so no run within its limit stops.
        return price.cost(Usage(tokens_in, 0)).total

    def _error(self, budget: CostBudget, estimate: float | None) -> CostLimitExceededError:
        if self._track is not None and budget is self._track.own:
            scope, who = "run", "the run"
        elif budget.name == "run":
            scope, who = "parent run", "a parent run"
        else:
            scope, who = budget.name, f"the {budget.name}"
        limit, spent, currency = budget.limit, budget.spent, budget.currency or "USD"
        assert limit is not None
        if estimate is None:
            message = f"{who} spent {spent:.6g} {currency}, past its cost_limit of {limit:g}"
        else:
            message = (
                f"the next model call (estimated at {estimate:.6g} {currency}) would take {who} past its "
                f"cost_limit of {limit:g} ({spent:.6g} spent): it was not sent"
            )
        return CostLimitExceededError(message, limit=limit, spent=spent, scope=scope, estimate=estimate)


def stop_before(state: Any) -> RunResult[Any] | None:
    """The run's result when it must not make its next call (:meth:`RunCost.before`), else ``None``.

    ``state`` is the run's :class:`~agentactors.loop.state.LoopState`.  Called by the loop before each
    step of a run with a limited budget: nothing of the step has happened yet.
    """
    error = state.cost.before(state.conversation, state.system)
    if error is None:
        return None
    result: RunResult[Any] = state.cost_stopped(error)
    return result
