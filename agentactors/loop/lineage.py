"""Runs started by runs: which run a delegated run works for, and what it gives back to it.

A tool that runs an agent (:meth:`Agent.as_tool <agentactors.Agent.as_tool>`, or any tool that awaits
``agent.run``) starts a *child* run inside its parent's tool step.  The parent does not pass anything
down by hand: while a step's tools run, the parent's :class:`RunLink` is the current one (a context
variable, carried into the tool's task by the executor's ask like the run's event sink and ticket), so
the child finds its parent when it starts:

* its events carry ``parent_run_id`` (its sink is made with it) and also reach the parent's recorders;
  its ``run.started`` says ``parent_step``, ``parent_call_id`` (when the delegating tool said which
  call it serves: :func:`calling`) and ``depth``;
* its :class:`~agentactors.loop.result.RunResult` is adopted by the parent when it finishes: it joins
  the parent's ``RunResult.children`` and its usage the parent's ``usage``;
* cancellation needs nothing: the child runs in the parent's tool task, so cancelling the parent
  cancels it; deadlines are inherited through the run's ticket (:mod:`agentactors.gateway.ticket`).

**One nesting limit.**  However a child starts — ``as_tool``, a plain tool awaiting ``agent.run`` of
the same agent or of one that calls it back — a run that would be more than :data:`MAX_DEPTH` runs deep
is refused before it starts (:func:`check_depth`: ``ToolDenied``, so the calling tool's result is
``denied`` with the reason, and its model reads it).  Without it a self-calling tool nested until
Python's recursion limit, the ``RecursionError`` became a tool error, the model called again, and the
tree grew faster than an outer cancel scope could end it.  (``as_tool(max_depth=)`` is a tighter
limit for one delegation, and ``as_tool(max_runs=)`` bounds how many runs one root's delegation tree
starts, counted on the root's link: :mod:`agentactors.agent.delegation`; handoffs do not nest: they go
on in the same run.)

A run whose tools never run pays nothing: the link is made at its first tool step.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Final

from ..errors import ToolDenied
from ..events import EventSink
from ..messages import Usage

__all__ = ["MAX_DEPTH", "Origin", "RunLink", "calling", "check_depth", "current", "enter", "leave"]

#: How deep runs may nest: a top-level run is depth 0, its child 1; a run deeper than this is refused.
MAX_DEPTH: Final = 8

_NO_USAGE = Usage()


class RunLink:
    """One run, as the runs it starts see it: its id, depth, step and sink, and what its children gave back.

    :ivar run_id: the parent's run id.
    :ivar depth: ``0`` for a run nobody started, its parent's plus one for a child.
    :ivar step: the parent's step whose tools are running.
    :ivar sink: the parent's event sink (its recorders receive the children's events too), or ``None``.
    :ivar runtime: the runtime the parent runs in (a child runs in the same one).
    :ivar children: the children's results, in the order they finished.
    :ivar usage: the children's usage, summed (their own children's included).
    :ivar budgets: the cost budgets the parent charges (:mod:`agentactors.loop.cost`): its children
        charge them too, as they spend.
    :ivar delegations: for the root of a delegation tree, the count of the runs its tree started
        (:mod:`agentactors.agent.delegation` keeps it, from its first delegation on); ``None`` until then.
        Kept here because the link is the one object that lives as long as the run and that its tool
        steps see.
    """

    __slots__ = ("budgets", "children", "delegations", "depth", "run_id", "runtime", "sink", "step", "usage")

    def __init__(
        self, run_id: str | None, depth: int, sink: EventSink | None, runtime: Any = None, budgets: tuple[Any, ...] = ()
    ) -> None:
        self.budgets = budgets
        self.run_id = run_id
        self.depth = depth
        self.sink = sink
        self.runtime = runtime
        self.step: int | None = None
        self.delegations: Any = None
        self.children: list[Any] = []
        self.usage = _NO_USAGE  # frozen: shared until a child adds its own
        # No Origin kept here: link -> origin -> link would be a reference cycle, so every run's link
        # would wait for the garbage collector instead of going with the run (W1 measured it).

    def adopt(self, result: Any) -> None:
        """Take a finished child's result: one more child, its usage added."""
        self.children.append(result)
        self.usage = self.usage + result.usage

    def __repr__(self) -> str:
        return f"RunLink(run_id={self.run_id!r}, depth={self.depth}, children={len(self.children)})"


class Origin:
    """Where a run starting now comes from: the parent's link and, when known, the call it serves."""

    __slots__ = ("call_id", "link")

    def __init__(self, link: RunLink, call_id: str | None = None) -> None:
        self.link = link
        self.call_id = call_id

    @property
    def parent_run_id(self) -> str | None:
        return self.link.run_id

    @property
    def depth(self) -> int:
        """The depth a run starting here has: its parent's plus one."""
        return self.link.depth + 1


_ORIGIN: contextvars.ContextVar[Origin | None] = contextvars.ContextVar("agentactors_run_origin", default=None)


def current() -> Origin | None:
    """Where a run started now would come from, or ``None`` outside any run's tool step."""
    return _ORIGIN.get()


def check_depth(origin: Origin | None) -> None:
    """Refuse a run starting at ``origin`` when it would nest deeper than :data:`MAX_DEPTH`.

    :raises ToolDenied: it would (raised inside the parent's tool: that call's status is ``denied``).
    """
    if origin is not None and origin.depth > MAX_DEPTH:
        raise ToolDenied(
            f"this would start a run {origin.depth} runs deep (under run {origin.parent_run_id}); runs nest at "
            f"most {MAX_DEPTH} deep: answer from what you have instead of starting another run"
        )


def enter(link: RunLink) -> contextvars.Token[Origin | None]:
    """Make ``link`` the parent of runs started until :func:`leave` (a step's tools are about to run)."""
    return _ORIGIN.set(Origin(link))


def leave(token: contextvars.Token[Origin | None]) -> None:
    """Undo :func:`enter` (same context)."""
    _ORIGIN.reset(token)


@contextmanager
def calling(call_id: str) -> Iterator[Origin | None]:
    """Within the block, runs started are children of the current parent *for the call* ``call_id``.

    A delegating tool wraps its ``agent.run`` in it, so the child's ``run.started`` names the call.
    Outside a parent's tool step it does nothing.
    """
    origin = _ORIGIN.get()
    if origin is None:
        yield None
        return
    token = _ORIGIN.set(Origin(origin.link, call_id))
    try:
        yield _ORIGIN.get()
    finally:
        _ORIGIN.reset(token)
