"""``FakeVendor``: a real HTTP server on loopback speaking every wire and endpoint the providers reach.

One ``base_url`` serves five wires (the ``wire`` of each recorded request, and of
:meth:`FakeVendor.script`, :meth:`FakeVendor.on` and :meth:`FakeVendor.outage`),
JSON or streamed in each wire's real shapes:

``openai``
    Chat Completions at ``{base_url}/v1/chat/completions``, and Azure OpenAI's deployment route
    ``/openai/deployments/{deployment}/chat/completions?api-version=…`` (the deployment is the model).
``responses``
    OpenAI's Responses API at ``{base_url}/v1/responses`` (JSON or its SSE event family), and Azure's
    v1 route ``/openai/v1/responses`` (the deployment is the body's ``model``).
``anthropic``
    Messages at ``{base_url}/v1/messages``, and Claude on Vertex AI at
    ``/v1/projects/{p}/locations/{l}/publishers/anthropic/models/{model}:rawPredict`` (``:streamRawPredict``).
``gemini``
    generateContent at ``{base_url}/v1beta/models/{model}:generateContent`` and
    ``:streamGenerateContent?alt=sse``, and the same on Vertex AI at
    ``/v1/projects/{p}/locations/{l}/publishers/google/models/{model}:…``.
``bedrock``
    Bedrock's Converse at ``/model/{modelId}/converse`` and ConverseStream at ``/converse-stream`` (the
    AWS event-stream binary framing).

Batch APIs (:attr:`FakeVendor.batches`): OpenAI's Files + ``/v1/batches`` (``{base_url}/v1/files``,
``/v1/batches``, ``/v1/files/{id}/content``), Anthropic's ``/v1/messages/batches`` (and its ``results_url``) and
Gemini's ``/v1beta/models/{model}:batchGenerateContent`` (the operation at ``/v1beta/batches/{id}``); each line
is answered exactly as the same request sent alone (scripts, routes, default echo, usage).

Credentials are checked the way each endpoint takes them: an API key header (``api-key`` on Azure), a
bearer token (Azure's Entra ID, Vertex AI), SigV4 headers of the documented shape on Bedrock (the
access key id is the one compared with ``expected_api_key``).  ``GET /health`` lists the wires and
endpoints.

The server is a small HTTP/1.1 server (h11 over anyio, :mod:`._fake_server`) with
an ASGI app, run on its own asyncio event loop in a dedicated thread, so it works
the same under asyncio and trio callers (and from synchronous code)::

    async with FakeVendor() as fv:
        fv.script("Paris.", FakeError(429, retry_after=1), FakeReply(text="hi", cut_after=1))
        provider = AnthropicProvider("claude-x", api_key="test-key", base_url=fv.base_url)
        ...
        assert fv.requests[0].wire == "anthropic"

Scripting (first match wins): an active :meth:`outage`; then items queued with
:meth:`script` (per model, per wire, then for any request); then a random fault
from the :class:`FaultPlan`; then handlers set with :meth:`on` (per model, per
wire, any); then the default behaviour (an echo, or tool calls in auto-tool
mode).  Every request is recorded with its credentials redacted, with whether the
client disconnected before the answer was complete.

Steered over HTTP too, from a test in any language: the control API under ``/_fakevendor``
(:attr:`FakeVendor.control_url`; :mod:`._fake_control`) queues script items, sets routes, outages, the fault
plan and the latencies, reads the record back and resets, JSON in and out.  It shares the vendor's listener
(loopback) and no vendor path reaches it; ``control=False`` (the CLI: ``--no-control``) turns it off.

Over HTTPS: ``FakeVendor(ssl_context=...)`` (the CLI: ``--certfile`` / ``--keyfile``) serves TLS with
the server certificate that context holds, and :attr:`FakeVendor.base_url` starts with ``https://``;
the client must trust the certificate's issuer (for the providers' own pools, ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import signal
import ssl
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from types import FrameType, TracebackType
from typing import Any, Self

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskStatus
from anyio.streams.tls import TLSListener

import agentactors._reexport as _reexport

from ._fake_app import FakeVendorApp
from ._fake_batch import FakeBatches
from ._fake_control import PREFIX as CONTROL_PREFIX
from ._fake_script import (
    Conversation,
    FakeError,
    FakeMalformed,
    FakeReply,
    FakeToolCall,
    FaultKind,
    FaultPlan,
    OfferedTool,
    RecordedRequest,
    ScriptItem,
    SeenToolCall,
    SeenToolResult,
)
from ._fake_server import FakeServer
from ._fake_state import Outage, VendorState

__all__ = [
    "Conversation",
    "FakeError",
    "FakeMalformed",
    "FakeReply",
    "FakeToolCall",
    "FakeVendor",
    "FaultKind",
    "FaultPlan",
    "OfferedTool",
    "Outage",
    "RecordedRequest",
    "SeenToolCall",
    "SeenToolResult",
    "add_arguments",
    "main",
    "run",
    "serve",
    "server_context",
]

log = logging.getLogger("agentactors.testing.fakevendor")

_STOP_TIMEOUT = 10.0
# Longer than any client's idle expiry (httpx: 5 s, aiohttp: 15 s), as real vendors' are: otherwise the
# server may close an idle connection just as a busy client reuses it, and that request fails.  A client
# that closes its end is seen at once (the connection's socket is released then, not at this timeout).
_KEEP_ALIVE = 120.0


def _check_latency(seconds: float) -> None:
    """A latency is a number of seconds >= 0: NaN compared false everywhere, so it meant no latency, silently."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise TypeError(f"latency must be a number of seconds, not {type(seconds).__name__}")
    if math.isnan(seconds) or seconds < 0:
        raise ValueError(f"latency must be >= 0 seconds, not {seconds!r}")


def _check_auto_tools(value: bool | int) -> None:
    """``True`` / ``False``, or a number of calls >= 0: a str failed in the server on the first unscripted request
    that offered tools (an empty 500, the request pending for ever)."""
    if isinstance(value, bool):
        return
    if not isinstance(value, int):
        raise TypeError(f"auto_tools must be a bool or an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"auto_tools must be >= 0 calls, not {value!r}")


def _check_faults(plan: FaultPlan | None) -> None:
    if plan is not None and not isinstance(plan, FaultPlan):
        raise TypeError(f"faults must be a FaultPlan or None (FaultPlan(rate=...)), not {type(plan).__name__}")


def _check_flag(name: str, value: object) -> None:
    """A flag is a bool (or the int 0 or 1): ``strict="no"`` was true, and meant the opposite of what it said."""
    if not isinstance(value, bool) and not (isinstance(value, int) and value in (0, 1)):
        raise TypeError(f"{name} must be a bool, not {value!r}")


def _check_address(host: str, port: int) -> None:
    """Checked where the vendor is made: a bad port failed only on start(), from the server's thread."""
    if not isinstance(host, str):
        raise TypeError(f"host must be a str, not {type(host).__name__}")
    if not host.strip():  # "" listened on every interface, and the base URL was http://:PORT
        raise ValueError("host must be a non-empty str (127.0.0.1: loopback)")
    if isinstance(port, bool) or not isinstance(port, int):
        raise TypeError(f"port must be an int, not {type(port).__name__}")
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be within 0-65535 (0: a free one), not {port!r}")


class FakeVendor:
    """A scriptable fake of the vendor wires on ``127.0.0.1`` (see the module docstring).

    :param host: the interface to listen on (loopback by default; the server has
        no authentication worth the name, so think twice before exposing it).
    :param port: ``0`` picks a free port.
    :param latency: seconds before each answer that does not set its own.
    :param chunk_latency: seconds after each streamed content chunk, for answers that set no ``chunk_latency``
        of their own (a :class:`FakeReply`'s, when not 0, wins).
    :param auto_tools: unscripted requests that offer tools get tool calls — each
        offered tool once, in order (``True``), or at most this many calls (an
        ``int``) — with arguments made up from the tools' schemas; then a text
        answer quoting the tool results.  A forced tool choice (``required``, a
        named tool) is honoured whatever this says, as a vendor honours it.
    :param faults: random fault injection (:class:`FaultPlan`); settable later.
    :param strict: reject requests the real vendors reject (missing key, missing
        ``anthropic-version`` / ``max_tokens``, tool results that answer no call,
        schemas Gemini does not accept, tools beside a JSON response on a Gemini model
        before 3, wrongly typed fields such as a string ``stream`` or a number for
        ``tools`` / ``toolConfig`` / ``text``, ...) with the vendor's 400/401.  In either
        mode a body no reader can make sense of is the wire's 400 ("invalid request
        body"), never a 500.
    :param expected_api_key: when set, a request with another key gets a 401.
    :param record_bodies: keep each request's parsed body (turn off for long benchmarks).
    :param max_records: keep only the last N requests (``None``: all).
    :param ssl_context: serve HTTPS with this server context (its certificate chain loaded); ``None``: HTTP.
    :param control: serve the control API under ``/_fakevendor`` (:attr:`control_url`): scripting, faults,
        outages, the record and a reset as JSON over HTTP, for a test that is not written in Python (see
        :mod:`agentactors.testing._fake_control`).  It answers on the same listener, so it is as reachable as
        the vendor endpoints: loopback only, unless ``host`` says otherwise.
    :raises TypeError: / :raises ValueError: an argument of the wrong type or out of range (a port outside
        0-65535, a negative latency or ``max_records``, an empty ``expected_api_key``), here rather than on
        :meth:`start` or on the first request, in the server's thread.  The same holds for the script items,
        :meth:`script`, :meth:`on`, :meth:`outage` and the settable attributes.

    Lifecycle: ``async with FakeVendor() as fv`` (asyncio or trio), ``with
    FakeVendor() as fv`` or :meth:`start` / :meth:`stop`.  Starting and stopping
    block only a worker thread, never the caller's event loop.  Stopping ends
    every pending answer at once (latencies and hangs included) and joins the
    server thread; cancelling the caller does not leave the server running.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        auto_tools: bool | int = False,
        faults: FaultPlan | None = None,
        strict: bool = True,
        expected_api_key: str | None = None,
        record_bodies: bool = True,
        max_records: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        chunk_latency: float = 0.0,
        control: bool = True,
    ) -> None:
        _check_address(host, port)
        _check_latency(latency)
        _check_latency(chunk_latency)
        _check_flag("control", control)
        _check_auto_tools(auto_tools)
        _check_faults(faults)
        _check_flag("strict", strict)
        _check_flag("record_bodies", record_bodies)
        if expected_api_key is not None:
            if not isinstance(expected_api_key, str):
                raise TypeError(f"expected_api_key must be a str or None, not {type(expected_api_key).__name__}")
            if not expected_api_key:
                # Most often an unset environment variable: every request would get a 401.
                raise ValueError("expected_api_key must be a non-empty str (None: any key)")
        if max_records is not None:
            if isinstance(max_records, bool) or not isinstance(max_records, int):
                raise TypeError(f"max_records must be an int or None, not {type(max_records).__name__}")
            if max_records < 0:
                raise ValueError(f"max_records must be >= 0 (None: keep all), not {max_records!r}")
        if ssl_context is not None and not isinstance(ssl_context, ssl.SSLContext):
            raise TypeError(f"ssl_context must be an ssl.SSLContext or None, not {type(ssl_context).__name__}")
        self._host = host
        self._ssl = ssl_context
        self._requested_port = port
        self._state = VendorState(latency=latency, auto_tools=auto_tools, faults=faults, max_records=max_records,
                                  chunk_latency=chunk_latency)
        self._app = FakeVendorApp(
            self._state, strict=strict, expected_api_key=expected_api_key, record_bodies=record_bodies,
            control=bool(control),
        )
        self._lifecycle = threading.Lock()
        self._port: int | None = None
        self._stack: contextlib.ExitStack | None = None
        self._portal: anyio.from_thread.BlockingPortal | None = None
        self._server: Future[None] | None = None
        self._closing: anyio.Event | None = None
        self._server_impl: FakeServer | None = None

    def __repr__(self) -> str:
        where = self.base_url if self._port is not None else "not started"
        return f"FakeVendor({where}, requests={len(self._state.snapshots())})"

    # -- addresses --------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._server is not None and not self._server.done()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the FakeVendor is not started")
        return self._port

    @property
    def host(self) -> str:
        return self._host

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (``https://`` serving TLS) — the Anthropic and Gemini providers' ``base_url``."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"{'https' if self._ssl is not None else 'http'}://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """``{base_url}/v1`` — the OpenAI provider's ``base_url`` (it appends ``/chat/completions``)."""
        return f"{self.base_url}/v1"

    @property
    def control_url(self) -> str:
        """``{base_url}/_fakevendor`` — the control API (``control=True``, the default)."""
        return f"{self.base_url}{CONTROL_PREFIX}"

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Start serving (blocking until the socket listens).  Raises ``RuntimeError`` if already started."""
        with self._lifecycle:
            if self._stack is not None:
                raise RuntimeError("the FakeVendor is already started")
            stack = contextlib.ExitStack()
            try:
                portal = stack.enter_context(anyio.from_thread.start_blocking_portal("asyncio", name="fakevendor"))
                future, port = portal.start_task(self._serve, name="fakevendor-server")
            except BaseException:
                stack.close()
                raise
            self._stack, self._portal, self._server, self._port = stack, portal, future, int(port)
        log.info("FakeVendor serving on %s", self.base_url)

    def stop(self) -> None:
        """Stop serving: end every pending answer, close the socket, join the thread (idempotent).

        Re-raises a failure of the server itself (a bug), after cleaning up.
        """
        with self._lifecycle:
            stack, portal, future = self._stack, self._portal, self._server
            self._stack = self._portal = self._server = None
            if stack is None or portal is None or future is None:
                return
            error: BaseException | None = None
            try:
                if self._closing is not None:
                    portal.call(self._closing.set)
                try:
                    future.result(timeout=_STOP_TIMEOUT)
                except FutureTimeout:
                    log.warning("FakeVendor did not stop within %ss; cancelling it", _STOP_TIMEOUT)
                    portal.call(portal.stop, True)
                except BaseException as exc:  # the server crashed; report it after cleaning up
                    error = exc
            finally:
                stack.close()
                self._closing = None
            if error is not None:
                raise RuntimeError("the FakeVendor server failed") from error

    async def _serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        # Listening before started() returns: connections queue even before the first accept.  The backlog is the
        # most the kernel allows (net.core.somaxconn caps it): a load test opening thousands of connections at
        # once must not have some completed by the kernel and never accepted, each then waiting out the client's
        # read timeout.
        listener = await anyio.create_tcp_listener(
            local_host=self._host, local_port=self._requested_port, backlog=65535
        )
        port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        served: anyio.abc.Listener[Any] = listener
        if self._ssl is not None:
            # Not standard-compatible: a client may drop the connection without close_notify, as real ones do.
            served = TLSListener(listener, self._ssl, standard_compatible=False)
        closing = anyio.Event()
        self._closing = closing
        self._app.bind(closing)
        self._server_impl = FakeServer(self._app, closing=closing, keep_alive_timeout=_KEEP_ALIVE)
        task_status.started(port)
        await self._server_impl.serve(served)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        """Start the server (on an event loop of its own, in its own thread) and return the vendor.

        Cancellation: the start is shielded; a caller cancelled meanwhile then stops the server again
        (shielded) before the cancellation propagates, so no server is left running that nobody will stop.
        """
        # Shielded: a cancellation while starting must not leave a server nobody will stop.
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.start)
        try:
            await anyio.lowlevel.checkpoint()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self.stop)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Stop the server; a failure of the server is raised (only logged when the block raised already).

        Cancellation: the stop is shielded: a block left by a cancellation still stops the server.
        """
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(self.stop)
            except RuntimeError:
                if exc is None:
                    raise
                log.exception("FakeVendor server failure (while another exception propagates)")

    # -- scripting --------------------------------------------------------------------------------

    def script(self, *items: ScriptItem, wire: str | None = None, model: str | None = None) -> None:
        """Queue answers, consumed one per request (for requests to ``model`` / ``wire`` if given).

        An item is a :class:`FakeReply`, :class:`FakeError`, :class:`FakeMalformed`,
        a ``str`` (a text answer), a :class:`FakeToolCall` or a list of them (a
        tool-call answer).  Raises ``TypeError`` for anything else, before queueing.
        """
        self._state.enqueue(items, self._state.key(wire, model))

    def on(
        self,
        handler: Callable[[RecordedRequest], ScriptItem | None] | ScriptItem | None,
        *,
        wire: str | None = None,
        model: str | None = None,
    ) -> None:
        """Answer every request (to ``model`` / ``wire`` if given) with ``handler``.

        ``handler`` is a fixed item, or a callable ``(RecordedRequest) -> item | None``
        (``None`` falls through to the next route / the default).  Callables run on
        the server's thread: keep them quick, non-blocking and thread-safe.  A
        handler that raises answers a 500 (``x-should-retry: false``) and is kept in
        :attr:`handler_errors`.  ``on(None, ...)`` removes the route.
        """
        self._state.set_route(self._state.key(wire, model), handler)

    @property
    def faults(self) -> FaultPlan | None:
        return self._state.faults

    @faults.setter
    def faults(self, plan: FaultPlan | None) -> None:
        _check_faults(plan)
        self._state.faults = plan

    @property
    def latency(self) -> float:
        return self._state.latency

    @latency.setter
    def latency(self, seconds: float) -> None:
        _check_latency(seconds)
        self._state.latency = seconds

    @property
    def chunk_latency(self) -> float:
        return self._state.chunk_latency

    @chunk_latency.setter
    def chunk_latency(self, seconds: float) -> None:
        _check_latency(seconds)
        self._state.chunk_latency = seconds

    @property
    def auto_tools(self) -> bool | int:
        return self._state.auto_tools

    @auto_tools.setter
    def auto_tools(self, value: bool | int) -> None:
        _check_auto_tools(value)
        self._state.auto_tools = value

    def outage(
        self,
        *,
        wire: str | None = None,
        model: str | None = None,
        duration: float | None = None,
        status: int | None = None,
    ) -> Outage:
        """Fail every request to ``wire`` and/or ``model`` (all, if neither) until the outage ends.

        The status is 529 on the Anthropic wire and 503 elsewhere unless given (an HTTP error status,
        400-599).  Returns the :class:`Outage`: call ``.end()`` or use it as a context manager;
        with ``duration`` (seconds >= 0) it ends by itself.  Raises ``TypeError`` / ``ValueError`` for an
        unknown wire, a model that is no non-empty str, a status or duration out of range (NaN too).
        """
        return self._state.add_outage(Outage(wire=wire, model=model, duration=duration, status=status))

    def end_outages(self) -> None:
        """End every outage now."""
        self._state.end_outages()

    def clear(self) -> None:
        """Forget queued items, routes, outages, the request record and the batches (the fault plan stays)."""
        self._state.clear()
        self._app.batches.clear()

    @property
    def batches(self) -> FakeBatches:
        """The batch APIs (OpenAI's Files + ``/v1/batches``, Anthropic's ``/v1/messages/batches``, Gemini's
        ``batchGenerateContent``): plan what batches do, cancel one, count submissions and single requests."""
        return self._app.batches

    # -- the record -------------------------------------------------------------------------------

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Every recorded request, oldest first, with its outcome so far (a snapshot)."""
        return self._state.snapshots()

    @property
    def disconnects(self) -> tuple[RecordedRequest, ...]:
        """The requests whose client went away before the answer was complete."""
        return tuple(r for r in self._state.snapshots() if r.disconnected)

    @property
    def pending_script(self) -> int:
        """How many queued items were not consumed yet."""
        return self._state.pending()

    @property
    def handler_errors(self) -> tuple[BaseException, ...]:
        return tuple(self._state.handler_errors)

    @property
    def open_connections(self) -> int:
        """Client connections the server holds open now (each one a socket); 0 when stopped."""
        server = self._server_impl
        return server.connections if server is not None and self.running else 0

    @property
    def stats(self) -> dict[str, Any]:
        """Counts: requests, outcomes (ok, error, cut, disconnected, ...), injected faults, open connections."""
        snapshot = self._state.snapshots()
        server = self._server_impl
        return {
            "requests": len(snapshot),
            "outcomes": dict(self._state.outcomes),
            "faults": dict(self._state.faults_injected),
            "connections": server.connections if server is not None else 0,
        }

    async def wait_for(
        self, predicate: Callable[[tuple[RecordedRequest, ...]], bool], *, within: float = 5.0
    ) -> tuple[RecordedRequest, ...]:
        """Wait (polling every few ms, on the caller's clock) until ``predicate(requests)`` holds.

        Raises ``TimeoutError`` after ``within`` seconds (a number >= 0: else ``ValueError``, ``TypeError`` when no
        number; ``0``: one look).
        Useful because the server learns of a client's disconnect a moment after the client gave up.

        Cancellation: it only polls (sleeping between looks): a cancelled caller leaves at once, and the
        server and its records are not affected.
        """
        if isinstance(within, bool) or not isinstance(within, int | float):
            raise TypeError(f"FakeVendor.wait_for: within must be a number of seconds, not {type(within).__name__}")
        if not within >= 0:  # NaN was anyio's "deadline must not be NaN", a negative bound a timeout after one look
            raise ValueError(f"FakeVendor.wait_for: within must be a number of seconds >= 0, not {within!r}")
        with anyio.move_on_after(within):
            while True:
                snapshot = self._state.snapshots()
                if predicate(snapshot):
                    return snapshot
                await anyio.sleep(0.005)
        raise TimeoutError(f"FakeVendor: condition not met within {within}s; requests: {self._state.snapshots()}")

    async def wait_for_disconnects(self, count: int = 1, *, within: float = 5.0) -> tuple[RecordedRequest, ...]:
        """Wait until at least ``count`` requests were disconnected by their client; returns them.

        Cancellation: as :meth:`wait_for`.
        """
        await self.wait_for(lambda rs: sum(r.disconnected for r in rs) >= count, within=within)
        return self.disconnects

    async def wait_until_settled(self, *, within: float = 5.0) -> tuple[RecordedRequest, ...]:
        """Wait until no recorded request is still pending.

        Cancellation: as :meth:`wait_for`.
        """
        return await self.wait_for(lambda rs: all(r.outcome != "pending" for r in rs), within=within)


# --- CLI ----------------------------------------------------------------------------------------


def serve(
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    fault_rate: float = 0.0,
    seed: int | None = None,
    latency: float = 0.0,
    auto_tools: bool | int = True,
    strict: bool = True,
    out: Any = None,
    stop_event: threading.Event | None = None,
    ssl_context: ssl.SSLContext | None = None,
    expected_api_key: str | None = None,
    chunk_latency: float = 0.0,
    max_records: int | None = 1000,
    record_bodies: bool = True,
    control: bool = True,
) -> None:
    """Serve until Ctrl-C / SIGTERM (or ``stop_event``).  Prints the base URL as the first stdout line.

    ``ssl_context``: serve HTTPS with it (:func:`server_context` makes one from certificate files).  The other
    options are :class:`FakeVendor`'s; the record keeps the last ``max_records`` requests (1000: a long demo's
    memory stays bounded), with their bodies, which the control API reads back.
    """
    out = out or sys.stdout
    faults = FaultPlan(rate=fault_rate, seed=seed) if fault_rate > 0 else None
    stop = stop_event or threading.Event()
    previous: Any = None
    if threading.current_thread() is threading.main_thread():

        def _on_term(signum: int, frame: FrameType | None) -> None:
            stop.set()

        previous = signal.signal(signal.SIGTERM, _on_term)
    fv = FakeVendor(host=host, port=port, latency=latency, auto_tools=auto_tools, faults=faults, strict=strict,
                    record_bodies=record_bodies, max_records=max_records, ssl_context=ssl_context,
                    expected_api_key=expected_api_key, chunk_latency=chunk_latency, control=control)
    try:
        with fv:
            print(fv.base_url, file=out, flush=True)
            if host not in ("127.0.0.1", "::1", "localhost"):
                exposed = " (the control API too: anyone who reaches it can script the fake)" if control else ""
                print(f"warning: listening on {host}, not loopback{exposed}", file=sys.stderr, flush=True)
            print(
                f"FakeVendor: OpenAI base_url {fv.openai_base_url} | Anthropic and Gemini base_url {fv.base_url}"
                f" | fault rate {fault_rate} seed {seed} latency {latency}s chunk latency {chunk_latency}s"
                f" | API key {'checked' if expected_api_key else 'any'}"
                f"{f' | control API {fv.control_url}' if control else ''} — Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            with contextlib.suppress(KeyboardInterrupt):
                while not stop.wait(0.5):
                    pass
            print(f"FakeVendor: stopping after {fv.stats}", file=sys.stderr, flush=True)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def server_context(certfile: str | None, keyfile: str | None = None) -> ssl.SSLContext | None:
    """The TLS server context for ``--certfile`` / ``--keyfile`` (``None`` without a certificate: plain HTTP).

    ``keyfile`` holds the certificate's key; without it the key is read from ``certfile``.

    :raises ValueError: a key without a certificate, or a file missing or holding no usable certificate or
        key (the ``ssl`` error as its cause).
    """
    if certfile is None:
        if keyfile is not None:
            raise ValueError("--keyfile needs --certfile")
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(certfile, keyfile)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(f"cannot load the certificate {certfile!r} (key {keyfile or certfile!r}): {exc}") from exc
    return context


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(port)
    return port


def _rate(text: str) -> float:
    rate = float(text)
    if not 0.0 <= rate <= 1.0:  # NaN too: it compared false and meant no faults, silently
        raise ValueError(rate)
    return rate


def _host(text: str) -> str:
    if not text.strip():  # an unset variable in a script: FakeVendor refuses it, and here it is a usage error
        raise ValueError(text)
    return text


def _seconds(text: str) -> float:
    seconds = float(text)
    if not 0.0 <= seconds < math.inf:
        raise ValueError(seconds)
    return seconds


def _key(text: str) -> str:
    if not text:  # an unset variable ("--expected-api-key $KEY"): every request would get a 401
        raise ValueError(text)
    return text


def _count(text: str) -> int:
    count = int(text)
    if count < 0:
        raise ValueError(count)
    return count


# argparse names the expected kind of value in its usage error after the function's __name__.
_port.__name__, _rate.__name__, _seconds.__name__ = "port (0-65535)", "rate within [0, 1]", "number of seconds >= 0"
_host.__name__ = "host (not empty)"
_key.__name__, _count.__name__ = "key (not empty)", "count >= 0"

#: The control API, for ``--help`` (docs/testing.md, "Steering it over HTTP", has the whole of it).
_EPILOG = """\
control API (same port; JSON in, JSON out; a bad body is a 400 naming the problem):
  GET    /_fakevendor                  what it holds: pending items, counts, settings
  POST   /_fakevendor/script           {"items": [ITEM, ...], "wire"?: W, "model"?: M}  queue answers
  POST   /_fakevendor/on               {"item": ITEM | null, "wire"?, "model"?}  answer every such request
  POST   /_fakevendor/outage           {"wire"?, "model"?, "duration"?, "status"?}  (DELETE: end them)
  POST   /_fakevendor/faults           {"rate": 0.2, "seed": 1, ...} (a FaultPlan's fields) or null
  POST   /_fakevendor/settings         {"latency"?, "chunk_latency"?, "auto_tools"?}
  GET    /_fakevendor/requests         the recorded requests (?since=INDEX)
  POST   /_fakevendor/reset            forget items, routes, outages and the record
ITEM: "text" | {"reply": {"text", "tool_calls": [{"name", "arguments"}], "reasoning", "latency",
  "chunk_latency", "cut_after", "stream_error", ...}} | {"error": {"status", "message", "code",
  "retry_after", ...}} | {"malformed": {"body", "status"}}
  e.g. curl -d '{"items": [{"error": {"status": 429, "retry_after": 2}}]}' $URL/_fakevendor/script
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The serving options, for this module's command line and ``python -m agentactors fakevendor`` alike.

    Numbers are checked here, so that a bad one is a usage error (exit 2), not a traceback from the server.
    The help ends with the control API's endpoints (``--no-control`` turns it off).
    """
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("--host", type=_host, default="127.0.0.1", help="the interface to listen on (loopback)")
    parser.add_argument("--port", type=_port, default=8765, help="0 picks a free port")
    parser.add_argument("--fault-rate", type=_rate, default=0.0, help="share of requests failed at random (0..1)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--latency", type=_seconds, default=0.0, help="seconds before each answer")
    parser.add_argument("--chunk-latency", type=_seconds, default=0.0,
                        help="seconds after each streamed content chunk (an item's own chunk_latency wins)")
    parser.add_argument("--expected-api-key", type=_key, default=None, metavar="KEY",
                        help="answer any other key with a 401 (default: any key goes); a test key, never a real one")
    parser.add_argument("--max-records", type=_count, default=1000, metavar="N",
                        help="keep the last N requests in the record (default 1000)")
    parser.add_argument("--no-record-bodies", action="store_true", help="record no request bodies")
    parser.add_argument("--no-control", action="store_true", help="serve no control API under /_fakevendor")
    parser.add_argument("--no-auto-tools", action="store_true", help="answer tool offers with text, not tool calls")
    parser.add_argument("--lenient", action="store_true", help="accept requests the real vendors would reject")
    parser.add_argument("--certfile", help="serve HTTPS with this PEM certificate chain")
    parser.add_argument("--keyfile", help="its private key (default: in --certfile)")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Serve as :func:`add_arguments`' options say; 1 with one line on stderr when the address cannot be bound.

    A port in use is the commonest way for this command to fail: it deserves a sentence, not a traceback.
    """
    try:
        context = server_context(args.certfile, args.keyfile)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        serve(args.host, args.port, fault_rate=args.fault_rate, seed=args.seed, latency=args.latency,
              auto_tools=not args.no_auto_tools, strict=not args.lenient, ssl_context=context,
              expected_api_key=args.expected_api_key, chunk_latency=args.chunk_latency,
              max_records=args.max_records, record_bodies=not args.no_record_bodies, control=not args.no_control)
    except OSError as exc:
        print(f"fakevendor: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m agentactors.testing.fakevendor --port N [--fault-rate R --seed S --latency L --certfile C]``."""
    parser = argparse.ArgumentParser(prog="fakevendor", description="Serve the vendor wires on loopback.")
    add_arguments(parser)
    return run(parser.parse_args(argv), parser)


if __name__ == f"{__package__}.fakevendor":
    # agentactors.testing exports FakeVendor (importing this module on first use, for the extra it needs): the
    # class reports that home, as the package's other exports do.  Not when this file runs as __main__, where
    # agentactors.testing.FakeVendor would be another copy of the class.
    _reexport.adopt(globals(), ["FakeVendor"], __package__)

if __name__ == "__main__":
    sys.exit(main())
