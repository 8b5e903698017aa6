"""The agent layer: :class:`Agent`, the handle of a run (:class:`AgentRun`), batches, delegation and handoffs.

``core``
    Agent: an immutable configuration that runs the tool loop in a runtime.
``run``
    AgentRun: a streamed run's handle (its events, ``text_stream``, ``partial_output``).
``batch``
    ``run_many`` / ``as_completed``'s machinery: one result per input, whatever a run raises.
``delegation``
    ``agent.as_tool()``: an agent as another's tool, its run a child of the caller's.
``handoffs``
    ``handoff()``: a tool that hands a run to another agent.
"""

from __future__ import annotations

from .core import Agent, AsCompleted, Prompt, as_completed, run_many
from .delegation import AgentTool, as_tool
from .handoffs import Handoff, handoff
from .run import AgentRun

__all__ = [
    "Agent",
    "AgentRun",
    "AgentTool",
    "AsCompleted",
    "Handoff",
    "Prompt",
    "as_completed",
    "as_tool",
    "handoff",
    "run_many",
]
