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
    python examples/serve_all.py --port 9000 --backend trio

Needs ``pip install 'agentactors[asgi,mcp,testing]'`` (uvicorn, its server on asyncio, comes with ``mcp``); on
trio it is served by hypercorn: ``pip install hypercorn`` (``pip install -e '.[dev]'`` in a checkout has both).

Ctrl-C (or SIGTERM) stops it gracefully: open streams get a second to end; a second Ctrl-C stops it at once.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
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


def _needs(missing: ModuleNotFoundError) -> str:
    """What to install for the ASGI server that is missing: an example's server, said rather than a traceback."""
    name = (missing.name or "").partition(".")[0]
    return f"serving on {sniffio.current_async_library()} needs {name}: pip install {name}"


async def serve(app: Any, port: int, *, host: str = "127.0.0.1", stop: anyio.Event | None = None) -> None:
    """Serve ``app`` until ``stop`` is set: uvicorn on asyncio, hypercorn on trio."""
    stop = stop or anyio.Event()
    if sniffio.current_async_library() == "trio":
        try:
            from hypercorn.config import Config
            from hypercorn.trio import serve as serve_trio
        except ModuleNotFoundError as exc:
            raise SystemExit(_needs(exc)) from None

        config = Config()
        config.bind = [f"{host}:{port}"]
        config.accesslog = None
        config.errorlog = None
        config.graceful_timeout = 1.0
        await serve_trio(app, config, shutdown_trigger=stop.wait)
        return
    try:
        import uvicorn
    except ModuleNotFoundError as exc:
        raise SystemExit(_needs(exc)) from None

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # Ctrl-C is main()'s to handle (it sets ``stop``); uvicorn's would raise it again once stopped

    server = Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                                   timeout_graceful_shutdown=1))

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


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, or ``None`` — asked before anything starts."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


async def stop_on_signal(stop: anyio.Event, scope: anyio.CancelScope) -> None:
    """Ctrl-C or SIGTERM sets ``stop`` (a graceful shutdown); a second one cancels ``scope``."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if stop.is_set():
                scope.cancel()
                return
            print("stopping (Ctrl-C again to stop at once)", file=sys.stderr)
            stop.set()


async def serve_here(port: int, stop: anyio.Event, *, stdio: bool) -> None:
    """The agent on ``port`` (or stdin/stdout) until ``stop``: OpenAI with ``OPENAI_API_KEY``, else the FakeVendor."""
    if os.environ.get("OPENAI_API_KEY"):
        provider = OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))
        if not stdio:
            print(f"http://127.0.0.1:{port}/")
        await (serve_stdio(provider) if stdio else serve(build_app(provider), port, stop=stop))
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
        await serve(build_app(provider), port, stop=stop)


async def main(port: int = 8000, stdio: bool = False) -> int:
    """Serve on ``port`` (or over stdio) until Ctrl-C; 1 when the port is taken."""
    problem = None if stdio else port_in_use("127.0.0.1", port)
    if problem is not None:
        print(f"cannot listen on 127.0.0.1:{port}: {problem} (another server there? --port N picks another)",
              file=sys.stderr)
        return 1
    stop = anyio.Event()
    if stdio:
        stop.set()  # nothing to drain over stdio: the first Ctrl-C stops it at once
    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_signal, stop, tg.cancel_scope)

        async def serving() -> None:  # a task of its own: hypercorn on asyncio leaves its caller's task cancelling
            await serve_here(port, stop, stdio=stdio)
            tg.cancel_scope.cancel()  # served and stopped: the signal watcher too

        tg.start_soon(serving)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=os.environ.get("PORT", "8000"), help="default: $PORT or 8000")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio", help="default: asyncio")
    parser.add_argument("--stdio", action="store_true", help="serve the agent over MCP on stdin/stdout instead")
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error(f"--port: 1 to 65535, not {args.port}")
    sys.exit(anyio.run(main, args.port, args.stdio, backend=args.backend))  # anyio.run(main) serves on 8000
