"""A server in one scope — a runtime, or an ``async with server:`` block: its connection, its tools, its calls.

A :class:`Link` opens the connection at first use and keeps it for every run of the scope.  It lists
the server's tools once per connection (again when the server says the list changed) and turns them
into :class:`~agentactors.Tool` objects whose calls come back here.  When the connection is lost (a
stdio server that died, an HTTP session the server ended) the next use opens a new one — a restart,
recorded as an ``mcp.server_restarted`` event and a warning — at most ``max_restarts`` times per scope.

Every failure of a call is a :class:`~agentactors.mcp.MCPToolError` with a concise reason, raised
inside the tool, so the executor records status ``error`` with that text: nothing a server does
becomes an exception out of a run.  Only cancellation propagates (it sends the server
``notifications/cancelled``; a timeout is the executor's cancellation, hence status ``timeout``).

Tool names and descriptions from a server are data: they are validated as names, shown to the model,
logged with ``%r`` and never executed or formatted into code.  So are its input schemas: one longer than
:data:`MAX_SCHEMA_CHARS`, or with a ``$ref`` that does not resolve inside the schema itself (a remote
URL, a file, a dangling pointer), costs that tool and only that tool — validating a call against it
would fetch the URL (from the event loop: a server could point the client at any address it can
reach) or fail in the middle of the call.

Every tool left out is reported the same way: a WARNING naming it and why (the first
:data:`MAX_LOGGED` of a listing, then one line counting the rest), and in the ``mcp.tools_listed``
event's ``skipped`` (``{"name", "reason"}``, the first :data:`MAX_REPORTED`) and ``skipped_count``.
The reasons never quote what the server sent (a server can echo a secret anywhere).  That covers a tool
the SDK's own models refuse, or (on a 2026-07-28 session) one whose ``x-mcp-header`` annotations break that
version's rules — the connection sieves both out: :mod:`._sieve` — a bad schema, a name no
:class:`~agentactors.ToolSpec` takes, every tool of a name the server gives two tools that are not alike
(the SDK checks a call's result against the last one's output schema, by name: :func:`_unlike_twins`; one
of them sieved out makes them unlike too: :func:`_namesakes_dropped`), the repeats of a tool listed twice
alike (once serves).  A name that :class:`~agentactors.ToolSpec` takes but OpenAI, Anthropic and Bedrock refuse
(one with a ``.``) is kept — Gemini takes it — and named in a WARNING and in the event's ``unportable``: on
those providers a run offering it fails with ``UnsupportedToolNameError`` before anything is sent;
``tool_filter`` leaves it out.
"""

from __future__ import annotations

import json
import logging
import math
import re
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Final

import anyio
import anyio.to_thread
import attrs
from mcp.client import Transport
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, INVALID_REQUEST
from mcp.types import Tool as MCPTool

from ..messages import ToolSpec
from ..tools.registry import Tool
from ..tools.results import ResultCeiling
from ._connection import Connection, Listing, MCPConnectionError, describe
from ._results import MCPToolError, result_text, sdk_message
from ._transports import HTTPTransport

__all__ = ["LIST_TIMEOUT", "MAX_LOGGED", "MAX_REPORTED", "Link", "ServerSettings"]

log = logging.getLogger("agentactors.mcp")

#: How a scope starts the task that owns a connection (a background task of the runtime, or a task of
#: the server's own task group).
Spawn = Callable[[Callable[[], Awaitable[None]]], None]
#: How a scope emits an event (to the current run's recorders, or the runtime's).
Emit = Callable[..., None]

_MAX_NAME_SHOWN: Final = 80
#: Connecting and listing may take this long (a server's cold start: an interpreter, a package download).
LIST_TIMEOUT: Final = 60.0
#: A tool whose input schema is longer than this (its JSON text) is left out: it would go to the model with
#: every request (some 50,000 tokens), and checking it against the meta-schema takes seconds of CPU.
MAX_SCHEMA_CHARS: Final = 200_000
#: A listing logs at most this many skipped tools one by one (then one line counts the rest).
MAX_LOGGED: Final = 20
#: The ``mcp.tools_listed`` event names at most this many skipped tools (``skipped_count`` counts them all).
MAX_REPORTED: Final = 100
#: Why each tool of a name the server gives tools that are not all alike is left out (``{}``: how many).
_UNLIKE_TWINS: Final = (
    "the server lists {} tools of that name, not all alike: a call by name cannot choose between them, and the "
    "MCP SDK checks each result against the last one's output schema"
)
#: Why a tool is left out whose namesake was sieved out (``{}``: how many tools of that name, how many sieved).
_NAMESAKE_REFUSED: Final = (
    "the server lists {} tools of that name and {} of them cannot serve (named with its own reason): a call by "
    "name cannot choose between them"
)
#: The tool names every vendor takes (OpenAI's, Anthropic's and Bedrock's rule; Gemini's is wider).
_PORTABLE_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")


@attrs.frozen(slots=True)
class ServerSettings:
    """What a link needs to know about its server (the public classes hold it)."""

    name: str
    label: str
    tool_prefix: str | None
    tool_filter: Callable[[str], bool] | None
    timeout: float | None
    result_ceiling: ResultCeiling | None
    max_restarts: int
    open_transport: Callable[[], Transport] = attrs.field(repr=False)


class Link:
    """One server in one scope.  See the module docstring.

    :param settings: the server's settings.
    :param spawn: starts the task that owns a connection.
    :param emit: emits the link's events.
    """

    def __init__(self, settings: ServerSettings, spawn: Spawn, emit: Emit) -> None:
        self.settings = settings
        self._spawn = spawn
        self._emit = emit
        self._connection: Connection | None = None
        self._lock: anyio.Lock | None = None
        self._list_lock: anyio.Lock | None = None
        self._restarts = 0
        #: The transport each connection opened (to tell a read timeout from a server gone: :meth:`_read_timed_out`).
        self._transports: weakref.WeakKeyDictionary[Connection, list[Transport]] = weakref.WeakKeyDictionary()
        self._tools: tuple[Tool[Any, Any], ...] | None = None
        self._listed_from: Connection | None = None
        self._closed = False
        #: The server listed tools the SDK refuses: its next connections sieve their listings from the start.
        self._sieving = False

    # -- the connection ----------------------------------------------------------------------------

    async def connection(self) -> Connection:
        """The open connection, opening (or reopening) it first when there is none.

        :raises MCPConnectionError: it cannot be opened, the scope has closed, or the server died more
            than ``max_restarts`` times.

        Cancellation: a cancelled caller leaves; a connection being opened goes on for the next caller.
        """
        conn = self._connection
        if conn is None or conn.lost is not None:
            conn = await self._replace(conn)
        await conn.ready()
        return conn

    async def _replace(self, old: Connection | None) -> Connection:
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            conn = self._connection
            if conn is not None and conn is not old and conn.lost is None:
                return conn  # another caller replaced it meanwhile
            if self._closed:
                raise MCPConnectionError(f"{self.settings.label} was closed")
            if conn is not None:
                conn.close_soon()
                if conn.opened:  # it died (rather than failing to open): a restart, and they are bounded
                    self._count_restart(conn.lost or "the connection was lost")
            opened: list[Transport] = []  # filled when the connection's task opens it
            open_transport = self.settings.open_transport

            def open_and_keep() -> Transport:
                opened.append(open_transport())
                return opened[-1]

            conn = self._connection = Connection(self.settings.label, open_and_keep, sieve=self._sieving)
            self._transports[conn] = opened
            self._spawn(conn.serve)
            return conn

    def _read_timed_out(self, conn: Connection) -> float | None:
        """The HTTP read timeout that passed on one of ``conn``'s requests (which ended it), or None."""
        for transport in self._transports.get(conn, ()):
            if isinstance(transport, HTTPTransport) and transport.timed_out is not None:
                return transport.timed_out
        return None

    def _over_http(self, conn: Connection) -> bool:
        """Whether ``conn`` talks HTTP (a server elsewhere: it is reconnected, not started, at the next call)."""
        return any(isinstance(transport, HTTPTransport) for transport in self._transports.get(conn, ()))

    def _count_restart(self, reason: str) -> None:
        settings = self.settings
        if self._restarts >= settings.max_restarts:
            raise MCPConnectionError(
                f"{settings.label} is gone ({reason}) and was restarted {self._restarts} "
                f"time{'s' if self._restarts != 1 else ''} already (max_restarts={settings.max_restarts})"
            )
        self._restarts += 1
        log.warning("%s: %s; connecting again (restart %d of at most %d)", settings.label, reason, self._restarts,
                    settings.max_restarts)
        self._emit("mcp.server_restarted", server=settings.name, restarts=self._restarts, reason=reason)

    async def aclose(self) -> None:
        """Close the connection (the scope is ending); later uses fail.

        Cancellation: shielded and bounded (see :meth:`Connection.aclose`).
        """
        self._closed = True
        conn, self._connection = self._connection, None
        if conn is not None:
            await conn.aclose()

    # -- listing -----------------------------------------------------------------------------------

    async def tools(self) -> tuple[Tool[Any, Any], ...]:
        """The server's tools as agentactors tools: listed once per connection and again after a change.

        Returns the same tuple while nothing changed (that is how an agent knows to keep its tables).

        :raises MCPConnectionError: see :meth:`connection`.
        :raises Exception: the listing failed (what the SDK raised).
        """
        conn = self._connection
        if conn is not None and conn is self._listed_from and conn.lost is None and not conn.changed:
            assert self._tools is not None
            return self._tools  # the common case: no await, no lock
        if self._list_lock is None:
            self._list_lock = anyio.Lock()
        async with self._list_lock:
            with anyio.fail_after(LIST_TIMEOUT):
                conn = await self.connection()
                if conn is self._listed_from and not conn.changed and self._tools is not None:
                    return self._tools
                conn.changed = False  # cleared first: a change announced while listing lists again
                listed = await conn.list_tools()
                self._sieving = self._sieving or conn.sieving
            # Each tool's schema is checked and compiled (~2 ms apiece, seconds for one large schema): thousands,
            # or one huge one, would hold the event loop.  So always in a worker thread (once per connection);
            # abandoned if the caller is cancelled (the work is pure).
            tools, report = await anyio.to_thread.run_sync(self._build, listed, abandon_on_cancel=True)
            previous = self._tools
            if previous is not None and [t.spec for t in previous] == [t.spec for t in tools]:
                tools = previous  # the same tools on a new connection: nothing for the agents to rebuild
            else:
                self._emit(
                    "mcp.tools_listed",
                    server=self.settings.name,
                    tools=tuple(t.name for t in tools),
                    skipped=tuple({"name": name, "reason": reason} for name, reason in report.skipped),
                    skipped_count=report.count,
                    unportable=report.unportable,
                )
            self._tools, self._listed_from = tools, conn
            return tools

    def _build(self, listed: Listing) -> tuple[tuple[Tool[Any, Any], ...], _Report]:
        settings = self.settings
        prefix = settings.tool_prefix or ""
        keep = settings.tool_filter
        report = _Report(settings.label)
        for name, reason in listed.dropped:
            if name.startswith("("):  # no name of its own: the sieve says where it was
                report.skip(name, reason)
            elif keep is None or _allowed(keep, name, settings.label):  # a tool the filter leaves out is no news
                report.skip(prefix + name, reason)
        report.count += listed.dropped_count - len(listed.dropped)  # dropped past the ones named: counted only
        tools: list[Tool[Any, Any]] = []
        unlike = _unlike_twins(listed.tools)
        namesakes = _namesakes_dropped(listed)
        seen: set[str] = set()
        for remote in listed.tools:
            if keep is not None and not _allowed(keep, remote.name, settings.label):
                continue
            name = prefix + remote.name  # one to one: the server's names and the model's clash alike
            if remote.name in namesakes:
                kept, dropped = namesakes[remote.name]
                report.skip(name, _NAMESAKE_REFUSED.format(kept + dropped, dropped))
                continue
            if remote.name in unlike:
                report.skip(name, _UNLIKE_TWINS.format(unlike[remote.name]))
                continue
            if remote.name in seen:
                report.skip(name, "a repeat: the server lists the same tool before it")
                continue
            seen.add(remote.name)
            annotations = remote.annotations
            problem = _schema_problem(remote.input_schema)
            if problem is not None:
                report.skip(name, problem)
                continue
            try:
                spec = ToolSpec(name, remote.description or remote.title or "", dict(remote.input_schema))
                built: Tool[Any, Any] = Tool.from_spec(
                    spec,
                    self._caller(remote.name),
                    # None is no limit: infinity says so to the executor (its None is "the default", 60 s).
                    timeout=settings.timeout if settings.timeout is not None else math.inf,
                    result_ceiling=settings.result_ceiling,
                    read_only=bool(annotations is not None and annotations.read_only_hint),
                )
            except (TypeError, ValueError, RecursionError) as exc:
                # One tool the server describes badly (an invalid or absurdly deep schema, a bad name) is
                # left out; the listing, and every other tool of the server, goes on.
                report.skip(name, describe(exc))
                continue
            tools.append(built)
            if not _PORTABLE_NAME.fullmatch(name):
                report.unportable_name(name)
        report.close()
        return tuple(tools), report

    def _caller(self, remote_name: str) -> Callable[..., Awaitable[str]]:
        link = self

        async def call_mcp_tool(**arguments: Any) -> str:
            return await link.call(remote_name, arguments)

        return call_mcp_tool

    # -- calling -----------------------------------------------------------------------------------

    async def call(self, remote_name: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool ``remote_name`` with validated ``arguments``; its result as text.

        :raises MCPToolError: for every failure (see the module docstring).

        Cancellation: propagates; the SDK sends the server ``notifications/cancelled`` for the call.
        """
        label = self.settings.label
        try:
            conn = await self.connection()
        except MCPConnectionError as exc:
            raise MCPToolError(f"{label} is not available: {exc}") from None
        client = conn.client
        if client is None:
            raise MCPToolError(f"{label} is not available: {conn.lost or 'the connection closed'}")
        try:
            result = await client.call_tool(remote_name, arguments)
        except MCPError as exc:
            # -32000 is also the first of the codes servers use for their own errors: the SDK's
            # "connection closed" is told by its message too, and a lost connection by the stream's end.
            if conn.lost is not None or (exc.code == CONNECTION_CLOSED and exc.message == "Connection closed"):
                waited = self._read_timed_out(conn)
                if waited is not None:  # the server may be well, still working: not "went away"
                    conn.mark_lost(f"no answer within the HTTP read timeout ({waited:g} s)")
                    raise MCPToolError(
                        f"{label} sent no answer within the HTTP read timeout ({waited:g} s); the connection is "
                        "opened again at the next call"
                    ) from None
                reason = conn.lost or exc.message
                # Marked here, not only when the connection's own task notices: a run's next call may come
                # first, and must find the connection lost (replaced, a restart counted), not reuse it.
                conn.mark_lost(reason)
                again = "the connection is opened again" if self._over_http(conn) else "it is started again"
                raise MCPToolError(f"{label} went away during the call ({reason}); {again} at the next call") from None
            if exc.code == INVALID_REQUEST and "terminated" in exc.message.lower():
                conn.mark_lost("the server ended the session")
                raise MCPToolError(f"{label} ended the session; it is reconnected at the next call") from None
            # The SDK's parse and validation errors quote the input (a part of a secret the server echoed).
            raise MCPToolError(sdk_message(exc.message) or f"JSON-RPC error {exc.code}") from None
        except Exception as exc:  # a result that does not validate, a transport failure, ...
            raise MCPToolError(f"{label} failed the call: {sdk_message(describe(exc))}") from None
        return result_text(result)


class _Report:
    """The tools a listing left out (and the names some vendors refuse): logged and counted, both bounded."""

    def __init__(self, label: str) -> None:
        self.label = label
        #: ``(name, reason)`` of the first :data:`MAX_REPORTED` tools left out.
        self.skipped: list[tuple[str, str]] = []
        #: How many tools were left out.
        self.count = 0
        self._unportable: list[str] = []
        self._logged = 0

    @property
    def unportable(self) -> tuple[str, ...]:
        """The kept tools whose names OpenAI, Anthropic and Bedrock refuse (the first :data:`MAX_REPORTED`)."""
        return tuple(self._unportable)

    def skip(self, name: str, reason: str) -> None:
        self.count += 1
        name = _clip(name)
        if len(self.skipped) < MAX_REPORTED:
            self.skipped.append((name, reason))
        if self._logged < MAX_LOGGED:
            self._logged += 1
            log.warning("%s: tool %r is skipped: %s", self.label, name, reason)

    def unportable_name(self, name: str) -> None:
        if len(self._unportable) < MAX_REPORTED:
            self._unportable.append(name)
        if self._logged < MAX_LOGGED:
            self._logged += 1
            log.warning(
                "%s: tool %r is kept, but OpenAI, Anthropic and Bedrock take tool names of letters, digits, '_' "
                "and '-' only (1 to 64): a run offering it to those providers fails (UnsupportedToolNameError); "
                "leave it out with tool_filter",
                self.label,
                name,
            )

    def close(self) -> None:
        """Count, in one line, what was not logged one by one."""
        unlogged = self.count + len(self._unportable) - self._logged
        if unlogged > 0:
            log.warning(
                "%s: %d more tools were skipped or have names some providers refuse (the first %d are logged "
                "above; the mcp.tools_listed event names up to %d of each)",
                self.label,
                unlogged,
                MAX_LOGGED,
                MAX_REPORTED,
            )


def _allowed(keep: Callable[[str], bool], name: str, label: str) -> bool:
    try:
        return bool(keep(name))
    except Exception as exc:  # a filter that fails keeps the tool out: it fails closed
        log.warning("%s: tool_filter raised %s for %r; the tool is left out", label, type(exc).__name__, _clip(name))
        return False


def _unlike_twins(listed: list[MCPTool]) -> dict[str, int]:
    """The names the server gives two or more tools that are not all alike: how many tools each.

    The SDK keeps its per-tool state by name, the last tool of a name winning — the output schema it checks a
    call's structured result against, and on a 2026-07-28 session the ``x-mcp-header`` rules of its
    arguments — and the server is called by name too.  So a tool of such a name cannot be offered as itself:
    its results would be checked against another tool's schema (refused when they fit its own, passed when
    they do not).  Tools listed twice alike (a page the server repeats) are one tool.
    """
    counts: dict[str, int] = {}
    for remote in listed:
        counts[remote.name] = counts.get(remote.name, 0) + 1
    if len(counts) == len(listed):
        return {}  # the common case: every name once
    unlike: dict[str, int] = {}
    first: dict[str, MCPTool] = {}
    for remote in listed:
        if counts[remote.name] < 2:
            continue
        model = first.setdefault(remote.name, remote)
        try:
            alike = remote is model or remote == model
        except RecursionError:  # nested past what comparing goes: not known to be alike
            alike = False
        if not alike:
            unlike[remote.name] = counts[remote.name]
    return unlike


def _namesakes_dropped(listed: Listing) -> dict[str, tuple[int, int]]:
    """The names of tools kept that a tool sieved out shares: how many tools of each name were kept, and
    how many sieved out.

    Such tools are not alike (the SDK refuses one and not the other), and the server is called by name: the
    call meant for the kept tool may run the other.  On a 2026-07-28 session the SDK even forgets the
    ``x-mcp-header`` rules of a tool when a later namesake's are invalid (its calls would carry none) — the
    sieve spares it that, but the tool still cannot be chosen.  So, as with :func:`_unlike_twins`, none serves.
    """
    dropped = listed.dropped_names
    if not dropped:
        return {}  # the common case: nothing sieved out
    kept: dict[str, int] = {}
    for remote in listed.tools:
        if remote.name in dropped:
            kept[remote.name] = kept.get(remote.name, 0) + 1
    return {name: (count, dropped[name]) for name, count in kept.items()}


def _schema_problem(schema: Any) -> str | None:
    """Why a server's input schema cannot serve before it is even checked (its size), or None.

    A ``$ref`` that needs anything but the schema itself is refused by :meth:`Tool.from_spec`
    (:func:`~agentactors.tools.json_refs.check_refs_resolve`: nothing is ever fetched), which leaves that tool out.
    """
    try:
        text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return None  # no JSON form, or nested too deeply: the schema check names that
    if len(text) > MAX_SCHEMA_CHARS:
        return f"its input schema is {len(text):,} characters long, over {MAX_SCHEMA_CHARS:,}"
    return None


def _clip(name: str) -> str:
    return name if len(name) <= _MAX_NAME_SHOWN else name[: _MAX_NAME_SHOWN - 1] + "…"
