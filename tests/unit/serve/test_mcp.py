"""mcp_server in process (the SDK's in-memory connection): what each tool lists and answers."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from mcp import Client

from agentactors import Agent, ScriptedProvider, ToolDenied, tool
from agentactors.errors import ErrorKind, ProviderError
from agentactors.serve import mcp_server

pytestmark = pytest.mark.anyio


@attrs.frozen
class Verdict:
    label: str
    score: float


@tool
def search(query: str, limit: int = 3) -> dict[str, Any]:
    """Search the catalogue.

    :param query: what to look for.
    """
    return {"query": query, "hits": [f"{query}-{i}" for i in range(limit)]}


@tool
def guarded(path: str) -> str:
    """Read a file, or refuse."""
    raise ToolDenied(f"{path} is outside the workspace")


def hello(name: str) -> str:
    """Greet someone."""
    return f"hello {name}"


async def test_tools_keep_their_schemas_and_agents_take_input() -> None:
    agent = Agent(ScriptedProvider(["ok"]), name="helper")
    async with Client(mcp_server([agent, search, hello])) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert list(listed) == ["helper", "search", "hello"]
    assert listed["search"].input_schema == search.parameters
    assert listed["search"].description == search.description
    assert listed["helper"].input_schema["required"] == ["input"]
    assert listed["hello"].input_schema["properties"] == {"name": {"type": "string"}}


async def test_an_agents_answer_is_text_and_a_typed_one_also_structured() -> None:
    text_agent = Agent(ScriptedProvider(["plain answer"]), name="text")
    typed = Agent(ScriptedProvider(['{"label": "spam", "score": 0.9}']), output_type=Verdict, name="typed")
    agents: dict[str, Agent[Any]] = {"text": text_agent, "judge": typed}
    async with Client(mcp_server(agents)) as client:
        plain = await client.call_tool("text", {"input": "hi"})
        judged = await client.call_tool("judge", {"input": "is it spam?"})
    assert not plain.is_error and plain.content[0].text == "plain answer"  # type: ignore[union-attr]
    assert plain.structured_content is None
    assert not judged.is_error and judged.structured_content == {"label": "spam", "score": 0.9}


async def test_a_tools_result_and_failures() -> None:
    async with Client(mcp_server([search, guarded])) as client:
        found = await client.call_tool("search", {"query": "tea", "limit": 2})
        assert found.structured_content == {"query": "tea", "hits": ["tea-0", "tea-1"]}
        invalid = await client.call_tool("search", {"limit": "many"})
        assert invalid.is_error and "query" in invalid.content[0].text  # type: ignore[union-attr]
        denied = await client.call_tool("guarded", {"path": "/etc/passwd"})
        assert denied.is_error and denied.content[0].text == "/etc/passwd is outside the workspace"  # type: ignore[union-attr]


async def test_a_failing_run_is_an_is_error_result_with_a_concise_message() -> None:
    failure = ProviderError("quota exhausted for this key", provider="vendor", kind=ErrorKind.account)
    agent = Agent(ScriptedProvider([failure]), name="broke")
    async with Client(mcp_server([agent])) as client:
        result = await client.call_tool("broke", {"input": "hi"})
        missing = await client.call_tool("broke", {})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    # told by its kind, never by the vendor's text (which may carry its endpoint's URL or an account)
    assert "account" in text and "quota exhausted" not in text and "Traceback" not in text and len(text) <= 500
    assert missing.is_error and "input" in missing.content[0].text  # type: ignore[union-attr]


def test_what_cannot_be_offered() -> None:
    with pytest.raises(ValueError, match="needs a name"):
        mcp_server([Agent(ScriptedProvider(["x"]))])
    with pytest.raises(ValueError, match="two tools named"):
        mcp_server([search, search])
    with pytest.raises(TypeError):
        mcp_server([42])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        mcp_server([])


async def test_a_runtime_nobody_entered_is_run_for_the_servers_lifetime() -> None:
    from agentactors import Runtime

    rt = Runtime()
    agent = Agent(ScriptedProvider(["from the runtime"]), name="helper")
    async with Client(mcp_server([agent], runtime=rt)) as client:
        assert rt.running
        answer = await client.call_tool("helper", {"input": "hi"})
    assert not answer.is_error and answer.content[0].text == "from the runtime"  # type: ignore[union-attr]
    assert rt.closed


async def test_a_closed_runtime_fails_the_servers_startup_saying_so() -> None:
    from agentactors import Runtime

    async with Runtime() as rt:
        pass
    with pytest.raises(RuntimeError, match="given as runtime= has closed"):
        async with Client(mcp_server([Agent(ScriptedProvider(["x"]), name="helper")], runtime=rt)):
            pass


async def test_an_agents_tool_takes_input_alone_and_a_typed_answer_is_its_json_text_too() -> None:
    # An argument the agent's tool does not read is refused, as a @tool's is, not dropped: a caller (often a
    # model) that sent {"input", "language"} would read an answer that ignored half its request as an answer to it.
    from agentactors import ToolCall

    typed = Agent(
        ScriptedProvider([ToolCall("c1", "final_result", {"label": "ham", "score": 0.1})]),
        output_type=Verdict,
        name="judge",
    )
    async with Client(mcp_server([typed])) as client:
        listed = (await client.list_tools()).tools[0]
        extra = await client.call_tool("judge", {"input": "spam?", "language": "fr"})
        judged = await client.call_tool("judge", {"input": "spam?"})
    assert listed.input_schema.get("additionalProperties") is False
    assert extra.is_error and "language" in extra.content[0].text  # type: ignore[union-attr]
    # Under the output-tool strategy the run's text is empty: the text content is the value's JSON (MCP asks a
    # tool with structured content to give it as text too, for clients that read text only).
    assert judged.structured_content == {"label": "ham", "score": 0.1}
    assert json.loads(judged.content[0].text) == {"label": "ham", "score": 0.1}  # type: ignore[union-attr]
