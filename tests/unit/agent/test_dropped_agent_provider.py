"""A provider only dropped agents ran with is released: its shared actor stopped, its connections closed.

A service that makes a provider per request (one API key per tenant) and an agent for it, in one long-lived
runtime, must not keep one ProviderActor and one open keep-alive socket per provider until the runtime exits (a
default ``ulimit -n`` of 1024 runs out after ~1,000 tenants).  The shared-provider registry holds a provider for
the agents bound to it, weakly: once they are all collected, the entry goes.  A provider its user asked for with
``ProviderActor.shared`` is pinned (its actor, ref and budgets live as long as the runtime); one its user keeps
works on with new agents (its pool is made again).  Against a real keep-alive server on 127.0.0.1, which counts
the connections open to it.
"""

from __future__ import annotations

import gc
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel
import pytest

from agentactors.actors.runtime import Runtime
from agentactors.agent.core import Agent
from agentactors.gateway.provider import ProviderActor
from agentactors.providers.openai.provider import OpenAIProvider
from agentactors.providers.scripted import ScriptedProvider
from agentactors.resilience.retry import with_retry

pytestmark = pytest.mark.anyio

_ANSWER = json.dumps({
    "id": "c", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}).encode()
_RESPONSE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(_ANSWER), _ANSWER)
)


class _Vendor:
    """Answers every POST with a chat completion and keeps the connection alive; counts connections."""

    def __init__(self) -> None:
        self.open = 0
        self.accepted = 0
        self.port = 0
        self._changed = anyio.Event()

    def _count(self, change: int) -> None:
        self.open += change
        self._changed.set()
        self._changed = anyio.Event()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        self._count(1)
        self.accepted += 1
        try:
            async with stream:
                buffer = b""
                while True:
                    while b"\r\n\r\n" not in buffer:
                        buffer += await stream.receive()
                    head, _, buffer = buffer.partition(b"\r\n\r\n")
                    length = next(
                        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    )
                    while len(buffer) < length:
                        buffer += await stream.receive()
                    buffer = buffer[length:]
                    await stream.send(_RESPONSE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            self._count(-1)

    async def connections(self, expected: int) -> int:
        """The connections open, once they are ``expected`` (a real server: the close reaches it soon after)."""
        with anyio.move_on_after(10):
            while self.open != expected:
                await self._changed.wait()
        return self.open


@asynccontextmanager
async def _vendor() -> AsyncIterator[_Vendor]:
    vendor = _Vendor()
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    vendor.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, vendor.handle)
        try:
            yield vendor
        finally:
            tg.cancel_scope.cancel()


def _provider(vendor: _Vendor, tenant: int) -> OpenAIProvider:
    return OpenAIProvider("gpt-4o", api_key=f"sk-tenant-{tenant}", base_url=vendor.base_url)


async def _settle() -> None:
    """Collect what was dropped, and let the runtime stop what it held for it."""
    for _ in range(3):
        gc.collect()
        for _ in range(10):
            await anyio.lowlevel.checkpoint()


async def _ask(agent: Agent[Any], prompt: str = "hi") -> None:
    result = await agent.run(prompt)
    assert result.error is None and result.content == "hi"


async def test_providers_and_agents_made_per_request_leave_nothing_behind() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        baseline = rt.stats().actors
        for i in range(12):
            await _ask(Agent(_provider(vendor, i), system="brief"))
        await _settle()
        assert rt.stats().actors == baseline
        assert await vendor.connections(0) == 0
        assert vendor.accepted == 12


async def test_a_provider_kept_by_its_user_works_on_with_new_agents_after_its_first_were_dropped() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        provider = _provider(vendor, 1)
        baseline = rt.stats().actors
        await _ask(Agent(provider))
        await _settle()
        assert rt.stats().actors == baseline
        assert await vendor.connections(0) == 0  # closed on release, though the provider lives on
        agent = Agent(provider)
        await _ask(agent)  # a new actor, and a new pool
        await _ask(agent)
        assert vendor.accepted == 2
        assert await vendor.connections(1) == 1
        assert rt.stats().actors == baseline + 1


async def test_a_pinned_provider_keeps_its_actor_ref_and_budgets_when_its_agents_are_dropped() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        provider = _provider(vendor, 1)
        ref = ProviderActor.shared(rt, provider, max_concurrency=3)
        count = rt.stats().actors
        await _ask(Agent(provider))
        await _ask(Agent(provider))
        await _settle()
        assert not ref.stopped and rt.stats().actors == count
        assert ProviderActor.shared(rt, provider) is ref
        assert ProviderActor.shared(rt, provider, max_concurrency=3) is ref
        with pytest.raises(ValueError, match="budgets"):
            ProviderActor.shared(rt, provider, max_concurrency=4)
        assert await vendor.connections(1) == 1  # not closed: the runtime's exit does that


async def test_an_agents_provider_pinned_later_is_kept() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        provider = _provider(vendor, 1)
        agent = Agent(provider)
        await _ask(agent)
        ref = ProviderActor.shared(rt, provider, max_concurrency=64)  # the agents' entry, confirmed: pinned
        del agent
        await _settle()
        assert not ref.stopped
        assert ProviderActor.shared(rt, provider) is ref


async def test_a_provider_shared_by_two_agents_is_released_only_when_both_are_dropped() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        baseline = rt.stats().actors
        first = Agent(_provider(vendor, 1))
        second = Agent(first.provider, system="other")
        await _ask(first)
        await _ask(second)
        await _ask(first)  # (bound once per runtime: counted once)
        del first
        await _settle()
        assert rt.stats().actors == baseline + 1
        assert await vendor.connections(1) == 1
        await _ask(second)
        del second
        await _settle()
        assert rt.stats().actors == baseline
        assert await vendor.connections(0) == 0
        assert vendor.accepted == 1


async def test_a_released_decorator_does_not_close_a_provider_another_agent_uses() -> None:
    async with _vendor() as vendor, Runtime():
        inner = _provider(vendor, 1)
        direct = Agent(inner)
        await _ask(direct)
        await _ask(Agent(with_retry(inner)))  # its entry is released: it reaches `inner`, which `direct`'s uses
        await _settle()
        assert await vendor.connections(1) == 1
        await _ask(direct)
        assert vendor.accepted == 1
        del direct
        await _settle()
        assert await vendor.connections(0) == 0


async def test_a_released_decorator_of_http_providers_closes_their_connections() -> None:
    async with _vendor() as vendor, Runtime() as rt:
        baseline = rt.stats().actors
        wrapped = with_retry(_provider(vendor, 1))
        await _ask(Agent(wrapped))
        await _settle()
        assert rt.stats().actors == baseline
        assert await vendor.connections(0) == 0
        await _ask(Agent(wrapped))  # the user kept it: it works on
        assert vendor.accepted == 2


async def test_a_provider_whose_close_is_final_is_not_closed_on_release_but_at_the_exit() -> None:
    provider = ScriptedProvider(["one", "two"])
    async with Runtime() as rt:
        baseline = rt.stats().actors
        assert (await Agent(provider).run("q")).content == "one"
        await _settle()
        assert rt.stats().actors == baseline
        assert not provider.closed  # its aclose() cannot be undone: not called while the runtime runs
        assert (await Agent(provider).run("q")).content == "two"
        await _settle()
        assert not provider.closed
    assert provider.closed  # still alive at the exit: closed then, as before
