"""The raw-ASGI toolbox the serving apps share: bodies, JSON answers, event streams, disconnects, the runtime.

The apps are plain ASGI callables rather than Starlette applications: they need exactly two routes each,
and what they need most — a run cancelled the moment its client goes away, for a JSON answer as much as
for a stream — is a ``receive()`` watched beside the run, which a framework's request object hides.  So
``import agentactors.serve`` pulls in no web framework, and any ASGI server (uvicorn on asyncio, hypercorn
on asyncio or trio) runs them.
"""

from __future__ import annotations

import hmac
import json
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, MutableMapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio

from .._json import MAX_DOCUMENT_DEPTH, JsonBoundError, loads_bounded
from ..actors.runtime import Runtime
from ..errors import ErrorKind, OverloadedError, ProviderError, SessionConflictError, SessionPausedError, redact
from ..messages import ToolCall
from .asgi import lifespan

__all__ = [
    "CANCELLED_TEXT",
    "ASGIApp",
    "AppRuntime",
    "BodyError",
    "Disconnected",
    "DEFAULT_KEEPALIVE",
    "KEEPALIVE_COMMENT",
    "EventStream",
    "Outbound",
    "Receive",
    "Scope",
    "Send",
    "bearer_keys",
    "authorized",
    "client_text",
    "header",
    "keepalive_interval",
    "cancelled_on_disconnect",
    "paused_text",
    "read_json",
    "route_path",
    "runtime_to_enter",
    "sent_path",
    "send_json",
    "session_refusal",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("agentactors.serve")

#: The largest request body the apps read by default: a conversation with a few inline images fits.
DEFAULT_MAX_BODY = 32 * 1024 * 1024


class Disconnected(Exception):
    """The client went away before its request body had arrived."""


class BodyError(Exception):
    """A request body the app cannot read: too large, not JSON, not a JSON object (a 400), or not sent as JSON
    (``status`` 415)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def route_path(scope: Scope) -> str:
    """The request's path inside the app (a mount's ``root_path`` taken off when the server left it on)."""
    path: str = scope.get("path") or "/"
    root: str = scope.get("root_path") or ""
    if root and path.startswith(root):
        path = path[len(root) :] or "/"
    return path


def sent_path(scope: Scope, limit: int = 200) -> str:
    """The request's path as the client sent it — the mount's ``root_path`` and all — for a message naming it (an
    unknown path's 404), clipped to ``limit`` characters: an app's route inside the mount is not a path the client
    knows.  A server may leave the ``root_path`` on ``path`` (uvicorn's ``--root-path``, Starlette's ``Mount``) or
    take it off (the older ASGI reading); either way the client sent it."""
    path: str = scope.get("path") or "/"
    root: str = scope.get("root_path") or ""
    if root and not path.startswith(root):
        path = root.rstrip("/") + path
    return path if len(path) <= limit else path[: limit - 1] + "…"


async def read_json(
    receive: Receive, scope: Scope, limit: int = DEFAULT_MAX_BODY, *, finite: bool = False
) -> dict[str, Any]:
    """The request body as a JSON object, read up to ``limit`` bytes.

    ``finite``: refuse a body holding a number JSON has not — ``NaN``, ``Infinity``, or a literal too large for a
    double (``1e999``), all of which Python's parser reads — anywhere in it, naming where.  An app that sends any of
    the client's values back (AG-UI's ``state`` in every ``STATE_SNAPSHOT``) needs it: echoed, such a number is
    ``NaN`` on the wire, which no JSON reader (a browser's ``JSON.parse``) takes.  The OpenAI endpoint echoes no
    number of the client's, and its own parser refuses a non-finite value in each numeric field, naming the field in
    the error's ``param`` — which a refusal here, with no field to name, would take from its clients.

    :raises BodyError: the request says its body is another type than JSON (not ``application/json`` nor a
        ``+json`` type; ``status`` 415, the body unread; no ``Content-Type`` at all is read as JSON); the body
        is longer than ``limit`` (told by its ``content-length`` or while it arrives), is not UTF-8 JSON, is
        past the library's JSON policy (nested deeper than :data:`~agentactors._json.MAX_DOCUMENT_DEPTH`, an
        integer of more than 4,300 digits), names a key twice in one object, is not an object, or (``finite``)
        holds a number JSON has not.
    :raises Disconnected: the client left before the body was complete.
    """
    # Sent as another type: refused before a byte is read.  A web page may post text/plain or a form to any
    # origin without asking (no CORS preflight): read as JSON anyway, such a post from any page a person visits
    # would run an agent — and its tools — on a server on their machine or network.  A body with no type at all
    # is read as JSON, as FastAPI reads it (its fix for the same hole, CVE-2021-32677): HTTP clients that send
    # a raw body without the header are common, and a server a browser can reach should set ``api_keys``.
    given = _header(scope, b"content-type")
    if given is not None and not _is_json_type(given):
        raise BodyError(
            f"send the request body as JSON, with 'Content-Type: application/json' (it was {given[:100]!r})", 415
        )
    declared = _header(scope, b"content-length")
    # isascii too: "²".isdigit() is True, and int() refuses it.
    if declared is not None and declared.isascii() and declared.isdigit() and int(declared) > limit:
        raise BodyError(f"the request body is larger than {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Disconnected
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyError(f"the request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    try:
        # The library's policy for JSON from outside (agentactors._json): a body nested past any parser's
        # stack, or holding an integer Python refuses to read, is the client's 400 — not a RecursionError or
        # a bare ValueError escaping to the server as a 500 with a traceback.
        # unique_keys: an object naming a key twice is refused, not read as its last value — a proxy in front
        # reading the first ("model": an agent it allows) must not see the app run the last.
        value = loads_bounded(
            b"".join(chunks), what="the request body", max_depth=MAX_DOCUMENT_DEPTH, unique_keys=True
        )
    except JsonBoundError as exc:
        raise BodyError(str(exc).replace(" name the key ", " names the key ", 1)) from None
    except ValueError as exc:  # JSONDecodeError
        raise BodyError(f"the request body is not valid JSON ({exc.__class__.__name__})") from None
    if not isinstance(value, dict):
        raise BodyError("the request body must be a JSON object")
    if finite and _holds_nonfinite(value):
        raise BodyError(
            f"the request body holds NaN, Infinity or a number too large for a double at {_nonfinite_at(value)}: "
            "JSON has no such number (send a finite number, or a string)"
        )
    return value


def _holds_nonfinite(value: Any) -> bool:
    """Whether a parsed JSON ``value`` holds a float that is not finite.  Iterative, so a body as deep as the policy
    allows costs no recursion (a JSON value holds only dicts, lists, str, int, float, bool and None); about a tenth of
    the parse's time, measured on a 1 MB conversation."""
    stack = [value]
    pop, extend, isfinite = stack.pop, stack.extend, math.isfinite
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            extend(item.values())
        elif kind is list:
            extend(item)
        elif kind is float and not isfinite(item):
            return True
    return False


def _nonfinite_at(value: Any) -> str:
    """Where the first non-finite float in ``value`` is, as ``state.budget`` or ``messages[2].x`` (keys clipped):
    paths are built only for a body already refused (:func:`_holds_nonfinite`)."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, dict):
            stack.extend((child, f"{path}.{str(key)[:40]}" if path else str(key)[:40]) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{index}]") for index, child in enumerate(item))
        elif isinstance(item, float) and not math.isfinite(item):
            return (path or "the top")[:300]
    return "the top"  # pragma: no cover - called only when one is there


def _is_json_type(given: str) -> bool:
    """Whether a ``Content-Type`` says JSON: ``application/json`` or an ``application/…+json``, any parameters."""
    media = given.partition(";")[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


#: What a client is told of a provider failure of each kind: whose fault, and what to do — never the vendor's text.
_PROVIDER_FAILED = {
    ErrorKind.request: "the model provider refused the request the run made",
    ErrorKind.account: "the model provider refused the server's account (its key, quota or billing)",
    ErrorKind.context: "the conversation is too long for the model",
    ErrorKind.content_policy: "the model provider's content policy refused the request",
    ErrorKind.transient: "the model provider is unavailable or overloaded: retry later",
    ErrorKind.circuit_open: "the model provider has been failing: the server stopped calling it for a while",
}


def session_refusal(error: BaseException) -> bool:
    """Whether ``error`` is a session refusing the turn — paused for a person's decisions, or another turn (another
    process) committed first: the client's to act on (a 409 that says so).  Any other
    :class:`~agentactors.errors.SessionError` is the server's own failure (its store's database locked or gone, a
    stored session it cannot read): a 500, its text (a path, a database's message) not the client's."""
    return isinstance(error, SessionConflictError | SessionPausedError)


def client_text(error: BaseException) -> str:
    """What a client of the apps is told of ``error`` — a run's failure, or an exception its run raised — and the
    server's log gets the rest (``agentactors.serve``, at WARNING).

    A provider's failure is told by its kind (:data:`_PROVIDER_FAILED`), never by its text: a vendor's message
    carries what redaction has no pattern for — its endpoint's URL (an Azure tenant, an internal gateway), an
    account or project id, a proxy's address.  A session's refusal (:func:`session_refusal`: a pause, a conflict)
    is the library's own text, which the client acts on.  Anything else is named by its class only, as a 500 is:
    its text is whatever a library under the run put in it (a session store's database path included).
    """
    if session_refusal(error):
        return redact(str(error))[:500]
    log.warning("a served run failed: %s: %s", type(error).__name__, redact(str(error))[:2000])
    if isinstance(error, OverloadedError):
        return "the server is at capacity: retry later"
    if isinstance(error, ProviderError):
        return f"{_PROVIDER_FAILED.get(error.kind, 'the model provider failed')} ({type(error).__name__})"
    return f"the run failed in the server ({type(error).__name__})"


def paused_text(pending: Sequence[ToolCall], run_id: str | None) -> str:
    """What a client is told of a run that paused for a person's approval: how many calls of which tools wait,
    and the run's id — for whoever approves in the server (``rt.run_ref(id)``, the session's ``resolve``)."""
    names = ", ".join(sorted({call.name for call in pending}))
    return (
        f"the run is paused: {len(pending)} tool call(s) ({names}) await a person's approval in the server "
        f"(run {run_id})"
    )


#: What a client is told of a run cancelled in the server (through its handle, a runtime draining at shutdown).
CANCELLED_TEXT = "the run was cancelled in the server before it answered"


def header(scope: Scope, name: bytes) -> str | None:
    """The request's header ``name`` (lower-case bytes), decoded as latin-1; ``None`` when absent."""
    return _header(scope, name)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def bearer_keys(api_keys: Iterable[str] | None) -> tuple[bytes, ...] | None:
    """``api_keys`` checked and encoded for :func:`authorized`; ``None`` when the app is open.

    :raises TypeError: a bare string (one key is ``[key]``) or a key that is not a str.
    :raises ValueError: an empty allow-list (nobody could call the app: a configuration mistake) or an
        empty key.
    """
    if api_keys is None:
        return None
    if isinstance(api_keys, str | bytes):
        raise TypeError("api_keys is a list of keys, not one string: pass [key]")
    keys = tuple(api_keys)
    if not keys:
        raise ValueError("api_keys is empty: no client could call the app (pass None for an open app)")
    for key in keys:
        if not isinstance(key, str) or not key:
            raise ValueError("every API key must be a non-empty str")
    return tuple(k.encode() for k in keys)


def authorized(scope: Scope, keys: tuple[bytes, ...] | None) -> bool:
    """Whether the request's ``Authorization: Bearer …`` is one of ``keys`` (always, for an open app).

    Every key is compared, each in constant time: neither the time nor the answer tells a caller how
    much of a key it guessed, or which key it was near.
    """
    if keys is None:
        return True
    header = _header(scope, b"authorization") or ""
    scheme, _, token = header.partition(" ")
    given = token.strip().encode("latin-1") if scheme.lower() == "bearer" else b""
    found = False
    for key in keys:
        found |= hmac.compare_digest(given, key)
    return found and bool(given)


def json_bytes(value: Any, *, separators: tuple[str, str] | None = None) -> bytes:
    """``value`` as UTF-8 JSON — or, when it holds a lone surrogate, as ASCII JSON.

    A request may carry ``"\\ud800"`` (valid JSON, read into a str no UTF-8 can hold), and the apps echo
    request text back (a model's name in its 404, a thread id, the client's state): escaped as ``\\ud800``,
    it goes back as it came instead of failing the answer with a ``UnicodeEncodeError``.

    A float that is not finite is refused (``allow_nan=False``), never written as ``NaN`` or ``Infinity``, which no
    JSON reader takes: the request bodies that could bring one in are refused (:func:`read_json`), and what an app
    builds of its own (a typed output) is checked before it is sent — this is the line behind both.

    :raises ValueError: ``value`` holds a NaN or an infinity.
    """
    text = json.dumps(value, ensure_ascii=False, separators=separators, allow_nan=False)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, ensure_ascii=True, separators=separators, allow_nan=False).encode()


async def send_json(
    send: Send, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> None:
    """Answer with ``payload`` as JSON and ``status``."""
    body = json_bytes(payload)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw.extend((k.encode("latin-1"), v.encode("latin-1")) for k, v in (headers or {}).items())
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


#: What a keep-alive writes: an SSE comment (a line starting with ``:``), which every SSE reader skips — the openai
#: SDKs' and AG-UI's clients, a browser's ``EventSource`` — and which a proxy counts as traffic.
KEEPALIVE_COMMENT = b": keep-alive\n\n"

#: The apps' default ``keepalive``: under the shortest idle timeouts of proxies in front of a server (30 s in some
#: corporate proxies; nginx's ``proxy_read_timeout`` and AWS ALB's idle timeout are 60 s, Cloudflare's 100 s).
DEFAULT_KEEPALIVE = 15.0


def keepalive_interval(value: float | None) -> float | None:
    """An app's ``keepalive=`` checked: seconds (a positive, finite number) or ``None`` (no keep-alive).

    :raises TypeError: not a number (a bool is not one either: ``True`` is no interval).
    :raises ValueError: zero, negative, NaN or infinite.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"keepalive must be seconds (a float) or None, not {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"keepalive must be a positive, finite number of seconds or None, not {value!r}")
    return float(value)


class EventStream:
    """A ``text/event-stream`` answer: :meth:`start` once, :meth:`data` per event, :meth:`end`.

    While a :meth:`kept_alive` block runs, a stream that has been silent for its interval gets an SSE comment
    (:data:`KEEPALIVE_COMMENT`), so a proxy in front does not take a slow model or tool for a dead connection and cut
    it.  Every write — an event, a comment — is one whole ``send``, and never two at once: a comment waits for no
    event, and an event waits only for a comment being written.
    """

    __slots__ = ("_pinging", "_send", "_stop", "_writes", "_writing", "ended", "started")

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.ended = False
        self._writes = 0  # counts the writes, for the keep-alive to see the stream was silent: no clock per event
        self._writing = False  # a write is under way (a slow client may hold it): no comment beside it
        self._pinging: anyio.Event | None = None  # set once the comment being written is out
        self._stop: anyio.Event | None = None

    async def start(self) -> None:
        """Send the headers — once: a keep-alive may have sent them already (:meth:`kept_alive`)."""
        while self._pinging is not None:
            await self._pinging.wait()
        if self.started:
            return
        await self._put({"type": "http.response.start", "status": 200, "headers": _STREAM_HEADERS})

    async def data(self, value: Any) -> None:
        """One event: ``data: <value as JSON>`` (a str is sent as it is)."""
        text = value.encode() if isinstance(value, str) else json_bytes(value, separators=(",", ":"))
        while self._pinging is not None:
            await self._pinging.wait()
        self._writes += 1
        self._writing = True
        try:
            await self._send({"type": "http.response.body", "body": b"data: " + text + b"\n\n", "more_body": True})
        finally:
            self._writing = False

    async def end(self) -> None:
        while self._pinging is not None:
            await self._pinging.wait()
        self.ended = True  # no comment after the end
        if self._stop is not None:
            self._stop.set()
        await self._put({"type": "http.response.body", "body": b""})

    async def _put(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.started = True  # before the send: a keep-alive meanwhile must not send headers again
        self._writes += 1
        self._writing = True
        try:
            await self._send(message)
        finally:
            self._writing = False

    @asynccontextmanager
    async def kept_alive(self, interval: float | None) -> AsyncIterator[None]:
        """A block during which the stream is kept alive: once nothing was written for ``interval`` seconds (at
        most), a comment — and another every ``interval`` while the silence lasts.  A stream not yet started is
        started by the first comment (its headers, then the comment): a proxy waits for headers as it waits for
        data.  ``None``: nothing is added.

        One task per block, waking every half ``interval`` to see whether the stream wrote since it last looked —
        an event costs a counter's increment, no timer.  It stops as the block ends or the stream ends, after any
        comment it is writing (never cut half-way, to be followed by an event); it is cancelled with the block's
        scope (the client's disconnect).  Write the stream's own answer — and any other answer, such as a status
        in its place — after the block has ended, or through the stream, never around it.
        """
        if interval is None or self.ended:
            yield
            return
        stop = self._stop = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._keep_alive, interval / 2, stop)
            try:
                yield
            finally:
                stop.set()

    async def _keep_alive(self, tick: float, stop: anyio.Event) -> None:
        seen = self._writes
        quiet = 0  # the ticks since the last write: a comment at the first (the silence is tick to 2 * tick), then
        # at every second (one per interval)
        while True:
            with anyio.move_on_after(tick):
                await stop.wait()
            if stop.is_set() or self.ended:
                return
            if self._writes != seen or self._writing:
                seen, quiet = self._writes, 0
                continue
            quiet += 1
            if quiet % 2 == 1:
                await self._ping()
                seen = self._writes

    async def _ping(self) -> None:
        done = self._pinging = anyio.Event()
        try:
            if not self.started:
                self.started = True
                await self._send({"type": "http.response.start", "status": 200, "headers": _STREAM_HEADERS})
            await self._send({"type": "http.response.body", "body": KEEPALIVE_COMMENT, "more_body": True})
        finally:
            self._pinging = None
            done.set()


_STREAM_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-store"),
    (b"x-accel-buffering", b"no"),  # a proxy in front must not hold the events back
]


class Outbound:
    """The server's ``send`` as an app calls it: once the server says the client has gone, nothing more is sent.

    ASGI (HTTP 2.4) lets a server's ``send`` raise a subclass of ``OSError`` when the connection is closed — before
    its ``receive`` has said ``http.disconnect`` to the task watching it.  That is the client leaving, told another
    way: the send is dropped (as uvicorn and hypercorn drop one after a disconnect), every later one too, and the
    request's :func:`cancelled_on_disconnect` block is cancelled — its run with it — rather than the ``OSError``
    failing the run (an answer no one reads, then an error event no one reads) and escaping to the server, which
    logs a traceback for every client that left.
    """

    __slots__ = ("_scope", "_send", "gone")

    def __init__(self, send: Send) -> None:
        self._send = send
        self._scope: anyio.CancelScope | None = None
        #: Whether the server's send said the client has gone.
        self.gone = False

    def cancels(self, scope: anyio.CancelScope | None) -> None:
        """Cancel ``scope`` when the client is found gone (now, if it is already); ``None``: nothing more."""
        self._scope = scope
        if scope is not None and self.gone:
            scope.cancel()

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if self.gone:
            return
        try:
            await self._send(message)
        except OSError:
            self.gone = True
            if self._scope is not None:
                self._scope.cancel()


@asynccontextmanager
async def cancelled_on_disconnect(receive: Receive, send: Send | None = None) -> AsyncIterator[anyio.CancelScope]:
    """A block that is cancelled when the client disconnects (call after the body was read).

    The request's work — a run, and the stream of its events — goes inside: a client that goes away
    cancels the run, its model request and its tools with it, whether it waited for a JSON answer or
    read a stream.  The yielded scope's ``cancelled_caught`` tells afterwards that it happened.  ``send``: the
    request's :class:`Outbound`, whose failed send (the server saying the client has gone) cancels the block too.
    """
    async with anyio.create_task_group() as tg:
        if isinstance(send, Outbound):
            send.cancels(tg.cancel_scope)

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        try:
            yield tg.cancel_scope
        finally:
            tg.cancel_scope.cancel()
            if isinstance(send, Outbound):
                send.cancels(None)


class AppRuntime:
    """The runtime an app's runs use, and the ASGI lifespan that can open one for the app's lifetime.

    Each run uses, in order: the ``runtime=`` the app was made with; the runtime its agent is bound to
    (:meth:`Agent.bind <agentactors.Agent.bind>`); the runtime the app's lifespan opened (when the server
    runs lifespans and neither of the first two covers every agent); else none — the agent then finds the
    current one or opens a private one per run, as ``agent.run`` does anywhere.
    """

    __slots__ = ("_explicit", "_needs_own", "opened")

    def __init__(self, runtime: Runtime | None, agents: Iterable[Any]) -> None:
        if runtime is not None and not isinstance(runtime, Runtime):
            raise TypeError(f"runtime must be a Runtime or None, not {type(runtime).__name__}")
        self._explicit = runtime
        self._needs_own = runtime is None and any(getattr(a, "runtime", None) is None for a in agents)
        self.opened: Runtime | None = None

    def for_agent(self, agent: Any) -> Runtime | None:
        if self._explicit is not None:
            return self._explicit
        bound: Runtime | None = getattr(agent, "runtime", None)
        return bound if bound is not None else self.opened

    async def serve_lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan protocol: open a runtime at startup when one is needed, close it at shutdown.

        A ``runtime=`` nobody has entered yet when the server starts is entered here, for the app's lifetime
        (every request would otherwise fail on a runtime that is not running); one that has already closed
        fails the startup, saying so.  A running one is left to whoever entered it.
        """
        message = await receive()
        if message["type"] != "lifespan.startup":  # pragma: no cover - the protocol starts with startup
            return
        try:
            owned = runtime_to_enter(self._explicit, "app")
        except RuntimeError as exc:
            await send({"type": "lifespan.startup.failed", "message": f"RuntimeError: {exc}"})
            return
        if owned is None and not self._needs_own:
            await send({"type": "lifespan.startup.complete"})
            await receive()
            await send({"type": "lifespan.shutdown.complete"})
            return
        phase = "startup"
        try:
            async with owned if owned is not None else _opened(self):
                await send({"type": "lifespan.startup.complete"})
                phase = "shutdown"
                await receive()  # lifespan.shutdown
        except Exception as exc:
            await send({"type": f"lifespan.{phase}.failed", "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.shutdown.complete"})


def runtime_to_enter(runtime: Runtime | None, what: str) -> Runtime | None:
    """The ``runtime=`` an app or server (``what``) must enter for its lifetime: one nobody has entered yet.

    ``None``: none given, or one already running (left to whoever entered it).

    :raises RuntimeError: the runtime given has closed (said at startup, not by every request later).
    """
    if runtime is None or runtime.running:
        return None
    if runtime.closed:
        raise RuntimeError(
            f"the Runtime given as runtime= has closed: give the {what} one that is running or not yet entered"
        )
    return runtime


@asynccontextmanager
async def _opened(app_runtime: AppRuntime) -> AsyncIterator[None]:
    """The runtime the app opens for its lifetime, when the agents it serves have none of their own."""
    async with lifespan()(None) as state:
        app_runtime.opened = state["runtime"]
        try:
            yield
        finally:
            app_runtime.opened = None
