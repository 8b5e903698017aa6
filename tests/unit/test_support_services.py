"""``tests.support.services.serving`` starts an example's server again on another port when its port was taken.

The example picks a free port and binds it a moment later; under xdist another worker's server took it in between
once ("address already in use"), failing a doc example, and the socket hypercorn left open failed the next test
with a ResourceWarning.
"""

from __future__ import annotations

import socket
import types
from typing import Any

import httpx
import pytest

from tests.support.services import load_example, serving

pytestmark = pytest.mark.anyio


async def app(scope: Any, receive: Any, send: Any) -> None:
    """The smallest ASGI app: its lifespan, and "ok" to every request."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def test_a_port_taken_before_the_server_binds_it_is_tried_again() -> None:
    real = load_example("service_starlette")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        first = [taken.getsockname()[1]]
        module = types.ModuleType("taken_first")  # the example's serve, its free_port giving the taken port first
        module.free_port = lambda: first.pop() if first else real.free_port()  # type: ignore[attr-defined]
        module.serve = real.serve  # type: ignore[attr-defined]
        async with serving(app, module) as base:
            async with httpx.AsyncClient() as client:
                assert (await client.get(base)).text == "ok"
        assert base != f"http://127.0.0.1:{taken.getsockname()[1]}"
