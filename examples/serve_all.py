"""One agent served three ways at once: the OpenAI Chat Completions API, MCP over streamable HTTP, AG-UI.

One Starlette app on one port, one Runtime for all of it (bound to the agent before it starts, entered in
the app's lifespan), so the three protocols share one ProviderActor, its budget and its recorders:

    /openai/v1/chat/completions, /openai/v1/models    any OpenAI client (base_url=http://127.0.0.1:8000/openai/v1)
    /mcp/                                              MCP clients (streamable HTTP)
    /agui/                                             AG-UI frontends (POST a RunAgentInput); threads kept
                                                       by the server (sessions=True), a post to a live thread
                                                       steers its run
    /                                                  a page that talks to /agui/ (examples/agui_page.html)

``python examples/serve_all.py --stdio`` serves the agent over MCP on stdin/stdout instead (what Claude
Desktop or an IDE launches).  Runs offline: with no ``OPENAI_API_KEY`` the built-in FakeVendor plays
the model on 127.0.0.1.  docs/serve.md has the curl lines and client snippets.

    python examples/serve_all.py          # then: curl http://127.0.0.1:8000/openai/v1/models
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import sniffio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route

from agentactors import Agent, OpenAIProvider, Runtime, tool
from agentactors.serve import agui_app, mcp_server, openai_app


@tool
def word_count(text: str) -> int:
    """How many words ``text`` has."""
    return len(text.split())


def make_agent(provider: Any) -> Agent[str]:
    return Agent(provider, tools=[word_count], system="Be brief.", name="assistant")


PAGE = Path(__file__).with_name("agui_page.html")


async def page(request: Request) -> HTMLResponse:
    """The AG-UI page: it POSTs RunAgentInputs to /agui/ and draws the streamed events."""
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))


def build_app(provider: Any, *, api_keys: list[str] | None = None) -> Starlette:
    """The three endpoints for one agent over ``provider``, and the AG-UI page; ``api_keys`` guard the OpenAI one."""
    runtime = Runtime()
    agent = make_agent(provider).bind(runtime)  # bound before it runs: every endpoint's runs share it
    mcp = mcp_server([agent])
    mcp_http = mcp.streamable_http_app(streamable_http_path="/")

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # A mounted app's own lifespan does not run: the runtime and MCP's session manager start here.
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(runtime)
            await stack.enter_async_context(mcp.session_manager.run())
            yield

    return Starlette(
        routes=[
            Route("/", page),
            Mount("/openai", app=openai_app({"assistant": agent}, api_keys=api_keys)),
            Mount("/mcp", app=mcp_http),
            Mount("/agui", app=agui_app(agent, sessions=True)),
        ],
        lifespan=lifespan,
    )


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


async def serve(app: Any, port: int, *, host: str = "127.0.0.1", stop: anyio.Event | None = None) -> None:
    """Serve ``app`` until ``stop`` is set: uvicorn on asyncio, hypercorn on trio."""
    stop = stop or anyio.Event()
    if sniffio.current_async_library() == "trio":
        from hypercorn.config import Config
        from hypercorn.trio import serve as serve_trio

        config = Config()
        config.bind = [f"{host}:{port}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 1.0
        await serve_trio(app, config, shutdown_trigger=stop.wait)
        return
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))

    async def stop_when_told() -> None:
        await stop.wait()
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_told)
        await server.serve()
        tg.cancel_scope.cancel()


async def serve_stdio(provider: Any) -> None:
    """The agent as an MCP server on stdin/stdout."""
    from mcp.server.stdio import stdio_server

    async with Runtime() as rt:
        server = mcp_server([make_agent(provider).bind(rt)])
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


async def main() -> None:
    stdio = "--stdio" in sys.argv
    port = int(os.environ.get("PORT", "8000"))
    if os.environ.get("OPENAI_API_KEY"):
        provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
        await (serve_stdio(provider) if stdio else serve(build_app(provider), port))
        return
    from agentactors.testing import FakeReply, FakeVendor

    async with FakeVendor() as vendor:
        vendor.on(FakeReply(text="Hello from the agent, served three ways."))
        provider = OpenAIProvider("fake-model", api_key="sk-offline-example", base_url=vendor.openai_base_url)
        if stdio:
            await serve_stdio(provider)
            return
        print(f"http://127.0.0.1:{port}/ (the AG-UI page) · /openai/v1 · /mcp/ · /agui/ "
              "(offline: a FakeVendor plays the model)")
        await serve(build_app(provider), port)


if __name__ == "__main__":
    anyio.run(main)
