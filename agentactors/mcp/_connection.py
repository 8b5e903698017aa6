"""One live session with an MCP server, owned by one task.

The SDK's ``Client`` and its transports are async context managers holding task groups, and anyio
wants a task group left by the task that entered it.  So a :class:`Connection` runs in a task of its
own (:meth:`Connection.serve`, started as a background task of the runtime or of the server's own
``async with``): it enters the transport and the client, says it is ready, and waits until it is asked
to close — or is cancelled, when its host shuts down; either way it leaves everything it entered,
shielded and bounded.  Calls come from the runs' own tasks: the SDK's requests go through memory
streams to the session, so any task may send one (and cancelling it sends ``notifications/cancelled``).

What the connection watches:

* the end of the server's stream (a stdio server that died, a transport that closed): :attr:`lost`
  says why, and its owner replaces the connection at the next use;
* the server saying its tool list changed — ``notifications/tools/list_changed`` on a 2025-era
  session, a ``subscriptions/listen`` stream on a 2026-07-28 one — which sets :attr:`changed`;
* an answer the SDK cannot read (not JSON-RPC, JSON nested deeper than its parser goes): the SDK hands it
  on as an exception and drops it, so the call it answered would wait for its timeout — or forever.  When
  the id it answers can be read from it, the call gets a parse error now instead (:func:`_unreadable`);
* a ``tools/list`` answer with tools the SDK's models refuse: once a listing failed on them, the stream
  hands the SDK each page without those tools, and :meth:`Connection.list_tools` says which were dropped
  and why (:mod:`._sieve`); on a 2026-07-28 session, so it does from the start with the tools whose
  ``x-mcp-header`` annotations the SDK would leave out itself, unreported.

A connection asked to close while it is still opening (a server that never answers ``initialize``)
stops opening at once: nothing it waits for can come any more.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Final

import anyio
import anyio.abc
import attrs
from mcp import Client
from mcp.client import Transport
from mcp.shared.message import SessionMessage
from mcp.types import PARSE_ERROR, ErrorData, Implementation, JSONRPCError, ToolListChangedNotification
from mcp.types import Tool as MCPTool
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..errors import AgentActorsError
from ..redaction import redact
from ._results import sdk_message
from ._sieve import ListingSieve

__all__ = ["Connection", "Listing", "MCPConnectionError"]

log = logging.getLogger("agentactors.mcp")

#: Leaving a connection (the SDK's stdio shutdown: close stdin, wait, terminate, kill) takes at most this.
_CLOSE_TIMEOUT: Final = 10.0
#: How long to wait for a server to acknowledge the tools list-changed subscription before going on.
_LISTEN_ACK_TIMEOUT: Final = 5.0
#: A tools/list that pages on past this many pages stops there.
_MAX_PAGES: Final = 100
_CLIENT_INFO: Final = Implementation(name="agentactors", version="0.1.0")


class MCPConnectionError(AgentActorsError):
    """A connection that cannot be opened (or is gone); the message is a concise, redacted reason.

    It never leaves :mod:`agentactors.mcp`: a call turns it into an :class:`MCPToolError` (status
    ``error``), a listing into a :class:`~agentactors.ToolsetError`.
    """


def describe(exc: BaseException) -> str:
    """A concise, redacted reason: the innermost exceptions of a group, type and message (without the input a
    pydantic error quotes: :func:`~._results.sdk_message`)."""
    leaves: list[BaseException] = []

    def walk(e: BaseException) -> None:
        if isinstance(e, BaseExceptionGroup):
            for inner in e.exceptions:
                walk(inner)
        else:
            leaves.append(e)

    walk(exc)
    parts = []
    for leaf in leaves[:3]:
        message = sdk_message(str(leaf)).strip()  # (a pydantic error quotes its input: a secret's part escapes redact)
        parts.append(f"{type(leaf).__name__}: {message}" if message else type(leaf).__name__)
    text = redact("; ".join(parts) or type(exc).__name__)  # before the cut: a secret across it is found whole
    if len(text) > 300:
        text = text[:299] + "…"
    return text


#: The tokens of JSON text that matter to finding an object's top-level keys: strings, brackets, colons.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]')
#: A JSON-RPC id as it may follow its key: a number or a string.
_ID_VALUE = re.compile(r'\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _unreadable(exc: Exception, label: str) -> SessionMessage | None:
    """The error answer for a response the SDK could not read, when its id can still be read; else None.

    The SDK's stdio transport hands on a line it cannot parse as a ``pydantic`` ``ValidationError`` whose
    error holds the line (or the parsed object, when the JSON was fine and the JSON-RPC shape was not).
    A line with a top-level ``id`` and no top-level ``method`` is a response: its request is answered
    with a ``PARSE_ERROR`` carrying the reason.  An id no request has is ignored by the session, as any.
    """
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        first = errors(include_url=False)[0]
        raw, reason = first.get("input"), str(first.get("msg", "")).strip()
    except Exception:
        return None
    request_id: Any = None
    if isinstance(raw, dict):
        if "method" not in raw:
            request_id = raw.get("id")
    elif isinstance(raw, str | bytes):
        request_id = _top_level_id(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return None
    message = f"{label} sent an answer that could not be read ({reason[:200] or type(exc).__name__})"
    error = ErrorData(code=PARSE_ERROR, message=message)
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


def _top_level_id(text: str) -> int | str | None:
    """The ``id`` of the JSON object ``text`` (which need not parse), if it has one and no ``method``."""
    depth = 0
    found: int | str | None = None
    key: str | None = None
    for token in _TOKEN.finditer(text):
        value = token.group()
        if value in "{[":
            depth += 1
        elif value in "}]":
            depth -= 1
        elif value == ":":
            if depth == 1 and key == '"method"':
                return None  # a request or a notification from the server, not an answer
            if depth == 1 and key == '"id"' and found is None:
                match = _ID_VALUE.match(text, token.end())
                if match is not None:
                    try:
                        found = json.loads(match.group(1))
                    except ValueError:
                        return None
        key = value
    return found


class _WatchedStream:
    """A read stream that tells its connection when it ends (the server is gone), answers unreadable answers,
    and sieves the tools the SDK would refuse out of ``tools/list`` answers (while its sieve is on)."""

    __slots__ = ("_label", "_on_end", "_sieve", "_stream")

    def __init__(
        self,
        stream: Any,
        on_end: Callable[[str], None],
        label: str = "the MCP server",
        sieve: ListingSieve | None = None,
    ) -> None:
        self._stream = stream
        self._on_end = on_end
        self._label = label
        self._sieve = sieve

    @property
    def last_context(self) -> Any:
        # The SDK's dispatcher reads this, duck-typed, off the streams that carry it.
        return getattr(self._stream, "last_context", None)

    async def receive(self) -> Any:
        try:
            item = await self._stream.receive()
        except anyio.EndOfStream:
            self._on_end("the server closed the connection")
            raise
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end("the connection was closed")
            raise
        if isinstance(item, Exception):  # rare: a line the SDK could not read
            answer = _unreadable(item, self._label)
            if answer is not None:
                return answer
        elif self._sieve is not None and isinstance(item, SessionMessage):
            # A call's answer passes at once (no ``tools`` list); a listing's is sieved once a listing failed
            # validation, and for its x-mcp-header annotations on a 2026-07-28 session.
            return self._sieve.sift(item)
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()

    def __aiter__(self) -> _WatchedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _WatchedStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class _Watched:
    """A transport whose read stream is watched for its end (and sieved: :class:`_WatchedStream`)."""

    def __init__(
        self, transport: Transport, on_end: Callable[[str], None], label: str, sieve: ListingSieve | None = None
    ) -> None:
        self._transport = transport
        self._on_end = on_end
        self._label = label
        self._sieve = sieve

    async def __aenter__(self) -> Any:
        read, write = await self._transport.__aenter__()
        return _WatchedStream(read, self._on_end, self._label, self._sieve), write

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._transport.__aexit__(exc_type, exc, tb)


@attrs.frozen(slots=True)
class Listing:
    """What :meth:`Connection.list_tools` found: the tools, and those the SDK refused (:mod:`._sieve`)."""

    tools: list[MCPTool]
    #: ``(name, reason)`` of the tools left out because the SDK refuses them (the first 100; names redacted).
    dropped: tuple[tuple[str, str], ...] = ()
    #: How many tools were left out so (``dropped`` names at most 100 of them).
    dropped_count: int = 0
    #: The server's own names of all the tools left out so, unredacted (to match namesakes kept, never to be
    #: shown): how many of each.
    dropped_names: dict[str, int] = attrs.field(factory=dict, repr=False)


class Connection:
    """One session with a server: :meth:`serve` owns it; :meth:`ready` waits for it; :meth:`aclose` ends it.

    :param label: ``MCP server 'name'``, for logs and reasons.
    :param open_transport: makes the transport to enter (a new one per connection).
    :param sieve: sieve ``tools/list`` answers from the start (an earlier connection to the server found
        tools the SDK refuses: the SDK's own re-listings, e.g. to validate a call's result, must not fail).
    """

    def __init__(self, label: str, open_transport: Callable[[], Transport], *, sieve: bool = False) -> None:
        self.label = label
        self._open_transport = open_transport
        self._sieve = ListingSieve(self._version)
        self._sieve.on = sieve
        self.client: Client | None = None
        #: Why the connection is gone (``None`` while it lives).
        self.lost: str | None = None
        #: The server said its tool list changed since this flag was last cleared.
        self.changed = False
        #: The connection was opened (a lost one that was opened died; one that was not failed to open).
        self.opened = False
        self._failure: str | None = None
        self._leaving = False
        self._ready = anyio.Event()
        self._closing = anyio.Event()
        self._closed = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        #: The last lines of a stdio server's stderr (its transport keeps them), for the reason it failed.
        self._stderr_tail: Any = None

    def _version(self) -> str | None:
        client = self.client
        return client.protocol_version if client is not None else None

    @property
    def sieving(self) -> bool:
        """Whether ``tools/list`` answers are sieved (the server listed tools the SDK refuses)."""
        return self._sieve.on

    def _end(self, reason: str) -> None:
        if self.lost is None:
            self.lost = reason
            if self._ready.is_set() and not self._leaving:  # not our own closing: the server went away
                log.warning("%s: %s", self.label, reason)

    async def serve(self) -> None:
        """Open the connection and hold it until :meth:`aclose` or cancellation.

        Never raises but cancellation: a failure is kept for :meth:`ready` and :attr:`lost`.
        """
        # Entered before anything the connection holds, so that it can shield their exits: cancel
        # scopes nest, and the scopes of the SDK's task groups must be left inside this one.
        scope = self._scope = anyio.CancelScope()
        if self._closing.is_set():
            scope.cancel()  # asked to close before it started: nothing to open
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    try:
                        await self._open(stack)
                        await self._closing.wait()
                    finally:
                        # Leaving — asked to, cancelled with the host, or failed: the exits run
                        # shielded from the host's cancellation, and bounded.
                        self._leaving = True
                        self.client = None
                        scope.shield = True
                        scope.deadline = anyio.current_time() + _CLOSE_TIMEOUT
        except Exception as exc:
            reason = describe(exc)
            if not self._ready.is_set():
                # A server that exits before it answers says why on its stderr (read to the end by now:
                # leaving the transport waited for it); the SDK only says the connection closed.
                said = " | ".join(self._stderr_tail or ())
                if said:
                    reason += f"; its stderr ended: {said if len(said) <= 500 else '…' + said[-499:]}"
                self._failure = reason
            self._end(f"the connection failed: {reason}")
        finally:
            self._leaving = True
            self._end("the connection was closed")
            self.client = None
            self._ready.set()
            self._closed.set()

    async def _open(self, stack: AsyncExitStack) -> None:
        inner = self._open_transport()
        self._stderr_tail = getattr(inner, "stderr_tail", None)
        transport = _Watched(inner, self._end, self.label, self._sieve)
        client = Client(transport, message_handler=self._on_message, cache=None, client_info=_CLIENT_INFO)
        await stack.enter_async_context(client)
        tg = await stack.enter_async_context(anyio.create_task_group())
        stack.callback(tg.cancel_scope.cancel)  # runs first on the way out: the watcher stops
        self.client = client
        await self._watch_list(client, tg)
        self.opened = True
        self._ready.set()

    async def ready(self) -> Client:
        """Wait until the connection is open.

        :raises MCPConnectionError: it could not be opened, or it is gone already.

        Cancellation: a cancelled waiter leaves; the connection goes on opening for the next one.
        """
        await self._ready.wait()
        client = self.client
        if self._failure is not None:
            raise MCPConnectionError(self._failure)
        if client is None or self.lost is not None:
            raise MCPConnectionError(self.lost or "the connection was closed")
        return client

    def mark_lost(self, reason: str) -> None:
        """The connection is of no more use (``reason``): its owner replaces it at the next use."""
        self._end(reason)

    def close_soon(self) -> None:
        """Ask :meth:`serve` to leave, without waiting for it.

        A connection still opening stops at once (its scope is cancelled; what it entered is left shielded,
        as ever): a server that never answers ``initialize`` would otherwise hold the closing for its bound.
        """
        self._closing.set()
        if not self._ready.is_set() and self._scope is not None:
            self._scope.cancel()

    async def aclose(self) -> None:
        """Ask :meth:`serve` to leave, and wait (bounded) until it has.

        Cancellation: shielded and bounded — a connection asked to close is closed.
        """
        self.close_soon()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT + 1.0):
            await self._closed.wait()

    async def list_tools(self) -> Listing:
        """Every tool the server lists now, page after page (at most ``_MAX_PAGES``).

        A page the SDK refuses is asked for once more with the sieve on (:mod:`._sieve`): the tools the
        SDK's models refuse are left out — named in the :class:`Listing` — and the others kept.

        :raises Exception: what the SDK raises (``MCPError``, a validation error of a page that is at
            fault itself, ...).
        """
        client = await self.ready()
        sieve = self._sieve
        sieve.reset()
        tools: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            before = sieve.count
            try:
                page = await client.list_tools(cursor=cursor)
            except ValidationError:
                if sieve.on:
                    raise  # sieved already: the page itself is at fault
                sieve.on = True  # from now on, for this session's every listing (the SDK's own included)
                sieve.rollback(before)  # what the failed answer's x-mcp-header check dropped is dropped again
                page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        else:
            log.warning(
                "%s: tools/list still had pages after %d; using the tools listed so far", self.label, _MAX_PAGES
            )
        return Listing(tools, tuple(sieve.dropped), sieve.count, sieve.names)

    # -- list changes ------------------------------------------------------------------------------

    async def _on_message(self, message: Any) -> None:
        """The session's notifications (2025-era list changes arrive here) and transport errors."""
        if isinstance(message, ToolListChangedNotification):
            self.changed = True
        elif isinstance(message, Exception):
            log.debug("%s: transport error: %s", self.label, describe(message))

    async def _watch_list(self, client: Client, tg: anyio.abc.TaskGroup) -> None:
        """On a 2026-07-28 session, subscribe to tool list changes (waiting briefly for the acknowledgement)."""
        tools = client.server_capabilities.tools
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or tools is None or not tools.list_changed:
            return
        acked = anyio.Event()
        tg.start_soon(self._listen, client, acked)
        with anyio.move_on_after(_LISTEN_ACK_TIMEOUT):
            await acked.wait()

    async def _listen(self, client: Client, acked: anyio.Event) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                acked.set()
                async for _event in subscription:
                    self.changed = True
        except Exception as exc:  # an unsupported or lost subscription: changes are then not seen
            log.debug("%s: no tool list-changed subscription: %s", self.label, describe(exc))
        finally:
            acked.set()
