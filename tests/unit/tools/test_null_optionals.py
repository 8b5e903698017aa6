"""``null`` for an optional parameter is read as omitted: the default applies.

OpenAI's strict mode (``strict_tools``) requires every property, so the model sends ``null`` for an optional
parameter it leaves out; models outside strict mode often do the same.  A parameter whose own type accepts
``None`` (``X | None``) keeps the ``null``: there it is a value.  A required one is still refused.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

import pytest
from pydantic import BaseModel

from agentactors import Agent, LLMRequest, ScriptedProvider, ToolCall, tool
from agentactors.messages import ToolSpec
from agentactors.tools import ToolStatus
from agentactors.tools.executor import ToolExecutorActor
from agentactors.tools.registry import Tool

pytestmark = pytest.mark.anyio

ran: list[dict[str, Any]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()


class Filter(BaseModel):
    field: str
    exact: bool = False


class Page(TypedDict):
    size: int
    cursor: NotRequired[str]


@tool
def search(query: str, limit: int = 10, where: Filter | None = None, note: str | None = "n") -> str:
    """Search."""
    ran.append({"query": query, "limit": limit, "where": where, "note": note})
    return f"limit={limit}"


@tool
async def fetch(query: str, limit: int = 10, page: Page | None = None) -> str:
    """Fetch (async, its arguments go to the function as they are)."""
    ran.append({"query": query, "limit": limit, "page": page})
    return f"limit={limit}"


@tool
def count(query: str, limit: int = 10) -> str:
    """Count (sync, numbers only)."""
    ran.append({"query": query, "limit": limit})
    return f"limit={limit}"


async def take(**arguments: Any) -> str:
    ran.append(arguments)
    return "took"


SPEC = ToolSpec(
    "remote",
    "An MCP-style tool with a hand-written schema.",
    {
        "type": "object",
        "properties": {"q": {"type": "string"}, "n": {"type": "integer"}, "tag": {"type": ["string", "null"]}},
        "required": ["q"],
    },
)


def executor() -> ToolExecutorActor:
    return ToolExecutorActor([search, fetch, count, Tool.from_spec(SPEC, take)])


async def test_null_for_an_optional_parameter_is_omitted_and_its_default_applies() -> None:
    result = await executor().execute_one(
        ToolCall("c1", "search", {"query": "x", "limit": None, "where": None, "note": None})
    )
    assert result.status is ToolStatus.ok, result.content
    # limit: int takes no null (the default applies); where and note accept None (kept: a value there).
    assert ran == [{"query": "x", "limit": 10, "where": None, "note": None}]


async def test_null_inside_an_optional_object_is_omitted_too() -> None:
    call = ToolCall("c1", "search", {"query": "x", "limit": 3, "where": {"field": "f", "exact": None}, "note": "m"})
    result = await executor().execute_one(call)
    assert result.status is ToolStatus.ok, result.content
    assert ran == [{"query": "x", "limit": 3, "where": Filter(field="f", exact=False), "note": "m"}]
    assert call.arguments["where"] == {"field": "f", "exact": None}  # the call itself is not changed


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("fetch", {"query": "x", "limit": None}, {"query": "x", "limit": 10, "page": None}),
        ("fetch", {"query": "x", "page": {"size": 2, "cursor": None}},
         {"query": "x", "limit": 10, "page": {"size": 2}}),
        ("count", {"query": "x", "limit": None}, {"query": "x", "limit": 10}),
        ("remote", {"q": "x", "n": None, "tag": None}, {"q": "x", "tag": None}),
    ],
)
async def test_every_kind_of_tool_reads_null_optionals_as_omitted(
    name: str, arguments: dict[str, Any], expected: dict[str, Any]
) -> None:
    result = await executor().execute_one(ToolCall("c1", name, arguments))
    assert result.status is ToolStatus.ok, result.content
    assert ran == [expected]


async def test_null_for_a_required_parameter_is_still_refused() -> None:
    result = await executor().execute_one(ToolCall("c1", "search", {"query": None, "limit": None}))
    assert result.status is ToolStatus.invalid and ran == []
    assert "query" in result.content and "limit" not in result.content.split("Fix the arguments")[0]


def test_validate_reads_null_optionals_as_omitted() -> None:
    assert search.validate({"query": "x", "limit": None}) == []
    assert [i.path for i in search.validate({"query": "x", "limit": "many"})] == ["limit"]


async def test_a_run_whose_model_sends_null_for_an_optional_parameter_gets_the_default() -> None:
    seen: list[str] = []

    def model(request: LLMRequest) -> Any:
        last = request.messages[-1]
        if last.role == "user":
            # What a strict tool's answer looks like: every property sent, the ones left out as null.
            return [ToolCall.from_raw("c1", "search", '{"query": "x", "limit": null, "where": null, "note": null}')]
        seen.append(last.content)
        return "done"

    result = await Agent(ScriptedProvider(model), tools=[search]).run("search")
    assert result.content == "done"
    assert seen == ["limit=10"]
    assert ran == [{"query": "x", "limit": 10, "where": None, "note": None}]
