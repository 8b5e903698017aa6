"""Every source of an agent's tools shares one namespace: a name held twice — by a plain tool, a delegation
(``as_tool``), a handoff, the output tool or ``suggest_followups`` — is ``ToolNameClashError`` (a
``ValueError``) naming both sides, raised by ``Agent(...)``.  (Toolsets: tests/integration/test_mcp_edges.py.)"""

from __future__ import annotations

import dataclasses

import pytest

from agentactors import Agent, ScriptedProvider, ToolOutput, tool
from agentactors.tools import ToolNameClashError


@dataclasses.dataclass
class Answer:
    text: str


def _model() -> ScriptedProvider:
    return ScriptedProvider(["never"])


@tool(name="transfer_to_billing")
def transfer_to_billing() -> str:
    """Looks like a handoff."""
    return "no"


@tool(name="billing")
def billing_lookup() -> str:
    """Looks like a delegation."""
    return "no"


@tool(name="final_result")
def final_result() -> str:
    """Looks like the output tool."""
    return "no"


@tool(name="suggest_followups")
def suggest() -> str:
    """Looks like the built-in."""
    return "no"


def test_a_plain_tool_and_a_handoff() -> None:
    billing = Agent(_model(), name="billing")
    with pytest.raises(
        ToolNameClashError,
        match=r"'transfer_to_billing': one from a plain tool of the agent, one from the handoff to agent 'billing'",
    ):
        Agent(_model(), tools=[transfer_to_billing], handoffs=[billing])


def test_a_plain_tool_and_a_delegation() -> None:
    billing = Agent(_model(), name="billing")
    with pytest.raises(ToolNameClashError, match=r"'billing': one from a plain tool of the agent, one from the "
                       r"delegation to agent 'billing' \(as_tool\)"):
        Agent(_model(), tools=[billing_lookup, billing.as_tool()])


def test_a_plain_tool_and_the_output_tool() -> None:
    with pytest.raises(ToolNameClashError, match=r"'final_result': one from a plain tool of the agent, one from the "
                       r"output tool of output_type"):
        Agent(_model(), tools=[final_result], output_type=Answer)
    with pytest.raises(ToolNameClashError, match=r"'transfer_to_x': one from the handoff to agent 'x', one from the "
                       r"output tool"):
        Agent(_model(), handoffs=[Agent(_model(), name="x")], output_type=ToolOutput(Answer, name="transfer_to_x"))


def test_a_plain_tool_and_the_followups_tool() -> None:
    with pytest.raises(ToolNameClashError, match=r"'suggest_followups': one from a plain tool of the agent, one "
                       r"from the built-in suggest_followups tool"):
        Agent(_model(), tools=[suggest], followups=True)


def test_the_clash_is_still_a_value_error() -> None:
    with pytest.raises(ValueError):
        Agent(_model(), tools=[final_result, final_result])
