"""``MCPServerStdio`` and ``MCPServerHTTP``: an MCP server as a toolset, and as an async context manager.

A server object is configuration; what lives is its :class:`~agentactors.mcp._link.Link` in a scope:

* given to ``Agent(..., toolsets=[server])`` and used in a runtime, the link is the runtime's
  ``rt.service((…, server), …)``: one connection per runtime, opened at the first run that lists the
  server's tools, shared by every run (of every agent) there, closed when the runtime exits — its task
  is a background task of the runtime, so the runtime's drain does not wait for it;
* inside ``async with server:`` the link is the block's: the connection opens on entry (a server that
  cannot start says so there), serves every run in any runtime until the block is left.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, Self
from urllib.parse import urlsplit

import anyio
import anyio.abc
from mcp.client import Transport

from ..events import emit
from ..redaction import redact
from ..tools.registry import Tool
from ..tools.results import ResultCeiling
from ..tools.toolset import ToolsetError, ToolsetHost
from ._connection import MCPConnectionError, describe
from ._link import LIST_TIMEOUT, Link, ServerSettings
from ._transports import http_transport, redact_sdk_logs, register_credentials, stdio_transport

__all__ = ["MCPServerHTTP", "MCPServerStdio", "ToolFilter"]

#: A ``tool_filter``: the names to allow (the server's own names, before any ``tool_prefix``), or a
#: predicate ``(name) -> bool`` given each of the server's tool names.
ToolFilter = Iterable[str] | Callable[[str], bool]

_SERVICE: Final = "agentactors.mcp.server"
_PREFIX = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,47}$")
_DEFAULT_TIMEOUT: Final = 60.0


def _to_filter(value: ToolFilter | None) -> Callable[[str], bool] | None:
    if value is None:
        return None
    if callable(value):
        return value
    if isinstance(value, str):
        value = (value,)  # a bare name is one name, not a sequence of letters
    names = frozenset(value)
    for n in names:
        if not isinstance(n, str) or not n:
            raise TypeError(f"tool_filter names must be non-empty str, not {n!r}")
    return names.__contains__


class _MCPServer:
    """What both transports share: the toolset, the scopes, the checks.  Not public: use a subclass."""

    def __init__(
        self,
        *,
        name: str,
        label: str,
        tool_prefix: str | None,
        tool_filter: ToolFilter | None,
        timeout: float | None,
        result_ceiling: ResultCeiling | None,
        max_restarts: int,
        open_transport: Callable[[], Transport],
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError("an MCP server's name must be a non-empty str")
        if tool_prefix is not None and (not isinstance(tool_prefix, str) or not _PREFIX.match(tool_prefix)):
            raise ValueError(
                f"tool_prefix must start with a letter or '_' and hold only letters, digits, '_', '.' or '-' "
                f"(at most 48), not {tool_prefix!r}"
            )
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds or None, not {timeout!r}")
        if result_ceiling is not None and not isinstance(result_ceiling, ResultCeiling):
            raise TypeError(f"result_ceiling must be a ResultCeiling or None, not {type(result_ceiling).__name__}")
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int) or max_restarts < 0:
            raise ValueError(f"max_restarts must be a non-negative int, not {max_restarts!r}")
        # The SDK logs what a server sends that it cannot parse (a stdout line, an HTTP body): a secret in it
        # must not reach the logs, whole or in part.
        redact_sdk_logs()
        self._settings = ServerSettings(
            name=name,
            label=label,
            tool_prefix=tool_prefix,
            tool_filter=_to_filter(tool_filter),
            timeout=float(timeout) if timeout is not None else None,
            result_ceiling=result_ceiling,
            max_restarts=max_restarts,
            open_transport=open_transport,
        )
        self._own: Link | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    @property
    def name(self) -> str:
        """The server's name, in events, errors and logs."""
        return self._settings.name

    @property
    def tool_prefix(self) -> str | None:
        """Put before each of the server's tool names (the model sees the prefixed name)."""
        return self._settings.tool_prefix

    @property
    def timeout(self) -> float | None:
        """Seconds one call may take (status ``timeout`` past it; ``None``: no limit)."""
        return self._settings.timeout

    # -- the toolset ---------------------------------------------------------------------------------

    async def list_tools(self, host: ToolsetHost) -> tuple[Tool[Any, Any], ...]:
        """The server's tools for runs in ``host`` (connecting first, once per host).

        Inside ``async with server:`` the block's connection serves every host.

        :raises ToolsetError: the server cannot be started or reached, or does not list its tools in time.

        Cancellation: a cancelled caller leaves; a connection being opened goes on for the next caller.
        """
        link = self._own
        if link is None:
            link = host.service((_SERVICE, self), lambda: self._link_for(host), cleanup=Link.aclose)
        return await self._listed(link)

    def _link_for(self, host: ToolsetHost) -> Link:
        def spawn(fn: Callable[[], Any]) -> None:
            host.spawn_task(fn, name=f"mcp:{self.name}", background=True)

        return Link(self._settings, spawn, host.emit)

    async def _listed(self, link: Link) -> tuple[Tool[Any, Any], ...]:
        label = self._settings.label
        try:
            return await link.tools()
        except MCPConnectionError as exc:
            raise ToolsetError(f"{label} could not be reached: {exc}") from None
        except TimeoutError:
            raise ToolsetError(f"{label} did not connect and list its tools within {LIST_TIMEOUT:g} s") from None
        except Exception as exc:
            raise ToolsetError(f"{label} could not list its tools: {describe(exc)}") from None

    # -- an explicit scope ---------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Connect now and keep the connection until the block is left (for runs in any runtime).

        :raises ToolsetError: the server cannot be started or reached.
        :raises RuntimeError: the server is entered already.

        Cancellation: connecting and listing the tools stop where they wait; what was opened (a subprocess, an
        HTTP session) is closed as by :meth:`__aexit__` (shielded, bounded) before the cancellation propagates,
        and the server is not entered.
        """
        if self._own is not None:
            raise RuntimeError(f"{self._settings.label} is entered already")
        tg = anyio.create_task_group()
        await tg.__aenter__()

        def spawn(fn: Callable[[], Any]) -> None:
            tg.start_soon(fn, name=f"mcp:{self.name}")

        self._tg, self._own = tg, Link(self._settings, spawn, emit)
        try:
            await self._listed(self._own)
        except BaseException:
            await self.__aexit__(*sys.exc_info())
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Close the connection (shielded, bounded) and leave.

        Cancellation: the closing is shielded and bounded; the cancellation then propagates.
        """
        link, tg = self._own, self._tg
        self._own = self._tg = None
        if link is None or tg is None:
            return
        try:
            await link.aclose()
        finally:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)


class MCPServerStdio(_MCPServer):
    """An MCP server run as a subprocess, spoken to over its stdin and stdout.

    :param command: the program to run (``"python"``, ``"npx"``, ``"uvx"``, a path).
    :param args: its arguments (a bare str is one argument).
    :param env: environment variables for it, merged over a safe default (``PATH``, ``HOME``, ...);
        the values of credential-like names (``*TOKEN*``, ``*KEY*``, ``*SECRET*``, ...) are redacted
        from every event, log line (the SDK's own included) and error.
    :param cwd: its working directory.
    :param name: the server's name in events, errors and logs (default: the command and first argument).
    :param tool_prefix: put before each tool name the model sees (``"github_"``), to avoid clashes.
    :param tool_filter: the tools to offer: the server's tool names (before the prefix), or a
        predicate given each name (one that raises leaves the tool out).
    :param timeout: seconds one call may take before it ends with status ``timeout`` (the server is
        sent ``notifications/cancelled``).  ``None``: no limit.  Connecting and listing may take a minute.
    :param result_ceiling: refuse results over this size (status ``invalid``; see :class:`~agentactors.ResultCeiling`).
    :param max_restarts: how many times, per scope, a server that died is started again at the next
        use (each one an ``mcp.server_restarted`` event); past that its calls fail.
    :raises ValueError, TypeError: an invalid option.

    Its stderr is logged, line by line, to the ``agentactors.mcp`` logger at INFO.
    """

    def __init__(
        self,
        command: str,
        args: Iterable[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        name: str | None = None,
        tool_prefix: str | None = None,
        tool_filter: ToolFilter | None = None,
        timeout: float | None = _DEFAULT_TIMEOUT,
        result_ceiling: ResultCeiling | None = None,
        max_restarts: int = 3,
    ) -> None:
        if not isinstance(command, str) or not command:
            raise ValueError("command must be a non-empty str")
        arguments = (args,) if isinstance(args, str) else tuple(args)
        for a in arguments:
            if not isinstance(a, str):
                raise TypeError(f"args must be str, not {type(a).__name__}")
        environment = dict(env) if env is not None else None
        register_credentials(environment)
        self.command = command
        self.args = arguments
        self.env = environment
        self.cwd = cwd
        if name is None:
            name = " ".join([Path(command).name, *(Path(a).name for a in arguments[:1])])
        label = f"MCP server {name!r}"
        super().__init__(
            name=name,
            label=label,
            tool_prefix=tool_prefix,
            tool_filter=tool_filter,
            timeout=timeout,
            result_ceiling=result_ceiling,
            max_restarts=max_restarts,
            open_transport=lambda: stdio_transport(label, command, arguments, environment, cwd),
        )

    def __repr__(self) -> str:
        env = f", env={sorted(self.env)}" if self.env else ""
        return (
            f"MCPServerStdio({redact(self.command)!r}, {[redact(a) for a in self.args]!r}, name={self.name!r}{env})"
        )


class MCPServerHTTP(_MCPServer):
    """An MCP server reached over HTTP: streamable HTTP, or the older SSE transport.

    :param url: the server's endpoint (``http://127.0.0.1:8000/mcp``).
    :param headers: sent with every request; the values of credential-like headers (``Authorization``,
        ``X-API-Key``, ``*token*``, ...) are registered as secrets, so they are redacted from every event,
        log line (the SDK's and the HTTP stack's own loggers included) and error.
    :param transport: ``"streamable-http"`` (the default) or ``"sse"`` — the older transport, deprecated by
        the protocol but still served by the ``mcp`` 2.x SDK (``MCPServer.sse_app()``): ``url`` is then
        the server's ``GET /sse`` endpoint.
    :param name: the server's name in events, errors and logs (default: the URL's host and port).
    :param tool_prefix, tool_filter, timeout, result_ceiling, max_restarts: as for :class:`MCPServerStdio`
        (a restart here is a new connection, after the server ended the session or the transport closed).
        The HTTP read timeout outlasts ``timeout`` (at least 5 minutes; none when ``timeout`` is ``None``): a
        server that answers with plain JSON sends nothing until its result is ready, and over SSE the answer
        comes on the event stream.  An SSE POST, which only hands the server a message, may take at most 30 s
        (or ``timeout``, if shorter): a server that leaves one unanswered loses the connection then, rather
        than holding every later message for the SDK's 5 minutes.
    :raises ValueError, TypeError: an invalid option.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        tool_prefix: str | None = None,
        tool_filter: ToolFilter | None = None,
        transport: Literal["streamable-http", "sse"] = "streamable-http",
        timeout: float | None = _DEFAULT_TIMEOUT,
        result_ceiling: ResultCeiling | None = None,
        max_restarts: int = 3,
    ) -> None:
        if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).hostname:
            raise ValueError("url must be an http:// or https:// URL")
        if transport not in ("streamable-http", "sse"):
            raise ValueError(f"transport must be 'streamable-http' or 'sse', not {transport!r}")
        sent = dict(headers) if headers is not None else None
        for key, value in (sent or {}).items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise TypeError("headers must map str to str")
        register_credentials(sent)
        if urlsplit(url).password:
            register_credentials({"password": str(urlsplit(url).password)})
        self.url = url
        self.transport = transport
        self._headers = sent
        parts = urlsplit(url)
        if name is None:
            name = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        label = f"MCP server {name!r}"
        super().__init__(
            name=name,
            label=label,
            tool_prefix=tool_prefix,
            tool_filter=tool_filter,
            timeout=timeout,
            result_ceiling=result_ceiling,
            max_restarts=max_restarts,
            open_transport=lambda: http_transport(url, sent, transport, timeout),
        )

    @property
    def header_names(self) -> tuple[str, ...]:
        """The names of the headers sent (their values are never shown)."""
        return tuple(self._headers or ())

    def __repr__(self) -> str:
        headers = f", headers={list(self.header_names)}" if self._headers else ""
        return f"MCPServerHTTP({redact(self.url)!r}, name={self.name!r}{headers})"
