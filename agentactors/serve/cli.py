"""``agentactors serve MODULE:ATTR``: one agent served as the OpenAI API, MCP and AG-UI on one port.

What ``examples/serve_all.py`` shows as a program, as a command, for a team that does not write Python: one
:class:`~agentactors.Runtime` the agent is bound to, entered in the app's lifespan (so every protocol's runs
share one ProviderActor, its budgets and recorders), and the three apps on one port::

    /openai/v1/...   openai_app({name: agent})       any OpenAI client: base_url http://HOST:PORT/openai/v1
    /mcp/            mcp_server({name: agent})       MCP clients, streamable HTTP
    /agui/           agui_app(agent)                 AG-UI frontends: POST a RunAgentInput

served by uvicorn on asyncio, by hypercorn on trio.  The endpoints' URLs are the first lines on stdout once the
server listens (one per protocol, in that order), so a script can read them as it reads ``fakevendor``'s; all
else goes to stderr.  Ctrl-C or SIGTERM stops it gracefully (open requests get :data:`GRACE` seconds), a second
Ctrl-C at once.

The mounts are a small router of this module's own rather than Starlette's ``Mount``: serving the OpenAI and
AG-UI endpoints then needs no web framework, only the server (MCP's app is Starlette's, and comes with the
``mcp`` extra).  It leaves ``path`` whole and sets ``root_path``, as Starlette's ``Mount`` does, which each app
reads.  Its bearer-key check, path and JSON answers are the apps' own (:mod:`._http`).

``--api-key`` guards all three endpoints, not only the OpenAI one whose app takes ``api_keys=``: MCP's app takes
only OAuth settings, and AG-UI's none, so the router checks the same bearer keys in front of them (constant
time, as the OpenAI app does).  A key that guarded one endpoint of three would leave the agent, and its tools,
open through the other two on the same port.
"""

from __future__ import annotations

import argparse
import inspect
import ipaddress
import math
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import AsyncExitStack, contextmanager
from typing import Any

import anyio

from ..actors.runtime import Runtime
from ..agent.core import Agent
from ._http import authorized, bearer_keys, route_path, send_json

__all__ = ["GRACE", "PROTOCOLS", "ServedApp", "add_arguments", "build_app", "run"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The protocols, in the order their URLs are printed, and where each is mounted.
PROTOCOLS: Mapping[str, str] = {"openai": "/openai", "mcp": "/mcp", "agui": "/agui"}

#: What each protocol's URL line ends with: the address its clients are configured with.
_ENDPOINTS = {"openai": "/openai/v1", "mcp": "/mcp/", "agui": "/agui/"}

_TITLES = {"openai": "OpenAI", "mcp": "MCP", "agui": "AG-UI"}

#: Seconds open requests get to finish once a stop is asked for (a stream still going then is cut); the
#: runtime then drains what still runs for its own ``drain_timeout``.
GRACE = 5.0
#: How long before the server's grace runs out the requests still open are cut (:meth:`ServedApp.cut_open_requests`).
_CUT_MARGIN = 1.0

_DESCRIPTION = (
    "Serve one agent over HTTP as the OpenAI Chat Completions API (/openai/v1), an MCP server (/mcp/, streamable "
    "HTTP) and an AG-UI endpoint (/agui/), on one port, with one runtime.  MODULE:ATTR names an Agent, or a "
    "function of no arguments (plain or async) that returns one, called once as the server starts; MODULE is "
    "found from the current directory too.  The endpoints' URLs are printed on stdout, one a line, once the "
    "server listens.  Ctrl-C or SIGTERM stops it (open requests get 5 seconds); a second Ctrl-C at once."
)

_EPILOG = """\
examples:
  agentactors serve myagent:agent                      # then: curl http://127.0.0.1:8000/openai/v1/models
  agentactors serve myagent:make_agent --port 0 --openai
  API_KEYS=sk-1 agentactors serve myagent:agent --host 0.0.0.0 --api-key-env API_KEYS
the OpenAI model name and the MCP tool name are the agent's name (Agent(name=...)), else ATTR.
servers: uvicorn on asyncio (it comes with the [mcp] extra), hypercorn on trio (pip install hypercorn).
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The command's options.  Numbers and keys are checked here: a bad one is argparse's usage error (exit 2)."""
    parser.description = _DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    parser.add_argument("agent", metavar="MODULE:ATTR",
                        help="the agent: an Agent, or a function of no arguments (plain or async) returning one")
    parser.add_argument("--host", type=_host, default="127.0.0.1",
                        help="the interface to listen on; default 127.0.0.1 (another one is warned about "
                             "unless an API key guards it)")
    parser.add_argument("--port", type=_port, default=8000, help="default 8000; 0 picks a free port")
    for protocol in PROTOCOLS:
        parser.add_argument(f"--{protocol}", action="store_true",
                            help=f"serve {_TITLES[protocol]} at {_ENDPOINTS[protocol]} (default: every protocol "
                                 "that can be served; naming some serves those only)")
    parser.add_argument("--api-key", action="append", type=_key, default=[], metavar="KEY",
                        help="a bearer key clients must send (Authorization: Bearer KEY) on every endpoint; "
                             "repeatable.  It shows in `ps`: prefer --api-key-env")
    parser.add_argument("--api-key-env", type=_variable, default=None, metavar="VAR",
                        help="the environment variable holding the key (several: comma-separated)")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio",
                        help="the event loop: asyncio (served by uvicorn, the default) or trio (by hypercorn)")
    parser.add_argument("--sessions", action="store_true",
                        help="keep conversations in the server: OpenAI's X-Session-Id header, AG-UI's threadId "
                             "(in memory, for the process's life)")
    parser.add_argument("--keepalive", type=_keepalive, default=15.0, metavar="SECONDS",
                        help="an SSE comment into a stream silent this long (default 15; 0: none)")
    parser.add_argument("--max-body-size", type=_bytes, default=None, metavar="BYTES",
                        help="the largest request body (default: the apps' own, 32 MiB)")


def _host(text: str) -> str:
    if not text.strip():  # an unset variable in a script
        raise ValueError(text)
    return text


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise ValueError(port)
    return port


def _key(text: str) -> str:
    if not text.strip():  # an unset variable ("--api-key $KEY"): every request would get a 401
        raise ValueError
    return text.strip()


def _variable(text: str) -> str:
    if not text or "=" in text:
        raise ValueError(text)
    return text


def _keepalive(text: str) -> float | None:
    seconds = float(text)
    if not 0.0 <= seconds < math.inf:
        raise ValueError(seconds)
    return seconds or None


def _bytes(text: str) -> int:
    size = int(text)
    if size < 1:
        raise ValueError(size)
    return size


# argparse names the expected kind of value in its usage error after the function's __name__ (never the value
# of --api-key: "_key" raises without it, and argparse then says "invalid key (not empty) value: ''" at most).
_host.__name__, _port.__name__, _key.__name__ = "host (not empty)", "port (0-65535)", "key (not empty)"
_variable.__name__, _keepalive.__name__ = "variable name", "number of seconds >= 0"
_bytes.__name__ = "number of bytes >= 1"


def _keys(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list[str] | None:
    """The keys ``--api-key`` and ``--api-key-env`` give, or ``None`` for open endpoints.

    A variable that is unset or empty is a usage error, never open endpoints: whoever wrote the flag meant a
    key, and serving without one would be the quiet opposite.  The message names the variable, not a value.
    """
    keys: list[str] = list(args.api_key)
    if args.api_key_env is not None:
        value = os.environ.get(args.api_key_env, "")
        found = [k.strip() for k in value.split(",") if k.strip()]
        if not found:
            parser.error(f"argument --api-key-env: ${args.api_key_env} is {'empty' if value else 'not set'}")
        keys.extend(found)
    return keys or None


def _say(text: str) -> None:
    print(f"serve: {text}", file=sys.stderr, flush=True)


def _protocols(args: argparse.Namespace) -> list[str] | None:
    """The protocols to serve, or ``None`` after saying why one asked for cannot be (exit 1).

    Asked for by name, a protocol whose extra is missing is an error; by default it is skipped with a line
    saying so.  Only MCP has an extra of its own (the ``mcp`` SDK); the OpenAI and AG-UI apps need nothing but
    the server.
    """
    asked = [p for p in PROTOCOLS if getattr(args, p)]
    chosen = asked or list(PROTOCOLS)
    if "mcp" in chosen:
        try:
            from .mcp import mcp_server  # noqa: F401  (its import names the missing extra)
        except ImportError:
            if asked:
                _say("--mcp needs the mcp SDK: pip install 'agentactors[mcp]'")
                return None
            _say("MCP not served: it needs the mcp SDK (pip install 'agentactors[mcp]')")
            chosen.remove("mcp")
    return chosen


def _server_missing(backend: str) -> str | None:
    """What to install for ``backend``'s server, or ``None`` when it is there — asked before anything starts."""
    import importlib.util

    if backend == "trio":
        missing = [m for m in ("trio", "hypercorn") if importlib.util.find_spec(m) is None]
        if missing:
            return (f"serving on trio needs {' and '.join(missing)}: pip install "
                    f"{' '.join('hypercorn' if m == 'hypercorn' else 'trio' for m in missing)}")
        return None
    if importlib.util.find_spec("uvicorn") is None:
        return "serving on asyncio needs uvicorn: pip install uvicorn (or --backend trio, served by hypercorn)"
    return None


def _listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, bound here rather than by the server: ``--port 0``'s port is then
    known before the server starts, and a taken port is an ``OSError`` before anything else is built.

    :raises OSError: the address cannot be bound (in use, not this machine's, a name that does not resolve).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn and hypercorn bind
        sock.bind(address)
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def _base_url(sock: socket.socket) -> str:
    address: tuple[Any, ...] = sock.getsockname()
    host = str(address[0])
    return f"http://[{host}]:{address[1]}" if ":" in host else f"http://{host}:{address[1]}"


def _is_loopback(sock: socket.socket) -> bool:
    try:
        return ipaddress.ip_address(str(sock.getsockname()[0])).is_loopback
    except ValueError:  # pragma: no cover - a bound INET socket's name is an address
        return False


def run(args: argparse.Namespace, parser: argparse.ArgumentParser, load: Callable[[str], object]) -> int:
    """Serve as ``args`` say until a stop signal; the exit status.

    ``load`` imports ``MODULE:ATTR`` (``python -m agentactors``'s loader, which finds modules in the current
    directory too) and raises :class:`ValueError` for a usage mistake.  A usage mistake is argparse's error
    through ``parser`` (exit 2); a missing extra or server, a taken port, a module whose own import fails: one
    line on stderr, exit 1.  A signal's graceful stop is 0, a second Ctrl-C's immediate one 130.
    """
    keys = _keys(args, parser)
    protocols = _protocols(args)
    if protocols is None:
        return 1
    problem = _server_missing(args.backend)
    if problem is not None:
        _say(problem)
        return 1
    try:
        target = load(args.agent)
    except ValueError as exc:
        parser.error(str(exc))
    except ImportError as exc:  # the named module's own import failed
        _say(f"cannot import {args.agent}: {exc}")
        return 1
    try:
        sock = _listen(args.host, args.port)
    except OSError as exc:
        _say(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc} (another server there? --port N "
             "picks another, --port 0 any free one)")
        return 1
    name = args.agent.rpartition(":")[2].rpartition(".")[2]
    outcome: list[int | str] = []
    try:
        anyio.run(_main, target, name, protocols, keys, args, sock, outcome, backend=args.backend)
    finally:
        sock.close()
    result = outcome[0] if outcome else 1
    if isinstance(result, str):
        parser.error(result)
    return result


async def _agent(target: object, spec: str) -> Agent[Any] | str:
    """The agent ``target`` is, or the one it makes (awaited when it is async); else what is wrong, for the
    usage error.  Called in the event loop: a function may make what needs one (a provider's pool)."""
    if isinstance(target, Agent):
        return target
    if not callable(target):
        return f"{spec} is a {type(target).__name__}, not an Agent or a function returning one"
    made = target()
    if inspect.isawaitable(made):
        made = await made
    if not isinstance(made, Agent):
        return f"{spec}() returned a {type(made).__name__}, not an Agent"
    return made


async def _main(target: object, name: str, protocols: Sequence[str], keys: list[str] | None,
                args: argparse.Namespace, sock: socket.socket, outcome: list[int | str]) -> None:
    """Make the agent and the app, serve until told to stop, and put the exit status (or a usage error's
    message) in ``outcome``."""
    agent = await _agent(target, args.agent)
    if isinstance(agent, str):
        outcome.append(agent)
        return
    served = build_app(agent, name=agent.name or name, protocols=protocols, api_keys=keys, sessions=args.sessions,
                       keepalive=args.keepalive, max_body_size=args.max_body_size, host=args.host)
    stop = anyio.Event()
    forced: list[bool] = []
    base, loopback = _base_url(sock), _is_loopback(sock)  # (now: serving on trio hands the socket over)
    async with anyio.create_task_group() as tg:

        async def on_signals() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    if stop.is_set():
                        forced.append(True)
                        served.forced = True
                        served.cut_open_requests()  # ended by their own scopes: no server logs them as failed
                        tg.cancel_scope.cancel()
                        return
                    _say("stopping (Ctrl-C again to stop at once)")
                    stop.set()
                    tg.start_soon(cut_late)

        async def cut_late() -> None:
            # Just before the server's own grace runs out: the requests still open are ended here, cleanly.
            await anyio.sleep(GRACE - _CUT_MARGIN)
            if cut := served.cut_open_requests():
                _say(f"{cut} request(s) still open after {GRACE - _CUT_MARGIN:g} s: cut")

        async def announce() -> None:
            await served.ready.wait()
            for protocol in protocols:
                print(base + _ENDPOINTS[protocol], flush=True)
            if not keys and not loopback:
                _say(f"warning: listening on {args.host}, not loopback, and the endpoints have no auth: anyone "
                     "who reaches the port can run the agent and its tools (--api-key-env VAR guards them)")
            served_as = ", ".join(_TITLES[p] for p in protocols)
            server = "hypercorn" if args.backend == "trio" else "uvicorn"
            _say(f"agent {served.name!r} as {served_as} on {base} ({server} on {args.backend}; "
                 f"{'API key checked' if keys else 'no API key'}) — Ctrl-C to stop")

        async def serving() -> None:
            await serve(served, sock, backend=args.backend, stop=stop)
            tg.cancel_scope.cancel()  # served and stopped: the signal watcher too

        tg.start_soon(on_signals)
        tg.start_soon(announce)
        tg.start_soon(serving)
    if forced:
        outcome.append(130)
    elif not served.ready.is_set():
        _say("the server stopped before it started (its message is above)")
        outcome.append(1)
    else:
        outcome.append(0)


class ServedApp:
    """The ASGI app :func:`build_app` makes: the protocols' apps under their mounts, the lifespan that enters the
    runtime (and MCP's session manager), and ``ready``, set once the lifespan has started them."""

    def __init__(self, name: str, mounts: Mapping[str, ASGIApp], *, keys: tuple[bytes, ...] | None,
                 guarded: frozenset[str], enter: Callable[[AsyncExitStack], Awaitable[None]]) -> None:
        self.name = name
        self.mounts = dict(mounts)
        self.ready = anyio.Event()
        self._keys = keys
        self._guarded = guarded
        self._enter = enter
        self._open: set[anyio.CancelScope] = set()
        #: Set by a second Ctrl-C: the stop is forced (the lifespan's cancellation is then no failure to report).
        self.forced = False

    def cut_open_requests(self) -> int:
        """End every request still open (a stream a client keeps reading): its run is cancelled and a response
        already begun is ended with an empty last body, so the server sees each request finish — uvicorn would
        otherwise cancel them itself at its graceful timeout and log a traceback for each.  How many were cut."""
        for scope in self._open:
            scope.cancel()
        return len(self._open)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One ASGI call: the lifespan, or a request routed to its protocol's app (401 without a key it takes).

        Cancellation: a request the server cancels is cancelled in the app it reached (its run with it), as a
        client's disconnect is; :meth:`cut_open_requests` ends the requests still open with a finished response.
        """
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":  # no endpoint here speaks websockets: the server closes the connection
            return
        path = route_path(scope)
        for mount, app in self.mounts.items():
            if path == mount or path.startswith(mount + "/"):
                if mount in self._guarded and not authorized(scope, self._keys):
                    await send_json(send, 401, {"error": "Incorrect or missing API key: send it as "
                                                         "'Authorization: Bearer <key>'."},
                                    {"www-authenticate": "Bearer"})
                    return
                await self._serve_one(app, self._mounted(scope, mount, path == mount), receive, send)
                return
        await send_json(send, 404, {"error": f"no endpoint at {path}: serving "
                                             f"{', '.join(m + '/' for m in self.mounts)}"})

    async def _serve_one(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """``app`` on one request, cut by :meth:`cut_open_requests` into a finished response."""
        state = {"started": False, "ended": False}

        async def tracked(message: MutableMapping[str, Any]) -> None:
            kind = message.get("type")
            if kind == "http.response.start":
                state["started"] = True
            elif kind == "http.response.body" and not message.get("more_body", False):
                state["ended"] = True
            await send(message)

        with anyio.CancelScope() as cut:
            self._open.add(cut)
            try:
                await app(scope, receive, tracked)
            finally:
                self._open.discard(cut)
        if cut.cancelled_caught and state["started"] and not state["ended"]:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                try:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:
                    pass  # the client had gone: nothing to end
        elif cut.cancelled_caught and not state["started"]:
            with anyio.CancelScope(shield=True), anyio.move_on_after(1):
                await send_json(send, 503, {"error": "the server is stopping"})

    @staticmethod
    def _mounted(scope: Scope, mount: str, bare: bool) -> Scope:
        """The scope the mounted app sees: ``root_path`` grown by the mount, ``path`` whole (as Starlette's
        ``Mount`` leaves it); the mount's bare path (``/mcp``) as its root (``/mcp/``)."""
        child = dict(scope)
        child["root_path"] = (scope.get("root_path") or "") + mount
        if bare:
            child["path"] = scope["path"] + "/"
            raw = scope.get("raw_path")
            if isinstance(raw, bytes):
                child["raw_path"] = raw + b"/"
        return child

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """The ASGI lifespan: enter the runtime (and MCP's session manager) at startup, leave them at shutdown.
        A mounted app's own lifespan is not run (as under Starlette's ``Mount``): the agent is bound to this
        runtime, which every app then uses."""
        await receive()  # lifespan.startup
        try:
            await self._lifespan_body(receive, send)
        except anyio.get_cancelled_exc_class():
            # A second Ctrl-C stops at once, as asked: the lifespan (a task of uvicorn's own, on asyncio) ends
            # quietly rather than have the server log the cancellation as a failed lifespan, with its traceback.
            if not self.forced:
                raise

    async def _lifespan_body(self, receive: Receive, send: Send) -> None:
        try:
            async with AsyncExitStack() as stack:
                try:
                    await self._enter(stack)
                except Exception as exc:
                    await send({"type": "lifespan.startup.failed", "message": f"{type(exc).__name__}: {exc}"})
                    return
                await send({"type": "lifespan.startup.complete"})
                self.ready.set()
                await receive()  # lifespan.shutdown
        except Exception as exc:
            await send({"type": "lifespan.shutdown.failed", "message": f"{type(exc).__name__}: {exc}"})
            return
        await send({"type": "lifespan.shutdown.complete"})


def build_app(
    agent: Agent[Any],
    *,
    name: str,
    protocols: Sequence[str] = tuple(PROTOCOLS),
    api_keys: Sequence[str] | None = None,
    sessions: bool = False,
    keepalive: float | None = 15.0,
    max_body_size: int | None = None,
    host: str = "127.0.0.1",
) -> ServedApp:
    """``agent`` served as ``protocols`` (of :data:`PROTOCOLS`) under one ASGI app, named ``name`` (the OpenAI
    model, the MCP tool), bound to one :class:`~agentactors.Runtime` that the app's lifespan enters.

    ``api_keys`` guard every endpoint: the OpenAI app's own ``api_keys``, the router's check in front of the
    others.  ``sessions``, ``keepalive`` and ``max_body_size`` are the apps' keywords of those names (MCP takes
    the body size only; ``None``: each app's default).  ``host`` is MCP's: on a loopback host its app refuses
    requests whose ``Host`` or ``Origin`` is not loopback (DNS rebinding).  Call it in the event loop that serves it.

    :raises ValueError: an unknown protocol, no protocol, or a keyword an app refuses.
    """
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"protocols are some of {', '.join(PROTOCOLS)}, not {list(protocols)!r}")
    keys = bearer_keys(api_keys)
    runtime = Runtime()
    bound = agent.bind(runtime)  # bound before it runs: every endpoint's runs share the runtime
    mounts: dict[str, ASGIApp] = {}
    sized: dict[str, Any] = {} if max_body_size is None else {"max_body_size": max_body_size}  # else the apps' own
    session_manager: Any = None
    if "openai" in protocols:
        from .openai import openai_app

        mounts[PROTOCOLS["openai"]] = openai_app({name: bound}, api_keys=api_keys, sessions=sessions,
                                                 keepalive=keepalive, **sized)
    if "mcp" in protocols:
        from .mcp import mcp_server

        server = mcp_server({name: bound}, runtime=runtime)
        mcp_sized: dict[str, Any] = {} if max_body_size is None else {"max_request_body_size": max_body_size}
        mounts[PROTOCOLS["mcp"]] = server.streamable_http_app(streamable_http_path="/", host=host, **mcp_sized)
        session_manager = server.session_manager
    if "agui" in protocols:
        from .agui import agui_app

        mounts[PROTOCOLS["agui"]] = agui_app(bound, sessions=sessions, keepalive=keepalive, **sized)

    async def enter(stack: AsyncExitStack) -> None:
        await stack.enter_async_context(runtime)
        if session_manager is not None:
            await stack.enter_async_context(session_manager.run())

    guarded = frozenset(m for p, m in PROTOCOLS.items() if p != "openai") if keys is not None else frozenset()
    return ServedApp(name, mounts, keys=keys, guarded=guarded, enter=enter)


async def serve(app: ASGIApp, sock: socket.socket, *, backend: str, stop: anyio.Event) -> None:
    """Serve ``app`` on the listening ``sock`` until ``stop`` is set: uvicorn on asyncio, hypercorn on trio.
    Open requests then get :data:`GRACE` seconds.  Signals are the caller's (neither server installs its
    handlers here): cancel the caller's scope to stop at once."""
    if backend == "trio":
        from hypercorn.config import Config
        from hypercorn.trio import serve as serve_trio

        config = Config()
        config.bind = [f"fd://{sock.fileno()}"]  # hypercorn takes the descriptor over, and closes it
        config.accesslog = None
        config.loglevel = "WARNING"  # its "Running on ..." line: the URLs were printed, on stdout
        config.graceful_timeout = GRACE
        sock.detach()
        await serve_trio(app, config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]
        return
    import uvicorn

    class Server(uvicorn.Server):
        @contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the caller's: uvicorn's would raise the signal again once stopped

    server = Server(uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=int(GRACE)))

    async def stop_when_told() -> None:
        await stop.wait()
        server.should_exit = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_when_told)
        await server.serve(sockets=[sock])
        tg.cancel_scope.cancel()

