"""A long hedged stream costs its own characters: what the winner delivered is kept in pieces, never re-copied.

``self.delivered += text`` on an attribute copies the whole text so far at every delta (CPython's in-place
concatenation only applies to a local name): a hedged stream of 50,000 deltas was quadratic.  The count: a delta
whose text is a ``str`` subclass sees, through ``__radd__``, every concatenation it is the right operand of, and how
many characters of text-so-far it copied.  What was delivered still prices a stream left early (docs/costs.md,
"Calls cut short"); virtual time, both backends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from agentactors import LLMRequest, LLMResponse, Message, Usage, with_hedge
from agentactors.messages import StreamEnd, StreamEvent, TextDelta
from agentactors.pricing import take_cut_short

pytestmark = [pytest.mark.anyio, pytest.mark.virtual_time]

DELTAS = 2_000
PIECE = "abcdefghij"


class _Counted(str):
    """A delta's text that counts the characters copied when text so far is concatenated with it."""

    copied = 0

    def __radd__(self, left: str) -> str:
        _Counted.copied += len(left)
        return str.__add__(left, self)


class _Vendor:
    """Its first call sends nothing for a long while (the hedge wins); every other streams :data:`DELTAS` deltas."""

    name = "openai"
    default_model = "gpt-4o"
    carries_tools = True
    carries_forced_tool_choice = True

    def __init__(self) -> None:
        self.sent = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:  # pragma: no cover - streamed only
        raise AssertionError("streamed only")

    def stream(self, request: LLMRequest) -> Any:
        return self._stream()

    @asynccontextmanager
    async def _stream(self) -> AsyncIterator[AsyncIterator[StreamEvent]]:
        self.sent += 1
        silent = self.sent == 1

        async def events() -> AsyncIterator[StreamEvent]:
            if silent:
                await anyio.sleep(1000)
            await anyio.sleep(1.0)
            for _ in range(DELTAS):
                yield TextDelta(_Counted(PIECE))
            yield StreamEnd(LLMResponse(PIECE * DELTAS, usage=Usage(1, DELTAS), provider="openai", model="gpt-4o"))

        gen = events()
        try:
            yield gen
        finally:
            with anyio.CancelScope(shield=True):
                await gen.aclose()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        pass


async def test_a_long_hedged_stream_left_early_copies_linear_and_is_charged_what_it_delivered(
    anyio_backend: Any,
) -> None:
    vendor, request = _Vendor(), LLMRequest([Message.user("hi")])
    _Counted.copied = 0
    read = 0
    with anyio.fail_after(100):
        async with with_hedge(vendor, after=2.0, max_extra=1.0).stream(request) as events:
            async for event in events:
                assert isinstance(event, TextDelta)
                read += 1
                if read == DELTAS:
                    break  # left before the StreamEnd: the winner is charged with what it delivered
    assert vendor.sent == 2
    loser, winner = take_cut_short(request)
    assert loser.output_tokens == 0
    assert winner.estimated and winner.output_tokens == (len(PIECE) * DELTAS + 3) // 4
    # Linear: at most the text's length copied again (a quadratic build copies ~DELTAS/2 times that).
    assert _Counted.copied <= 2 * len(PIECE) * DELTAS
