"""Delegation: an agent as a tool of another (``agent.as_tool()``), its run a child of the caller's run.

The tool takes one string, ``input`` — the child's prompt, written by the parent's model — and answers
with the child's answer: its ``content``, or its typed output (rendered like any tool result).  The
child runs in the parent's runtime, sharing its ProviderActors and their budgets, with the parent's
``deps``, inside the parent's tool step, so:

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
  ``max_depth`` is refused with status ``denied``
  (:class:`~agentactors.errors.ToolDenied`), before it starts.

A child cannot pause for approval (its caller's model is waiting for an answer in the same step): a
child that asks for one is an ``error`` result naming the calls.  A blank ``input`` starts no child (an
empty prompt is a request vendors refuse): the call's ``error`` result asks the model to write one.

The agent is used through its public ``run`` only: this module does not import the agent layer, which
imports it.
"""

from __future__ import annotations

from typing import Any

from ..errors import DelegationError, ModelRetry, ToolDenied
from ..loop import lineage
from ..tools.registry import Tool, ToolContext
from .handoffs import tool_name_for

__all__ = ["AgentTool", "as_tool"]


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

    :raises TypeError: ``agent`` has no ``run`` (a str too: a name is how handoffs name agents); ``name`` is
        not a str; ``max_depth`` is not an int.
    :raises ValueError: no ``name`` for an agent without one, or whose name holds nothing a tool name may;
        ``max_depth`` outside 1 .. :data:`~agentactors.loop.lineage.MAX_DEPTH`; an invalid tool name.
    """

    __slots__ = ("agent", "max_depth")

    def __init__(self, agent: Any, *, name: str | None = None, description: str | None = None, max_depth: int = 4):
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
                raise ToolDenied(f"delegating to {shown!r} would nest {depth} runs deep; the limit is {max_depth}")
            runtime = origin.link.runtime if origin is not None else None
            with lineage.calling(ctx.call_id):
                result = await agent.run(input, runtime=runtime, deps=ctx.deps)
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

    def __repr__(self) -> str:
        return f"<AgentTool {self.name!r} -> {getattr(self.agent, 'name', None)!r}>"


def as_tool(agent: Any, *, name: str | None = None, description: str | None = None, max_depth: int = 4) -> AgentTool:
    """``agent`` as a tool (see the module docstring and :meth:`Agent.as_tool <agentactors.Agent.as_tool>`)."""
    return AgentTool(agent, name=name, description=description, max_depth=max_depth)
