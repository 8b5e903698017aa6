"""Delegation: an agent as a tool of another (``agent.as_tool()``), its run a child of the caller's run.

The tool takes one string, ``input`` — the child's prompt, written by the parent's model — and answers
with the child's answer: its ``content``, or its typed output (rendered like any tool result).  The
child runs in the parent's runtime, sharing its ProviderActors and their budgets, with the parent's
``deps`` and ``input_key`` (``ToolContext.input_key``), inside the parent's tool step, so:

* its events carry ``parent_run_id`` and reach the parent's recorders; its ``run.started`` names the
  parent's step and call (:mod:`agentactors.loop.lineage`);
* its result joins the parent's ``RunResult.children``, its usage the parent's ``usage`` and its cost the
  parent's ``cost`` (``None`` when either had a call without a price);
* it spends its parent's money: it charges the parent's cost budgets as it goes (the parent's
  ``cost_limit``, its session's, its runtime's: :mod:`agentactors.loop.cost`) and is stopped by them;
* cancelling the parent cancels it, and the parent's deadline bounds it (:mod:`agentactors.gateway.ticket`);
* a child that ends without an answer (a provider failure, a failed output, an error; a cancellation
  through its own handle; its step limit reached with nothing said) is the call's ``error`` result with a
  concise reason (:class:`~agentactors.errors.DelegationError`); one that would nest deeper than
  ``max_depth``, or start more than ``max_runs`` runs in its tree, is refused with status ``denied``
  (:class:`~agentactors.errors.DelegationLimitError`, a ``ToolDenied``) before it starts, and a
  ``delegation.refused`` event says so.

**How many runs one tree may start.**  Depth alone bounds a tree only exponentially: a model that calls
10 tools a step at each of 8 levels could start 10**8 runs, and only a deadline, a cost budget or a
cancel scope the user happened to set would stop it.  So every delegation also counts against
``max_runs`` (default :data:`MAX_RUNS`): the runs started through ``as_tool`` tools anywhere under one
*root* run — the run no delegation started: its own calls over all its steps, parallel ones included,
its children's, their children's, and the calls made after a handoff (a handoff starts no run: the
run goes on, and so does its count).  Each tool checks the tree's count against its own ``max_runs``,
as it checks the depth against its own ``max_depth``.  The count lives with the root (its lineage link,
made at its first tool step) and reaches the runs below it in a context variable set around each child
run — with that child's depth: a run a plain tool starts under the child (one level deeper, in the same
context) is no delegation's, so its own ``as_tool`` calls start a count of their own, as a root's do — so:

* a run that never delegates pays nothing (nothing is made or read until a delegation);
* parallel calls share it exactly: the check and the increment have no ``await`` between them, and a
  tree runs on one event loop;
* a started run stays counted, even if it is cancelled or fails (it started, and may have spent);
  a refused one is not counted;
* another root run — the same agent run again, or at the same time — has its own count.

A durable run (``docs/durability.md``) counts the runs the *process* starts: a replay runs no tool, so it
counts and refuses nothing; a recovered tree counts the children its cut steps start again (each once: a
child served from its recording is started once), not those of the steps already committed, which do
not run again — so recovery never refuses a child the crashed process had started, and a tree that
crashes and is recovered may start up to ``max_runs`` again in the recovering process.

A child cannot pause for approval (its caller's model is waiting for an answer in the same step): a
child that asks for one is an ``error`` result naming the calls.  A blank ``input`` starts no child (an
empty prompt is a request vendors refuse): the call's ``error`` result asks the model to write one.

The agent is used through its public ``run`` only: this module does not import the agent layer, which
imports it.
"""

from __future__ import annotations

import contextvars
from typing import Any, Final

from ..errors import DelegationError, DelegationLimitError, ModelRetry
from ..loop import lineage
from ..tools.registry import Tool, ToolContext
from .handoffs import tool_name_for

__all__ = ["MAX_RUNS", "MAX_RUNS_LIMIT", "AgentTool", "as_tool"]

#: How many runs one delegation tree may start by default (``as_tool(max_runs=)``).  Well above what a
#: real multi-agent app starts for one request — an orchestrator sending a few to a few dozen workers, each
#: asking a helper or two: tens of runs — and far below a runaway's: a model fanning out 10 calls a step
#: reaches it at the third level.  At a model call or a few per run, it bounds one request's worst case to
#: hundreds of calls, not 10**8.
MAX_RUNS: Final = 256

#: The largest ``max_runs`` accepted: a tree of more runs than this is a batch (``rt.run_many``), not one
#: request's delegations, and a larger bound would be no bound.
MAX_RUNS_LIMIT: Final = 10_000


class _Tree:
    """The count of the runs one delegation tree started: one per root run, shared by every run under it."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = 0


#: The tree a delegated run belongs to and that run's depth, set around each child run (so its tool steps see
#: it); ``None`` outside any.  The depth tells the child from a run a plain tool started under it, which sees the
#: same context one level deeper and is a root (no delegation started it): its tree hangs on its lineage link.
_TREE: contextvars.ContextVar[tuple[_Tree, int] | None] = contextvars.ContextVar(
    "agentactors_delegation_tree", default=None
)


def _tree(origin: lineage.Origin | None) -> _Tree:
    """The tree a delegation starting at ``origin`` counts in: that of the delegated run it is made in, or — in a
    root run — a new one hung on the root's link at its first delegation, kept for its next steps."""
    held = _TREE.get()
    if origin is None:  # the tool called outside any run's tool step: the call is its own root
        return held[0] if held is not None else _Tree()
    link = origin.link
    if held is not None and held[1] == link.depth:  # made in the delegated run itself (a handoff keeps its depth)
        return held[0]
    tree: _Tree | None = link.delegations
    if tree is None:
        tree = link.delegations = _Tree()
    return tree


def _refuse(ctx: ToolContext, error: DelegationLimitError) -> DelegationLimitError:
    """``error``, once the run's recorders were told (``delegation.refused``): the refusal is the event."""
    data = {k: v for k in ("max_runs", "started", "max_depth", "depth") if (v := getattr(error, k)) is not None}
    ctx.emit("delegation.refused", agent=error.agent, limit=error.limit, **data)
    return error


def _runs(count: int) -> str:
    """``count`` runs, in words: "1 run", "256 runs" (the refusal the calling model reads)."""
    return f"{count} run" if count == 1 else f"{count} runs"


def _unanswered(result: Any) -> bool:
    """Whether a child ended without an answer its caller's model could read as one.

    Besides a failure: a child cancelled through its own handle (``rt.run_ref(child).cancel()``), whose
    content is ``""``; and one stopped at its ``max_steps`` (or ``max_empty_steps``) with nothing said yet —
    ``""``, or a typed output of ``None`` (rendered ``null``).  A bounded child that had written an answer
    answers with it, as a bounded run does.
    """
    if result.generation_failed or result.error is not None or result.cancelled:
        return True
    if not result.bounded:
        return False
    output = result.output
    return output is None or (isinstance(output, str) and not output.strip())


def _reason(result: Any) -> str:
    """Why ``result`` is no answer, in a line — naming the agent that failed when a handoff had taken the child
    elsewhere (the caller knows only the agent it asked)."""
    reason = _why(result)
    if result.handoffs:
        reason += f" (after a handoff to agent {result.agent!r})"
    return reason


def _why(result: Any) -> str:
    error = result.error
    if error is None:
        if result.generation_failed:
            return "the provider stack gave up"
        if result.cancelled:
            return "it was cancelled"
        if result.bounded:
            return f"it stopped at its step limit after {result.steps} steps without an answer"
        return "no answer"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    if len(text) > 300:
        text = text[:299] + "…"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class AgentTool(Tool[..., Any]):
    """The tool :meth:`Agent.as_tool <agentactors.Agent.as_tool>` builds; calling it runs :attr:`agent`.

    :ivar agent: the agent the tool runs (any object with an async ``run``; in practice an ``Agent``).
    :ivar max_depth: how deep delegation may nest through this tool (a top-level run's child is depth 1).

    :ivar max_runs: how many runs the delegation tree of the root run may have started for a call through
        this tool to start one more (the module docstring tells what a tree counts).

    :raises TypeError: ``agent`` has no ``run`` (a str too: a name is how handoffs name agents); ``name`` is
        not a str; ``max_depth`` or ``max_runs`` is not an int (a bool neither).
    :raises ValueError: no ``name`` for an agent without one, or whose name holds nothing a tool name may;
        ``max_depth`` outside 1 .. :data:`~agentactors.loop.lineage.MAX_DEPTH`; ``max_runs`` outside
        1 .. :data:`MAX_RUNS_LIMIT`; an invalid tool name.
    """

    __slots__ = ("agent", "max_depth", "max_runs")

    def __init__(
        self,
        agent: Any,
        *,
        name: str | None = None,
        description: str | None = None,
        max_depth: int = 4,
        max_runs: int = MAX_RUNS,
    ):
        # Each checked here, when the tool is made: found at the first call, a bad one is an error the calling
        # model reads (an AttributeError, a tool name of '') far from the line that made it.
        if isinstance(agent, str) or not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"as_tool() runs an Agent (an object with an async run()), not {type(agent).__name__}"
                + (" (a name is how a handoff names its target, not a delegation)" if isinstance(agent, str) else "")
            )
        if name is not None and not isinstance(name, str):
            raise TypeError(f"as_tool(): name must be a str or None, not {type(name).__name__}")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int):
            raise TypeError(f"max_depth must be an int, not {type(max_depth).__name__}")
        if not 1 <= max_depth <= lineage.MAX_DEPTH:
            # A larger one would promise levels no run reaches: every run is refused past lineage.MAX_DEPTH.
            raise ValueError(
                f"max_depth must be a positive int, at most {lineage.MAX_DEPTH} (runs nest no deeper), "
                f"not {max_depth!r}"
            )
        if isinstance(max_runs, bool) or not isinstance(max_runs, int):
            raise TypeError(f"max_runs must be an int, not {type(max_runs).__name__}")
        if not 1 <= max_runs <= MAX_RUNS_LIMIT:
            raise ValueError(
                f"max_runs must be a positive int, at most {MAX_RUNS_LIMIT} (a larger tree is a batch: "
                f"rt.run_many), not {max_runs if abs(max_runs) < 10**12 else 'a larger one'}"
            )
        label = getattr(agent, "name", None)
        if name is None and not label:
            raise ValueError("as_tool() needs name= for an agent without a name")
        tool_name = name if name is not None else tool_name_for("", str(label))
        if not tool_name:
            raise ValueError(
                f"the agent name {label!r} has no letter or digit a tool name may hold (ASCII letters, digits, "
                "'_', '-'): give the tool one, as_tool(name='...')"
            )
        shown = label or tool_name

        async def delegate(input: str, ctx: ToolContext) -> Any:
            """Args:
            input: the request for the agent, complete in itself: it sees nothing else of this conversation.
            """
            if not input.strip():
                # No child for it: an empty prompt is a request vendors refuse, and the model could not tell why.
                raise ModelRetry(
                    f"`input` is empty: write the whole request for the {shown} agent in it (it sees nothing else "
                    "of this conversation)"
                )
            origin = lineage.current()
            depth = origin.depth if origin is not None else 1
            if depth > max_depth:
                raise _refuse(
                    ctx,
                    DelegationLimitError(
                        shown,
                        "depth",
                        f"delegating to {shown!r} would nest {depth} runs deep; the limit is {max_depth}",
                        max_depth=max_depth,
                        depth=depth,
                    ),
                )
            tree = _tree(origin)
            # Checked and counted with no await between: parallel calls cannot both take the last run.
            if tree.started >= max_runs:
                raise _refuse(
                    ctx,
                    DelegationLimitError(
                        shown,
                        "runs",
                        f"delegating to {shown!r} would start one more run in a delegation tree that has started "
                        f"{_runs(tree.started)}; the limit is {_runs(max_runs)}: answer from what you have instead "
                        "of delegating again",
                        max_runs=max_runs,
                        started=tree.started,
                    ),
                )
            tree.started += 1
            runtime = origin.link.runtime if origin is not None else None
            token = _TREE.set((tree, depth if origin is not None else 0))
            try:
                with lineage.calling(ctx.call_id):
                    # The parent's input key too: the child serves the same input, and a tool deduplicating on
                    # it (docs/ray.md) must tell two parent inputs apart, and know the same one run again.
                    result = await agent.run(input, runtime=runtime, deps=ctx.deps, input_key=ctx.input_key)
            finally:
                _TREE.reset(token)
            if result.paused:
                names = ", ".join(c.name for c in result.pending_approvals)
                raise DelegationError(
                    shown, f"it asked for approval ({names}), which a delegated run cannot wait for"
                )
            if _unanswered(result):
                raise DelegationError(shown, _reason(result))
            return result.output

        super().__init__(
            delegate,
            name=tool_name,
            description=description
            if description is not None
            else f"Ask the {shown} agent. It answers with its result; give it everything it needs in `input`.",
        )
        self.agent = agent
        self.max_depth = max_depth
        self.max_runs = max_runs

    def __repr__(self) -> str:
        return f"<AgentTool {self.name!r} -> {getattr(self.agent, 'name', None)!r}>"


def as_tool(
    agent: Any,
    *,
    name: str | None = None,
    description: str | None = None,
    max_depth: int = 4,
    max_runs: int = MAX_RUNS,
) -> AgentTool:
    """``agent`` as a tool (see the module docstring and :meth:`Agent.as_tool <agentactors.Agent.as_tool>`)."""
    return AgentTool(agent, name=name, description=description, max_depth=max_depth, max_runs=max_runs)
