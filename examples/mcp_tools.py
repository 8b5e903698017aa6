"""Tools from an MCP server: an agent that calls a unit converter served over stdio.

Runs offline: the script is both the MCP server (``--serve``, written with the official SDK's
``MCPServer``) and the client, and a ScriptedProvider plays the model.  Swap in
``OpenAIProvider(model=...)`` to use a real model, and any MCP server for the converter
(``MCPServerStdio("npx", ["-y", "@modelcontextprotocol/server-github"], env={"GITHUB_TOKEN": ...})``,
``MCPServerHTTP("https://...", headers={"Authorization": "Bearer ..."})``); nothing else changes.

    pip install 'agentactors[mcp]'
    python examples/mcp_tools.py
"""

from __future__ import annotations

import sys

import anyio

from agentactors import (
    Agent,
    InMemoryRecorder,
    LLMRequest,
    LLMResponse,
    RunResult,
    Runtime,
    ScriptedProvider,
    ToolCall,
)
from agentactors.mcp import MCPServerStdio


def serve() -> None:
    """The MCP server: one tool, over stdio."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("units")

    @server.tool()
    def convert(value: float, unit: str) -> str:
        """Convert a temperature: unit "C" turns Celsius into Fahrenheit, "F" the other way."""
        if unit == "C":
            return f"{value:g} °C is {value * 9 / 5 + 32:g} °F"
        return f"{value:g} °F is {(value - 32) * 5 / 9:g} °C"

    server.run("stdio")


def model(request: LLMRequest) -> LLMResponse:
    """The scripted 'model': calls the server's tool (by the prefixed name it was offered), then answers."""
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        offered = [spec.name for spec in request.tools]
        assert "units_convert" in offered, offered
        return LLMResponse("", (ToolCall("c1", "units_convert", {"value": 21, "unit": "C"}),))
    return LLMResponse(f"Lisbon's 21 degrees: {results[-1].content}.")


async def main() -> RunResult:
    # The server is started at the first run in the runtime, shared by the runs there, closed with it.
    units = MCPServerStdio(sys.executable, [__file__, "--serve"], name="units", tool_prefix="units_")
    recorder = InMemoryRecorder()
    agent = Agent(ScriptedProvider(model), toolsets=[units], recorders=[recorder], name="converter")
    async with Runtime():
        result = await agent.run("What is 21 °C in Fahrenheit?")
    print("answer:", result.content)
    for event in recorder.events:
        if event.type.startswith(("mcp.", "tools.")):
            who = event.data.get("name") or event.data.get("server")
            print(f"  {event.type:<18} {who} {event.data.get('status', '')}")
    return result


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        anyio.run(main)
