"""``ToolContext[MyDeps]``: a tool's context parameter typed by what its run's ``deps`` is.

The parameter is still the tool's context — left out of the schema the model sees, filled by the executor — however
it is spelt: ``ToolContext[Db]``, ``ToolContext[Db] | None``.  ``tests/typing/user_program.py`` checks that mypy
knows ``ctx.deps``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from agentactors import Agent, Runtime, ScriptedProvider, Tool, ToolCall, ToolContext, tool

pytestmark = pytest.mark.anyio


@dataclass
class Db:
    dsn: str


@tool
async def typed(customer: str, ctx: ToolContext[Db]) -> str:
    """Look a customer up."""
    return f"{ctx.deps.dsn}/{customer}@{ctx.call_id}"


@tool
def optional(customer: str, ctx: ToolContext[Db] | None = None) -> str:
    """Look a customer up, also without a context."""
    return customer if ctx is None else f"{ctx.deps.dsn}/{customer}"


@pytest.mark.parametrize("fn", [typed, optional], ids=["typed", "optional"])
async def test_a_typed_context_is_the_tools_context_not_an_argument(fn: Tool[..., Any]) -> None:
    assert fn.takes_context is True
    assert list(fn.parameters["properties"]) == ["customer"]
    agent = Agent(
        ScriptedProvider(
            lambda request: request.messages[-1].content
            if request.messages[-1].role == "tool"
            else [ToolCall("c1", fn.name, {"customer": "ada"})]
        ),
        tools=[fn],
    )
    async with Runtime():
        result = await agent.run("who?", deps=Db("postgres://db"))
    assert result.content.startswith("postgres://db/ada"), result


def test_a_typed_context_keeps_deps_out_of_its_repr() -> None:
    ctx = ToolContext[Db](call_id="c1", tool_name="t", deps=Db("postgres://secret"))
    assert "secret" not in repr(ctx) and ctx.deps == Db("postgres://secret")
