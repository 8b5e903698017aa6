"""Toolsets in the core: listed at each run's start, tables rebuilt only on change, clashes named."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from agentactors import (
    Agent,
    InMemoryRecorder,
    Runtime,
    ScriptedProvider,
    ToolCall,
    ToolChoice,
    tool,
)
from agentactors.tools import ToolNameClashError, Toolset, ToolsetError
from agentactors.tools.registry import Tool
from agentactors.tools.toolset import ToolsetHost, ToolsetView, merge_tools

pytestmark = pytest.mark.anyio


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


class FakeToolset:
    """A toolset whose tools a test sets; counts its listings and the hosts it was listed for."""

    def __init__(self, name: str, tools: Sequence[Tool[Any, Any]] = (), *, fail: Exception | None = None) -> None:
        self._name = name
        self.tools = tuple(tools)
        self.fail = fail
        self.hosts: list[ToolsetHost] = []

    @property
    def name(self) -> str:
        return self._name

    async def list_tools(self, host: ToolsetHost) -> Sequence[Tool[Any, Any]]:
        self.hosts.append(host)
        if self.fail is not None:
            raise self.fail
        host.emit("fake.listed", toolset=self._name)
        return self.tools


def test_a_fake_toolset_is_a_toolset_and_agents_check_what_they_are_given() -> None:
    assert isinstance(FakeToolset("a"), Toolset)
    with pytest.raises(TypeError, match="toolsets must be Toolset objects"):
        Agent(ScriptedProvider(["x"]), toolsets=[object()])
    with pytest.raises(ValueError, match="two toolsets are named 'a'"):
        Agent(ScriptedProvider(["x"]), toolsets=[FakeToolset("a"), FakeToolset("a")])
    # Unknown at construction: a forced choice is checked at the first run instead.
    Agent(ScriptedProvider(["x"]), toolsets=[FakeToolset("a")], tool_choice=ToolChoice.tool("later"))


def test_merge_names_both_sources_of_a_clash() -> None:
    assert merge_tools([echo], [("a", [shout])]) == (echo, shout)
    with pytest.raises(ToolNameClashError, match=r"'echo': one from a plain tool of the agent, one from toolset 'a'"):
        merge_tools([echo], [("a", [echo])])
    with pytest.raises(ToolNameClashError, match=r"one from toolset 'a', one from toolset 'b'.*tool_prefix='b_'"):
        merge_tools([], [("a", [shout]), ("b", [shout])])


@pytest.mark.parametrize(("toolset_name", "prefix"), [
    ("127.0.0.1:39913", "tools_127_0_0_1_39913_"),  # an HTTP MCP server, named by its address
    ("python mcp_srv.py", "python_mcp_srv_py_"),     # a stdio server, named by its command ('.' some vendors refuse)
    ("weather", "weather_"),
    ("…", "tools_"),
])
def test_the_prefix_a_clash_suggests_is_one_a_toolset_takes(toolset_name: str, prefix: str) -> None:
    """The hint said tool_prefix='127.0.0.1:39913_', which the MCP toolsets refuse (and vendors would)."""
    from agentactors.mcp import MCPServerStdio

    with pytest.raises(ToolNameClashError) as clash:
        merge_tools([echo], [(toolset_name, [echo])])
    assert f"tool_prefix={prefix!r}" in str(clash.value)
    MCPServerStdio("python", ["-c", "pass"], name="x", tool_prefix=prefix)  # taken: no ValueError


async def test_the_view_rebuilds_only_when_a_toolset_answers_with_another_object() -> None:
    toolset = FakeToolset("a", [shout])
    view = ToolsetView([echo], [toolset])
    async with Runtime() as rt:
        assert await view.refresh(rt) is True and view.tools == (echo, shout)
        assert await view.refresh(rt) is False  # the same object: nothing to rebuild
        toolset.tools = (shout,)  # equal, but another object: the toolset says it changed
        assert await view.refresh(rt) is True


async def test_each_run_lists_its_toolsets_and_sees_a_change_at_its_start() -> None:
    toolset = FakeToolset("a", [echo])
    provider = ScriptedProvider([ToolCall("1", "echo", {"text": "hi"}), "one", ToolCall("2", "shout", {"text": "hi"}),
                                 "two"])
    recorder = InMemoryRecorder()
    agent = Agent(provider, toolsets=[toolset], recorders=[recorder])
    async with Runtime() as rt:
        first = await agent.run("1")
        toolset.tools = (echo, shout)
        second = await agent.run("2")
    assert [m.content for m in first.messages if m.role == "tool"] == ["hi"]
    assert [m.content for m in second.messages if m.role == "tool"] == ["HI"]
    assert [[s.name for s in r.tools] for r in provider.requests] == [["echo"], ["echo"], ["echo", "shout"],
                                                                     ["echo", "shout"]]
    assert toolset.hosts == [rt, rt]
    listed = [e for e in recorder.events if e.type == "fake.listed"]
    assert [e.run_id for e in listed] == [first.run_id, second.run_id]  # a listing belongs to its run


async def test_a_stream_lists_its_toolsets_too_and_a_private_runtime_is_a_host() -> None:
    toolset = FakeToolset("a", [echo])
    agent = Agent(ScriptedProvider([ToolCall("1", "echo", {"text": "x"}), "done"]), toolsets=[toolset])
    async with agent.stream("go") as run:
        types = [event.type async for event in run]
    assert run.result.content == "done" and "tools.finished" in types
    assert len(toolset.hosts) == 1 and isinstance(toolset.hosts[0], Runtime)


async def test_listing_failures_clashes_and_a_choice_that_does_not_fit_raise_at_the_run() -> None:
    async with Runtime():
        broken = Agent(ScriptedProvider(["x"]), toolsets=[FakeToolset("down", fail=OSError("no route to host"))])
        with pytest.raises(ToolsetError, match=r"toolset 'down' could not list its tools: OSError: no route to host"):
            await broken.run("x")
        clash = Agent(ScriptedProvider(["x"]), tools=[echo], toolsets=[FakeToolset("a", [echo])])
        with pytest.raises(ToolNameClashError):
            await clash.run("x")
        forced = Agent(
            ScriptedProvider(["x"]), toolsets=[FakeToolset("a", [echo])], tool_choice=ToolChoice.tool("nope")
        )
        with pytest.raises(ValueError, match="tool_choice names 'nope'"):
            await forced.run("x")
        # In run_many a failure is that run's result, not an exception.
        (failed,) = await broken.run_many(["x"])
        assert isinstance(failed.error, ToolsetError)


class Garbage:
    """A toolset whose listing is not a sequence of tools."""

    name = "junk"

    def __init__(self, listing: Any) -> None:
        self.listing = listing

    async def list_tools(self, host: ToolsetHost) -> Any:
        return self.listing


@pytest.mark.parametrize(
    ("listing", "told"),
    [
        (None, "NoneType"),
        (42, "int"),
        ("echo", "str"),
        ({"echo": echo}, "dict"),
        ((t for t in [echo]), "generator"),
        ([None], "a list holding NoneType"),
        ([echo, "echo"], "a list holding str"),
        ((echo, {"name": "x"}), "a tuple holding dict"),
    ],
    ids=["none", "int", "str", "dict", "generator", "list-none", "list-str", "tuple-dict"],
)
async def test_a_listing_that_is_not_a_sequence_of_tools_is_a_toolset_error_naming_the_toolset(
    listing: Any, told: str
) -> None:
    async with Runtime():
        agent = Agent(ScriptedProvider(["hi"]), toolsets=[Garbage(listing)])
        with pytest.raises(ToolsetError, match=rf"toolset 'junk' listed .*{told}") as caught:
            await agent.run("x")
    assert "{'name'" not in str(caught.value)  # the type only, never the values
