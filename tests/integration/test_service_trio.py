"""examples/service_trio.py: concurrent clients, one runtime, a per-request timeout that cancels the vendor request."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from agentactors import OpenAIProvider
from agentactors.testing import FakeReply, FakeVendor, RecordedRequest
from tests.support.services import load_example

pytestmark = pytest.mark.anyio


def route(request: RecordedRequest) -> FakeReply:
    text = request.conversation.last_user_text if request.conversation is not None else ""
    if "slow" in text:
        return FakeReply(text="too late", latency=10)
    return FakeReply(text=f"answer to {text}", latency=0.05)


async def ask(port: int, *requests: dict[str, Any]) -> list[dict[str, Any]]:
    """One client: its requests over one connection, one after another."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        lines = BufferedByteReceiveStream(stream)
        replies = []
        for request in requests:
            await stream.send((json.dumps(request) + "\n").encode())
            replies.append(json.loads(await lines.receive_until(b"\n", 65536)))
        return replies


async def test_the_trio_service_serves_concurrent_clients_with_per_request_timeouts(fake_vendor: FakeVendor) -> None:
    module = load_example("service_trio")
    fake_vendor.on(route)
    provider = OpenAIProvider("gpt-4o-mini", api_key="sk-trio-service-00000", base_url=fake_vendor.openai_base_url)
    replies: dict[int, list[dict[str, Any]]] = {}
    async with anyio.create_task_group() as server:
        port = await server.start(partial(module.serve, provider, request_timeout=5))

        async def client(i: int) -> None:
            replies[i] = await ask(port, {"prompt": f"q{i}-a"}, {"prompt": f"q{i}-b"})

        with anyio.fail_after(20):
            async with anyio.create_task_group() as clients:
                for i in range(8):
                    clients.start_soon(client, i)
                slow = await ask(port, {"prompt": "slow one", "timeout": 0.3}, {"prompt": "fast after"})
                garbage = await ask(port, {"no": "prompt"})
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        server.cancel_scope.cancel()
    assert {i: [r["answer"] for r in rs] for i, rs in replies.items()} == {
        i: [f"answer to q{i}-a", f"answer to q{i}-b"] for i in range(8)
    }
    assert all(r["served_by"] == "openai" and r["run_id"] for rs in replies.values() for r in rs)
    assert slow[0] == {"error": "timed out after 0.3s"}
    assert slow[1]["answer"] == "answer to fast after", "the connection goes on after a timed-out request"
    assert gone.outcome == "disconnected", "the timeout cancelled the vendor request"
    assert "send one JSON object per line" in garbage[0]["error"]
    assert len({r["run_id"] for rs in replies.values() for r in rs}) == 16


async def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused_and_the_server_goes_on(
    fake_vendor: FakeVendor,
) -> None:
    module = load_example("service_trio")
    fake_vendor.on(route)
    provider = OpenAIProvider("gpt-4o-mini", api_key="sk-trio-service-00000", base_url=fake_vendor.openai_base_url)
    async with anyio.create_task_group() as server:
        port = await server.start(partial(module.serve, provider, request_timeout=5))
        with anyio.fail_after(20):
            bad = await ask(port, *({"prompt": "x", "timeout": t} for t in ("nan", "inf", -1, 0, "soon")),
                            {"prompt": "fine"})
            again = await ask(port, {"prompt": "another client"})
        server.cancel_scope.cancel()
    assert [r.get("error") for r in bad[:5]] == [module.BAD_TIMEOUT] * 5
    assert bad[5]["answer"] == "answer to fine", "the connection goes on"
    assert again[0]["answer"] == "answer to another client", "the server goes on"
