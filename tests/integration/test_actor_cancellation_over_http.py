"""actors.md scenario 4 end to end: an asker cancelled while its LLM request is in flight
cancels the HTTP request — the fake vendor sees the disconnect — through a ProviderActor ask,
an ask timeout, and a whole agent run; and the conversation is left unchanged."""

from __future__ import annotations

import anyio
import pytest

from agentactors import (
    Agent,
    AskTimeout,
    Complete,
    LLMRequest,
    Message,
    OpenAIProvider,
    ProviderActor,
    Runtime,
    Stream,
    TextDelta,
)
from agentactors.testing import FakeReply, FakeVendor

pytestmark = pytest.mark.anyio
REQUEST = LLMRequest([Message.user("Say something slowly.")], model="gpt-4o-mini")


def provider(fv: FakeVendor) -> OpenAIProvider:
    return OpenAIProvider("gpt-4o-mini", api_key="sk-actor-cancel-test-0000", base_url=fv.openai_base_url)


async def _cancel_once_received(fake_vendor: FakeVendor, scope: anyio.CancelScope) -> None:
    await fake_vendor.wait_for(lambda requests: len(requests) >= 1, within=30)
    scope.cancel()


async def test_asker_cancelled_mid_request_disconnects(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="too late", latency=10))
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider(fake_vendor))
        # Cancelled once the vendor has the request (not after a fixed 0.3 s: on a loaded machine the
        # request may not have left by then, and there is nothing to disconnect).
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_once_received, fake_vendor, scope)
                await ref.ask(Complete(REQUEST))
        assert scope.cancelled_caught
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=30)
        assert gone.outcome == "disconnected"
        with anyio.fail_after(30):
            await rt.wait_idle()
        assert rt.stats().busy == 0
        # The shared actor and its connection pool go on serving.
        fake_vendor.script("fine")
        assert (await ref.ask(Complete(REQUEST))).content == "fine"


async def test_ask_timeout_disconnects_like_a_cancellation(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="too late", latency=60))
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider(fake_vendor))
        with pytest.raises(AskTimeout):  # 2 s: time for the request to reach the vendor on a loaded machine
            await ref.ask(Complete(REQUEST), timeout=2.0)
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=30)
        assert gone.outcome == "disconnected"


async def test_closing_a_stream_channel_disconnects(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="one two three four five", words_per_chunk=1, chunk_latency=10))
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, provider(fake_vendor))
        stream = await ref.ask(Stream(REQUEST))
        async with stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    break
        (gone,) = await fake_vendor.wait_for_disconnects(1)
        assert gone.stream and gone.disconnected


async def test_cancelled_agent_run_disconnects_and_keeps_the_conversation(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="too late", latency=10))
    agent = Agent(provider(fake_vendor), model="gpt-4o-mini")
    conversation = [Message.user("Say something slowly.")]
    async with Runtime():
        async with agent.stream(conversation) as run:
            async for event in run:
                if event.type == "llm.request":
                    # Cancel once the request is really in flight at the vendor.
                    await fake_vendor.wait_for(lambda seen: len(seen) >= 1)
                    run.cancel()
        result = run.result
        assert result.cancelled
        assert list(result.messages) == conversation
    (gone,) = await fake_vendor.wait_for_disconnects(1)
    assert gone.outcome == "disconnected"
