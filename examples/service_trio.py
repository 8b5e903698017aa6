"""A trio service: a TCP server answering one JSON line per request with an agent run, each with a timeout.

The protocol is one JSON object per line each way: ``{"prompt": "...", "timeout": 5}`` in,
``{"answer": ..., "served_by": ..., "run_id": ...}`` or ``{"error": "timed out after 5s"}`` out.  A request it
cannot take as written (not JSON, a prompt that is not a non-empty string, a timeout that is not a number of
seconds, a line over 64 KiB) gets an ``{"error": ...}`` line saying what to send, and nothing is asked of the model.
Every connection is served in its own task, every request runs the agent in the one Runtime
the server opened (the agent is bound to it), and a request over its timeout is cancelled —
its vendor request with it — without disturbing the others.

Written with anyio, so the same code serves on trio (how it is started below) and asyncio.
Runs offline: with no ``OPENAI_API_KEY`` the built-in FakeVendor plays the model.

    python examples/service_trio.py               # then: echo '{"prompt": "hi"}' | nc 127.0.0.1 8001
    python examples/service_trio.py --port 9001 --backend asyncio

Ctrl-C (or SIGTERM) stops it: the requests in flight are cancelled, their vendor requests with them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import sys
from functools import partial
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from agentactors import Agent, OpenAIProvider, ProviderActor, Runtime

MAX_LINE = 64 * 1024
MAX_TIMEOUT = 300.0
BAD_REQUEST = 'send one JSON object per line: {"prompt": "...", "timeout": 5}, the prompt a non-empty string'
BAD_TIMEOUT = f'"timeout": a number of seconds, more than 0 and at most {MAX_TIMEOUT:g}'
LINE_TOO_LONG = f"a request line is at most {MAX_LINE:,} bytes; the connection is closed"


async def handle(agent: Agent[str], default_timeout: float, stream: SocketStream) -> None:
    """One connection: requests one after another until the client closes it."""
    async with stream:
        lines = BufferedByteReceiveStream(stream)
        while True:
            try:
                line = await lines.receive_until(b"\n", MAX_LINE)
            except anyio.DelimiterNotFound:  # said, not just hung up on: the client learns why
                await stream.send((json.dumps({"error": LINE_TOO_LONG}) + "\n").encode())
                return
            except (anyio.IncompleteRead, anyio.EndOfStream):
                return
            reply = await answer(agent, line, default_timeout)
            await stream.send((json.dumps(reply) + "\n").encode())


async def answer(agent: Agent[str], line: bytes, default_timeout: float) -> dict[str, Any]:
    """Run the agent on one request line, within the request's timeout."""
    # Taken as written or refused: str() would send the model "None" for a null prompt, and float() would make
    # `"timeout": true` one second.
    try:
        request = json.loads(line)
        prompt = request["prompt"]
    except (ValueError, KeyError, TypeError):
        return {"error": BAD_REQUEST}
    if not isinstance(prompt, str) or not prompt:
        return {"error": BAD_REQUEST}
    timeout = request.get("timeout", default_timeout)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):  # a bool is an int to Python
        return {"error": BAD_TIMEOUT}
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):  # NaN and Infinity parse as floats
        return {"error": BAD_TIMEOUT}
    with anyio.move_on_after(timeout) as scope:
        result = await agent.run(prompt)  # cancelled at the deadline: the vendor request is closed
    if scope.cancelled_caught:
        return {"error": f"timed out after {timeout:g}s"}
    if result.generation_failed:
        return {"error": type(result.error).__name__, "run_id": result.run_id}
    return {"answer": result.content, "served_by": result.served_by, "run_id": result.run_id}


async def serve(
    provider: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    request_timeout: float = 30.0,
    max_concurrency: int = 16,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled; ``task_status.started(port)`` once listening (``port=0`` picks a free one).

    ``request_timeout``: seconds a request may take when it does not say (its ``"timeout"``).
    """
    async with Runtime() as rt:
        ProviderActor.shared(rt, provider, max_concurrency=max_concurrency)
        agent = Agent(provider, system="Be brief.", name="assistant").bind(rt)
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
        async with listener:
            task_status.started(listener.extra(SocketAttribute.local_port))
            await listener.serve(partial(handle, agent, request_timeout))


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be listened on, or ``None`` — asked before anything starts."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the listener does
        try:
            s.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


async def stop_on_signal(scope: anyio.CancelScope) -> None:
    """Ctrl-C or SIGTERM cancels ``scope``: the server stops, and the runs in flight with it."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            print("stopping", file=sys.stderr)
            scope.cancel()
            return


async def main(port: int = 8001) -> int:
    """Serve on ``port`` until Ctrl-C; 1 when the port is taken."""
    problem = port_in_use("127.0.0.1", port)
    if problem is not None:
        print(f"cannot listen on 127.0.0.1:{port}: {problem} (another server there? --port N picks another)",
              file=sys.stderr)
        return 1
    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_signal, tg.cancel_scope)
        if os.environ.get("OPENAI_API_KEY"):
            print(f"127.0.0.1:{port}")
            await serve(OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")), port=port)
            return 0
        from agentactors.testing import FakeVendor

        async with FakeVendor() as vendor:
            provider = OpenAIProvider("fake-model", api_key="sk-offline-example", base_url=vendor.openai_base_url)
            print(f"127.0.0.1:{port} (offline: a FakeVendor plays the model)")
            await serve(provider, port=port)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=os.environ.get("PORT", "8001"), help="default: $PORT or 8001")
    parser.add_argument("--backend", choices=["trio", "asyncio"], default="trio", help="default: trio")
    args = parser.parse_args()
    if not 0 < args.port < 65536:
        parser.error(f"--port: 1 to 65535, not {args.port}")
    sys.exit(anyio.run(main, args.port, backend=args.backend))  # the same code on both: anyio.run(main)
