"""Tools the SDK's own models refuse, taken out of a ``tools/list`` answer before the SDK reads it.

The SDK validates a listing page as a whole — against the negotiated version's wire surface, then as a
``ListToolsResult`` — so one tool it refuses (an ``inputSchema`` whose ``type`` is not ``"object"``, a name
that is not a string, annotations of the wrong shape) fails the whole ``tools/list`` and every tool of the
server with it.  Passing our own lenient result type to ``ClientSession.send_request`` does not help: it
checks the version's surface before it reads the result type; and a listing the SDK never read leaves
its session without the tools' output schemas, so every successful call of a good tool would then list
again (strictly) to validate its result, and fail.

So the filter sits where the answers arrive: the connection's read stream (:class:`ListingSieve`, used by
``_connection._WatchedStream``).  Once on, it checks each tool of a ``tools/list`` answer on its own with the
SDK's public :func:`mcp.types.methods.parse_server_result` — the same two checks the SDK makes, one tool at a
time — and hands the SDK the page without the tools that fail, remembering each one's name and a short,
redacted reason.  The SDK then reads the page as if the server had listed the good tools only: its
per-tool state (output schemas, the 2026-07-28 ``x-mcp-header`` rules) and its own re-listings work as ever.

It is off until a listing fails validation (``_connection.Connection.list_tools`` turns it on and asks
again): a server that lists well costs nothing more.  An answer is recognised by its content (a result
whose ``tools`` is a list); a ``tools/call`` result has no such field, and sieving an unknown field of
another result would only thin out what the SDK ignores anyway.  A page whose fault is not in a tool (no
list of tools, a bad cursor) is left as it is: the SDK refuses it, and the listing fails as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse
from mcp.types.methods import parse_server_result
from pydantic import ValidationError

from ..redaction import redact

__all__ = ["MAX_DROPPED_KEPT", "ListingSieve", "validation_reason"]

#: The dropped tools remembered by name and reason per listing (past it they are only counted).
MAX_DROPPED_KEPT: Final = 100
#: The version a session without one negotiated yet is read as (the SDK's own fallback).
_FALLBACK_VERSION: Final = "2025-11-25"
_MAX_NAME: Final = 80
_MAX_REASON: Final = 300


class ListingSieve:
    """Drops the tools the SDK would refuse from ``tools/list`` answers, while :attr:`on`.

    :param version: the session's negotiated protocol version (``None`` before the handshake).
    """

    __slots__ = ("_version", "count", "dropped", "on")

    def __init__(self, version: Callable[[], str | None]) -> None:
        self._version = version
        #: Sieve the answers that arrive (off until a listing fails validation).
        self.on = False
        #: ``(name, reason)`` of the tools dropped since :meth:`reset`, the first :data:`MAX_DROPPED_KEPT`.
        self.dropped: list[tuple[str, str]] = []
        #: How many tools were dropped since :meth:`reset`.
        self.count = 0

    def reset(self) -> None:
        """Forget the dropped tools (a listing starts)."""
        self.dropped = []
        self.count = 0

    def sift(self, message: SessionMessage) -> SessionMessage:
        """``message``, or a copy of it without the tools the SDK would refuse."""
        inner = message.message
        if not isinstance(inner, JSONRPCResponse):
            return message
        tools = inner.result.get("tools")
        if not isinstance(tools, list):
            return message
        version = self._version() or _FALLBACK_VERSION
        rest = {key: value for key, value in inner.result.items() if key != "tools"}
        try:
            parse_server_result("tools/list", version, {**rest, "tools": []})
        except (ValidationError, ValueError, KeyError):
            return message  # the page itself is at fault (or the version unknown): the SDK says so, as ever
        kept: list[Any] = []
        for index, raw in enumerate(tools):
            try:
                parse_server_result("tools/list", version, {**rest, "tools": [raw]})
            except ValidationError as exc:
                self._drop(_name_of(raw, index), validation_reason(exc, skip=2))
            except (ValueError, KeyError, TypeError, RecursionError) as exc:
                self._drop(_name_of(raw, index), redact(type(exc).__name__))
            else:
                kept.append(raw)
        if len(kept) == len(tools):
            return message
        answer = JSONRPCResponse(jsonrpc="2.0", id=inner.id, result={**rest, "tools": kept})
        return SessionMessage(answer, metadata=message.metadata)

    def _drop(self, name: str, reason: str) -> None:
        self.count += 1
        if len(self.dropped) < MAX_DROPPED_KEPT:
            self.dropped.append((name, reason))


def validation_reason(exc: ValidationError, *, skip: int = 0) -> str:
    """A concise, redacted reason from a validation error: where and what, never the value that failed.

    ``skip`` leading parts of each location are left out (``tools.3`` of a one-tool page).  The values a
    server sent are left out of the text (``include_input=False``): a server can put a secret anywhere.
    """
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    parts = []
    for error in errors[:3]:
        where = ".".join(str(part) for part in error["loc"][skip:])
        message = str(error["msg"])[:120]
        parts.append(f"{where}: {message}" if where else message)
    if len(errors) > 3:
        parts.append(f"{len(errors) - 3} more")
    text = "; ".join(parts) or "it does not validate"
    if len(text) > _MAX_REASON:
        text = text[: _MAX_REASON - 1] + "…"
    return redact(text)


def _name_of(raw: Any, index: int) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    if isinstance(name, str) and name:
        clipped = name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"
        return redact(clipped)
    return f"(tool {index + 1} of its page: no name)"
