"""Agents as endpoints: the protocols other software already speaks, served from agents.

``openai``
    :func:`openai_app`: an ASGI app speaking OpenAI's Chat Completions API (``/v1/chat/completions``,
    ``/v1/models``); ``model`` names the agent.
``mcp``
    :func:`mcp_server`: an MCP server (the official ``mcp`` SDK, the ``[mcp]`` extra) offering agents and
    tools as MCP tools, over stdio or streamable HTTP.
``agui``
    :func:`agui_app`: an ASGI app streaming a run as AG-UI events (``POST /`` a ``RunAgentInput``); a post to
    a thread whose run is live steers it; ``sessions=True`` keeps each thread's history in the server.
``asgi``
    :func:`lifespan`: an ASGI lifespan that owns a :class:`~agentactors.Runtime` (Starlette, FastAPI).

The names are imported on first use, so ``import agentactors.serve`` needs no extra: only
``mcp_server`` needs the ``mcp`` SDK.  Each request is an OpenTelemetry span when ``opentelemetry-api`` is
installed.  docs/serve.md has the recipes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .asgi import lifespan

if TYPE_CHECKING:
    from .agui import agui_app
    from .mcp import mcp_server
    from .openai import openai_app

__all__ = ["agui_app", "lifespan", "mcp_server", "openai_app"]

_LAZY = {"openai_app": ".openai", "mcp_server": ".mcp", "agui_app": ".agui"}


# For the interpreter only: a checker that saw it would accept any misspelt name (the three are declared above).
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
