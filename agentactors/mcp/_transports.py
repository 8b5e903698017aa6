"""How a server is reached: a subprocess over stdio, or HTTP — and what each keeps out of the logs.

Each function returns a *transport* for the SDK's ``Client``: an async context manager that yields the
read and write streams of one connection, entered and left by the task that owns the connection.

* :func:`stdio_transport` runs the server as a subprocess (the SDK's ``stdio_client``) with its stderr
  on a pipe of ours, read line by line into the ``agentactors.mcp`` logger (redacted, clipped), so a
  server's complaints land in the application's logs rather than on the terminal.  Its last lines are
  kept too (:attr:`StdioTransport.stderr_tail`): a server that exits before it answers says why there
  (``can't open file``, ``package not found``), and the connection's error quotes it.
* :func:`http_transport` speaks streamable HTTP (or the older SSE transport) through an ``httpx2``
  client that carries the configured headers.  A server that answers a call with plain JSON (no event
  stream: ``json_response=True``, stateless servers) sends nothing until the result is ready, so the
  client's read timeout bounds the call: it is never shorter than the call's own ``timeout``
  (:func:`read_timeout_for`), and one that passes anyway is noted (:attr:`HTTPTransport.timed_out`) — the
  SDK then closes the whole connection, and the call's error says why rather than that the server went away.
  Over SSE the event stream's read timeout outlasts a call the same way, and a POST's is short
  (:func:`sse_post_timeout_for`): the SDK sends messages one POST at a time, so one the server never answers
  would hold every later one — a call's ``notifications/cancelled`` too — for the SDK's default 300 s.

Credentials: :func:`register_credentials` registers the values of credential-like headers and
environment variables as secrets, so :func:`~agentactors.redact` removes them from every event, log
line and error; :func:`redact_sdk_logs` makes the loggers of the SDK and of the HTTP stack under it
(``httpx2``, ``httpcore2``) pass their records — message and traceback — through
:func:`~agentactors.redact` too, without the input pydantic quotes in its errors
(:func:`~agentactors.mcp._results.sdk_message`): the SDK logs a line from a server it cannot parse with
that error, and the quote, shortened in the middle, would show part of a secret the server echoed.
"""

from __future__ import annotations

import logging
import os
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import anyio
import httpx2
from mcp.client import Transport
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from ..redaction import redact, redact_loggers, register_secret
from ._results import sdk_message

__all__ = [
    "MIN_READ_TIMEOUT",
    "READ_TIMEOUT_MARGIN",
    "SSE_POST_TIMEOUT",
    "HTTPTransport",
    "StdioTransport",
    "http_transport",
    "read_timeout_for",
    "redact_sdk_logs",
    "register_credentials",
    "sse_post_timeout_for",
    "stdio_transport",
]

log = logging.getLogger("agentactors.mcp")

#: Header and environment variable names whose values are credentials.
_CREDENTIAL_NAME = re.compile(r"(?i)auth|token|secret|key|cookie|session|passw|credential|signature")
#: A line of a server's stderr is logged up to this many characters.
_MAX_LINE = 2000
#: How long the last lines of a server's stderr may take to arrive once its connection closes.
_STDERR_DRAIN = 1.0
#: How many of the last lines of a server's stderr are kept for the error of a connection that fails.
_TAIL_LINES: Final = 3
#: The loggers of the SDK's client and of the HTTP stack under it: their records are redacted like ours.  (A
#: logger's filters see only its own records, not its children's: each logger that logs is named.)
_SDK_LOGGERS = (
    "httpx2",
    "httpcore2",
    "httpcore2.connection",
    "httpcore2.http11",
    "httpcore2.http2",
    "httpcore2.proxy",
    "mcp.client.stdio",
    "mcp.client.streamable_http",
    "mcp.client.sse",
    "mcp.client.client",
    "client",  # the SDK's ClientSession logs here: a notification it cannot validate, with the error
    "mcp.shared.dispatcher",
    "mcp.shared.jsonrpc_dispatcher",
)
#: The read timeout of a streamable-HTTP connection is at least this (the SDK's own default: 5 minutes between
#: the bytes of its long-lived event stream)...
MIN_READ_TIMEOUT = 300.0
#: ... and outlasts a call's ``timeout`` by this much, so the call's own limit always comes first.
READ_TIMEOUT_MARGIN = 30.0
#: An SSE connection's POSTs (and connecting) may take at most this long, or a call's ``timeout`` if shorter.
SSE_POST_TIMEOUT = 30.0


def read_timeout_for(call_timeout: float | None) -> float | None:
    """The HTTP read timeout of a connection whose calls may take ``call_timeout`` seconds (``None``: no limit).

    Never shorter than the call: an answer the server is still working on (plain JSON arrives whole, at the
    end) is the call's to wait for, and its ``timeout`` to end (status ``timeout``, the server told to stop).
    """
    if call_timeout is None:
        return None
    return max(MIN_READ_TIMEOUT, call_timeout + READ_TIMEOUT_MARGIN)


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


class _QuotedInputDropped(logging.Filter):
    """Drops the input pydantic quotes in its errors (:func:`sdk_message`) from a record's message and traceback.

    Beside the shared :class:`~agentactors.redaction.RedactingFilter`, which removes whole secrets (and
    :func:`redact_sdk_logs` attaches first): a quote shortened in the middle shows a part of one that no
    exact match finds.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            return True  # a record that cannot format is the logging module's to report
        if "input_value=" in message:
            record.msg, record.args = sdk_message(message), None
        if record.exc_info and not record.exc_text:
            # Formatted once here; formatters reuse record.exc_text (and the redacting filter redacts it).
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and "input_value=" in record.exc_text:
            record.exc_text = sdk_message(record.exc_text)
        return True


_QUOTED_INPUT_DROPPED = _QuotedInputDropped()


def redact_sdk_logs() -> None:
    """Redact the records of the SDK's and the HTTP stack's loggers, tracebacks included (idempotent).

    Filters run only for records a level lets through, so this costs nothing while those loggers are quiet.
    """
    redact_loggers(_SDK_LOGGERS)
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _QUOTED_INPUT_DROPPED not in logger.filters:
            logger.addFilter(_QUOTED_INPUT_DROPPED)


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


class _Transport:
    """A connection's transport: the SDK's context (``_context``) it enters and leaves, and what it learns."""

    _context: AbstractAsyncContextManager[Any]

    async def __aenter__(self) -> Any:
        return await self._context.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        return await self._context.__aexit__(exc_type, exc, tb)


class StdioTransport(_Transport):
    """The stdio transport of one connection, keeping the last lines of the server's stderr (redacted, clipped)."""

    def __init__(self, label: str, params: StdioServerParameters) -> None:
        #: The server's last stderr lines, as logged: what a connection that failed quotes.
        self.stderr_tail: deque[str] = deque(maxlen=_TAIL_LINES)
        self._context = _stdio(label, params, self.stderr_tail)


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
    """A transport that speaks ``kind`` to ``url``, sending ``headers`` with every request.

    ``timeout`` is a call's (``None``: no limit): the read timeout of a streamable-HTTP answer, and of the SSE
    transport's event stream, outlasts it (:func:`read_timeout_for`).  An SSE POST only hands the server a
    message (``202 Accepted`` at once; the answer comes on the stream), and the SDK sends them one at a time:
    its read timeout is short (:func:`sse_post_timeout_for`), or one the server never answers would hold every
    later message — a call's ``notifications/cancelled`` included — for the SDK's default 300 s.
    """
    if kind == "sse":
        return sse_client(
            url,
            headers=dict(headers) if headers else None,
            httpx_client_factory=_SSEClientFactory(timeout),
        )
    return HTTPTransport(url, headers, timeout)


def sse_post_timeout_for(call_timeout: float | None) -> float:
    """The connect, write and POST read timeout of an SSE connection whose calls may take ``call_timeout``
    seconds: :data:`SSE_POST_TIMEOUT`, or the call's timeout if shorter (a POST only hands a message over)."""
    if call_timeout is None:
        return SSE_POST_TIMEOUT
    return min(SSE_POST_TIMEOUT, call_timeout)


class _SSEClientFactory:
    """Makes the SSE transport's ``httpx2`` client: the event stream's read timeout outlasts a call
    (:func:`read_timeout_for`), a POST's is short (:func:`sse_post_timeout_for`).  The SDK's own ``timeout``
    (5 s, read 300 s) is replaced."""

    def __init__(self, call_timeout: float | None) -> None:
        self._post = sse_post_timeout_for(call_timeout)
        self._stream = read_timeout_for(call_timeout)

    def __call__(
        self,
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        return _SSEClient(
            httpx2.Timeout(self._post),
            headers=headers,
            auth=auth,
            timeout=httpx2.Timeout(self._post, read=self._stream),
        )


class _SSEClient(httpx2.AsyncClient):
    """An ``httpx2`` client whose POSTs (messages handed to the server) have a timeout of their own."""

    def __init__(self, post_timeout: httpx2.Timeout, **options: Any) -> None:
        super().__init__(**options)
        self._post_timeout = post_timeout.as_dict()

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        if request.method == "POST":
            request.extensions = {**request.extensions, "timeout": self._post_timeout}
        return await super().send(request, **options)


class HTTPTransport(_Transport):
    """The streamable-HTTP transport of one connection, noting a read timeout on a request's answer.

    Such a timeout ends the connection: the SDK lets it out of the task that posted the request, and its
    task group — the whole connection, every call in flight — ends with it.
    """

    def __init__(self, url: str, headers: Mapping[str, str] | None, call_timeout: float | None) -> None:
        #: The read timeout of this connection's requests (``None``: none).
        self.read_timeout = read_timeout_for(call_timeout)
        #: Set to :attr:`read_timeout` when a request's answer did not come within it.
        self.timed_out: float | None = None
        # The SDK's defaults for the rest: 30 s to connect and write (or a call's timeout, if shorter).
        connect = 30.0 if call_timeout is None else min(30.0, call_timeout)
        self._context = _streamable(url, headers, httpx2.Timeout(connect, read=self.read_timeout), self._note)

    def _note(self) -> None:
        self.timed_out = self.read_timeout


@asynccontextmanager
async def _streamable(
    url: str, headers: Mapping[str, str] | None, limits: httpx2.Timeout, on_read_timeout: Callable[[], None]
) -> AsyncIterator[Any]:
    client = _NotingClient(
        on_read_timeout, headers=dict(headers) if headers else None, timeout=limits, follow_redirects=True
    )
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


class _NotingClient(httpx2.AsyncClient):
    """An ``httpx2`` client that calls ``on_read_timeout`` when a POST's answer times out.

    A POST carries a request (a call, a listing): its answer comes on it, headers first — a plain JSON answer
    only when it is ready — then its body; a timeout there the SDK lets end the connection.  The standalone
    GET event stream times out too, and the SDK reconnects it: that is no news.
    """

    def __init__(self, on_read_timeout: Callable[[], None], **options: Any) -> None:
        super().__init__(**options)
        self._on_read_timeout = on_read_timeout

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        if request.method != "POST":
            return await super().send(request, **options)
        try:
            response = await super().send(request, **options)
        except httpx2.ReadTimeout:
            self._on_read_timeout()
            raise
        # An event stream's read timeout the SDK catches (the call fails alone): only a JSON body's is noted.
        json_body = response.headers.get("content-type", "").lower().startswith("application/json")
        if json_body and isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _NotingStream(response.stream, self._on_read_timeout)
        return response


class _NotingStream(httpx2.AsyncByteStream):
    """A response body that calls ``on_read_timeout`` when a read of it times out."""

    def __init__(self, inner: httpx2.AsyncByteStream, on_read_timeout: Callable[[], None]) -> None:
        self._inner = inner
        self._on_read_timeout = on_read_timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._inner:
                yield chunk
        except httpx2.ReadTimeout:
            self._on_read_timeout()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()
