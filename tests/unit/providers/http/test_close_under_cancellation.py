"""What the senders' ``aclose`` paragraphs promise: a caller already cancelled still closes every connection.

A worker or server shutting down closes its providers from a cancelled task; a sender whose close stopped at its
first checkpoint would leave sockets open for the garbage collector (and the server waiting on them).
"""

from __future__ import annotations

import anyio
import httpx
import pytest

from agentactors.providers.http.h11_transport import H11Sender
from agentactors.providers.http.transport import ClientSender, Sender
from tests.unit.providers.http.test_h11_transport import (
    HEADERS,
    TIMEOUT,
    content_length,
    raw_server,
    read_all,
    replying,
    until,
)

pytestmark = pytest.mark.anyio


def _senders(backend: str) -> list[str]:
    return ["h11", "httpx", *(["aiohttp"] if backend == "asyncio" else [])]


def _sender(name: str) -> Sender:
    if name == "h11":
        return H11Sender(timeout=TIMEOUT)
    if name == "httpx":
        return ClientSender(httpx.AsyncClient(timeout=TIMEOUT), timeout=None, owned=True)
    from agentactors.providers.http.aiohttp_transport import AiohttpSender

    return AiohttpSender(timeout=TIMEOUT, trust_env=False)


async def test_a_cancelled_caller_still_closes_every_connection_of_a_sender(anyio_backend_name: str) -> None:
    for name in _senders(anyio_backend_name):
        async with raw_server(replying(content_length(b"{}"))) as server:
            sender = _sender(name)
            first = await sender.send(server.url, HEADERS, b"{}")  # open (aiohttp may have read it all already)
            second = await sender.send(server.url, HEADERS, b"{}")
            for response in (first, second):
                assert b"".join([chunk async for chunk in response.aiter_raw()]) == b"{}"
                await response.aclose()
            with anyio.CancelScope() as scope:
                scope.cancel()
                await sender.aclose()
            # every connection it kept idle was closed, not left to the garbage collector
            await until(lambda: server.accepted >= 1 and server.disconnects == server.accepted)


async def test_a_cancelled_caller_still_closes_an_h11_response_half_read() -> None:
    async with raw_server(replying(content_length(b"x" * 100_000))) as server:
        sender = H11Sender(timeout=TIMEOUT)
        response = await sender.send(server.url, HEADERS, b"{}")
        with anyio.CancelScope() as scope:
            scope.cancel()
            await response.aclose()
        assert sender.connections == (0, 0)  # closed, not given back half read
        await until(lambda: server.disconnects == 1)
        # ... and the sender still serves the next request
        assert len(await read_all(await sender.send(server.url, HEADERS, b"{}"))) == 100_000
        await sender.aclose()
