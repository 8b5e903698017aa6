"""A run's ticket: what a run carries to the places it waits — its age, its priority class, its deadline.

A run waits in a few places that know nothing of runs: the ProviderActor's queue (which waiting
request goes first), ``with_retry``'s backoff (whether another wait still fits), and any await a
deadline must cut short.  So the run's ticket travels the way the run's event sink does: in a
context variable, installed for as long as the run works, and carried by every actor ``ask`` into
the handler (an ask runs its handler with the asker's contextvars) and by every task the run
starts.  Whoever decides reads :func:`current_ticket`; with no run, it is ``None``.

* ``order`` is the run's age: a number from one process-wide counter, taken when the run starts.
  A request asked outside any run takes a number when it arrives, from the same counter, so
  requests of runs and lone requests compare on one scale (lower = older).
* ``priority`` is the run's class: higher is served first; ``0`` unless the run said otherwise.
* ``deadline`` is absolute, on ``anyio.current_time()``'s clock (virtual clocks apply), or ``None``.

A run started while another run's ticket is current — a tool that runs an agent (delegation), a
session turn driven from a run — is that run's child: it keeps the parent's age (work done for a run
in progress is that run's work), takes the earlier of its own deadline and the parent's, and its own
priority if it gave one, else the parent's.  Children therefore inherit deadlines without being told.

A run with cost budgets also carries its **budget check** (:class:`BudgetCheck`) the same way, in a context
variable of its own: the ProviderActor asks it again after a request of the run *waited* for admission — the
budget the run checked before it asked may have been spent by other runs meanwhile.  Not on the ticket: a child
run shares its parent's ticket object (above), but has budgets of its own.  A run without budgets sets none.
"""

from __future__ import annotations

import contextvars
import itertools
from typing import Final, Protocol

import anyio

__all__ = [
    "BudgetCheck",
    "RunTicket",
    "check_deadline",
    "check_priority",
    "current_check",
    "current_ticket",
    "enter",
    "enter_check",
    "leave",
    "leave_check",
    "next_order",
    "remaining",
    "start_ticket",
]

# One scale for runs and lone requests: a run's number is its start, a lone request's its arrival.
_ORDER: Final = itertools.count(1)

_TICKET: contextvars.ContextVar[RunTicket | None] = contextvars.ContextVar("agentactors_run_ticket", default=None)


class BudgetCheck(Protocol):
    """What a run with cost budgets answers when its request waited for admission (the loop's ``RunCost``)."""

    def recheck(self) -> Exception | None:
        """The error that ends the run now — a budget it charges spent meanwhile — or ``None``: the call may go."""
        ...


_CHECK: contextvars.ContextVar[BudgetCheck | None] = contextvars.ContextVar("agentactors_budget_check", default=None)


class RunTicket:
    """One run's age, priority class and deadline (see the module docstring).

    :ivar order: the run's age on the process-wide scale (lower = older).
    :ivar priority: the run's class; higher is served first.
    :ivar deadline: when the run must end, on ``anyio.current_time()``'s clock, or ``None``.
    :ivar budget: the seconds the deadline was set from (the run's own ``deadline=``, or its parent's).
    :ivar calls: model calls the run (and the children sharing its ticket) made through ProviderActors
        with admission bounds; counted by their schedulers, which tell a run's first call (a new run
        asking in) from a run in progress.  The only field that changes.
    """

    __slots__ = ("budget", "calls", "deadline", "order", "priority")

    def __init__(self, order: int, priority: int = 0, deadline: float | None = None, budget: float | None = None):
        self.order = order
        self.priority = priority
        self.deadline = deadline
        self.budget = budget
        self.calls = 0

    def __repr__(self) -> str:
        return f"RunTicket(order={self.order}, priority={self.priority}, deadline={self.deadline!r})"


def next_order() -> int:
    """A fresh number on the age scale: what a request asked outside any run is ordered by."""
    return next(_ORDER)


def current_ticket() -> RunTicket | None:
    """The ticket of the run this code works for, or ``None`` outside any run."""
    return _TICKET.get()


def remaining() -> float | None:
    """Seconds left before the current run's deadline (negative once past), or ``None`` without one."""
    ticket = _TICKET.get()
    if ticket is None or ticket.deadline is None:
        return None
    return ticket.deadline - anyio.current_time()


def start_ticket(deadline: float | None = None, priority: int | None = None) -> RunTicket:
    """The ticket of a run starting now, with ``deadline`` seconds and ``priority``; a child of the current run.

    Call it inside the event loop (a deadline is measured on ``anyio.current_time()``).

    :raises ValueError: ``deadline`` is not a positive number of seconds.
    :raises TypeError: ``priority`` is not an int.
    """
    parent = _TICKET.get()
    if deadline is None and priority is None:
        if parent is None:
            return RunTicket(next(_ORDER))  # the common case: one counter step, one small object
        return parent  # a child with nothing of its own: its parent's ticket is its own
    check_deadline(deadline)
    check_priority(priority)
    absolute = None if deadline is None else anyio.current_time() + deadline
    budget = deadline
    if parent is None:
        return RunTicket(next(_ORDER), priority or 0, absolute, budget)
    if parent.deadline is not None and (absolute is None or parent.deadline < absolute):
        absolute, budget = parent.deadline, parent.budget
    return RunTicket(parent.order, parent.priority if priority is None else priority, absolute, budget)


def check_deadline(deadline: float | None) -> None:
    """:raises ValueError: ``deadline`` is neither ``None`` nor a positive, finite number of seconds."""
    if deadline is None:
        return
    if isinstance(deadline, bool) or not isinstance(deadline, int | float) or not 0 < deadline < float("inf"):
        raise ValueError(f"deadline must be a positive number of seconds or None, not {deadline!r}")


def check_priority(priority: int | None) -> None:
    """:raises TypeError: ``priority`` is neither ``None`` nor an int."""
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise TypeError(f"priority must be an int (higher is served first) or None, not {priority!r}")


def enter(ticket: RunTicket) -> RunTicket | None:
    """Make ``ticket`` the current one until :func:`leave` is called with what this returns (same context).

    Returns the ticket it replaces (``None``: none), not a ``contextvars.Token``: a run keeps what this
    returns for as long as it runs, and a token is an object of its own (72 B every waiting run would hold)
    where the previous ticket is one that exists already.
    """
    previous = _TICKET.get()
    _TICKET.set(ticket)
    return previous


def leave(previous: RunTicket | None) -> None:
    """Make ``previous`` — what :func:`enter` returned — the current ticket again."""
    _TICKET.set(previous)


def current_check() -> BudgetCheck | None:
    """The budget check of the run this code works for, or ``None`` (no run, or a run without budgets)."""
    return _CHECK.get()


def enter_check(check: BudgetCheck) -> BudgetCheck | None:
    """Make ``check`` the current budget check until :func:`leave_check` is called with what this returns."""
    previous = _CHECK.get()
    _CHECK.set(check)
    return previous


def leave_check(previous: BudgetCheck | None) -> None:
    """Make ``previous`` — what :func:`enter_check` returned — the current budget check again."""
    _CHECK.set(previous)
