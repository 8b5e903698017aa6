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
again): a server that lists well costs nothing more (but the ``x-mcp-header`` check below).  An answer is
recognised by its content (a result whose ``tools`` is a list); a ``tools/call`` result has no such field,
and sieving an unknown field of another result would only thin out what the SDK ignores anyway.  A page
whose fault is not in a tool (no list of tools, a bad cursor) is left as it is: the SDK refuses it, and the
listing fails as before.

On a 2026-07-28 session the SDK also leaves out, itself, every tool whose ``x-mcp-header`` annotations break
the version's rules (the MUST of the specification) — logging it to its own logger only, quoting what the
server sent — and, when an earlier tool of that name had valid rules, forgets those too.  So on such a
session the sieve is always on for those annotations, whatever :attr:`ListingSieve.on` says: it checks each
tool with the SDK's own public :func:`mcp.shared.inbound.find_invalid_x_mcp_header` and takes out, and
names, the ones it refuses before the SDK sees them.  A page none of whose input schemas even mentions the
annotation (one ``json.dumps`` of them, in C) is handed on as it came.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

from mcp.shared.inbound import X_MCP_HEADER_KEY, find_invalid_x_mcp_header
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCResponse
from mcp.types.methods import parse_server_result
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..redaction import redact

__all__ = ["MAX_DROPPED_KEPT", "ListingSieve", "validation_reason"]

#: The dropped tools remembered by name and reason per listing (past it they are only counted).
MAX_DROPPED_KEPT: Final = 100
#: The version a session without one negotiated yet is read as (the SDK's own fallback).
_FALLBACK_VERSION: Final = "2025-11-25"
_MAX_NAME: Final = 80
_MAX_REASON: Final = 300
#: Why a tool the SDK's models refuse is left out (then where and what).
_REFUSED: Final = "the MCP SDK's models refuse it: "
#: Why a tool whose ``x-mcp-header`` annotations the SDK refuses is left out (then which rule it breaks).
_BAD_HEADER: Final = (
    "its input schema's x-mcp-header annotations break the MCP 2026-07-28 rules (a client must leave such a tool "
    "out): "
)
#: The rules the SDK's reasons name, told apart by how each of its texts ends (a reason quotes the server's
#: property names and header values before that, so it is never shown, nor searched).
_HEADER_RULES: Final = (
    (re.compile(r"pure `properties` chain\Z"), "one is on a schema position not reached through 'properties' alone"),
    (re.compile(r"must be a string, not \w+\Z"), "a header name is not a string"),
    (re.compile(r"is not an RFC 9110 token\Z"), "a header name is not an RFC 9110 token"),
    (re.compile(r"\)\Z"), "one is on a property that is not an integer, a string or a boolean"),
    (re.compile(r"duplicates property .*\Z", re.DOTALL), "two properties name one header (case ignored)"),
)


class ListingSieve:
    """Drops the tools the SDK would refuse from ``tools/list`` answers, while :attr:`on`.

    :param version: the session's negotiated protocol version (``None`` before the handshake).
    """

    __slots__ = ("_names", "_version", "dropped", "on")

    def __init__(self, version: Callable[[], str | None]) -> None:
        self._version = version
        #: Sieve the answers that arrive (off until a listing fails validation; ``x-mcp-header`` rules are
        #: checked on a 2026-07-28 session whatever this says).
        self.on = False
        #: ``(name, reason)`` of the tools dropped since :meth:`reset`, the first :data:`MAX_DROPPED_KEPT` (names
        #: redacted; reasons whole, quoting nothing the server sent).
        self.dropped: list[tuple[str, str]] = []
        #: The server's own name of each tool dropped since :meth:`reset` (``None``: it had no string name).
        self._names: list[str | None] = []

    @property
    def count(self) -> int:
        """How many tools were dropped since :meth:`reset`."""
        return len(self._names)

    @property
    def names(self) -> dict[str, int]:
        """The server's names of the tools dropped since :meth:`reset`, unredacted (to be matched against the
        names of the tools kept, never shown): how many tools of each."""
        counts: dict[str, int] = {}
        for name in self._names:
            if name is not None:
                counts[name] = counts.get(name, 0) + 1
        return counts

    def reset(self) -> None:
        """Forget the dropped tools (a listing starts)."""
        self.dropped = []
        self._names = []

    def rollback(self, count: int) -> None:
        """Forget the tools dropped after the first ``count`` (a page that is asked for again)."""
        del self._names[count:]
        del self.dropped[count:]

    def sift(self, message: SessionMessage) -> SessionMessage:
        """``message``, or a copy of it without the tools the SDK would refuse."""
        inner = message.message
        if not isinstance(inner, JSONRPCResponse):
            return message
        tools = inner.result.get("tools")
        if not isinstance(tools, list):
            return message
        version = self._version() or _FALLBACK_VERSION
        headers = version in MODERN_PROTOCOL_VERSIONS and _mention_headers(tools)
        if not (self.on or headers):
            return message  # the common case: nothing the SDK would refuse or leave out
        rest = {key: value for key, value in inner.result.items() if key != "tools"}
        if self.on:
            try:
                parse_server_result("tools/list", version, {**rest, "tools": []})
            except (ValidationError, ValueError, KeyError):
                return message  # the page itself is at fault (or the version unknown): the SDK says so, as ever
        kept: list[Any] = []
        for index, raw in enumerate(tools):
            if self.on:
                try:
                    parse_server_result("tools/list", version, {**rest, "tools": [raw]})
                except ValidationError as exc:
                    self._drop(raw, index, _REFUSED + validation_reason(exc, skip=2))
                    continue
                except (ValueError, KeyError, TypeError, RecursionError) as exc:
                    self._drop(raw, index, _REFUSED + redact(type(exc).__name__))
                    continue
            if headers and (reason := _header_problem(raw)) is not None:
                self._drop(raw, index, reason)
                continue
            kept.append(raw)
        if len(kept) == len(tools):
            return message
        answer = JSONRPCResponse(jsonrpc="2.0", id=inner.id, result={**rest, "tools": kept})
        return SessionMessage(answer, metadata=message.metadata)

    def _drop(self, raw: Any, index: int, reason: str) -> None:
        name = raw.get("name") if isinstance(raw, dict) else None
        self._names.append(name if isinstance(name, str) else None)
        if len(self.dropped) < MAX_DROPPED_KEPT:
            self.dropped.append((_name_of(raw, index), reason))


def _mention_headers(tools: list[Any]) -> bool:
    """Whether an input schema of the page may carry an ``x-mcp-header`` annotation (cheap; may say yes
    wrongly, e.g. for a property of that name, never no wrongly)."""
    schemas = [raw.get("inputSchema") for raw in tools if isinstance(raw, dict)]
    try:
        text = json.dumps(schemas, separators=(",", ":"), check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return True  # not told so: each tool is checked on its own
    return X_MCP_HEADER_KEY in text


def _header_problem(raw: Any) -> str | None:
    """Why the SDK would leave ``raw`` out for its ``x-mcp-header`` annotations (never quoting them), or None.

    A tool whose schema is not even an object is the models' to refuse (the SDK fails the page, and the
    listing asks again with :attr:`ListingSieve.on`).
    """
    schema = raw.get("inputSchema") if isinstance(raw, dict) else None
    if not isinstance(schema, dict):
        return None
    try:
        problem = find_invalid_x_mcp_header(schema)
    except RecursionError:
        return "its input schema is nested too deeply to check its x-mcp-header annotations"
    if problem is None:
        return None
    rule = next((rule for ending, rule in _HEADER_RULES if ending.search(problem)), "one is invalid")
    return _BAD_HEADER + rule


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
    text = redact("; ".join(parts) or "it does not validate")  # before the cut: a secret across it is found whole
    if len(text) > _MAX_REASON:
        text = text[: _MAX_REASON - 1] + "…"
    return text


def _name_of(raw: Any, index: int) -> str:
    name = raw.get("name") if isinstance(raw, dict) else None
    if isinstance(name, str) and name:
        name = redact(name)  # before the cut: a secret across it is found whole
        return name if len(name) <= _MAX_NAME else name[: _MAX_NAME - 1] + "…"
    return f"(tool {index + 1} of its page: no name)"
