"""A request's reported usage corrects the token budget before its slot goes to the next waiter.

Found by the generated loads (test_load_property.py): the slot was released first, and the release granted the
next waiter against the uncorrected budget — so a request whose answer reported more than its estimate let the
next one through on tokens already spent (the correction then put the bucket a minute in debt, after the fact),
and one that reported less let the next waiter in and then refilled the bucket behind it.  On virtual time, both
backends, for a complete answer, a fed stream and a pulled stream.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentactors import Complete, LLMRequest, LLMResponse, Message, ProviderActor, Runtime, Usage
from agentactors.gateway.provider import Stream
from agentactors.messages import StreamEnd, TextDelta

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]


class Vendor:
    """Each request holds 2 s; ``heavy`` reports 1000 tokens used, every other one none (its estimate stands)."""

    name = "vendor"

    def __init__(self) -> None:
        self.sent: dict[str, float] = {}

    def _usage(self, label: str) -> Usage:
        return Usage(input_tokens=500, output_tokens=500) if label == "heavy" else Usage()

    async def complete(self, request: LLMRequest) -> LLMResponse:
        label = request.messages[0].content
        self.sent[label] = anyio.current_time()
        await anyio.sleep(2)
        return LLMResponse(content=label, usage=self._usage(label))

    def stream(self, request: LLMRequest) -> Any:
        vendor, label = self, request.messages[0].content

        class Opened:
            async def __aenter__(self) -> Any:
                vendor.sent[label] = anyio.current_time()
                return self.events()

            async def __aexit__(self, *exc: object) -> None:
                return None

            async def events(self) -> Any:
                await anyio.sleep(2)
                yield TextDelta(label)
                yield StreamEnd(LLMResponse(content=label, usage=vendor._usage(label)))

        return Opened()


async def ask(ref: Any, label: str, kind: str) -> None:
    request = LLMRequest([Message.user(label)], max_tokens=10 if label == "heavy" else 100)
    if kind == "complete":
        await ref.ask(Complete(request))
        return
    stream = await ref.ask(Stream(request, pull=kind == "pull"))
    async with stream:
        async for _ in stream:
            pass


@pytest.mark.parametrize("kind", ["complete", "stream", "pull"])
async def test_a_usage_over_the_estimate_is_charged_before_the_next_waiter_is_granted(kind: str) -> None:
    vendor = Vendor()
    async with Runtime() as rt:
        ref = ProviderActor.shared(rt, vendor, max_concurrency=1, tokens_per_minute=1000)
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask, ref, "heavy", kind)  # estimated 12 tokens, reports 1000: a minute's budget
            await anyio.sleep(0.001)
            tg.start_soon(ask, ref, "next", kind)  # estimated 102 tokens: waits for the slot
    # "heavy" spent the minute's budget (12 tokens are left when it ends): "next" goes once its 102 tokens have
    # refilled (~5.4 s later), not on the slot heavy gave back, against the budget heavy had already spent.
    assert vendor.sent["next"] == pytest.approx(vendor.sent["heavy"] + 2 + 90 / (1000 / 60))
