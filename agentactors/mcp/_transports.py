"""How a server is reached: a subprocess over stdio, or HTTP — and what each keeps out of the logs.

Each function returns a *transport* for the SDK's ``Client``: an async context manager that yields the
read and write streams of one connection, entered and left by the task that owns the connection.

* :func:`stdio_transport` runs the server as a subprocess (the SDK's ``stdio_client``) with its stderr
  on a pipe of ours, read line by line into the ``agentactors.mcp`` logger (redacted, clipped), so a
  server's complaints land in the application's logs rather than on the terminal.  Its last lines are
  kept too (:attr:`StdioTransport.stderr_tail`): a server that exits before it answers says why there
  (``can't open file``, ``package not found``), and the connection's error quotes it.
* :func:`http_transport` speaks streamable HTTP (or the older SSE transport) through an ``httpx2``
  client that carries the configured headers.

Credentials: :func:`register_credentials` registers the values of credential-like headers and
environment variables as secrets, so :func:`~agentactors.redact` removes them from every event, log
line and error; :func:`redact_sdk_logs` makes the HTTP stack's own loggers (``httpx2``, ``httpcore2``,
the SDK's transports) pass their records through :func:`~agentactors.redact` too.
"""

from __future__ import annotations

import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import anyio
import httpx2
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..redaction import redact, register_secret

__all__ = ["StdioTransport", "http_transport", "redact_sdk_logs", "register_credentials", "stdio_transport"]

log = logging.getLogger("agentactors.mcp")

#: Header and environment variable names whose values are credentials.
_CREDENTIAL_NAME = re.compile(r"(?i)auth|token|secret|key|cookie|session|passw|credential|signature")
#: A line of a server's stderr is logged up to this many characters.
_MAX_LINE = 2000
#: How long the last lines of a server's stderr may take to arrive once its connection closes.
_STDERR_DRAIN = 1.0
#: How many of the last lines of a server's stderr are kept for the error of a connection that fails.
_TAIL_LINES: Final = 3
#: The loggers of the HTTP stack under the SDK: records they emit are redacted like ours.
_SDK_LOGGERS = (
    "httpx2",
    "httpcore2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.session",
    "mcp.shared.jsonrpc_dispatcher",
)


def register_credentials(values: Mapping[str, str] | None) -> None:
    """Register the credential-like entries of ``values`` (headers or environment) as secrets.

    A name that looks like a credential (``Authorization``, ``X-API-Key``, ``GITHUB_TOKEN``, ...) has
    its value registered, and for ``<scheme> <token>`` values (``Bearer abc...``) the token on its own too.
    """
    for name, value in (values or {}).items():
        if not isinstance(value, str) or not _CREDENTIAL_NAME.search(str(name)):
            continue
        register_secret(value)
        scheme, _, token = value.partition(" ")
        if token and scheme.isalpha():
            register_secret(token.strip())


class _Redacting(logging.Filter):
    """Rewrites a record's message through :func:`redact` (args folded in first)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a record that cannot format is the logging module's to report
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, ()
        return True


_REDACTING = _Redacting()


def redact_sdk_logs() -> None:
    """Redact the records of the HTTP stack's loggers (idempotent).

    A logger's filters see only records logged on that very logger (not its children's), hence the
    list of each logger the stack logs on; filters run only for records a level lets through, so this
    costs nothing while those loggers are quiet.
    """
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _REDACTING not in logger.filters:
            logger.addFilter(_REDACTING)


def stdio_transport(
    label: str,
    command: str,
    args: tuple[str, ...],
    env: Mapping[str, str] | None,
    cwd: str | Path | None,
) -> Transport:
    """A transport that starts ``command args`` and talks to it over its stdin/stdout.

    ``env`` is merged over the SDK's safe default environment (``PATH``, ``HOME``, ...): a server sees
    only what it is given.  Its stderr goes to the ``agentactors.mcp`` logger at INFO, as
    ``<label> stderr: <line>``.
    """
    params = StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None, cwd=cwd)
    return StdioTransport(label, params)


class StdioTransport:
    """The stdio transport of one connection, keeping the last lines of the server's stderr (redacted, clipped)."""

    def __init__(self, label: str, params: StdioServerParameters) -> None:
        #: The server's last stderr lines, as logged: what a connection that failed quotes.
        self.stderr_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self._context = _stdio(label, params, self.stderr_tail)

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._context.__aexit__(exc_type, exc, tb)


@asynccontextmanager
async def _stdio(label: str, params: StdioServerParameters, tail: deque[str]) -> AsyncIterator[Any]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    errlog = os.fdopen(write_fd, "w")
    drained = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_log_stderr, label, read_fd, drained, tail)
        try:
            async with stdio_client(params, errlog=errlog) as streams:
                # The child has its own copy now: ours must go, or the pipe never reaches EOF.
                errlog.close()
                yield streams
        finally:
            errlog.close()
            # The process is gone (the SDK's shutdown waits for it): let its last lines arrive, then stop
            # reading even if a survivor of the process group still holds the pipe open.
            with anyio.CancelScope(shield=True), anyio.move_on_after(_STDERR_DRAIN):
                await drained.wait()
            tg.cancel_scope.cancel()


async def _log_stderr(label: str, fd: int, drained: anyio.Event, tail: deque[str]) -> None:
    """Log each line the server writes to stderr until EOF.

    Never raises: it shares the connection's task group.
    """
    pending = b""
    try:
        while True:
            await anyio.wait_readable(fd)
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                continue
            except OSError:
                break
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                _log_line(label, line, tail)
            if len(pending) > _MAX_LINE * 4:  # a line without an end: log what there is, keep reading
                _log_line(label, pending, tail)
                pending = b""
        if pending:
            _log_line(label, pending, tail)
    except Exception as exc:  # pragma: no cover - a failing pipe read must not take the connection down
        log.debug("%s: reading the server's stderr failed: %s", label, type(exc).__name__)
    finally:
        os.close(fd)
        drained.set()


def _log_line(label: str, raw: bytes, tail: deque[str]) -> None:
    text = raw.decode("utf-8", "replace").rstrip("\r")
    if not text.strip():
        return
    if len(text) > _MAX_LINE:
        text = text[: _MAX_LINE - 1] + "…"
    text = redact(text)
    tail.append(text)
    log.info("%s stderr: %s", label, text)


def http_transport(
    url: str, headers: Mapping[str, str] | None, kind: Literal["streamable-http", "sse"], timeout: float | None
) -> Transport:
    """A transport that speaks ``kind`` to ``url``, sending ``headers`` with every request."""
    if kind == "sse":
        return sse_client(url, headers=dict(headers) if headers else None)
    return _streamable(url, headers, timeout)


@asynccontextmanager
async def _streamable(url: str, headers: Mapping[str, str] | None, call_timeout: float | None) -> AsyncIterator[Any]:
    # The SDK's defaults for its own client: 30 s to connect and write, 5 minutes between the bytes of
    # the long-lived event stream; a call's own limit is the tool's timeout, applied above this.
    connect = 30.0 if call_timeout is None else min(30.0, call_timeout)
    client = httpx2.AsyncClient(
        headers=dict(headers) if headers else None,
        timeout=httpx2.Timeout(connect, read=300.0),
        follow_redirects=True,
    )
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams
