"""Tools the MCP SDK's own models refuse cost that tool only — against real servers, over stdio and HTTP.

The servers (``tests/support/mcp_lowlevel_server.py``) are written with the SDK's low-level ``Server``; a
server middleware puts raw tool dictionaries into the wire form of each ``tools/list`` page, so they can
list what the SDK would never let a handler return: an ``inputSchema`` whose ``type`` is not ``"object"``,
a name that is no string, no ``inputSchema``, annotations of the wrong shape, a schema that echoes a
secret.  Before, any one of them failed the whole listing (a ToolsetError: no tool of the server at all).
The standard now: the good tools serve, each one left out is named with a reason — in a WARNING and in
the ``mcp.tools_listed`` event — and no reason quotes what the server sent.  Both backends.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentactors import Agent, InMemoryRecorder, Runtime, ScriptedProvider, ToolCall
from agentactors.mcp import MCPServerHTTP, MCPServerStdio
from agentactors.mcp._link import MAX_LOGGED
from agentactors.tools import ToolsetError
from tests.support.loop_lag import LoopLag
from tests.support.mcp_helpers import events, free_port, offered, statuses, stop_process, tool_texts, wait_listening
from tests.support.paths import ROOT

pytestmark = pytest.mark.anyio

SERVER = ROOT / "tests" / "support" / "mcp_lowlevel_server.py"
#: What the ``leaky`` tool's schema carries (the server's SECRET): it must show up nowhere.
SECRET = "sk-live-9f3b1d7c5a2e4086b1d3f5a7c9e1b3d5"
REFUSED = "the MCP SDK's models refuse it: "
#: Why each tool of a name the server gives two tools that are not alike is left out.
TWO_OF_A_NAME = (
    "the server lists 2 tools of that name, not all alike: a call by name cannot choose between them, and the "
    "MCP SDK checks each result against the last one's output schema"
)
#: Why a tool whose ``x-mcp-header`` annotations are invalid is left out (then which rule it breaks).
BAD_HEADER = (
    "its input schema's x-mcp-header annotations break the MCP 2026-07-28 rules (a client must leave such a "
    "tool out): "
)
#: Why a tool is left out that has a namesake the SDK refused (or whose header rules are invalid): 2 of a name.
NAMESAKE_REFUSED = (
    "the server lists 2 tools of that name and 1 of them cannot serve (named with its own reason): a call by "
    "name cannot choose between them"
)


def stdio(mode: str, **options: Any) -> MCPServerStdio:
    options.setdefault("name", "low")
    return MCPServerStdio(sys.executable, [str(SERVER), "stdio", mode], **options)


@pytest.fixture(scope="module")
def http_urls() -> Iterator[dict[str, str]]:
    """One HTTP server process per mode the HTTP tests use: their URLs.

    All started before waiting for the first, and all asked to stop before waiting for the first: their start-ups
    (imports) and shutdowns overlap instead of adding up."""
    processes: list[subprocess.Popen[bytes]] = []
    started: list[tuple[str, int, subprocess.Popen[bytes]]] = []
    urls: dict[str, str] = {}
    try:
        for mode in ("mixed", "paged", "twins", "headers", "header_twins"):
            port = free_port()
            while port in {p for _, p, _ in started}:  # none of them listens yet: the kernel may offer one twice
                port = free_port()
            process = subprocess.Popen(
                [sys.executable, str(SERVER), "http", mode, str(port)], stdout=subprocess.DEVNULL
            )
            processes.append(process)
            started.append((mode, port, process))
        for mode, port, process in started:
            wait_listening(port, process, f"the low-level MCP test server ({mode})", within=60)
            urls[mode] = f"http://127.0.0.1:{port}/mcp"
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            stop_process(process)


def server_for(transport: str, mode: str, urls: dict[str, str] | None) -> MCPServerStdio | MCPServerHTTP:
    if transport == "stdio":
        return stdio(mode)
    assert urls is not None
    return MCPServerHTTP(urls[mode], name="low")


def say(call_id: str, tool: str, text: str) -> ToolCall:
    return ToolCall(call_id, tool, {"text": text})


async def run(server: Any, calls: list[ToolCall], recorder: InMemoryRecorder) -> tuple[Any, ScriptedProvider]:
    provider = ScriptedProvider([*calls, "done"])
    agent = Agent(provider, toolsets=[server], recorders=[recorder], max_steps=len(calls) + 2)
    with anyio.fail_after(60):
        async with Runtime():
            result = await agent.run("go")
    assert result.content == "done"
    return result, provider


def skipped_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "agentactors.mcp" and r.levelno == logging.WARNING]


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_the_sdk_refuses_cost_only_themselves_named_with_a_reason_that_quotes_nothing(
    transport: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger: the secret must not show in the SDK's own either
    urls = request.getfixturevalue("http_urls") if transport == "http" else None
    server = server_for(transport, "mixed", urls)
    recorder = InMemoryRecorder()
    result, provider = await run(server, [say("1", "echo", "hi"), say("2", "shout", "HI")], recorder)

    assert offered(provider.requests)[0] == ["echo", "shout"]
    # A call's result is checked by the SDK against the tool's listing: the good tools' listing is the SDK's own.
    assert tool_texts(result) == ["echo:hi", "shout:HI"]
    assert statuses(recorder) == [("echo", "ok"), ("shout", "ok")]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert listed.tools == ("echo", "shout") and listed.skipped_count == 5
    assert [(s["name"], s["reason"]) for s in listed.skipped] == [
        ("not_object", REFUSED + "inputSchema.type: Input should be 'object'"),
        ("(tool 3 of its page: no name)", REFUSED + "name: Input should be a valid string"),
        ("no_schema", REFUSED + "inputSchema: Field required"),
        (
            "bad_annotations",
            REFUSED + "annotations.readOnlyHint: Input should be a valid boolean, unable to interpret input",
        ),
        ("leaky", REFUSED + "inputSchema.type: Input should be 'object'"),
    ]
    lines = skipped_lines(caplog)
    assert (
        "MCP server 'low': tool 'not_object' is skipped: " + REFUSED + "inputSchema.type: Input should be 'object'"
        in lines
    )
    assert sum("is skipped" in line for line in lines) == 5
    assert SECRET not in caplog.text
    assert all(SECRET not in repr(event) for event in recorder.events)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_refused_tool_on_a_middle_page_leaves_the_pages_after_it_listed(
    transport: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    urls = request.getfixturevalue("http_urls") if transport == "http" else None
    recorder = InMemoryRecorder()
    calls = [say("1", "echo", "a"), say("2", "shout", "b"), say("3", "whisper", "c")]
    result, provider = await run(server_for(transport, "paged", urls), calls, recorder)
    assert offered(provider.requests)[0] == ["echo", "shout", "whisper"]
    assert tool_texts(result) == ["echo:a", "shout:b", "whisper:c"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert [s["name"] for s in listed.skipped] == ["not_object"]


async def test_a_restarted_server_still_lists_and_calls_past_its_refused_tool(caplog: pytest.LogCaptureFixture) -> None:
    # The restarted process is a new session: the SDK's own re-listing (to check a call's result) meets the
    # refused tool too, and must not fail the call.
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    recorder = InMemoryRecorder()
    calls = [say("1", "echo", "a"), say("2", "die", "now"), say("3", "echo", "b"), say("4", "echo", "c")]
    result, _ = await run(stdio("mortal"), calls, recorder)
    texts = tool_texts(result)
    assert texts[0] == "echo:a" and texts[2:] == ["echo:b", "echo:c"]
    assert texts[1].startswith("Error: MCPToolError: MCP server 'low' went away during the call")
    assert [s for _, s in statuses(recorder)] == ["ok", "error", "ok", "ok"]
    assert len(events(recorder, "mcp.server_restarted")) == 1


async def test_duplicates_and_names_the_vendors_refuse_are_reported_not_silently_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    recorder = InMemoryRecorder()
    result, provider = await run(stdio("names"), [say("1", "shout", "hi")], recorder)
    specs = provider.requests[0].tools
    assert [(s.name, s.description) for s in specs] == [
        ("files.read", "The files.read tool."),  # neither echo serves: they are not alike
        ("shout", "The shout tool."),
    ]
    assert tool_texts(result) == ["shout:hi"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert listed.unportable == ("files.read",)
    assert [s["name"] for s in listed.skipped] == ["echo", "echo", "has space"]
    reasons = {s["name"]: s["reason"] for s in listed.skipped}
    assert reasons["echo"] == TWO_OF_A_NAME
    assert reasons["has space"].startswith("ValueError: tool name 'has space' is invalid")
    lines = skipped_lines(caplog)
    assert any("tool 'files.read' is kept, but OpenAI, Anthropic and Bedrock" in line for line in lines)
    assert lines.count(f"MCP server 'low': tool 'echo' is skipped: {TWO_OF_A_NAME}") == 2




def offer_tool(call_id: str, tool: str) -> ToolCall:
    return ToolCall(call_id, tool, {"text": call_id})


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_two_different_tools_of_one_name_are_both_left_out_not_checked_against_each_other(
    transport: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK checks a call's structured result against the output schema of the LAST tool of that name it
    # listed; offering the first one would check its results against the other's schema (here ``{"n": 1}``
    # fits the first lookup's and not the second's: every call of it would fail).  Neither serves.
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    urls = request.getfixturevalue("http_urls") if transport == "http" else None
    recorder = InMemoryRecorder()
    calls = [offer_tool("1", "same"), offer_tool("2", "Lookup"), offer_tool("3", "echo")]
    result, provider = await run(server_for(transport, "twins", urls), calls, recorder)

    assert offered(provider.requests)[0] == ["echo", "same", "Lookup"]
    # ``same`` is listed twice alike (once on each page): it serves once, its result checked and passed.
    assert tool_texts(result) == ["same:1", "Lookup:2", "echo:3"]
    assert statuses(recorder) == [("same", "ok"), ("Lookup", "ok"), ("echo", "ok")]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert listed.tools == ("echo", "same", "Lookup")
    assert [(s["name"], s["reason"]) for s in listed.skipped] == [
        ("lookup", TWO_OF_A_NAME),
        ("lookup", TWO_OF_A_NAME),
        ("same", "a repeat: the server lists the same tool before it"),
    ]
    assert listed.skipped_count == 3
    lines = skipped_lines(caplog)
    assert lines.count(f"MCP server 'low': tool 'lookup' is skipped: {TWO_OF_A_NAME}") == 2


async def test_a_prefix_keeps_the_server_s_names_apart_and_names_the_left_out_twins_as_the_model_would_see_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The names the SDK keys its checks by are the server's; the model's are the prefix and those, one to one:
    # no two of the server's tools become one name here, and the twins are still told apart from ``Lookup``.
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    recorder = InMemoryRecorder()
    calls = [offer_tool("1", "low_Lookup"), offer_tool("2", "low_same")]
    server = stdio("twins", tool_prefix="low_", tool_filter=["lookup", "Lookup", "same"])
    result, provider = await run(server, calls, recorder)
    assert offered(provider.requests)[0] == ["low_same", "low_Lookup"]
    assert tool_texts(result) == ["Lookup:1", "same:2"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert [s["name"] for s in listed.skipped] == ["low_lookup", "low_lookup", "low_same"]
    assert listed.skipped[0]["reason"] == TWO_OF_A_NAME


async def test_thousands_of_tools_with_dozens_refused_stay_bounded(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    server = stdio("many")
    lag = LoopLag()

    with anyio.fail_after(120):
        async with Runtime() as rt, anyio.create_task_group() as tg:
            tg.start_soon(lag.watch)
            tools = await server.list_tools(rt)
            tg.cancel_scope.cancel()
    assert len(tools) == 2000 - 40 and tools[0].name == "t1"
    lines = skipped_lines(caplog)
    # One line per refused tool up to MAX_LOGGED, then one line counting the rest: not 40.
    assert sum("is skipped" in line for line in lines) == MAX_LOGGED
    assert sum(f"{40 - MAX_LOGGED} more tools were skipped" in line for line in lines) == 1
    # The sieve checks tools one by one on the loop, as the SDK checks the page: a generous bound.
    assert lag.worst < 1.5, f"the event loop was held {lag.worst:.2f} s at once"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_tools_with_invalid_x_mcp_header_rules_are_named_with_a_reason_and_the_valid_rules_still_travel(
    transport: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    # On a 2026-07-28 session the SDK drops such a tool itself, logging it to its own logger only (quoting what
    # the server sent): it was missing from the skipped report, and the secret reached the logs.
    caplog.set_level(logging.DEBUG)  # every logger: the secret must not show in the SDK's own either
    urls = request.getfixturevalue("http_urls") if transport == "http" else None
    recorder = InMemoryRecorder()
    calls = [say("1", "echo", "hi"), say("2", "shout", "HI")]
    result, provider = await run(server_for(transport, "headers", urls), calls, recorder)

    assert offered(provider.requests)[0] == ["echo", "shout"]
    # echo's valid rule is still the SDK's: over HTTP its call carries the argument as a header too.
    echoed = "echo:hi [Mcp-Param-Text=hi]" if transport == "http" else "echo:hi"
    assert tool_texts(result) == [echoed, "shout:HI"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert listed.tools == ("echo", "shout")
    assert [(s["name"], s["reason"]) for s in listed.skipped] == [
        ("leaky_header", BAD_HEADER + "a header name is not an RFC 9110 token"),
        ("not_object", REFUSED + "inputSchema.type: Input should be 'object'"),
        ("on_object", BAD_HEADER + "one is on a property that is not an integer, a string or a boolean"),
        ("numbered", BAD_HEADER + "a header name is not a string"),
        ("twice", BAD_HEADER + "two properties name one header (case ignored)"),
    ]
    # Each once: the page the models refused was asked for again, and what its first answer dropped forgotten.
    assert listed.skipped_count == 5
    lines = skipped_lines(caplog)
    assert f"MCP server 'low': tool 'numbered' is skipped: {BAD_HEADER}a header name is not a string" in lines
    assert sum("is skipped" in line for line in lines) == 5
    assert SECRET not in caplog.text
    assert all(SECRET not in repr(event) for event in recorder.events)


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_a_name_listed_with_valid_then_invalid_header_rules_serves_neither(
    transport: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    # The SDK drops the second echo and forgets the header rules of the first as well: the echo we offered
    # called without its Mcp-Param-Text header.  Two tools of one name that are not alike: neither serves.
    caplog.set_level(logging.WARNING, logger="agentactors.mcp")
    urls = request.getfixturevalue("http_urls") if transport == "http" else None
    recorder = InMemoryRecorder()
    result, provider = await run(server_for(transport, "header_twins", urls), [say("1", "shout", "hi")], recorder)

    assert offered(provider.requests)[0] == ["shout"]
    assert tool_texts(result) == ["shout:hi"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert listed.tools == ("shout",)
    assert [(s["name"], s["reason"]) for s in listed.skipped] == [
        ("echo", BAD_HEADER + "a header name is not an RFC 9110 token"),
        ("echo", NAMESAKE_REFUSED),
    ]
    assert listed.skipped_count == 2
    assert f"MCP server 'low': tool 'echo' is skipped: {NAMESAKE_REFUSED}" in skipped_lines(caplog)


async def test_a_name_listed_well_then_in_a_form_the_sdk_refuses_serves_neither() -> None:
    # The same for a namesake the SDK's models refuse (the sieve takes it out): the server is called by name.
    recorder = InMemoryRecorder()
    result, provider = await run(stdio("refused_twin"), [say("1", "shout", "hi")], recorder)
    assert offered(provider.requests)[0] == ["shout"]
    assert tool_texts(result) == ["shout:hi"]
    (listed,) = events(recorder, "mcp.tools_listed")
    assert [(s["name"], s["reason"]) for s in listed.skipped] == [
        ("echo", REFUSED + "inputSchema.type: Input should be 'object'"),
        ("echo", NAMESAKE_REFUSED),
    ]


async def test_a_page_that_is_not_a_list_of_tools_still_fails_the_listing_clearly() -> None:
    agent = Agent(ScriptedProvider(["never"]), toolsets=[stdio("no_list")])
    with anyio.fail_after(60):
        async with Runtime():
            with pytest.raises(ToolsetError, match="MCP server 'low' could not list its tools: ValidationError"):
                await agent.run("go")
