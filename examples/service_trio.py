"""A trio service: a TCP server answering one JSON line per request with an agent run, each with a timeout.

The protocol is one JSON object per line each way: ``{"prompt": "...", "timeout": 5}`` in,
``{"answer": ..., "served_by": ..., "run_id": ...}`` or ``{"error": "timed out after 5s"}`` out.
Every connection is served in its own task, every request runs the agent in the one Runtime
the server opened (the agent is bound to it), and a request over its timeout is cancelled —
its vendor request with it — without disturbing the others.

Written with anyio, so the same code serves on trio (how it is started below) and asyncio.
Runs offline: with no ``OPENAI_API_KEY`` the built-in FakeVendor plays the model.

    python examples/service_trio.py               # then: echo '{"prompt": "hi"}' | nc 127.0.0.1 8001
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import Any

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus
from anyio.streams.buffered import BufferedByteReceiveStream

from agentactors import Agent, OpenAIProvider, ProviderActor, Runtime

MAX_LINE = 64 * 1024


async def handle(agent: Agent, default_timeout: float, stream: SocketStream) -> None:
    """One connection: requests one after another until the client closes it."""
    async with stream:
        lines = BufferedByteReceiveStream(stream)
        while True:
            try:
                line = await lines.receive_until(b"\n", MAX_LINE)
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.DelimiterNotFound):
                return
            reply = await answer(agent, line, default_timeout)
            await stream.send((json.dumps(reply) + "\n").encode())


async def answer(agent: Agent, line: bytes, default_timeout: float) -> dict[str, Any]:
    """Run the agent on one request line, within the request's timeout."""
    try:
        request = json.loads(line)
        prompt = str(request["prompt"])
        timeout = float(request.get("timeout", default_timeout))
    except (ValueError, KeyError, TypeError):
        return {"error": 'send one JSON object per line: {"prompt": "...", "timeout": 5}'}
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


async def main() -> None:
    port = int(os.environ.get("PORT", "8001"))
    if os.environ.get("OPENAI_API_KEY"):
        await serve(OpenAIProvider(os.environ.get("OPENAI_MODEL", "gpt-4.1-mini")), port=port)
        return
    from agentactors.testing import FakeVendor

    async with FakeVendor() as vendor:
        provider = OpenAIProvider("fake-model", api_key="sk-offline-example", base_url=vendor.openai_base_url)
        print(f"127.0.0.1:{port} (offline: a FakeVendor plays the model)")
        await serve(provider, port=port)


if __name__ == "__main__":
    anyio.run(main, backend="trio")  # the same code serves on asyncio: anyio.run(main)
