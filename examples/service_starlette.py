"""A Starlette service: one Runtime for the app's lifetime, an SSE endpoint streaming a run's tokens, a page.

The recipe (see README, "In a service"): the runtime lives in the app's lifespan
(``agentactors.serve.asgi.lifespan``), and every handler passes it to its runs
(``runtime=request.state.runtime``) — so all requests share one ProviderActor, its
budget and the runtime's recorders.  ``GET /stream?prompt=...`` streams the answer
as server-sent events; a client that goes away (the page's Stop button closes its
EventSource) cancels the run, and the vendor request with it.  ``POST /ask`` answers
with JSON.  ``GET /`` is a small page: a prompt, the tokens as they arrive, Stop.

Runs offline: with no ``OPENAI_API_KEY`` it starts the built-in FakeVendor on
127.0.0.1 and talks to it over real HTTP.

    python examples/service_starlette.py          # then open http://127.0.0.1:8000
    python examples/service_starlette.py --port 9000 --backend trio

Needs ``pip install 'agentactors[asgi,testing]' hypercorn`` (hypercorn serves it on asyncio and trio;
``pip install -e '.[dev]'`` in a checkout has it).

Ctrl-C (or SIGTERM) stops it gracefully: open streams get a second to end; a second Ctrl-C stops it at once.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from contextlib import aclosing
from typing import Any

import anyio
import sniffio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from agentactors import Agent, OpenAIProvider, ProviderActor, Recorder
from agentactors.serve.asgi import lifespan

PAGE = """<!doctype html>
<html lang="en"><meta charset="utf-8"><title>agentactors</title>
<style>body{font:16px system-ui;max-width:40rem;margin:2rem auto} #answer{white-space:pre-wrap;min-height:3rem}</style>
<form id="ask">
  <input id="prompt" size="50" autocomplete="off" placeholder="Ask something" required>
  <button id="send">Send</button> <button type="button" id="stop" disabled>Stop</button>
</form>
<p id="answer"></p><p id="status"></p>
<script>
const $ = (id) => document.getElementById(id);
let source = null;
function finish(text) {
  if (source) { source.close(); source = null; }   // closing the EventSource ends the request: the run stops
  $("stop").disabled = true; $("send").disabled = false; $("status").textContent = text;
}
$("ask").onsubmit = (event) => {
  event.preventDefault(); finish(""); $("answer").textContent = "";
  source = new EventSource("/stream?prompt=" + encodeURIComponent($("prompt").value));
  $("stop").disabled = false; $("send").disabled = true; $("status").textContent = "streaming…";
  source.addEventListener("token", (m) => { $("answer").textContent += JSON.parse(m.data).text; });
  source.addEventListener("done", () => finish("done"));
  source.onerror = () => finish("connection lost");
};
$("stop").onclick = () => finish("stopped");
</script>
</html>
"""


def _sse(event: str, data: dict[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def build_app(provider: Any, *, recorders: Iterable[Recorder] = (), max_concurrency: int = 16) -> Starlette:
    """The service: ``provider`` behind one shared ProviderActor of ``max_concurrency`` for every request."""
    agent = Agent(provider, system="Be brief.", name="assistant")

    async def page(request: Request) -> Response:
        return HTMLResponse(PAGE)

    async def ask(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:  # not JSON, or not UTF-8
            body = None
        prompt = body.get("prompt") if isinstance(body, dict) else None
        if not isinstance(prompt, str) or not prompt:
            return JSONResponse({"error": 'POST a JSON object with a "prompt": {"prompt": "..."}'}, status_code=400)
        result = await agent.run(prompt, runtime=request.state.runtime)
        return JSONResponse({"answer": result.content, "served_by": result.served_by, "run_id": result.run_id})

    async def stream(request: Request) -> Response:
        prompt = request.query_params.get("prompt", "")
        if not prompt:  # checked before the response starts: a 400, not a stream that ends at once
            return JSONResponse({"error": "GET /stream?prompt=..."}, status_code=400)
        runtime = request.state.runtime

        async def events() -> AsyncIterator[str]:
            # When the client goes away, Starlette stops reading this generator; ClosingStream closes it then,
            # so the run is cancelled and its vendor request closed at once.
            async with agent.stream(prompt, runtime=runtime) as run:
                async for text in run.text_stream(min_interval=0.05):
                    yield _sse("token", {"text": text})
                result = await run.wait()
            yield _sse("done", {"run_id": result.run_id, "served_by": result.served_by})

        return ClosingStream(events(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    return Starlette(
        routes=[Route("/", page), Route("/ask", ask, methods=["POST"]), Route("/stream", stream)],
        lifespan=lifespan(
            recorders=recorders, setup=lambda rt: ProviderActor.shared(rt, provider, max_concurrency=max_concurrency)
        ),
    )


class ClosingStream(StreamingResponse):
    """A StreamingResponse that closes its body generator when the response ends, however it ends.

    Starlette stops iterating the body when the client leaves but does not close it: the generator — and the
    run it streams — would be finalised only when collected (and trio warns about such a generator).
    """

    async def stream_response(self, send: Any) -> None:
        body = self.body_iterator
        if not isinstance(body, AsyncGenerator):
            await super().stream_response(send)
            return
        async with aclosing(body):
            await super().stream_response(send)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


async def serve(app: Any, port: int, *, host: str = "127.0.0.1", stop: anyio.Event | None = None) -> None:
    """Serve ``app`` with hypercorn on the running backend (asyncio or trio) until ``stop`` is set."""
    try:
        from hypercorn.config import Config
    except ModuleNotFoundError:  # an example's server, not the library's: said, not a traceback
        raise SystemExit("this example is served by hypercorn: pip install hypercorn") from None

    config = Config()
    config.bind = [f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = None
    config.graceful_timeout = 1.0
    trigger = (stop or anyio.Event()).wait
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as serve_trio

        await serve_trio(app, config, shutdown_trigger=trigger)
    else:
        from hypercorn.asyncio import serve as serve_asyncio

        await serve_asyncio(app, config, shutdown_trigger=trigger)


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, or ``None`` — asked before anything starts."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server does
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


async def stop_on_signal(stop: anyio.Event, scope: anyio.CancelScope) -> None:
    """Ctrl-C or SIGTERM sets ``stop`` (a graceful shutdown); a second one cancels ``scope``."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            if stop.is_set():
                scope.cancel()
                return
            print("stopping (Ctrl-C again to stop at once)", file=sys.stderr)
            stop.set()


async def serve_here(port: int, stop: anyio.Event) -> None:
    """The service on ``port`` until ``stop`` is set: OpenAI with ``OPENAI_API_KEY``, else the FakeVendor."""
    if os.environ.get("OPENAI_API_KEY"):
        print(f"http://127.0.0.1:{port}")
        await serve(build_app(OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini"))), port, stop=stop)
        return
    from agentactors.testing import FakeReply, FakeVendor

    async with FakeVendor() as vendor:
        vendor.on(FakeReply(text="Here is a slowly streamed answer, one word at a time. " * 5,
                            words_per_chunk=1, chunk_latency=0.1))
        provider = OpenAIProvider("fake-model", api_key="sk-offline-example", base_url=vendor.openai_base_url)
        print(f"http://127.0.0.1:{port} (offline: a FakeVendor plays the model)")
        await serve(build_app(provider), port, stop=stop)


async def main(port: int = 8000) -> int:
    """Serve on ``port`` until Ctrl-C; 1 when the port is taken."""
    problem = port_in_use("127.0.0.1", port)
    if problem is not None:
        print(f"cannot listen on 127.0.0.1:{port}: {problem} (another server there? --port N picks another)",
              file=sys.stderr)
        return 1
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_signal, stop, tg.cancel_scope)

        async def serving() -> None:  # a task of its own: hypercorn on asyncio leaves its caller's task cancelling
            await serve_here(port, stop)
            tg.cancel_scope.cancel()  # served and stopped: the signal watcher too

        tg.start_soon(serving)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=os.environ.get("PORT", "8000"), help="default: $PORT or 8000")
    parser.add_argument("--backend", choices=["asyncio", "trio"], default="asyncio", help="default: asyncio")
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error(f"--port: 1 to 65535, not {args.port}")
    sys.exit(anyio.run(main, args.port, backend=args.backend))  # anyio.run(main) serves on port 8000
