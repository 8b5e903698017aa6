"""The FakeVendor releases a connection's socket as soon as its client goes away — idle or mid-answer.

Under hypercorn an idle keep-alive connection closed by its client stayed in CLOSE_WAIT until the
keep-alive timer (120 s) ran out: 86-104 sockets after one cancellation storm.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx
import pytest

from agentactors.testing import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
HEADERS = {"authorization": "Bearer sk-connections-0123456789"}


def close_wait_sockets(port: int) -> int:
    """Sockets of this process on ``port`` in CLOSE_WAIT (Linux /proc)."""
    inodes = {os.readlink(f"/proc/self/fd/{fd}")[8:-1] for fd in os.listdir("/proc/self/fd")
              if os.path.exists(f"/proc/self/fd/{fd}") and os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")}
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local_port = int(fields[1].rsplit(":", 1)[1], 16)
            if local_port == port and fields[3] == "08" and fields[9] in inodes:
                count += 1
    return count


async def settled(fv: FakeVendor, *, within: float = 3.0) -> int:
    # Polled: the server runs in its own thread and loop, so there is no event to wait on here.
    with anyio.move_on_after(within):
        while fv.open_connections:  # noqa: ASYNC110
            await anyio.sleep(0.01)
    return fv.open_connections


async def test_idle_keep_alive_connections_closed_by_their_clients_are_released_at_once() -> None:
    async with FakeVendor() as fv:
        async with httpx.AsyncClient() as client:

            async def one() -> None:
                r = await client.post(f"{fv.openai_base_url}/chat/completions", json=BODY, headers=HEADERS)
                assert r.status_code == 200

            async with anyio.create_task_group() as tg:
                for _ in range(20):
                    tg.start_soon(one)
            assert fv.open_connections > 0  # kept alive, idle, in the client's pool
        # The client closed its pool: every server socket goes now, not after the keep-alive timeout.
        assert await settled(fv) == 0
        assert close_wait_sockets(fv.port) == 0


async def test_a_burst_of_cancelled_requests_leaves_no_socket_behind() -> None:
    async with FakeVendor() as fv:
        fv.on(FakeReply(text="slow " * 50, words_per_chunk=1, chunk_latency=0.05))
        async with httpx.AsyncClient() as client:

            async def cancelled(stream: bool, after: float) -> None:
                with anyio.move_on_after(after):
                    body = {**BODY, "stream": stream}
                    async with client.stream("POST", f"{fv.openai_base_url}/chat/completions", json=body,
                                             headers=HEADERS) as r:
                        async for _ in r.aiter_raw():
                            pass

            # Cancelled 0.8-1.6 s in, mid-answer (an answer takes 2.5 s): 0.3-0.5 s, with both cores busy,
            # once let none of the 40 requests reach the vendor before its deadline.
            async with anyio.create_task_group() as tg:
                for i in range(40):
                    tg.start_soon(cancelled, i % 2 == 0, 0.8 + (i % 5) * 0.2)
        assert await settled(fv) == 0
        assert close_wait_sockets(fv.port) == 0
        await fv.wait_until_settled()
        assert fv.disconnects and all(r.outcome in ("disconnected", "ok") for r in fv.requests)
