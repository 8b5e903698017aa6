"""A run past its deadline cancels its in-flight HTTP request — the fake vendor sees the disconnect (real clock)."""

from __future__ import annotations

import anyio
import pytest

from agentactors import Agent, OpenAIProvider, RunDeadlineExceeded, Runtime, with_retry
from agentactors.testing import FakeError, FakeReply, FakeVendor

pytestmark = pytest.mark.anyio


def provider(fv: FakeVendor) -> OpenAIProvider:
    return OpenAIProvider("gpt-4o-mini", api_key="sk-run-deadline-test-0000", base_url=fv.openai_base_url)


async def test_the_deadline_cancels_the_request_in_flight(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="too late", latency=60))
    agent = Agent(provider(fake_vendor))
    async with Runtime() as rt:
        start = anyio.current_time()
        # 2 s: time for the request to reach the vendor on a loaded machine, so that there is one to cut.
        result = await agent.run("Answer slowly.", deadline=2.0)
        elapsed = anyio.current_time() - start
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=30)
        with anyio.fail_after(30):
            await rt.wait_idle()
        assert rt.stats().busy == 0
    assert isinstance(result.error, RunDeadlineExceeded)
    assert 2.0 <= elapsed < 20.0  # the deadline, not the vendor's 60 s
    assert gone.outcome == "disconnected"


async def test_the_deadline_cancels_a_streamed_request_in_flight(fake_vendor: FakeVendor) -> None:
    fake_vendor.script(FakeReply(text="one two three four five", words_per_chunk=1, chunk_latency=60))
    agent = Agent(provider(fake_vendor))
    async with Runtime():
        result = await agent.run("Stream slowly.", deadline=2.0, on_token=lambda text: None)
        (gone,) = await fake_vendor.wait_for_disconnects(1, within=30)
    assert isinstance(result.error, RunDeadlineExceeded)
    assert gone.stream and gone.disconnected


async def test_the_deadline_cuts_a_retry_backoff_short(fake_vendor: FakeVendor) -> None:
    # The vendor asks for 30 s of patience; the run has 10 s: no wait is started, the 429 is the answer.
    fake_vendor.script(FakeError(429, retry_after=30), "never reached")
    agent = Agent(with_retry(provider(fake_vendor), max_retry_after=60.0))
    async with Runtime():
        start = anyio.current_time()
        result = await agent.run("hi", deadline=10.0)
        elapsed = anyio.current_time() - start
    assert result.generation_failed and result.error is not None and getattr(result.error, "status", None) == 429
    assert elapsed < 10.0  # answered before the deadline: no backoff was begun
    assert len(fake_vendor.requests) == 1
